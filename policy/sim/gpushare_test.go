package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/google/go-cmp/cmp"
)

func shPolicy(t testing.TB, name string) policy.Policy {
	t.Helper()
	p, err := policy.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var shT0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// stJob is a one-node trace job of user's name, submitted at submit
// seconds, running run seconds on gpus GPUs.
func stJob(id int64, user, name string, submit, run float64, gpus int) policy.Job {
	at := shT0.Add(time.Duration(submit * float64(time.Second)))
	return policy.Job{ID: id, User: user, Account: "lab", Name: name, ArrayTask: -1, Nodes: 1, GPUs: gpus, CPUs: 1,
		Submit: at, Start: at, End: at.Add(time.Duration(run * float64(time.Second))), State: policy.StateCompleted}
}

// shareOf is 4 shards per GPU, interference beta, GPU use usage.
func shareOf(beta float64, usage map[int64]JobUsage) *Share {
	return &Share{ShardsPerGPU: 4, Interference: beta, Usage: usage}
}

// TestRun_ShareNoLightJobIsRun: with sharing on but no job light enough
// to share, Run schedules exactly as without sharing (no backfill), job
// for job: shared placement is Run's placement.
func TestRun_ShareNoLightJobIsRun(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 400, Users: 8, Nodes: 2, GPUsPerNode: 4, Load: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "fair-qssf"} {
		t.Run(name, func(t *testing.T) {
			cluster := Cluster{Nodes: 2, PerNode: 4, Unit: GPUs}
			want, err := Run(jobs, Config{Cluster: cluster, Policy: shPolicy(t, name), Backfill: NoBackfill})
			if err != nil {
				t.Fatal(err)
			}
			// Every job heavy: Usage lists none, so each uses a whole GPU.
			got, err := Run(jobs, Config{Cluster: cluster, Policy: shPolicy(t, name), Share: shareOf(DefaultInterference, map[int64]JobUsage{}), checkShare: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want.Jobs, got.Jobs); d != "" {
				t.Errorf("jobs (-without sharing +with):\n%s", d)
			}
			if got.Share.Shared != 0 || got.Share.MaxPerGPU != 1 || got.Cycles != want.Cycles {
				t.Errorf("shared %d, max per GPU %d, cycles %d (without sharing %d)", got.Share.Shared, got.Share.MaxPerGPU, got.Cycles, want.Cycles)
			}
		})
	}
}

// TestRun_ShareInterference checks the model on one GPU. Three measured
// whole-GPU runs of alice's "light" (20% of the GPU, 10% of its memory)
// make the share rule give later ones 1 of 4 shards; two such jobs then
// share the GPU.
func TestRun_ShareInterference(t *testing.T) {
	history := []policy.Job{
		stJob(1, "alice", "light", 0, 100, 1),
		stJob(2, "alice", "light", 100, 100, 1),
		stJob(3, "alice", "light", 200, 100, 1),
	}
	tests := []struct {
		name     string
		jobs     []policy.Job
		util     float64 // solo utilization of jobs 4 and 5
		beta     float64
		wantEnds map[int64]float64 // seconds after shT0
		slowdown float64
	}{{
		// Both start at 400, utilizations sum to 0.4: only β slows them,
		// 100 s of work at 1/1.1 speed.
		name: "light pair", util: 0.2, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 510, 5: 510}, slowdown: 1.1,
	}, {
		// Heavier than their history (0.8 each): the GPU is time-sliced,
		// speed 1/(1.6 × 1.1).
		name: "oversubscribed", util: 0.8, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 576, 5: 576}, slowdown: 1.76,
	}, {
		// Job 4 runs alone for 50 s, then both at 1/1.1: job 4 has 50 s of
		// work left, done at 505; job 5 did 50 s of work by then and ends
		// alone 50 s later.
		name: "speeds change as jobs come and go", util: 0.2, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 450, 100, 1)},
		wantEnds: map[int64]float64{4: 505, 5: 555}, slowdown: 1.05,
	}, {
		name: "no interference", util: 0.2, beta: 0,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 500, 5: 500}, slowdown: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := append(append([]policy.Job{}, history...), tt.jobs...)
			usage := map[int64]JobUsage{1: {0.2, 0.1}, 2: {0.2, 0.1}, 3: {0.2, 0.1}, 4: {tt.util, 0.1}, 5: {tt.util, 0.1}}
			res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 1, Unit: GPUs}, Policy: shPolicy(t, "fifo"),
				Share: shareOf(tt.beta, usage), checkShare: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]float64{}
			for _, j := range res.Jobs {
				if j.ID >= 4 {
					got[j.ID] = math.Round(j.End.Sub(shT0).Seconds())
					if j.Units != 1 || j.Run != j.End.Sub(j.Start) {
						t.Errorf("job %d: %d units, ran %v from %v to %v", j.ID, j.Units, j.Run, j.Start, j.End)
					}
				}
			}
			if d := cmp.Diff(tt.wantEnds, got); d != "" {
				t.Errorf("ends (-want +got):\n%s", d)
			}
			sh := res.Share
			if sh.Shared != 2 || sh.CoLocated != 2 || sh.MaxPerGPU != 2 {
				t.Errorf("shared %d, co-located %d, max per GPU %d; want 2, 2, 2", sh.Shared, sh.CoLocated, sh.MaxPerGPU)
			}
			// Work is what the jobs needed, however slowed: 5 jobs × 100 s.
			wantWork := 3*0.2*100 + 2*tt.util*100
			if math.Abs(sh.WorkGPUSeconds-wantWork) > 1e-6 {
				t.Errorf("work %g GPU-s, want %g", sh.WorkGPUSeconds, wantWork)
			}
			m := Measure(res, MetricsParams{})
			if math.Abs(m.Share.Slowdown-tt.slowdown) > 1e-6 {
				t.Errorf("slowdown of the shard jobs %g, want %g", m.Share.Slowdown, tt.slowdown)
			}
		})
	}
}

