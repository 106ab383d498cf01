package serve

import (
	"context"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// TestLab_JobWithoutSubmitTimeDoesNotBlockRecords: slurmrestd lists a job
// without a submit time (unset in its answer). When it starts, the
// prediction made for it cannot be stored (the submit time is part of a
// prediction's key); it must not be buffered, or the database refuses it
// at every retry and every record after it waits for ever, reported as a
// database outage.
func TestLab_JobWithoutSubmitTimeDoesNotBlockRecords(t *testing.T) {
	pool := lab.Get(t).DatabasePool(t)
	store := accounting.New(pool, quietLogger())
	pol, err := policy.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := predict.New("fairway", predict.Params{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, Predictor: pred, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	reader := &fakeReader{}
	r := New(Config{Cluster: "c", Policy: "fifo", Predictor: "fairway", Field: "site_factor", Range: policy.SiteFactorRange()},
		Parts{Source: reader, Sink: &Live{Values: &fakeWriter{}, Recorder: store}, Leader: AlwaysLeader{}, Engine: eng}, quietLogger())
	clock := t0.Add(time.Minute)
	r.now = func() time.Time { return clock }
	nosubmit := job(1, "a", policy.StatePending, 0)
	nosubmit.Submit = time.Time{}
	other := job(2, "b", policy.StatePending, time.Second)
	ctx := context.Background()
	for i, jobs := range [][]slurmctl.Job{{nosubmit, other}, {running(nosubmit, clock), other}, {running(nosubmit, clock), other}} {
		clock = clock.Add(30 * time.Second)
		reader.cl = &slurmctl.Cluster{Jobs: jobs}
		res, err := r.RunCycle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Recorded {
			t.Fatalf("cycle %d: records not shipped with the database up (%d buffered: %v)", i+1, r.buffer.len(), r.buffer.lastErr)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM cycle WHERE cluster = 'c'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d cycle rows stored, want 3", n)
	}
}

func running(j slurmctl.Job, at time.Time) slurmctl.Job {
	j.State, j.Start = policy.StateRunning, at
	return j
}
