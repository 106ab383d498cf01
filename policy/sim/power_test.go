package sim

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/google/go-cmp/cmp"
)

// idlePower is Slurm's idle-time rule at SuspendTime 10 minutes, each
// node on its own idle clock: a node never used is off at 600 s.
func idlePower(resume time.Duration) *Power {
	return &Power{IdleAfter: 10 * time.Minute, Resume: resume}
}

// TestRun_PowerResumeDelay: job 1 keeps node 0 busy; at t=600 s the idle
// nodes 1–3 are powered down; later jobs land on them and wait the 300 s
// resume.
func TestRun_PowerResumeDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perNode int
		jobs    []policy.Job
		want    map[int64]float64
		resumes int
		delayed int
		delay   time.Duration
	}{
		// Job 2 lands on powered-down node 1: it starts 300 s late.
		{"one node resumed", 1, []policy.Job{smJob(1, "a", 0, 1, 3600, 3600), smJob(2, "b", 1000, 1, 600, 600)},
			map[int64]float64{1: 0, 2: 1300}, 1, 1, 300 * time.Second},
		// Job 2 needs two powered-down nodes: both resume together, one
		// delay of 300 s, not two.
		{"two nodes, one delay", 1, []policy.Job{smJob(1, "a", 0, 1, 3600, 3600), smJob(2, "b", 1000, 2, 600, 600)},
			map[int64]float64{1: 0, 2: 1300}, 2, 1, 300 * time.Second},
		// Job 3 is placed on node 1 while it boots for job 2: it waits the
		// 200 s left, and node 1 is resumed once.
		{"booting node charged once", 2, []policy.Job{smJob(1, "a", 0, 2, 3600, 3600), smJob(2, "b", 1000, 1, 600, 600), smJob(3, "c", 1100, 1, 600, 600)},
			map[int64]float64{1: 0, 2: 1300, 3: 1300}, 1, 2, 500 * time.Second},
		// Before the first step ends every node is up: no delay.
		{"all up at the start", 1, []policy.Job{smJob(1, "a", 0, 1, 3600, 3600), smJob(2, "b", 100, 1, 600, 600)},
			map[int64]float64{1: 0, 2: 100}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Cluster: Cluster{Nodes: 4, PerNode: tc.perNode, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil),
				Power: idlePower(300 * time.Second)}
			got, res := smStarts(t, tc.jobs, cfg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
			p := res.Power
			if p == nil {
				t.Fatal("no power result")
			}
			if p.Resumes != tc.resumes || p.DelayedJobs != tc.delayed || p.Delay != tc.delay {
				t.Errorf("resumes %d, delayed jobs %d, delay %v; want %d, %d, %v", p.Resumes, p.DelayedJobs, p.Delay, tc.resumes, tc.delayed, tc.delay)
			}
			// Node 0 is busy throughout; the others, never used, are off at
			// the first step's end.
			if len(p.Steps) == 0 || p.Steps[0].Powered != p.Steps[0].Active {
				t.Errorf("steps %+v: want the first step to end with its busy nodes powered, no more", p.Steps)
			}
		})
	}
}

// TestRun_PowerProperties replays random traces with the idle-time rule:
// with no resume delay the schedule is the one without power saving (the
// power model takes nothing else from the jobs); with a delay R no job
// waits more than R for a boot, the job that resumes a node waits it
// whole, and each resume is one node of lack in its step.
func TestRun_PowerProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		var jobs []policy.Job
		at := 0.0
		for id := int64(1); id <= 40; id++ {
			at += r.Float64() * 900
			run := 60 + r.Float64()*3000
			jobs = append(jobs, smJob(id, "u", at, 1+r.IntN(4), run, run*1.5))
		}
		cluster := Cluster{Nodes: 6, PerNode: 2, Unit: GPUs}
		pol := func() policy.Policy { return smPolicy(t, "fifo", nil) }
		base, _ := smStarts(t, jobs, Config{Cluster: cluster, Policy: pol()})
		zero, _ := smStarts(t, jobs, Config{Cluster: cluster, Policy: pol(), Power: idlePower(0)})
		if diff := cmp.Diff(base, zero); diff != "" {
			t.Fatalf("trial %d: resume 0 changed the schedule (-without +with):\n%s", trial, diff)
		}
		const R = 300 * time.Second
		res, err := Run(jobs, Config{Cluster: cluster, Policy: pol(), Power: idlePower(R)})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Power
		if p.Delay > time.Duration(p.DelayedJobs)*R || p.Resumes > 0 && p.Delay < R || p.DelayedJobs > 0 && p.Resumes == 0 {
			t.Errorf("trial %d: boot wait %v of %d jobs over %d resumes of %v", trial, p.Delay, p.DelayedJobs, p.Resumes, R)
		}
		var lack int
		for _, s := range p.Steps {
			lack += s.Lack
		}
		if lack != p.Resumes {
			t.Errorf("trial %d: the steps' lack %d, want the %d resumes", trial, lack, p.Resumes)
		}
		if p.Resumes > 0 && p.DelayedJobs == 0 {
			t.Errorf("trial %d: %d resumes delayed no job", trial, p.Resumes)
		}
	}
}