// TestRun_ShareTimeLimit: a shard job slowed past its time limit is
// killed there, a timeout.
func TestRun_ShareTimeLimit(t *testing.T) {
	jobs := []policy.Job{
		stJob(1, "alice", "light", 0, 100, 1),
		stJob(2, "alice", "light", 100, 100, 1),
		stJob(3, "alice", "light", 200, 100, 1),
		stJob(4, "alice", "light", 400, 100, 1),
		stJob(5, "alice", "light", 400, 100, 1),
	}
	jobs[3].TimeLimit = 105 * time.Second
	usage := map[int64]JobUsage{1: {0.2, 0.1}, 2: {0.2, 0.1}, 3: {0.2, 0.1}, 4: {0.2, 0.1}, 5: {0.2, 0.1}}
	res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 1, Unit: GPUs}, Policy: shPolicy(t, "fifo"), Share: shareOf(0.1, usage), checkShare: true,
		OnCycle: func(o *policy.Observation, _ *policy.Snapshot, _ []policy.Score) {
			for _, j := range o.Stopped {
				if want, ok := map[int64]policy.State{4: policy.StateTimeout, 5: policy.StateCompleted}[j.ID]; ok && j.State != want {
					t.Errorf("job %d ended %s, want %s", j.ID, j.State, want)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Job 4 is killed at 505 with 100 − 105/1.1 s of work left; job 5
	// then runs alone: 100 − 95.45 s of its work left, done at 509.5.
	got := map[int64]float64{}
	for _, j := range res.Jobs {
		got[j.ID] = math.Round(j.End.Sub(shT0).Seconds()*10) / 10
	}
	if want := map[int64]float64{1: 100, 2: 200, 3: 300, 4: 505, 5: 509.5}; !cmp.Equal(want, got) {
		t.Errorf("ends (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestRun_ShareGuards: heavy history is never shared, multi-GPU jobs are
// never shared, a GPU never holds more shards than it has, a whole-GPU job
// never lands on a GPU that holds shards (the books checked at every
// instant), and memory oversubscription is counted.
func TestRun_ShareGuards(t *testing.T) {
	var jobs []policy.Job
	usage := map[int64]JobUsage{}
	id := int64(0)
	add := func(user, name string, submit float64, gpus int, u JobUsage) {
		id++
		jobs = append(jobs, stJob(id, user, name, submit, 100, gpus))
		usage[id] = u
	}
	for i := range 3 {
		add("alice", "light", float64(100*i), 1, JobUsage{0.1, 0.3})
		add("bob", "heavy", float64(100*i), 1, JobUsage{0.9, 0.3})
		add("carol", "wide", float64(100*i), 2, JobUsage{0.1, 0.1})
	}
	for range 6 { // light jobs whose memory turns out heavier than history
		add("alice", "light", 400, 1, JobUsage{0.1, 0.45})
	}
	add("bob", "heavy", 400, 1, JobUsage{0.9, 0.3})
	add("carol", "wide", 400, 2, JobUsage{0.1, 0.1})
	res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Policy: shPolicy(t, "fifo"), checkShare: true,
		OnCycle: func(o *policy.Observation, _ *policy.Snapshot, _ []policy.Score) {
			for _, j := range o.Pending {
				if j.Shards > 0 && (j.User != "alice" || j.Shards >= 4 || j.GPUs != 0) {
					t.Errorf("job %d of %s asks for %d shards and %d GPUs", j.ID, j.User, j.Shards, j.GPUs)
				}
			}
		}, Share: shareOf(DefaultInterference, usage)})
	if err != nil {
		t.Fatal(err)
	}
	// 0.3 memory × 1.25 → 2 of 4 shards: two light jobs per GPU, whose
	// 0.45 + 0.45 memory oversubscribes nothing; none are placed 3 to a GPU.
	if sh := res.Share; sh.Shared != 6 || sh.MaxPerGPU != 2 || sh.MemOversubscribed != 0 {
		t.Errorf("shared %d, max per GPU %d, memory oversubscribed %d; want 6, 2, 0", sh.Shared, sh.MaxPerGPU, sh.MemOversubscribed)
	}
}

// TestRun_ShareBooks replays a synthetic workload with drawn GPU use
// under several policies, checking the books at every instant: no GPU is
// both shared and held whole, no device held twice, no node holds more
// GPUs than it has, no shared GPU more shards. The schedules are those of
// the separate shared-GPU engine this option replaced (runShared at
// e34bb2c), job for job: sums is the FNV-64a of every job's id, start,
// end, run and units it gave.
func TestRun_ShareBooks(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 1500, Users: 12, Nodes: 3, GPUsPerNode: 4, Load: 1.5, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]uint64{"fifo": 0x1e1f4c0272ef7e8f, "sjf-limit": 0x9f6693b98c8fcfa0, "vtc": 0x1a865234f2964fc0, "fair-qssf": 0x7fe19651e8be6f84}
	for _, name := range []string{"fifo", "sjf-limit", "vtc", "fair-qssf"} {
		t.Run(name, func(t *testing.T) {
			res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 3, PerNode: 4, Unit: GPUs}, Policy: shPolicy(t, name), checkShare: true,
				Share: &Share{ShardsPerGPU: 4, Interference: 0.2, Model: UsageModel{Seed: 3, LightFraction: 0.6}}})
			if err != nil {
				t.Fatal(err)
			}
			sh := res.Share
			if sh.Shared == 0 || sh.CoLocated == 0 || sh.MaxPerGPU < 2 || sh.MaxPerGPU > 4 {
				t.Errorf("shared %d, co-located %d, max per GPU %d: want sharing, at most 4 a GPU", sh.Shared, sh.CoLocated, sh.MaxPerGPU)
			}
			h := fnv.New64a()
			for _, j := range res.Jobs {
				fmt.Fprintf(h, "%d %d %d %d %d\n", j.ID, j.Start.UnixNano(), j.End.UnixNano(), j.Run, j.Units)
			}
			if got := h.Sum64(); got != sums[name] {
				t.Errorf("schedule sum %x, the replaced engine's %x (shared %d, max per GPU %d, cycles %d)", got, sums[name], sh.Shared, sh.MaxPerGPU, res.Cycles)
			}
		})
	}
}

