package sim

import (
	"fmt"
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

func shareParams() rewrite.Params { return rewrite.Params{ShardsPerGPU: 4} }

// TestRunShared_OffIsRun: with sharing off, runShared is Run's Slurm model
// without backfill, job for job.
func TestRunShared_OffIsRun(t *testing.T) {
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
			got, err := runShared(jobs, Config{Cluster: cluster, Policy: shPolicy(t, name)}, shareConfig{Rewrite: shareParams(),
				Usage: synthUsage(jobs, usageModel{Seed: 1}), Interference: defaultInterference})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want.Jobs, got.Jobs); d != "" {
				t.Errorf("jobs (-Run +runShared):\n%s", d)
			}
			if got.Shared != 0 || got.MaxPerGPU != 1 || got.Cycles != want.Cycles {
				t.Errorf("shared %d, max per GPU %d, cycles %d (Run %d)", got.Shared, got.MaxPerGPU, got.Cycles, want.Cycles)
			}
		})
	}
}

// TestRunShared_Interference checks the model on one GPU. Three measured
// whole-GPU runs of alice's "light" (20% of the GPU, 10% of its memory)
// make the share rule give later ones 1 of 4 shards; two such jobs then
// share the GPU.
func TestRunShared_Interference(t *testing.T) {
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
	}{{
		// Both start at 400, utilizations sum to 0.4: only β slows them,
		// 100 s of work at 1/1.1 speed.
		name: "light pair", util: 0.2, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 510, 5: 510},
	}, {
		// Heavier than their history (0.8 each): the GPU is time-sliced,
		// speed 1/(1.6 × 1.1).
		name: "oversubscribed", util: 0.8, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 576, 5: 576},
	}, {
		// Job 4 runs alone for 50 s, then both at 1/1.1: job 4 has 50 s of
		// work left, done at 505; job 5 did 50 s of work by then and ends
		// alone 50 s later.
		name: "speeds change as jobs come and go", util: 0.2, beta: 0.1,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 450, 100, 1)},
		wantEnds: map[int64]float64{4: 505, 5: 555},
	}, {
		name: "no interference", util: 0.2, beta: 0,
		jobs:     []policy.Job{stJob(4, "alice", "light", 400, 100, 1), stJob(5, "alice", "light", 400, 100, 1)},
		wantEnds: map[int64]float64{4: 500, 5: 500},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := append(append([]policy.Job{}, history...), tt.jobs...)
			usage := map[int64]jobUsage{1: {0.2, 0.1}, 2: {0.2, 0.1}, 3: {0.2, 0.1}, 4: {tt.util, 0.1}, 5: {tt.util, 0.1}}
			res, err := runShared(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 1, Unit: GPUs}, Policy: shPolicy(t, "fifo")},
				shareConfig{On: true, Rewrite: shareParams(), Usage: usage, Interference: tt.beta})
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]float64{}
			for _, j := range res.Jobs {
				if j.ID >= 4 {
					got[j.ID] = math.Round(j.End.Sub(shT0).Seconds())
				}
			}
			if d := cmp.Diff(tt.wantEnds, got); d != "" {
				t.Errorf("ends (-want +got):\n%s", d)
			}
			if res.Shared != 2 || res.MaxPerGPU != 2 {
				t.Errorf("shared %d, max per GPU %d; want 2, 2", res.Shared, res.MaxPerGPU)
			}
			// Work is what the jobs needed, however slowed: 5 jobs × 100 s.
			wantWork := 3*0.2*100 + 2*tt.util*100
			if math.Abs(res.WorkGPUSeconds-wantWork) > 1e-6 {
				t.Errorf("work %g GPU-s, want %g", res.WorkGPUSeconds, wantWork)
			}
		})
	}
}

