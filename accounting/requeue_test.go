package accounting_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
)

// The requeue captures (testdata/README.md): one job, requeued while it ran
// (scontrol requeue), then run to the end. slurmdbd keeps both runs, each
// with its own submit, start and end: 22.05 names the first REQUEUED,
// 26.05.3 PENDING flagged REQUEUED, through sacct and slurmrestd alike.
var requeueCaptures = []string{
	"testdata/sacct-requeue-22.05.json",
	"testdata/sacct-requeue-26.05.3.json",
	"testdata/slurmdb-job-requeue-26.05.3.json",
}

// TestParseSacctJSON_RequeuedRun: the run a requeue ended is a finished run
// (PREEMPTED) with its own times, beside the job's next run. Both used to
// be read with the first as never finished, so its GPU time was dropped.
func TestParseSacctJSON_RequeuedRun(t *testing.T) {
	for _, path := range requeueCaptures {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := accounting.ParseSacctJSON(path, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Jobs) != 2 || len(doc.Bad) != 0 {
				t.Fatalf("%d jobs, %d bad: want the two runs", len(doc.Jobs), len(doc.Bad))
			}
			first, last := doc.Jobs[0], doc.Jobs[1]
			if first.ID != last.ID || !first.Submit.Before(last.Submit) {
				t.Fatalf("runs %d submitted %v and %d submitted %v: want one job's two runs, in order", first.ID, first.Submit, last.ID, last.Submit)
			}
			if first.State != policy.StatePreempted || !first.State.Finished() || first.Start.IsZero() || !first.End.After(first.Start) || first.GPUs != 1 {
				t.Errorf("requeued run: %v from %v to %v, %d GPUs; want PREEMPTED, finished, with its start, end and 1 GPU", first.State, first.Start, first.End, first.GPUs)
			}
			if last.State != policy.StateCompleted || last.Start.Before(first.End) {
				t.Errorf("next run: %v started %v; want COMPLETED, after the requeued run ended (%v)", last.State, last.Start, first.End)
			}
		})
	}
}

// TestImport_RequeuedRun stores both runs of the captured job: the
// requeued one under its own submit time, so its GPU-seconds reach the
// history that fair share reads.
func TestImport_RequeuedRun(t *testing.T) {
	data, err := os.ReadFile(requeueCaptures[1])
	if err != nil {
		t.Fatal(err)
	}
	store, pool := freshStore(t)
	sum, _, err := store.ImportFile(context.Background(), strings.NewReader(string(data)),
		accounting.FileImport{Format: accounting.FormatSacctJSON, Name: "sacct.json"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unfinished != 0 || sum.Rejected != 0 {
		t.Errorf("import: %+v; want both runs stored, none unfinished or rejected", sum)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE state = 'PREEMPTED' AND end_time > start_time`); n != 1 {
		t.Errorf("%d requeued runs stored, want 1", n)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE state = 'COMPLETED'`); n != 1 {
		t.Errorf("%d completed runs stored, want 1", n)
	}
}

// TestSyncHistory_LabRequeuedRun requeues a running job on the lab and
// pulls the window, through sacct and through slurmrestd: the run the
// requeue ended is in the history, PREEMPTED, with its GPU. (sacct needs
// -D for it on 26.05, which prints only a job's last run without it.) The
// job's next run waits out Slurm's requeue delay; the test cancels it.
func TestSyncHistory_LabRequeuedRun(t *testing.T) {
	for _, via := range []string{"sacct", "slurmrestd"} {
		t.Run(via, func(t *testing.T) {
			e := lab.Get(t)
			src := labHistory(t, e, via)
			store, pool := freshStore(t)
			ctx := context.Background()
			began := time.Now().Add(-2 * time.Second).Truncate(time.Second)
			id := e.Submit(t, "alice", "-J", randomTag("fwrq-"), "-p", e.Partition, "--gres=gpu:1", "--requeue", "--wrap", "sleep 300")
			e.WaitState(t, id, 3*time.Minute, "RUNNING")
			e.Run(t, "", "scontrol", "requeue", strconv.FormatInt(id, 10))
			// Once sacct's last record of the job is its next run, pending,
			// slurmdbd holds both runs: a query that shows only a job's last
			// record (sacct without -D on 26.05) misses the first from then on.
			if st := e.WaitState(t, id, time.Minute, "PENDING"); st != "PENDING" {
				t.Fatalf("job %d is %s after scontrol requeue, want its next run PENDING", id, st)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
				until := time.Now().Add(time.Second).Truncate(time.Second)
				opt := accounting.SyncOptions{Cluster: e.Cluster, Initial: began, Now: until, Overlap: until.Sub(began)}
				if _, _, _, err := store.SyncHistory(ctx, src, opt); err != nil {
					t.Fatal(err)
				}
				n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = $2 AND state = 'PREEMPTED' AND gpus = 1 AND start_time IS NOT NULL AND end_time >= start_time`, e.Cluster, id)
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d PREEMPTED runs of job %d in the history after 30 s of syncs, want 1", n, id)
				}
			}
		})
	}
}

// TestParseSacctJSON_FlagFirst: a state list that puts a flag before the
// base state reads as the base state, as the live reader takes it; it was
// refused as "unknown state". (The captured 26.05.3 answer, its last run's
// state reordered.)
func TestParseSacctJSON_FlagFirst(t *testing.T) {
	data, err := os.ReadFile(requeueCaptures[1])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	jobs := doc["jobs"].([]any)
	jobs[1].(map[string]any)["state"].(map[string]any)["current"] = []any{"EXPEDITING", "COMPLETED"}
	in, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := accounting.ParseSacctJSON("s.json", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Bad) != 0 || len(got.Jobs) != 2 || got.Jobs[1].State != policy.StateCompleted {
		t.Errorf("%d jobs (%v), bad %v; want the last run COMPLETED", len(got.Jobs), got.Jobs, got.Bad)
	}
}