// TestRun_ShareCutsWaits: on a queue of light one-GPU jobs, sharing runs
// four to a GPU, each slowed by the interference model, and the queue
// drains sooner: waits fall, the cluster computes more of the time.
func TestRun_ShareCutsWaits(t *testing.T) {
	jobs := []policy.Job{
		stJob(1, "alice", "light", 0, 100, 1),
		stJob(2, "alice", "light", 100, 100, 1),
		stJob(3, "alice", "light", 200, 100, 1),
	}
	usage := map[int64]JobUsage{}
	for id := int64(1); id <= 43; id++ {
		if id > 3 {
			jobs = append(jobs, stJob(id, "alice", "light", 400, 100, 1))
		}
		usage[id] = JobUsage{0.2, 0.1}
	}
	run := func(rule rewrite.Params) Metrics {
		sh := shareOf(0.1, usage)
		sh.Rule = rule
		res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 2, Unit: GPUs}, Policy: shPolicy(t, "fifo"), Share: sh, checkShare: true})
		if err != nil {
			t.Fatal(err)
		}
		return Measure(res, MetricsParams{})
	}
	// A rule sharing only jobs under 1% of a GPU shares none of these.
	off, on := run(rewrite.Params{ShareMaxUtilPct: 1}), run(rewrite.Params{})
	if off.Share.Shared != 0 || on.Share.Shared != 40 || on.Share.MaxPerGPU != 4 {
		t.Fatalf("shared %d without, %d with sharing (up to %d a GPU); want 0, 40 (4)", off.Share.Shared, on.Share.Shared, on.Share.MaxPerGPU)
	}
	// Without: 20 rounds of 100 s. With: 5 rounds of 8 jobs, 4 to a GPU,
	// at speed 1/(1 + 3 × 0.1).
	if want := 1.3; math.Abs(on.Share.Slowdown-want) > 1e-6 || off.Share.Slowdown != 1 {
		t.Errorf("slowdown %g with sharing, %g without; want %g, 1", on.Share.Slowdown, off.Share.Slowdown, want)
	}
	if !(on.AvgWait < off.AvgWait/2) || !(on.Makespan < off.Makespan) || !(on.Share.ComputeUtilization > off.Share.ComputeUtilization) {
		t.Errorf("with sharing: avg wait %.0f s, makespan %.0f s, compute utilization %.3f; without: %.0f s, %.0f s, %.3f",
			on.AvgWait, on.Makespan, on.Share.ComputeUtilization, off.AvgWait, off.Makespan, off.Share.ComputeUtilization)
	}
}