// TestRunShared_Guards: heavy history is never shared, multi-GPU jobs are
// never shared, a GPU never holds more shards than it has, and memory
// oversubscription is counted.
func TestRunShared_Guards(t *testing.T) {
	var jobs []policy.Job
	usage := map[int64]jobUsage{}
	id := int64(0)
	add := func(user, name string, submit float64, gpus int, u jobUsage) {
		id++
		jobs = append(jobs, stJob(id, user, name, submit, 100, gpus))
		usage[id] = u
	}
	for i := range 3 {
		add("alice", "light", float64(100*i), 1, jobUsage{0.1, 0.3})
		add("bob", "heavy", float64(100*i), 1, jobUsage{0.9, 0.3})
		add("carol", "wide", float64(100*i), 2, jobUsage{0.1, 0.1})
	}
	for range 6 { // light jobs whose memory turns out heavier than history
		add("alice", "light", 400, 1, jobUsage{0.1, 0.45})
	}
	add("bob", "heavy", 400, 1, jobUsage{0.9, 0.3})
	add("carol", "wide", 400, 2, jobUsage{0.1, 0.1})
	var perGPU int
	res, err := runShared(jobs, Config{Cluster: Cluster{Nodes: 1, PerNode: 4, Unit: GPUs}, Policy: shPolicy(t, "fifo"),
		OnCycle: func(o *policy.Observation, _ *policy.Snapshot, _ []policy.Score) {
			for _, j := range o.Pending {
				if j.Shards > 0 && (j.User != "alice" || j.Shards >= 4) {
					t.Errorf("job %d of %s asks for %d shards", j.ID, j.User, j.Shards)
				}
			}
		}}, shareConfig{On: true, Rewrite: shareParams(), Usage: usage, Interference: defaultInterference})
	if err != nil {
		t.Fatal(err)
	}
	perGPU = res.MaxPerGPU
	// 0.3 memory × 1.25 → 2 of 4 shards: two light jobs per GPU, whose
	// 0.45 + 0.45 memory oversubscribes nothing; none are placed 3 to a GPU.
	if res.Shared != 6 || perGPU != 2 || res.MemOversubscribed != 0 {
		t.Errorf("shared %d, max per GPU %d, memory oversubscribed %d; want 6, 2, 0", res.Shared, perGPU, res.MemOversubscribed)
	}
}

func TestSynthUsage_Deterministic(t *testing.T) {
	jobs, err := Synth(SynthParams{Jobs: 2000, Users: 20, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	a := synthUsage(jobs, usageModel{Seed: 9})
	rev := append([]policy.Job(nil), jobs...)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(rev), func(i, j int) { rev[i], rev[j] = rev[j], rev[i] })
	if d := cmp.Diff(a, synthUsage(rev, usageModel{Seed: 9})); d != "" {
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
	if d := cmp.Diff(a, synthUsage(jobs, usageModel{Seed: 10})); d == "" {
		t.Error("another seed gave the same usage")
	}
}

// TestPhillyMIX_GPUSharing replays Philly-MIX (120 nodes × 8 GPUs, the
// Chronus artifact's cluster) under fair-qssf without a predictor (the trace
// has no time limits, so every job is costed at the 7-day default) and
// without backfill, with GPU sharing off and on (4 shards per GPU, β 0.1 and
// 0.3), GPU use from usageModel{Seed: 1}, and logs the comparison table (go
// test -run TestPhillyMIX_GPUSharing -v ./policy/sim). Both arms do the same
// work; sharing must run some jobs on shards and never put more on a GPU than
// its shards allow.
func TestPhillyMIX_GPUSharing(t *testing.T) {
	if testing.Short() {
		t.Skip("Philly-MIX sharing comparison: a few minutes; not in -short")
	}
	jobs, cluster := readShared(t, phillyMIX)
	usage := synthUsage(jobs, usageModel{Seed: 1})
	type arm struct {
		name string
		sh   shareConfig
	}
	arms := []arm{
		{"off", shareConfig{Rewrite: shareParams(), Usage: usage, Interference: defaultInterference}},
		{"on, β=0.1", shareConfig{On: true, Rewrite: shareParams(), Usage: usage, Interference: defaultInterference}},
		{"on, β=0.3", shareConfig{On: true, Rewrite: shareParams(), Usage: usage, Interference: 0.3}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| sharing | jobs | shared | avg JCT (s) | avg wait (s) | p95 wait (s) | makespan (s) | alloc util | compute util | max jobs/GPU | mem oversub |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	var work []float64
	for _, a := range arms {
		res, err := runShared(jobs, Config{Cluster: cluster, Policy: shPolicy(t, "fair-qssf")}, a.sh)
		if err != nil {
			t.Fatal(err)
		}
		m := measureShared(res, MetricsParams{})
		if m.Jobs != len(jobs)-sumSkipped(res.Skipped) {
			t.Errorf("%s: %d jobs measured of %d", a.name, m.Jobs, len(jobs))
		}
		if a.sh.On && (m.Shared == 0 || m.MaxPerGPU > a.sh.Rewrite.ShardsPerGPU) {
			t.Errorf("%s: %d shared jobs, up to %d per GPU", a.name, m.Shared, m.MaxPerGPU)
		}
		work = append(work, res.WorkGPUSeconds)
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.3f | %.3f | %d | %d |\n", a.name, m.Jobs, m.Shared, m.AvgJCT,
			m.AvgWait, m.P95Wait, m.Makespan, m.AllocUtilization, m.ComputeUtilization, m.MaxPerGPU, m.MemOversubscribed)
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