func TestRun_PowerRejectsPreempt(t *testing.T) {
	_, err := Run([]policy.Job{smJob(1, "a", 0, 1, 10, 10)}, Config{Cluster: Cluster{Nodes: 1, PerNode: 1, Unit: GPUs},
		Policy: smPolicy(t, "fifo", nil), Preempt: true, Power: idlePower(time.Minute)})
	if err == nil {
		t.Fatal("power saving with preemption: no error")
	}
}

// TestRun_PowerIdleClockPerNode: a node is powered down SuspendTime after
// its own last job ended, not at a step's end from the step's busiest
// instant. Job 1 uses node 0 for the first minute; under SuspendTime 10m
// node 0 is off at 660 s (node 1, never used, at 600 s), so job 2 at
// 900 s waits the 300 s resume. On step maxima node 0 counted busy in the
// first step and stayed up until 1200 s, and job 2 started at once.
func TestRun_PowerIdleClockPerNode(t *testing.T) {
	jobs := []policy.Job{smJob(1, "a", 0, 1, 60, 60), smJob(2, "b", 900, 1, 60, 60)}
	cfg := Config{Cluster: Cluster{Nodes: 2, PerNode: 1, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil),
		Power: idlePower(300 * time.Second)}
	got, res := smStarts(t, jobs, cfg)
	if diff := cmp.Diff(map[int64]float64{1: 0, 2: 1200}, got); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	if p := res.Power; p == nil || p.Resumes != 1 || p.DelayedJobs != 1 {
		t.Fatalf("power %+v: want one node resumed for one job", p)
	}
	// Node-hours off as the nodes were: node 1 from 600 s, node 0 from
	// 660 s to 900 s and again from 1860 s (job 2 ends at 1260 s), to the
	// end of the last step (1800 s).
	want := (1800.0 - 600 + 900 - 660) / 3600
	if m := res.Power.Metrics; m.NodeHoursOff < want-1e-9 || m.NodeHoursOff > want+1e-9 {
		t.Errorf("%.4f node-hours off, want %.4f", m.NodeHoursOff, want)
	}
}