// TestRun_ShareTraceShards: a trace job that asks for shards and no whole
// GPU runs on its shards with sharing on, and is left out without (it asks
// for no GPU), or when it asks for more shards than a GPU has.
func TestRun_ShareTraceShards(t *testing.T) {
	jobs := []policy.Job{stJob(1, "a", "x", 0, 100, 0), stJob(2, "b", "y", 0, 100, 0), stJob(3, "c", "z", 0, 100, 0), stJob(4, "d", "w", 0, 100, 1)}
	jobs[0].Shards, jobs[1].Shards, jobs[2].Shards = 2, 2, 5
	usage := map[int64]JobUsage{1: {0.3, 0.3}, 2: {0.3, 0.3}, 3: {0.3, 0.3}, 4: {1, 1}}
	cluster := Cluster{Nodes: 1, PerNode: 2, Unit: GPUs}
	res, err := Run(jobs, Config{Cluster: cluster, Policy: shPolicy(t, "fifo"), Share: shareOf(0.1, usage), checkShare: true})
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int64]float64{}
	for _, j := range res.Jobs {
		ends[j.ID] = j.End.Sub(shT0).Seconds()
	}
	// Jobs 1 and 2 share one GPU at 1/1.1 speed; job 4 has the other.
	if want := map[int64]float64{1: 110, 2: 110, 4: 100}; !cmp.Equal(want, ends) {
		t.Errorf("ends (-want +got):\n%s", cmp.Diff(want, ends))
	}
	if d := cmp.Diff(map[string]int{SkipTooLarge: 1}, res.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	plain, err := Run(jobs, Config{Cluster: cluster, Policy: shPolicy(t, "fifo")})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{SkipNoUnits: 3}, plain.Skipped); d != "" {
		t.Errorf("skipped without sharing (-want +got):\n%s", d)
	}
}

