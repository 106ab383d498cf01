package accounting_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
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
