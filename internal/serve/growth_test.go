package serve

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// heapAfterGC is the bytes of live heap objects once garbage is collected.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// discardStore takes every record and keeps none, like a database
// that is up, so that what a test measures is what serve keeps.
type discardStore struct{}

func (discardStore) RecordFinished(context.Context, string, []policy.Job) (accounting.Summary, error) {
	return accounting.Summary{}, nil
}
func (discardStore) RecordDecisions(_ context.Context, ds []accounting.Decision) (int, error) {
	return len(ds), nil
}
func (discardStore) RecordCycle(context.Context, accounting.Cycle) error              { return nil }
func (discardStore) RecordPredictions(context.Context, []accounting.Prediction) error { return nil }

type discardPowerRec struct{}

func (discardPowerRec) RecordPowerActions(_ context.Context, as []accounting.PowerAction) (int, error) {
	return len(as), nil
}

// TestPowerSaver_PlanRetainsNothingPerCycle runs power saving for
// thousands of cycles the way serve --dry-run (and a follower) does: every action
// goes to the PowerLive's planner, which carries its plan from cycle to
// cycle. Demand flips every cycle, so every cycle plans power-downs or
// power-ups; what the saver keeps must not grow with them.
func TestPowerSaver_PlanRetainsNothingPerCycle(t *testing.T) {
	const first, last = 1_000, 6_000
	cfg := PowerConfig{Buffer: 1, MaxChangesPerHour: 1 << 20, Step: 10 * time.Minute}
	ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: &fakePower{}}, discardPowerRec{}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink := NewPlanner(discardStore{}, nil)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	actions := 0
	var base uint64
	for k := range last {
		id := int64(1000 + 2*k)
		running := slurmctl.Job{Job: policy.Job{ID: id, State: policy.StateRunning, Nodes: 1}, NodeList: []string{"gpu1"}}
		jobs := []slurmctl.Job{running}
		if k%2 == 1 {
			jobs = append(jobs, slurmctl.Job{Job: policy.Job{ID: id + 1, State: policy.StatePending, Nodes: 3}, Reason: "Resources"})
		}
		rep := ps.Cycle(t.Context(), int64(k+1), now.Add(time.Duration(k)*30*time.Second), powerCluster(jobs...), sink, true)
		actions += len(rep.Applied)
		if k+1 == first {
			base = heapAfterGC()
		}
	}
	if actions < last {
		t.Fatalf("%d actions planned in %d cycles: the demand did not move the plan, the test proves nothing", actions, last)
	}
	grown := int64(heapAfterGC()) - int64(base)
	runtime.KeepAlive(ps) // what it holds is what is measured
	t.Logf("%d actions planned; heap grew %d bytes from cycle %d to %d", actions, grown, first, last)
	if grown > 64<<10 {
		t.Errorf("heap grew %d bytes over %d cycles of planned power actions; want it bounded by the nodes, not the cycles", grown, last-first)
	}
}

// TestRunner_DryRunRewriteRetainsNoResizes runs serve --dry-run with
// resource rewriting: the sink is one Planner for the life of the process
// that hands its records to the database. Every cycle new pending jobs
// get CPUs planned; the Planner must not keep a report per cycle.
func TestRunner_DryRunRewriteRetainsNoResizes(t *testing.T) {
	const cycles = 2_000
	var samples []rewrite.UsageSample
	for i := range 4 {
		samples = append(samples, rewrite.UsageSample{JobID: int64(100 + i), User: "alice", Name: "light", End: t0.Add(-time.Hour),
			State: policy.StateCompleted, GPUs: 1, CPUs: 2, Run: time.Hour, GPUUtilPct: 12, GPUMemPeakMB: 4000, GPUMemTotalMB: 81920, CPUsUsed: -1})
	}
	rw, err := NewRewriter(RewriteConfig{Partitions: []string{"gpu"}, Rules: map[string]bool{"cpus": true},
		Table: filepath.Join(t.TempDir(), "fairway-rewrite.table"), TableMaxAge: 15 * time.Minute, HistoryDays: 30, RefreshEvery: 10,
		ShareMaxUtil: 50, MinHistory: 3, ShardsPerGPU: 4, Cluster: "c"}, quietLogger(), &fakeUsage{samples}, &fakeResizer{})
	if err != nil {
		t.Fatal(err)
	}
	plan := NewPlanner(discardStore{}, nil)
	src := &fakeReader{}
	r := New(Config{Cluster: "c", Policy: "fifo", Range: policy.SiteFactorRange(), Field: "site_factor"},
		Parts{Source: src, Sink: plan, Leader: AlwaysLeader{}, Engine: fifoEngine(t), Rewriter: rw}, quietLogger())
	clock := t0
	r.now = func() time.Time { return clock }
	resized := 0
	for k := range cycles {
		clock = clock.Add(30 * time.Second)
		// Each job waits ten cycles; ten are pending at a time.
		var jobs []slurmctl.Job
		for id := int64(max(0, k-9)); id <= int64(k); id++ {
			jobs = append(jobs, pendingJob(1000+id, "alice", "light", "gpu", 1, 1))
		}
		src.cl = rewriteCluster(jobs...)
		res, err := r.RunCycle(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		resized += len(res.Rewrite.Resize.Applied)
	}
	if resized < cycles {
		t.Fatalf("%d resizes planned in %d cycles: the test proves nothing", resized, cycles)
	}
	if len(plan.Resizes) != 0 {
		t.Errorf("the dry run's Planner keeps %d resize reports after %d cycles; want none (they are in each cycle's report)", len(plan.Resizes), cycles)
	}
}