// TestRun_ShareAllocCountsHeldGPUs: a job larger than a node holds its
// nodes whole, and the GPU time handed out counts every GPU it holds, not
// only those it asked for; its work counts those it uses.
func TestRun_ShareAllocCountsHeldGPUs(t *testing.T) {
	jobs := []policy.Job{stJob(1, "a", "wide", 0, 100, 3)}
	jobs[0].Nodes = 2
	res, err := Run(jobs, Config{Cluster: Cluster{Nodes: 2, PerNode: 2, Unit: GPUs}, Policy: shPolicy(t, "fifo"),
		Share: shareOf(0.1, map[int64]JobUsage{1: {0.5, 0.5}}), checkShare: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := [2]float64{res.Share.AllocGPUSeconds, res.Share.WorkGPUSeconds}, [2]float64{400, 150}; got != want {
		t.Errorf("alloc and work GPU-seconds %v, want %v (4 GPUs held 100 s; 3 used at 50%%)", got, want)
	}
}

// TestRun_ShareSettings: what sharing does not model is refused, named.
func TestRun_ShareSettings(t *testing.T) {
	jobs := []policy.Job{stJob(1, "a", "x", 0, 100, 1)}
	gpu := Cluster{Nodes: 1, PerNode: 2, Unit: GPUs}
	layout, err := ParseLayout("a:nodes=1,per-node=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"easy", Config{Cluster: gpu, Backfill: EASY, Share: shareOf(0.1, nil)}, `backfill "easy" is not modelled`},
		{"preempt", Config{Cluster: gpu, Preempt: true, Share: shareOf(0.1, nil)}, "preemption is not modelled"},
		{"cpus", Config{Cluster: Cluster{Nodes: 1, PerNode: 2, Unit: CPUs}, Share: shareOf(0.1, nil)}, "the cluster must hold GPUs"},
		{"partitions", Config{Cluster: gpu.WithLayout(layout), Share: shareOf(0.1, nil)}, "partitioned clusters are not modelled"},
		{"power", Config{Cluster: gpu, Power: &Power{}, Share: shareOf(0.1, nil)}, "power saving is not modelled"},
		{"one shard", Config{Cluster: gpu, Share: &Share{ShardsPerGPU: 1}}, "1 shards per GPU: want at least 2"},
		{"negative β", Config{Cluster: gpu, Share: &Share{ShardsPerGPU: 4, Interference: -0.1}}, "interference -0.1: want a finite number >= 0"},
		{"light fraction", Config{Cluster: gpu, Share: &Share{ShardsPerGPU: 4, Model: UsageModel{LightFraction: 2}}}, "light fraction 2: want 0 to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Policy = shPolicy(t, "fifo")
			_, err := Run(jobs, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestDrawUsage_Deterministic(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 2000, Users: 20, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	a := DrawUsage(jobs, UsageModel{Seed: 9})
	rev := append([]policy.Job(nil), jobs...)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(rev), func(i, j int) { rev[i], rev[j] = rev[j], rev[i] })
	if d := cmp.Diff(a, DrawUsage(rev, UsageModel{Seed: 9})); d != "" {
		t.Fatalf("usage depends on job order:\n%s", d)
	}
	light := 0
	for _, u := range a {
		if u.Util < 0.01 || u.Util > 1 || u.MemFrac < 0.01 || u.MemFrac > 1 {
			t.Fatalf("usage out of range: %+v", u)
		}
		if u.Util < 0.5 {
			light++
		}
	}
	if frac := float64(light) / float64(len(a)); frac < 0.1 || frac > 0.8 {
		t.Errorf("%.2f of jobs use under half a GPU: the model's 40%% light templates should show", frac)
	}
	if d := cmp.Diff(a, DrawUsage(jobs, UsageModel{Seed: 10})); d == "" {
		t.Error("another seed gave the same usage")
	}
}

// TestPhillyMIX_GPUSharing replays Philly-MIX (120 nodes × 8 GPUs, the
// Chronus artifact's cluster) under fair-qssf without a predictor (the trace
// has no time limits, so every job is costed at the 7-day default) and
// without backfill, without GPU sharing and with it (4 shards per GPU, β
// 0.1 and 0.3), GPU use from UsageModel{Seed: 1}, and logs the comparison
// table (go test -run TestPhillyMIX_GPUSharing -v ./policy/sim). Every arm
// does the same work; sharing must run some jobs on shards and never put
// more on a GPU than its shards allow. `fairway simulate --share` prints
// the same numbers (docs/SIMULATOR.md). The numbers are those of the
// separate shared-GPU engine this option replaced (runShared, e34bb2c):
// folded into Run, the model replays them job for job.
func TestPhillyMIX_GPUSharing(t *testing.T) {
	if testing.Short() {
		t.Skip("Philly-MIX sharing comparison: a few minutes; not in -short")
	}
	jobs, cluster := readShared(t, phillyMIX)
	usage := DrawUsage(jobs, UsageModel{Seed: 1})
	type arm struct {
		name string
		sh   *Share
		// What runShared gave: avg JCT, avg wait, p95 wait, makespan (s);
		// alloc and compute utilization.
		want [4]float64
		util [2]float64
	}
	arms := []arm{
		{"off", &Share{ShardsPerGPU: 4, Interference: DefaultInterference, Usage: usage, Rule: rewrite.Params{ShareMaxUtilPct: 1e-9}},
			[4]float64{475, 215, 477, 28476}, [2]float64{0.815293, 0.389791}},
		{"on, β=0.1", &Share{ShardsPerGPU: 4, Interference: DefaultInterference, Usage: usage},
			[4]float64{432, 161, 475, 27697}, [2]float64{0.795687, 0.400754}},
		{"on, β=0.3", &Share{ShardsPerGPU: 4, Interference: 0.3, Usage: usage},
			[4]float64{457, 166, 427, 27920}, [2]float64{0.799211, 0.397550}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| sharing | jobs | shared | avg JCT (s) | avg wait (s) | p95 wait (s) | makespan (s) | alloc util | compute util | slowdown | max jobs/GPU | mem oversub |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var work []float64
	for _, a := range arms {
		res, err := Run(jobs, Config{Cluster: cluster, Policy: shPolicy(t, "fair-qssf"), Share: a.sh})
		if err != nil {
			t.Fatal(err)
		}
		m := Measure(res, MetricsParams{})
		if m.Jobs != len(jobs)-sumSkipped(res.Skipped) {
			t.Errorf("%s: %d jobs measured of %d", a.name, m.Jobs, len(jobs))
		}
		s := m.Share
		if a.name != "off" && (s.Shared == 0 || s.MaxPerGPU > a.sh.ShardsPerGPU) {
			t.Errorf("%s: %d shared jobs, up to %d per GPU", a.name, s.Shared, s.MaxPerGPU)
		}
		got := [4]float64{math.Round(m.AvgJCT), math.Round(m.AvgWait), math.Round(m.P95Wait), math.Round(m.Makespan)}
		gotUtil := [2]float64{math.Round(s.AllocUtilization*1e6) / 1e6, math.Round(s.ComputeUtilization*1e6) / 1e6}
		if got != a.want || gotUtil != a.util {
			t.Errorf("%s: avg JCT, avg wait, p95 wait, makespan %v, alloc and compute utilization %v; the engine this replaced gave %v, %v",
				a.name, got, gotUtil, a.want, a.util)
		}
		work = append(work, res.Share.WorkGPUSeconds)
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.3f | %.3f | %.3f | %d | %d |\n", a.name, m.Jobs, s.Shared, m.AvgJCT,
			m.AvgWait, m.P95Wait, m.Makespan, s.AllocUtilization, s.ComputeUtilization, s.Slowdown, s.MaxPerGPU, s.MemOversubscribed)
	}
	for i := 1; i < len(work); i++ {
		if math.Abs(work[i]-work[0]) > 1e-6*work[0] {
			t.Errorf("arm %d did %g GPU-s of work, the baseline %g: sharing must not change the work", i, work[i], work[0])
		}
	}
	t.Log(b.String())
}

func sumSkipped(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
