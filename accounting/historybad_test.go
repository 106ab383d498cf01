package accounting_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/google/go-cmp/cmp"
)

// fakeSacct is a SacctRunner that prints a fixed document.
type fakeSacct struct{ out []byte }

func (f fakeSacct) SacctJobsJSON(context.Context, string, string, time.Time, time.Time) ([]byte, error) {
	return f.out, nil
}

// spoilJob returns the sacct --json document at path with job id's state
// replaced by state, and the capture's time.
func spoilJob(t *testing.T, path string, id float64, state any) ([]byte, time.Time) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	spoiled := false
	for _, ji := range doc["jobs"].([]any) {
		if j := ji.(map[string]any); j["job_id"].(float64) == id {
			j["state"].(map[string]any)["current"] = state
			spoiled = true
		}
	}
	if !spoiled {
		t.Fatalf("%s has no job %v", path, id)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	at, err := os.ReadFile(filepath.Join(filepath.Dir(path), "captured-at.txt"))
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse(time.RFC3339, strings.TrimSpace(string(at)))
	if err != nil {
		t.Fatal(err)
	}
	return out, now
}

// TestSacctHistory_OneBadRecord: `sacct --json` of 24.11.7 and 26.05.3 with
// one finished job in a state this Fairway does not know (a later Slurm's).
// The other finished jobs must still be read, and the bad one handed back
// to be counted, not fail the whole read: that failed every ingest (even
// with --skip-bad) and every serve sync of the window for good, since the
// watermark never moved past it.
func TestSacctHistory_OneBadRecord(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	for _, rel := range []string{"slurm-24.11.7", "slurm-26.05.3"} {
		t.Run(rel, func(t *testing.T) {
			out, now := spoilJob(t, filepath.Join(root, rel, "cli", "sacct.json"), 3, []any{"SOME_NEW_STATE"})
			h := &accounting.SacctHistory{Slurm: fakeSacct{out}}
			jobs, bad, err := h.FinishedJobs(context.Background(), now.Add(-24*time.Hour), now)
			if err != nil {
				t.Fatalf("FinishedJobs: %v", err)
			}
			if len(bad) != 1 || !errors.Is(bad[0], accounting.ErrMalformed) || !strings.Contains(bad[0].Error(), "(job 3): unknown state") {
				t.Errorf("bad records %v, want job 3's, malformed", bad)
			}
			var ids []int64
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			if len(ids) != 4 {
				t.Errorf("read jobs %v, want the four other finished ones (1, 2, 4, 5)", ids)
			}
		})
	}
}

// TestSyncHistory_BadRecords: a sync over sacct's real answer with one
// unreadable record keeps `fairway ingest --help`'s promise: without
// --skip-bad it fails naming the record and writes nothing (jobs nor
// watermark); with it the other jobs are stored and the record is counted
// as read and rejected, with its reason. Before, sacct's reader failed the
// sync either way, and slurmrestd's skipped the record either way with
// "rejected 0" in the summary.
func TestSyncHistory_BadRecords(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	out, now := spoilJob(t, filepath.Join(root, "slurm-26.05.3", "cli", "sacct.json"), 3, []any{"SOME_NEW_STATE"})
	for _, tc := range []struct {
		name    string
		skipBad bool
		wantErr string
		want    accounting.Summary
	}{
		{name: "fail", wantErr: `(job 3): unknown state "SOME_NEW_STATE" (nothing imported; --skip-bad imports the rest)`},
		{name: "skip-bad", skipBad: true, want: accounting.Summary{Read: 5, Inserted: 4, Rejected: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, pool := freshStore(t)
			ctx := context.Background()
			h := &accounting.SacctHistory{Slurm: fakeSacct{out}}
			sum, _, _, err := store.SyncHistory(ctx, h, accounting.SyncOptions{Cluster: "fairwaylab", Now: now,
				Initial: now.Add(-24 * time.Hour), SkipBad: tc.skipBad})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if n := countRows(t, pool, `SELECT count(*) FROM job`); n != 0 {
					t.Errorf("%d jobs stored by a failed sync, want none", n)
				}
				if _, ok, err := store.Watermark(ctx, "fairwaylab", "slurmdbd"); err != nil || ok {
					t.Errorf("watermark stored by a failed sync (%v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Rejects) != 1 || !strings.Contains(sum.Rejects[0].Error(), "(job 3): unknown state") {
				t.Errorf("rejects %v, want job 3's reason", sum.Rejects)
			}
			sum.Rejects = nil
			if diff := cmp.Diff(tc.want, sum); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
