package accounting_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// windowHistory is a HistorySource over jobs in memory that records the
// windows it is asked for and, like slurmdbd's readers, returns the jobs
// that ended in them.
type windowHistory struct {
	jobs []policy.Job
	bad  []error // records it could not read

	mu      sync.Mutex // SyncHistory may run concurrently
	windows [][2]time.Time
}

func (h *windowHistory) FinishedJobs(_ context.Context, since, until time.Time) ([]policy.Job, []error, error) {
	h.mu.Lock()
	h.windows = append(h.windows, [2]time.Time{since, until})
	h.mu.Unlock()
	var out []policy.Job
	for _, j := range h.jobs {
		if !j.End.Before(since) && j.End.Before(until) {
			out = append(out, j)
		}
	}
	return out, h.bad, nil
}

func (h *windowHistory) last() [2]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.windows[len(h.windows)-1]
}

// endedJob is a finished job of cluster c that ran for an hour up to end.
func endedJob(c string, id int64, end time.Time) policy.Job {
	return policy.Job{Cluster: c, ID: id, ArrayTask: -1, User: "alice", Account: "physics", Partition: "gpu",
		Submit: end.Add(-2 * time.Hour), Eligible: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end,
		Nodes: 1, CPUs: 1, State: policy.StateCompleted}
}

// TestSyncHistory_InitialBeforeWatermark: `fairway ingest --since` given
// after serve's history sync (or an earlier ingest) stored a watermark is
// a request to re-read older history, the way INSTALL tells an admin to
// fill last month for the report. The window must start there, not at the
// watermark, which would leave the month out while saying nothing. A
// --since later than the watermark less the overlap must not open a gap.
func TestSyncHistory_InitialBeforeWatermark(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	old := endedJob("wm", 1, now.AddDate(0, 0, -45)) // before serve's first 30 days
	src := &windowHistory{jobs: []policy.Job{old, endedJob("wm", 2, now.Add(-time.Hour))}}

	// serve's sync: no Initial, 30 days back.
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "wm", Now: now}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = 'wm'`); n != 1 {
		t.Fatalf("serve's first sync stored %d jobs, want 1 (the one of the last 30 days)", n)
	}

	for _, tc := range []struct {
		name      string
		initial   time.Time
		wantSince time.Time
	}{
		{"since before the watermark", now.AddDate(0, 0, -60), now.AddDate(0, 0, -60)},
		// The watermark is then now+1h: less the hour's overlap, now.
		{"since after the watermark", now.Add(30 * time.Minute), now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			later := now.Add(time.Hour)
			_, since, until, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "wm", Now: later, Initial: tc.initial})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([2]time.Time{tc.wantSince, later}, [2]time.Time{since, until}); diff != "" {
				t.Errorf("window (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([2]time.Time{tc.wantSince, later}, src.last()); diff != "" {
				t.Errorf("window asked of slurmdbd (-want +got):\n%s", diff)
			}
			now = later
		})
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = 'wm' AND job_id = 1`); n != 1 {
		t.Errorf("the job that ended 45 days ago: %d rows after ingest --since 60 days ago, want 1", n)
	}
}

// TestSyncHistory_Concurrent runs several syncs of one cluster at once (a
// cron ingest overlapping itself and serve's sync) over the same history:
// none fails (no unique violation), every job is stored once, and the
// watermark is one of the windows' ends with every job before it stored.
func TestSyncHistory_Concurrent(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	var jobs []policy.Job
	for i := range 3000 {
		jobs = append(jobs, endedJob("cc", int64(i+1), now.Add(-time.Duration(i)*time.Minute)))
	}
	src := &windowHistory{jobs: jobs}
	const syncs = 6
	errs := make(chan error, syncs)
	var wg sync.WaitGroup
	for i := range syncs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "cc", Now: now.Add(time.Duration(i) * time.Second),
				Initial: now.AddDate(0, 0, -10)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent sync: %v", err)
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = 'cc'`); n != len(jobs) {
		t.Errorf("%d rows after %d concurrent syncs, want %d", n, syncs, len(jobs))
	}
	if n := countRows(t, pool, `SELECT count(*) FROM (SELECT job_id FROM job WHERE cluster = 'cc' GROUP BY job_id HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d jobs stored more than once", n)
	}
	wm, ok, err := store.Watermark(ctx, "cc", "slurmdbd")
	if err != nil || !ok || wm.Before(now) || wm.After(now.Add(syncs*time.Second)) {
		t.Errorf("watermark %v, %v, %v; want one of the windows' ends, %v to %v", wm, ok, err, now, now.Add(syncs*time.Second))
	}
}