// TestRun_PowerHybridHolds: the hybrid's count keeps a node the idle
// clock would power down. Job 1 holds node 0 until 700 s; node 1, never
// used, is off at 60 s (no count is known before the first step ends at
// 600 s). From 600 s the count is 2: node 1 is not resumed (NoAhead), but
// node 0, idle from 700 s, is held, so job 2 at 900 s starts at once;
// with the idle clock alone node 0 is off at 760 s and job 2 waits 300 s.
func TestRun_PowerHybridHolds(t *testing.T) {
	jobs := []policy.Job{smJob(1, "a", 0, 1, 700, 700), smJob(2, "b", 900, 1, 60, 60)}
	hold := &Power{IdleAfter: time.Minute, Resume: 300 * time.Second, NoAhead: true, NewRule: func(*power.Series) power.Rule {
		return &ForecastFloor{Lookahead: 1, Label: "hold 2", Forecast: func(int) []float64 { return []float64{2} }}
	}}
	for _, tc := range []struct {
		name  string
		power *Power
		want  float64
	}{
		{"held by the count", hold, 900},
		{"idle clock alone", &Power{IdleAfter: time.Minute, Resume: 300 * time.Second}, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Cluster: Cluster{Nodes: 2, PerNode: 1, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil), Power: tc.power}
			got, _ := smStarts(t, jobs, cfg)
			if diff := cmp.Diff(map[int64]float64{1: 0, 2: tc.want}, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNodeUsage: a minute at a time from the first submit, the nodes with
// a running job (job 1 on one node for 3 minutes from 0; job 2 on two
// nodes for 2 minutes from minute 1) and the cluster's 4 nodes.
func TestNodeUsage(t *testing.T) {
	w := &Workload{Name: "t", Jobs: []policy.Job{smJob(1, "a", 0, 1, 180, 180), smJob(2, "b", 60, 2, 120, 120)},
		Cluster: Cluster{Nodes: 4, PerNode: 1, Unit: GPUs}}
	got, err := NodeUsage(t.Context(), w, CompareConfig{Predictor: "limit", Backfill: EASY}, "fifo", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var active []int
	for i, x := range got {
		if x.Total != 4 || !x.Time.Equal(smAt(float64(60*i))) {
			t.Errorf("step %d: %v, %d nodes; want %v, 4", i, x.Time, x.Total, smAt(float64(60*i)))
		}
		active = append(active, x.Active)
	}
	if diff := cmp.Diff([]int{1, 3, 3}, active[:3]); diff != "" {
		t.Errorf("active (-want +got)\n%s", diff)
	}
	if _, err := NodeUsage(t.Context(), w, CompareConfig{Predictor: "limit", Backfill: EASY}, "fifo", 0); err == nil {
		t.Error("step 0: no error")
	}
}

// TestNodeUsage_Pending: the node sequence carries, each minute, the
// nodes the jobs queued at its end ask for. On 4 nodes of 2 GPUs, job 1
// takes 3 GPUs (2 nodes) for 3 minutes from 0; job 2, 5 GPUs (3 nodes)
// submitted at 0:30, waits for it and starts at 3:00: queued at the ends
// of minutes 0, 1 and 2 (it starts at that last instant), not after.
func TestNodeUsage_Pending(t *testing.T) {
	w := &Workload{Name: "t", Jobs: []policy.Job{smJob(1, "a", 0, 3, 180, 180), smJob(2, "b", 30, 5, 120, 120)},
		Cluster: Cluster{Nodes: 4, PerNode: 2, Unit: GPUs}}
	got, err := NodeUsage(t.Context(), w, CompareConfig{Predictor: "limit", Backfill: EASY}, "fifo", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var pending []int
	for _, x := range got {
		pending = append(pending, x.Pending)
	}
	if diff := cmp.Diff([]int{3, 3, 3, 0, 0, 0}, pending); diff != "" {
		t.Errorf("pending (-want +got)\n%s", diff)
	}
}

// TestUsageForecast: the rules of simulate --power read the GBT forecast
// of power eval (power.Retrained) once two weeks of simulated usage exist,
// and the same time yesterday before.
func TestUsageForecast(t *testing.T) {
	l, err := power.LagsFor(10 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 20 * l.Day
	s := &power.Series{Start: smAt(0), Step: 10 * time.Minute, Active: make([]int, n), Total: make([]int, n)}
	for i := range n {
		s.Active[i], s.Total[i] = 10+r.IntN(20)+10*(i%l.Day/(l.Day/2)), 64
	}
	fc := usageForecast(s, l, 3)
	yesterday := func(i int) []float64 {
		out := make([]float64, 3)
		power.Seasonal{Period: l.Day}.Forecast(s, i, out)
		return out
	}
	if got := fc(3 * l.Day); !cmp.Equal(got, yesterday(3*l.Day)) {
		t.Errorf("after 3 days: %v, want the same time yesterday %v", got, yesterday(3*l.Day))
	}
	ref := power.NewRetrained(l)
	want := make([]float64, 3)
	ref.Forecast(s, 15*l.Day, want)
	if got := fc(15 * l.Day); !cmp.Equal(got, want) || cmp.Equal(got, yesterday(15*l.Day)) {
		t.Errorf("after 15 days: %v, want the GBT's %v, not the same time yesterday %v", got, want, yesterday(15*l.Day))
	}
}

// TestRun_PowerNowcastRamp: every node is off by 660 s; from 3600 s a
// one-node job arrives every minute for 12 minutes (a ramp). Under the
// idle clock alone each job resumes its own node and waits the whole
// 300 s boot. With the trend nowcast (gain 2 over 2 minutes, after 2
// lacking minutes) the third minute of the ramp resumes nodes ahead, the
// later jobs land on nodes already booting, and the boot wait drops.
// Once the ramp stops, the nodes resumed ahead that no job took go back
// down Expire after they came up.
func TestRun_PowerNowcastRamp(t *testing.T) {
	jobs := []policy.Job{smJob(100, "a", 0, 1, 60, 60)} // the origin: the simulation starts at its submit
	for i := range 12 {
		jobs = append(jobs, smJob(int64(i+1), "a", float64(3600+60*i), 1, 7200, 7200))
	}
	nc := power.Nowcast{Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute, Gain: 2}
	run := func(nc power.Nowcast) *PowerResult {
		t.Helper()
		cfg := Config{Cluster: Cluster{Nodes: 40, PerNode: 1, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil),
			Power: &Power{IdleAfter: 10 * time.Minute, Resume: 300 * time.Second, Nowcast: nc}}
		_, res := smStarts(t, jobs, cfg)
		if res.Power == nil {
			t.Fatal("no power result")
		}
		return res.Power
	}
	off, on := run(power.Nowcast{}), run(nc)
	if off.AheadResumes != 0 || off.Delay != 12*300*time.Second {
		t.Errorf("idle clock alone: %d ahead resumes, boot wait %v; want 0 and 12 × 300 s", off.AheadResumes, off.Delay)
	}
	if on.AheadResumes == 0 || on.Delay >= off.Delay*2/3 {
		t.Errorf("with the nowcast: %d ahead resumes, boot wait %v; want some, and under two thirds of %v", on.AheadResumes, on.Delay, off.Delay)
	}
	if on.AheadExpired == 0 || on.AheadExpired >= on.AheadResumes {
		t.Errorf("with the nowcast: %d of %d ahead resumes went back down unused; want some, not all", on.AheadExpired, on.AheadResumes)
	}
	t.Logf("boot wait %v → %v; %d ahead resumes, %d expired unused", off.Delay, on.Delay, on.AheadResumes, on.AheadExpired)
}

// TestRun_PowerNowcastNeedsClock: the nowcast without an idle clock, or
// with a negative setting, is refused with a reason.
func TestRun_PowerNowcastNeedsClock(t *testing.T) {
	for _, p := range []*Power{
		{Nowcast: power.Nowcast{Window: time.Minute, Gain: 1}, NewRule: func(*power.Series) power.Rule { return &power.IdleTime{SuspendTime: time.Minute} }},
		{IdleAfter: time.Minute, Nowcast: power.Nowcast{Window: time.Minute, Gain: -1}},
	} {
		cfg := Config{Cluster: Cluster{Nodes: 2, PerNode: 1, Unit: GPUs}, Policy: smPolicy(t, "fifo", nil), Power: p}
		if _, err := Run([]policy.Job{smJob(1, "a", 0, 1, 60, 60)}, cfg); err == nil {
			t.Errorf("Run with %+v: no error", p.Nowcast)
		}
	}
}

// TestWritePowerText_Nowcast: the nowcast's line appears for the rows
// that resumed ahead, and no table without one gains a line.
func TestWritePowerText_Nowcast(t *testing.T) {
	rows := []PowerRow{{Rule: "no power saving", AvgWait: 10},
		{Rule: "hybrid 5m, buffer 0", Power: &PowerResult{}},
		{Rule: "hybrid 5m, buffer 0, ramp", Power: &PowerResult{AheadResumes: 7, AheadExpired: 3}}}
	var with, without strings.Builder
	if err := WritePowerText(&with, "fifo", time.Minute, rows); err != nil {
		t.Fatal(err)
	}
	if err := WritePowerText(&without, "fifo", time.Minute, rows[:2]); err != nil {
		t.Fatal(err)
	}
	want := "trend nowcast, hybrid 5m, buffer 0, ramp: 7 nodes resumed ahead of demand (not in resumed nodes), 3 of them went back down unused\n"
	if !strings.HasSuffix(with.String(), want) || strings.Count(with.String(), "trend nowcast") != 1 {
		t.Errorf("with the nowcast:\n%s\nwant it to end with %q, once", with.String(), want)
	}
	if strings.Contains(without.String(), "trend nowcast") {
		t.Errorf("without the nowcast:\n%s\nwant no nowcast line", without.String())
	}
}
