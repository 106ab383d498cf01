package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/google/go-cmp/cmp"
)

// idlePower is Slurm's idle-time rule at SuspendTime 10 minutes, one step:
// after the first step every idle node is powered down.
func idlePower(resume time.Duration) *Power {
	return &Power{NewRule: func(*power.Series) power.Rule { return &power.IdleTime{SuspendTime: 10 * time.Minute} }, Resume: resume}
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
			// SuspendTime of one step powers exactly the step's demand.
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
