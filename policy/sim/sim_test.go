package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/google/go-cmp/cmp"
)

// smT0 is the epoch of the hand-made traces: times are seconds after it.
var smT0 = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

func smAt(s float64) time.Time { return smT0.Add(time.Duration(s * float64(time.Second))) }

// smJob is a trace job that runs run seconds with a limit of limit seconds,
// asking for units (processors on a CPU cluster, GPUs on a GPU one).
func smJob(id int64, user string, submit float64, units int, run, limit float64) policy.Job {
	return policy.Job{ID: id, Account: "lab", User: user, ArrayTask: -1, Submit: smAt(submit), Start: smAt(submit),
		End: smAt(submit + run), TimeLimit: time.Duration(limit * float64(time.Second)), CPUs: units, GPUs: units,
		State: policy.StateCompleted}
}

func smPolicy(t testing.TB, name string, p any) policy.Policy {
	t.Helper()
	pol, err := policy.New(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// smStarts runs cfg on jobs and returns each job's first start, in
// seconds after smT0, by id.
func smStarts(t *testing.T, jobs []policy.Job, cfg Config) (map[int64]float64, *Result) {
	t.Helper()
	res, err := Run(jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]float64{}
	for _, j := range res.Jobs {
		got[j.ID] = j.Start.Sub(smT0).Seconds()
	}
	return got, res
}

// TestRun_ServiceBillsCPUs: under fair share on one 4-GPU node, what the
// ledger charges decides who goes first. History: a used 4 GPUs with 1 CPU
// for an hour, b 1 GPU with 8 CPUs. Charged GPUs, a used more and b's job
// starts first; charged CPUs (Slurm's default billing), b used more and
// a's job does.
func TestRun_ServiceBillsCPUs(t *testing.T) {
	hist := []policy.Job{smJob(1, "a", -7200, 4, 3600, 3600), smJob(2, "b", -7200, 1, 3600, 3600)}
	hist[0].CPUs, hist[1].CPUs = 1, 8
	jobs := []policy.Job{smJob(3, "a", 0, 4, 60, 60), smJob(4, "b", 0, 4, 60, 60), smJob(5, "c", 0, 4, 10, 10)}
	cluster := Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}
	for _, tt := range []struct {
		name    string
		service *policy.Service
		first   int64
	}{
		{"GPUs", nil, 4},
		{"billed CPUs", &policy.Service{BillCPUs: true}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// c, with no usage, goes first either way; then the one who
			// used less.
			got, _ := smStarts(t, jobs, Config{Cluster: cluster, Policy: smPolicy(t, "fairshare", nil), History: hist, Service: tt.service})
			other := int64(7) - tt.first
			if !(got[5] < got[tt.first] && got[tt.first] < got[other]) {
				t.Errorf("starts %v: want c's 5, then %d, then %d", got, tt.first, other)
			}
		})
	}
}

// TestRun_BackfillInterval: TestRun_Backfill's queue with Slurm's
// bf_interval of 30 s. Jobs that start in ranking order start at once (job
// 1 at 0, job 2 when job 1 ends at 100, jobs 3 and 5 when job 2 ends at
// 150), but backfill waits for a pass. Passes from the first submit (0,
// 30, 60, …): at 30, job 3 (limit 90) would end after job 2's
// reservation at 100, so only job 4 is backfilled. Passes from t=10 (10,
// 40, 70, …): at 10 job 3 still ends by 100 and is backfilled, and job 4,
// on the 2 processors job 3 leaves when it ends at 60, at the pass at 70.
func TestRun_BackfillInterval(t *testing.T) {
	jobs := []policy.Job{
		smJob(1, "a", 0, 6, 100, 100),
		smJob(2, "b", 1, 8, 50, 50),
		smJob(3, "c", 2, 4, 50, 90),
		smJob(4, "d", 3, 2, 200, 200),
		smJob(5, "e", 4, 3, 10, 500),
	}
	cluster := Cluster{Nodes: 1, PerNode: 10, Unit: CPUs}
	for _, tt := range []struct {
		name  string
		epoch time.Time
		want  map[int64]float64
	}{
		{"from the first submit", time.Time{}, map[int64]float64{1: 0, 2: 100, 3: 150, 4: 30, 5: 150}},
		{"from t=10", smAt(10), map[int64]float64{1: 0, 2: 100, 3: 10, 4: 70, 5: 150}},
		{"from t=-50", smAt(-50), map[int64]float64{1: 0, 2: 100, 3: 10, 4: 70, 5: 150}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := smStarts(t, jobs, Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil),
				BackfillInterval: 30 * time.Second, BackfillEpoch: tt.epoch})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Run(jobs, Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil), BackfillInterval: -time.Second}); err == nil {
		t.Errorf("a negative backfill interval: no error")
	}
}

