package serve

import (
	"context"
	"path/filepath"
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

// TestLab_RefusedRecordsSetAside: PostgreSQL refuses a decision whose
// policy is not UTF-8 (SQLSTATE 22021) and a cycle row starting before
// 4713 BC (22008). Both are set aside in a refused file; every other
// record of the batch, before and after them, is stored.
func TestLab_RefusedRecordsSetAside(t *testing.T) {
	pool := lab.Get(t).DatabasePool(t)
	store := accounting.New(pool, quietLogger())
	bt := refusedBatch()
	bt.Decisions[6].Policy = "fifo\xff"
	bt.Cycles[1].Started = time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	b := recordBuffer{limit: 1000, dir: dir, mem: bt}
	ctx := context.Background()
	if !b.flush(ctx, store, quietLogger()) {
		t.Fatalf("flush failed: %v", b.lastErr)
	}
	var decisions, seven, cycles, jobs, preds int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM decision WHERE job_id <> 7), (SELECT count(*) FROM decision WHERE job_id = 7),
	(SELECT count(*) FROM job), (SELECT count(*) FROM prediction)`).Scan(&decisions, &seven, &jobs, &preds); err != nil {
		t.Fatal(err)
	}
	if decisions != 19 || seven != 0 || jobs != 2 || preds != 1 {
		t.Errorf("stored %d decisions other than job 7's, %d of job 7, %d jobs, %d predictions; want 19, 0, 2, 1", decisions, seven, jobs, preds)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM cycle WHERE cycle IN (1, 3)`).Scan(&cycles); err != nil || cycles != 2 {
		t.Errorf("%d of cycle rows 1 and 3 stored (%v), want 2", cycles, err)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "*.fairway-refused"))
	if len(aside) != 1 {
		t.Fatalf("refused files %v, want one", aside)
	}
	if got, err := readSpill(aside[0]); err != nil || got.len() != 2 || got.Decisions[0].JobID != 7 || got.Cycles[0].Cycle != 2 {
		t.Errorf("refused file holds %+v (%v), want decision 7 and cycle row 2", got, err)
	}
}