// TestRun_Backfill replays a hand-made queue on 10 processors under FIFO.
// EASY: job 2 (8 procs) is reserved at t=100, when job 1's limit ends and
// 10 − 8 = 2 processors stay spare; job 3 ends by its limit (t=92) before
// that, so it is backfilled at once; job 4 (2 procs, long) fits the spare 2
// and starts when job 3 ends; job 5 (3 procs, long) would take processors
// the reservation needs, so it waits although 2+ are free. Without backfill
// everything waits behind job 2.
func TestRun_Backfill(t *testing.T) {
	jobs := []policy.Job{
		smJob(1, "a", 0, 6, 100, 100),
		smJob(2, "b", 1, 8, 50, 50),
		smJob(3, "c", 2, 4, 50, 90),
		smJob(4, "d", 3, 2, 200, 200),
		smJob(5, "e", 4, 3, 10, 500),
	}
	cluster := Cluster{Nodes: 1, PerNode: 10, Unit: CPUs}
	tests := []struct {
		backfill Backfill
		want     map[int64]float64
	}{
		{EASY, map[int64]float64{1: 0, 2: 100, 3: 2, 4: 52, 5: 150}},
		{NoBackfill, map[int64]float64{1: 0, 2: 100, 3: 150, 4: 150, 5: 150}},
	}
	for _, tt := range tests {
		t.Run(string(tt.backfill), func(t *testing.T) {
			got, _ := smStarts(t, jobs, Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil), Backfill: tt.backfill})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun_HeliosQSSF replays qssf with and without the Helios artifact's
// loop (Config.HeliosQSSF) on hand-made queues, no backfill.
//
// "arrivals by GPU count": jobs 1 (3 GPUs, limit 1 h: 3 GPU-h) and 2 (2 GPUs,
// limit 10 h: 20 GPU-h) arrive together at an empty queue of 4 GPUs. qssf
// (no predictor: limits) starts 1; the artifact sorts a queue of new jobs
// by gpu_num and starts 2.
//
// "predicted on arrival, kept": 2 nodes of 1 GPU; the history says name x
// runs 100 s and y 300 s. A (x, 2000 s) and D (z) start at 0; B (y) arrives
// at 1 to a queue of new jobs (not estimated); C (x) at 2, when nothing
// fits: the artifact estimates B and C then (300 and 100 GPU-s), and C
// keeps its 100 when A's 2000 s makes x's mean 1050, so C starts at 2000.
// Fairway's default predicts them when a GPU frees at 2000, from A's run
// too, and starts B.
func TestRun_HeliosQSSF(t *testing.T) {
	named := func(j policy.Job, name string) policy.Job { j.Name = name; return j }
	history := []policy.Job{
		named(smJob(90, "u", -1000, 1, 100, 0), "x"),
		named(smJob(91, "u", -900, 1, 300, 0), "y"),
	}
	tests := []struct {
		name    string
		cluster Cluster
		jobs    []policy.Job
		history []policy.Job
		helios  bool
		want    map[int64]float64
	}{
		{"arrivals by GPU count, fairway", Cluster{Nodes: 1, PerNode: 4, Unit: GPUs},
			[]policy.Job{smJob(1, "u", 0, 3, 100, 3600), smJob(2, "u", 0, 2, 100, 36000)}, nil, false,
			map[int64]float64{1: 0, 2: 100}},
		{"arrivals by GPU count, artifact", Cluster{Nodes: 1, PerNode: 4, Unit: GPUs},
			[]policy.Job{smJob(1, "u", 0, 3, 100, 3600), smJob(2, "u", 0, 2, 100, 36000)}, nil, true,
			map[int64]float64{1: 100, 2: 0}},
		{"predicted on arrival, fairway", Cluster{Nodes: 2, PerNode: 1, Unit: GPUs},
			[]policy.Job{named(smJob(1, "u", 0, 1, 2000, 0), "x"), named(smJob(2, "u", 0, 1, 5000, 0), "z"),
				named(smJob(3, "u", 1, 1, 10, 0), "y"), named(smJob(4, "u", 2, 1, 10, 0), "x")}, history, false,
			map[int64]float64{1: 0, 2: 0, 3: 2000, 4: 2010}},
		{"predicted on arrival, artifact", Cluster{Nodes: 2, PerNode: 1, Unit: GPUs},
			[]policy.Job{named(smJob(1, "u", 0, 1, 2000, 0), "x"), named(smJob(2, "u", 0, 1, 5000, 0), "z"),
				named(smJob(3, "u", 1, 1, 10, 0), "y"), named(smJob(4, "u", 2, 1, 10, 0), "x")}, history, true,
			map[int64]float64{1: 0, 2: 0, 3: 2010, 4: 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pred policy.Predictor
			if tt.history != nil {
				var err error
				if pred, err = predict.New("helios", predict.Params{Helios: predict.HeliosParams{ArtifactRounding: tt.helios}}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{Cluster: tt.cluster, Policy: smPolicy(t, "qssf", nil), Predictor: pred, Backfill: NoBackfill,
				History: tt.history, HeliosQSSF: tt.helios}
			got, _ := smStarts(t, tt.jobs, cfg)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Run(copyJobs(tests[0].jobs), Config{Cluster: tests[0].cluster, Policy: smPolicy(t, "qssf", nil), Preempt: true, HeliosQSSF: true}); err == nil {
		t.Error("HeliosQSSF with Preempt: no error, want one (the artifact's QSSF does not preempt)")
	}
}

// TestRun_NodeReservation checks EASY on nodes: job C needs both 4-GPU
// nodes, free only when job B's limit ends (t=300). Short job D (ends by
// t=52) backfills onto B's node; long job E would hold a GPU the
// reservation needs, so it waits for C.
func TestRun_NodeReservation(t *testing.T) {
	jobs := []policy.Job{
		smJob(1, "a", 0, 4, 100, 100), // A: node 0
		smJob(2, "b", 0, 2, 300, 300), // B: node 1
		smJob(3, "c", 1, 8, 10, 10),   // C: both nodes
		smJob(4, "d", 2, 2, 50, 50),   // D
		smJob(5, "e", 3, 1, 20, 1000), // E
	}
	got, _ := smStarts(t, jobs, Config{Cluster: Cluster{Nodes: 2, PerNode: 4, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil)})
	want := map[int64]float64{1: 0, 2: 0, 3: 300, 4: 2, 5: 310}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
}

// TestRun_Preemptive runs tiresias preemptively with one 100 GPU-s
// threshold: job 1 has attained 200 GPU-s (queue 1) when job 2 arrives in
// queue 0, so job 1 is preempted at t=100, resumes when job 2 ends at
// t=150 and, keeping its progress, ends at 150 + 900.
func TestRun_Preemptive(t *testing.T) {
	jobs := []policy.Job{smJob(1, "a", 0, 2, 1000, 2000), smJob(2, "b", 100, 2, 50, 100)}
	pol := smPolicy(t, "tiresias", policy.TiresiasParams{Thresholds: []float64{100}})
	res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 2, Unit: GPUs}, Policy: pol, Preempt: true, Tick: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []JobResult{
		{ID: 1, User: "a", Account: "lab", Units: 2, Submit: smAt(0), Start: smAt(0), End: smAt(1050), Run: 1000 * time.Second,
			Limit: 2000 * time.Second, Runs: []Span{{smAt(0), smAt(100)}, {smAt(150), smAt(1050)}}},
		{ID: 2, User: "b", Account: "lab", Units: 2, Submit: smAt(100), Start: smAt(100), End: smAt(150), Run: 50 * time.Second,
			Limit: 100 * time.Second},
	}
	if diff := cmp.Diff(want, res.Jobs); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if res.Preemptions != 1 {
		t.Errorf("preemptions = %d, want 1", res.Preemptions)
	}
}

// TestRun_PreemptiveHot runs tiresias preemptively on a machine busy
// enough to preempt, checking before every decision that the dense copy
// of each job's need and running state decidePreemptive reads is the
// job's (Config.checkHot), and that the run preempted and finished every
// job.
func TestRun_PreemptiveHot(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 600, Users: 12, Nodes: 2, GPUsPerNode: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smConfig(t, Cluster{Nodes: 2, PerNode: 8, Unit: GPUs}, "tiresias", "tsafrir")
	cfg.checkHot = true
	res, err := Run(jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != len(jobs) || res.Preemptions == 0 {
		t.Fatalf("%d of %d jobs, %d preemptions: want every job and some preemptions", len(res.Jobs), len(jobs), res.Preemptions)
	}
}

// TestRun_Trace covers what Run does with trace jobs it cannot or need not
// replay as given.
func TestRun_Trace(t *testing.T) {
	noRun := smJob(3, "a", 0, 1, 0, 10)
	noRun.End = time.Time{}
	dup := smJob(1, "b", 5, 1, 10, 10)
	over := smJob(6, "c", 0, 2, 500, 100) // runs past its limit: killed at it
	jobs := []policy.Job{smJob(1, "a", 0, 1, 10, 10), smJob(2, "a", 0, 0, 10, 10), noRun, smJob(4, "a", 0, 9, 10, 10), dup, over}
	res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil)})
	if err != nil {
		t.Fatal(err)
	}
	wantSkipped := map[string]int{SkipNoUnits: 1, SkipNoRun: 1, SkipTooLarge: 1, SkipDuplicate: 1}
	if diff := cmp.Diff(wantSkipped, res.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	var ids []int64
	for _, j := range res.Jobs {
		ids = append(ids, j.ID)
		if j.ID == 6 && j.Run != 100*time.Second {
			t.Errorf("job 6 ran %v, want its 100 s limit", j.Run)
		}
	}
	if diff := cmp.Diff([]int64{1, 6}, ids); diff != "" {
		t.Errorf("simulated jobs (-want +got):\n%s", diff)
	}
	if _, err := Run(jobs[1:4], Config{Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil)}); !errors.Is(err, ErrNoJobs) {
		t.Errorf("nothing to replay: err %v, want ErrNoJobs", err)
	}
}

// TestRun_NoJobsSaysWhy: when admit leaves every job out, the error says
// why, as it does on a partitioned cluster.
func TestRun_NoJobsSaysWhy(t *testing.T) {
	noRun := smJob(2, "a", 0, 1, 0, 10)
	noRun.End = time.Time{}
	tests := []struct {
		name string
		jobs []policy.Job
		want string
	}{
		{"larger than the cluster", []policy.Job{smJob(1, "a", 0, 9, 10, 10), smJob(2, "b", 5, 5, 10, 10)},
			"simulate 2 trace jobs: no job to simulate (left out: 2 larger than the cluster)"},
		{"mixed", []policy.Job{smJob(1, "a", 0, 9, 10, 10), noRun},
			"simulate 2 trace jobs: no job to simulate (left out: 1 larger than the cluster; 1 no run time)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(tt.jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil)})
			if !errors.Is(err, ErrNoJobs) {
				t.Fatalf("err %v, want ErrNoJobs", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRun_BadConfig(t *testing.T) {
	jobs := []policy.Job{smJob(1, "a", 0, 1, 10, 10)}
	fifo := smPolicy(t, "fifo", nil)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no nodes", Config{Cluster: Cluster{PerNode: 8, Unit: GPUs}, Policy: fifo}},
		{"bad unit", Config{Cluster: Cluster{Nodes: 1, PerNode: 8, Unit: "tpus"}, Policy: fifo}},
		{"no policy", Config{Cluster: Cluster{Nodes: 1, PerNode: 8, Unit: GPUs}}},
		{"bad backfill", Config{Cluster: Cluster{Nodes: 1, PerNode: 8, Unit: GPUs}, Policy: fifo, Backfill: "conservative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(jobs, tc.cfg); err == nil {
				t.Error("want an error")
			}
		})
	}
	stop := errors.New("stop")
	many := make([]policy.Job, 200)
	for i := range many {
		many[i] = smJob(int64(i+1), "a", float64(i), 1, 10, 10)
	}
	_, err := Run(many, Config{Cluster: Cluster{Nodes: 1, PerNode: 8, Unit: GPUs}, Policy: fifo,
		Progress: func(done, total int) error { return stop }})
	if !errors.Is(err, stop) {
		t.Errorf("progress error: got %v, want it returned", err)
	}
}

// TestMeasure checks every metric on a three-job schedule worked out by
// hand (see the comments for the arithmetic).
func TestMeasure(t *testing.T) {
	res := &Result{Policy: "hand", Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Jobs: []JobResult{
		{ID: 1, User: "u1", Units: 2, Submit: smAt(0), Start: smAt(0), End: smAt(100), Run: 100 * time.Second},
		{ID: 2, User: "u2", Units: 2, Submit: smAt(0), Start: smAt(100), End: smAt(105), Run: 5 * time.Second},
		{ID: 3, User: "u1", Units: 4, Submit: smAt(50), Start: smAt(105), End: smAt(205), Run: 100 * time.Second},
	}}
	got := Measure(res, MetricsParams{Window: 50 * time.Second})
	// JCT 100, 105, 155; waits 0, 100, 55; bsld 1, 105/10, 155/100.
	// Utilization (2·100 + 2·5 + 4·100) / (4 · 205). Jain: only window
	// [50 s, 100 s) has both users backlogged; u1 got 2·50 GPU-s, u2 none:
	// (100/½)² / (2·(100/½)²) = ½. ρ: jobs 1, 2 see 2 active users, job 3
	// 2 users for 55 s then 1 for 100 s: ρ = 100/100, 105/10,
	// 155/(100·4·(210/155)/4). User p95 waits: u1 0.95·55, u2 100.
	rho3 := 155 / (100 * 210.0 / 155)
	want := Metrics{Name: "hand", Jobs: 3, AvgJCT: 120, MedianJCT: 105, P95JCT: 105 + 0.9*50, AvgWait: 155.0 / 3, P95Wait: 55 + 0.9*45,
		AvgBSLD: (1 + 10.5 + 1.55) / 3, Makespan: 205, Utilization: 610.0 / 820, Jain: 0.5, JainWindows: 1,
		MaxRho: 10.5, P95Rho: rho3 + 0.9*(10.5-rho3), UserP95WaitSpread: 100 - 0.95*55}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) })); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

func TestParseBackfill(t *testing.T) {
	for _, s := range []string{"easy", "none"} {
		if b, err := ParseBackfill(s); err != nil || string(b) != s {
			t.Errorf("ParseBackfill(%q) = %q, %v", s, b, err)
		}
	}
	if _, err := ParseBackfill("conservative"); err == nil {
		t.Error(`ParseBackfill("conservative"): want an error`)
	}
}

// smSynth is the small synthetic workload of the golden and property
// tests: 300 jobs of 6 users offering 3 times what one 8-GPU node can do.
func smSynth(t testing.TB) ([]policy.Job, Cluster) {
	t.Helper()
	jobs, err := Synth(SynthParams{Jobs: 300, Users: 6, Nodes: 1, GPUsPerNode: 8, Load: 3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return jobs, Cluster{Nodes: 1, PerNode: 8, Unit: GPUs}
}

// smConfig is the configuration every policy is simulated with in the
// tests: a fresh predictor, tiresias preemptive.
func smConfig(t testing.TB, cluster Cluster, name, predictor string) Config {
	t.Helper()
	pred, err := predict.New(predictor, predict.Params{})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Cluster: cluster, Policy: smPolicy(t, name, nil), Predictor: pred, Preempt: name == "tiresias"}
}

// recorded is one cycle as a recorder saw it: deep copies.
type recorded struct {
	obs      policy.Observation
	snap     policy.Snapshot
	ranking  []policy.Score
	snapshot bool
}

func copyJobs(js []policy.Job) []policy.Job { return append([]policy.Job(nil), js...) }

// TestSim_RankingIsServes checks that the simulator ranks through the one
// cycle serve runs: every observation the simulator made, replayed through
// a fresh policy.Engine as serve would feed it from Slurm, gives the very
// ranking the simulator acted on, and one snapshot, copied mid-run and
// ranked again by a new policy, ranks the same.
func TestSim_RankingIsServes(t *testing.T) {
	jobs, cluster := smSynth(t)
	for _, name := range policy.Names() {
		t.Run(name, func(t *testing.T) {
			cfg := smConfig(t, cluster, name, "fairway")
			var cycles []recorded
			cfg.OnCycle = func(o *policy.Observation, s *policy.Snapshot, ranking []policy.Score) {
				r := recorded{obs: policy.Observation{Now: o.Now, Pending: copyJobs(o.Pending), Running: copyJobs(o.Running),
					Stopped: copyJobs(o.Stopped), TrueRun: o.TrueRun}, ranking: append([]policy.Score(nil), ranking...)}
				if len(cycles) == 100 {
					r.snap = *s
					r.snap.Pending, r.snap.Running = copyJobs(s.Pending), copyJobs(s.Running)
					r.snap.Predicted = map[int64]time.Duration{}
					for k, v := range s.Predicted {
						r.snap.Predicted[k] = v
					}
					r.snap.Ledger = s.Ledger.Clone()
					r.snapshot = true
				}
				cycles = append(cycles, r)
			}
			res, err := Run(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(cycles) < 101 || res.Cycles != len(cycles) {
				t.Fatalf("%d cycles recorded, result says %d: want over 100", len(cycles), res.Cycles)
			}

			// Serve's side: the same observations through a fresh engine.
			fresh := smConfig(t, cluster, name, "fairway")
			chargeEvery := time.Duration(0)
			if fresh.Preempt {
				chargeEvery = policy.DefaultChargeEvery // Run's default for preemptive runs: the tick
			}
			eng, err := policy.NewEngine(policy.EngineParams{Policy: fresh.Policy, Predictor: fresh.Predictor,
				Service: cluster.Service(), GPUs: float64(cluster.Capacity()), ChargeEvery: chargeEvery})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cycles {
				_, ranking, err := eng.Cycle(&c.obs)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.ranking, ranking); diff != "" {
					t.Fatalf("cycle %d at %s: serve's ranking differs from the simulator's (-sim +serve):\n%s", i, c.obs.Now, diff)
				}
				if c.snapshot {
					again, err := smPolicy(t, name, nil).Rank(&c.snap)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(c.ranking, again); diff != "" {
						t.Errorf("cycle %d: the copied snapshot ranks differently (-sim +again):\n%s", i, diff)
					}
				}
			}
		})
	}
}

// TestSim_VTCFairnessBound is VTC's fairness bound (Sheng et al., OSDI'24,
// Theorem 4.1) in the batch form vtc and fair-qssf keep, through the real
// simulator: two users, backlogged from start to end (each submits 300 jobs
// at once: 1–4 GPUs, 1–60 minutes, the limit exact so predictions are
// right) on one 8-GPU node. At every cycle while both wait, their weighted
// service charged at dispatch (GPUs × run time of every job started so far,
// divided by shares) differs by at most twice the largest job's weighted
// GPU-seconds. Checked with and without EASY backfill and with unequal
// shares.
func TestSim_VTCFairnessBound(t *testing.T) {
	g := &synthRand{r: pcg(11)}
	var jobs []policy.Job
	maxJob := 0.0
	for i := range 600 {
		user := []string{"a", "b"}[i%2]
		gpus := 1 + g.intn(4)
		run := float64(60 * (1 + g.intn(60)))
		jobs = append(jobs, smJob(int64(i+1), user, 0, gpus, run, run))
		maxJob = max(maxJob, float64(gpus)*run)
	}
	for _, name := range []string{"vtc", "fair-qssf"} {
		for _, backfill := range []Backfill{EASY, NoBackfill} {
			for _, shares := range []*policy.Shares{nil, {Users: map[policy.Assoc]float64{{Account: "lab", User: "a"}: 2}}} {
				t.Run(fmt.Sprintf("%s/%s/weighted=%v", name, backfill, shares != nil), func(t *testing.T) {
					pol := smPolicy(t, name, map[string]any{"fair-qssf": policy.FairQSSFParams{MaxWait: -1, RhoMax: -1}}[name])
					wa, wb := shares.User(policy.Assoc{Account: "lab", User: "a"}), shares.User(policy.Assoc{Account: "lab", User: "b"})
					bound := 2 * maxJob / min(wa, wb)
					started := map[int64]bool{}
					service := map[string]float64{}
					worst, checked := 0.0, 0
					cfg := Config{Cluster: Cluster{Nodes: 1, PerNode: 8, Unit: GPUs}, Policy: pol, Backfill: backfill, Shares: shares}
					cfg.OnCycle = func(o *policy.Observation, _ *policy.Snapshot, _ []policy.Score) {
						for _, js := range [][]policy.Job{o.Running, o.Stopped} {
							for _, j := range js {
								if !started[j.ID] {
									started[j.ID] = true
									service[j.User] += float64(j.GPUs) * j.TimeLimit.Seconds()
								}
							}
						}
						waiting := map[string]bool{}
						for _, j := range o.Pending {
							waiting[j.User] = true
						}
						if !waiting["a"] || !waiting["b"] {
							return
						}
						checked++
						diff := math.Abs(service["a"]/wa - service["b"]/wb)
						worst = max(worst, diff)
						if diff > bound {
							t.Errorf("%s: weighted service a %.0f, b %.0f differ by %.0f > %.0f GPU-s", o.Now.Sub(smT0), service["a"]/wa, service["b"]/wb, diff, bound)
						}
					}
					if _, err := Run(jobs, cfg); err != nil {
						t.Fatal(err)
					}
					if checked < 100 || worst == 0 {
						t.Fatalf("%d cycles checked, largest difference %.0f: the run exercised nothing", checked, worst)
					}
					t.Logf("%d cycles, largest weighted difference %.0f GPU-s, bound %.0f", checked, worst, bound)
				})
			}
		}
	}
}

func pcg(seed uint64) *rand.PCG { return rand.NewPCG(seed, 1) }

// TestRun_PredictionBlindPolicies pins what the trace tests rely on: fifo,
// fairshare and slurm (Slurm's multifactor with every factor weighed, and
// with Fair Tree) read no prediction, so a predictor does not change their
// schedule, even where every cycle is recorded (the path that feeds the
// predictor whatever the policy).
func TestRun_PredictionBlindPolicies(t *testing.T) {
	jobs, cluster := smSynth(t)
	weighed := policy.MultifactorParams{WeightAge: 1000, WeightFairshare: 10000, WeightJobSize: 500,
		ClusterNodes: cluster.Nodes, ClusterCPUs: cluster.Capacity()}
	tree := weighed
	tree.FairTree = true
	for _, tt := range []struct {
		label, name string
		params      any
	}{{"fifo", "fifo", nil}, {"fairshare", "fairshare", nil}, {"slurm", "slurm", weighed}, {"slurm/fair-tree", "slurm", tree}} {
		cfg := smConfig(t, cluster, tt.name, "fairway")
		cfg.Policy = smPolicy(t, tt.name, tt.params)
		cfg.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
		with, err := Run(jobs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		without, err := Run(jobs, Config{Cluster: cluster, Policy: smPolicy(t, tt.name, tt.params)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(with.Jobs, without.Jobs); diff != "" {
			t.Errorf("%s: schedule with a predictor differs (-with +without):\n%s", tt.label, diff)
		}
	}
}

// TestRun_StaticOrderSameAsRanking checks that the policies with static
// keys, whose queue the simulator keeps sorted instead of re-ranking it,
// schedule exactly as the full ranking at every cycle does (which a
// recorder, needing the Scores, gets), f1 with its default, moving origin
// and a fixed one: with a predictor learning online
// (qssf's keys move with its predictions) and without, and with submit
// times rounded to the minute so that keys tie.
func TestRun_StaticOrderSameAsRanking(t *testing.T) {
	jobs, cluster := smSynth(t)
	tied := copyJobs(jobs)
	for i := range tied {
		tied[i].Submit = tied[i].Submit.Truncate(time.Minute)
	}
	workloads := map[string][]policy.Job{"synthetic": jobs, "tied": tied}
	for _, label := range []string{"fifo", "qssf", "sjf-limit", "sjf-oracle", "f1", "f1/origin", "slurm"} {
		name, _, fixed := strings.Cut(label, "/")
		for wname, w := range workloads {
			for _, predictor := range []string{"", "fairway"} {
				t.Run(fmt.Sprintf("%s/%s/predictor=%s", label, wname, predictor), func(t *testing.T) {
					mk := func() Config {
						var params any
						if fixed {
							params = policy.F1Params{Origin: w[0].Submit.Add(-time.Hour)}
						}
						cfg := Config{Cluster: cluster}
						if predictor != "" {
							cfg = smConfig(t, cluster, name, predictor)
						}
						cfg.Policy = smPolicy(t, name, params)
						return cfg
					}
					kept, err := Run(w, mk())
					if err != nil {
						t.Fatal(err)
					}
					full := mk()
					cycles := 0
					full.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) { cycles++ }
					ranked, err := Run(w, full)
					if err != nil {
						t.Fatal(err)
					}
					if cycles == 0 || cycles != ranked.Cycles {
						t.Fatalf("full ranking: %d recorded cycles of %d", cycles, ranked.Cycles)
					}
					if diff := cmp.Diff(ranked, kept); diff != "" {
						t.Errorf("kept order schedules differently (-ranked +kept):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestRun_ClockOrderSameAsRanking checks that the policies whose keys
// grow with each job's wait (wfp3, unicep, without the engine; themis,
// with its predictions, fairway's and tsafrir's, and N kept by the
// simulator), whose queue the simulator keeps in a ClockOrder, schedule
// exactly as the full
// ranking at every cycle does (which a recorder gets): on the synthetic
// workload, with submit times rounded to the minute so that keys tie, and
// on a machine of 4,000 processors with hundreds of jobs waiting, and
// that every cycle of the kept run was ordered by the ClockOrder.
func TestRun_ClockOrderSameAsRanking(t *testing.T) {
	jobs, cluster := smSynth(t)
	tied := copyJobs(jobs)
	for i := range tied {
		tied[i].Submit = tied[i].Submit.Truncate(time.Minute)
	}
	big, bigCluster := bigWorkload(t, 3000, 4000, 0.9, 2)
	workloads := []struct {
		name    string
		jobs    []policy.Job
		cluster Cluster
	}{{"synthetic", jobs, cluster}, {"tied", tied, cluster}, {"big", big, bigCluster}}
	for _, name := range []string{"wfp3", "unicep", "themis/fairway", "themis/tsafrir"} {
		for _, w := range workloads {
			t.Run(name+"/"+w.name, func(t *testing.T) {
				config := func() Config {
					if p, pred, ok := strings.Cut(name, "/"); ok {
						return smConfig(t, w.cluster, p, pred)
					}
					return Config{Cluster: w.cluster, Policy: smPolicy(t, name, nil)}
				}
				clocked := 0
				cfg := config()
				cfg.clockCycles = &clocked
				kept, err := Run(w.jobs, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if clocked == 0 || clocked != kept.Cycles {
					t.Errorf("%d of %d cycles ordered by the ClockOrder, want all", clocked, kept.Cycles)
				}
				full := config()
				full.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
				ranked, err := Run(w.jobs, full)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(ranked, kept); diff != "" {
					t.Errorf("kept order schedules differently (-ranked +kept):\n%s", diff)
				}
			})
		}
	}
}

// countingPredictor counts the jobs a predictor observes and predicts.
type countingPredictor struct {
	policy.Predictor
	observed, predicted int
}

func (c *countingPredictor) Observe(j *policy.Job) { c.observed++; c.Predictor.Observe(j) }

func (c *countingPredictor) Predict(j *policy.Job) policy.Prediction {
	c.predicted++
	return c.Predictor.Predict(j)
}

// TestRun_PredictionBlindSkipsPredictor checks that a policy that reads no
// prediction is simulated without feeding the predictor, and schedules
// exactly as it does when the predictor is fed and the cycles are recorded
// (the path that shows the predictions, and ranks in full), preemptively
// too.
func TestRun_PredictionBlindSkipsPredictor(t *testing.T) {
	jobs, cluster := smSynth(t)
	for _, name := range policy.Names() {
		e, _ := policy.Lookup(name)
		if !e.Traits.PredictionBlind {
			continue
		}
		for _, preempt := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/preempt=%v", e.Name, preempt), func(t *testing.T) {
				mk := func() (Config, *countingPredictor) {
					cfg := smConfig(t, cluster, e.Name, "fairway")
					c := &countingPredictor{Predictor: cfg.Predictor}
					cfg.Predictor, cfg.Preempt = c, preempt
					return cfg, c
				}
				cfg, skipped := mk()
				got, err := Run(jobs, cfg)
				if err != nil {
					t.Fatal(err)
				}
				cfg, fed := mk()
				cfg.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
				want, err := Run(jobs, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if skipped.observed+skipped.predicted != 0 || fed.observed == 0 || fed.predicted == 0 {
					t.Errorf("observed/predicted: %d/%d without a recorder (want 0/0), %d/%d with one (want both > 0)",
						skipped.observed, skipped.predicted, fed.observed, fed.predicted)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("schedule without the predictor differs (-fed +skipped):\n%s", diff)
				}
			})
		}
	}
}

// TestRun_LooseRunningSameSchedule checks that the running list the
// simulator hands the engine when nothing else reads it (loose: a job
// that stops has the last job the engine saw moved into its place, not
// every job behind it) schedules exactly as the list kept in start order
// (a recorder keeps it so), for every policy it applies to, on a machine
// where hundreds of jobs run at once and stop in any order.
func TestRun_LooseRunningSameSchedule(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 2500, Users: 40, Nodes: 48, GPUsPerNode: 8, Load: 1.2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cluster := Cluster{Nodes: 48, PerNode: 8, Unit: GPUs}
	for _, name := range policy.Names() {
		if name == "tiresias" { // preemptive: its list is kept in start order
			continue
		}
		t.Run(name, func(t *testing.T) {
			loose, err := Run(jobs, smConfig(t, cluster, name, "fairway"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := smConfig(t, cluster, name, "fairway")
			cfg.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
			ordered, err := Run(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := maxRunning(ordered); n < 100 {
				t.Fatalf("at most %d jobs ran at once: the test checks too little", n)
			}
			if diff := cmp.Diff(ordered, loose); diff != "" {
				t.Errorf("the loose running list schedules differently (-ordered +loose):\n%s", diff)
			}
		})
	}
}

// TestRun_ServiceOrderSameSchedule checks that tiresias' 2D-LAS, simulated
// preemptively with its candidates kept in order and keyed again only when
// the engine charges them (policy.NewServiceOrder), schedules exactly as
// when every cycle ranks every pending and running job (a recorder makes
// it do so), on machines where hundreds of jobs run at once, are charged
// across the queue thresholds and are preempted: with the Ledger charged
// without the engine (serviceCharge) at any charging period and tick, and
// through the engine when history warms it; and that 2D-Gittins, whose
// keys move with every finished job, is not kept so.
func TestRun_ServiceOrderSameSchedule(t *testing.T) {
	variants := []struct {
		name        string
		chargeEvery time.Duration
		tick        time.Duration
		history     bool
	}{
		{name: "default"},
		{name: "charge every cycle", chargeEvery: -1},
		{name: "charge every 17m", chargeEvery: 17 * time.Minute},
		{name: "tick 2m", tick: 2 * time.Minute},
		{name: "history: through the engine", history: true},
	}
	for _, seed := range []uint64{3, 4} {
		// Jobs of 1-3 GPUs running half an hour to a few hours (so they
		// cross tiresias' thresholds of about 1 and 2 GPU-hours), at an
		// offered load over 1 on 32 × 8 GPUs.
		r := rand.New(rand.NewPCG(seed, 1))
		jobs := make([]policy.Job, 1500)
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range jobs {
			at = at.Add(time.Duration(r.ExpFloat64() * float64(45*time.Second)))
			run := time.Duration(math.Exp(math.Log(5400)+0.8*r.NormFloat64())) * time.Second
			jobs[i] = policy.Job{ID: int64(i + 1), ArrayTask: -1, User: fmt.Sprint("u", r.IntN(20)), Account: "a",
				GPUs: 1 + r.IntN(3), Nodes: 1, State: policy.StateCompleted, TimeLimit: 24 * time.Hour,
				Submit: at, Start: at, End: at.Add(run)}
		}
		cluster := Cluster{Nodes: 32, PerNode: 8, Unit: GPUs}
		for _, v := range variants {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, v.name), func(t *testing.T) {
				config := func() Config {
					cfg := smConfig(t, cluster, "tiresias", "fairway")
					cfg.ChargeEvery, cfg.Tick = v.chargeEvery, v.tick
					if v.history {
						end := jobs[0].Submit.Add(-time.Hour)
						cfg.History = []policy.Job{{ID: 1 << 40, ArrayTask: -1, User: "u0", Account: "a", GPUs: 2, Nodes: 1,
							State: policy.StateCompleted, Submit: end.Add(-3 * time.Hour), Start: end.Add(-2 * time.Hour), End: end}}
					}
					return cfg
				}
				kept, err := Run(jobs, config())
				if err != nil {
					t.Fatal(err)
				}
				cfg := config()
				cfg.OnCycle = func(*policy.Observation, *policy.Snapshot, []policy.Score) {}
				ranked, err := Run(jobs, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if ranked.Preemptions < 50 || maxRunning(ranked) < 100 {
					t.Fatalf("%d preemptions, at most %d jobs running at once: the test checks too little", ranked.Preemptions, maxRunning(ranked))
				}
				t.Logf("%d preemptions, %d cycles, at most %d jobs running at once", ranked.Preemptions, ranked.Cycles, maxRunning(ranked))
				if diff := cmp.Diff(ranked, kept); diff != "" {
					t.Errorf("the kept order schedules differently (-ranked +kept):\n%s", diff)
				}
			})
		}
	}
	g, err := policy.NewTiresias(policy.TiresiasParams{Gittins: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := policy.NewServiceOrder(g); ok {
		t.Error("2D-Gittins is kept in a service order: its keys move with every finished job")
	}
}

// TestCutAtDefaultLimit checks that the count reports say a replay cut
// is the jobs Run does cut: no limit of their own and a longer run than
// policy.UnknownRun.
func TestCutAtDefaultLimit(t *testing.T) {
	day := 24 * time.Hour
	job := func(id int64, limit, run time.Duration) policy.Job {
		return policy.Job{ID: id, ArrayTask: -1, User: "u", Account: "a", CPUs: 1, Submit: smAt(0), Start: smAt(0),
			End: smAt(run.Seconds()), TimeLimit: limit, State: policy.StateCompleted}
	}
	for _, tc := range []struct {
		name string
		job  policy.Job
		cut  bool
	}{
		{"no limit, 8 days", job(1, 0, 8*day), true},
		{"no limit, exactly the default", job(2, 0, policy.UnknownRun), false},
		{"no limit, an hour", job(3, 0, time.Hour), false},
		{"own limit overrun", job(4, time.Hour, 8*day), false},
		{"never started", func() policy.Job { j := job(5, 0, 8*day); j.Start = time.Time{}; return j }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := 0
			if tc.cut {
				want = 1
			}
			if n := CutAtDefaultLimit([]policy.Job{tc.job}); n != want {
				t.Errorf("CutAtDefaultLimit = %d, want %d", n, want)
			}
			if tc.job.Start.IsZero() {
				return
			}
			res, err := Run([]policy.Job{tc.job}, smConfig(t, Cluster{Nodes: 1, PerNode: 1, Unit: CPUs}, "fifo", "limit"))
			if err != nil {
				t.Fatal(err)
			}
			ran, full := res.Jobs[0].Run, tc.job.RunTime()
			if (ran < full) != (tc.cut || tc.job.TimeLimit > 0 && full > tc.job.TimeLimit) {
				t.Errorf("replayed run %v of a recorded %v (limit %v): cut = %v", ran, full, tc.job.TimeLimit, ran < full)
			}
		})
	}
}
