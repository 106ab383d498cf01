package accounting_test

import (
	"context"
	"errors"
	"strings"
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
	bad  []error   // records it could not read
	fail time.Time // when not zero, a window starting there or later fails

	mu      sync.Mutex // SyncHistory may run concurrently
	windows [][2]time.Time
}

func (h *windowHistory) FinishedJobs(_ context.Context, since, until time.Time) ([]policy.Job, []error, error) {
	h.mu.Lock()
	h.windows = append(h.windows, [2]time.Time{since, until})
	h.mu.Unlock()
	if !h.fail.IsZero() && !since.Before(h.fail) {
		return nil, nil, errors.New("slurmdbd went away")
	}
	var out []policy.Job
	for _, j := range h.jobs {
		if !j.End.Before(since) && j.End.Before(until) {
			out = append(out, j)
		}
	}
	return out, h.bad, nil
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
	src.windows = nil

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
			src.mu.Lock()
			asked := [2]time.Time{src.windows[0][0], src.windows[len(src.windows)-1][1]} // read a day at a time
			src.windows = nil
			src.mu.Unlock()
			if diff := cmp.Diff([2]time.Time{tc.wantSince, later}, asked); diff != "" {
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

// TestSyncHistory_FailureHalfWayResumes: `fairway ingest --from slurmdbd
// --since` a long way back reads slurmdbd a day at a time, and one day's
// read fails (slurmrestd restarted, a token expired). Before, the whole
// window was held in memory and committed once at the end: the failure
// threw away every day read (20 days of 2,000 jobs: nothing stored, no
// watermark, 334 MB of heap for 60 days of 5,000), so the next run
// started again from the beginning. Each day is now committed with the
// watermark at its end: the days before the failure stay, and the next
// sync resumes at the watermark. The history is slurmrestd 26.05.3's real
// answer, repeated with shifted ids and times.
func TestSyncHistory_FailureHalfWayResumes(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	since := now.AddDate(0, 0, -6)
	slurmdb := &bigSlurmdb{h: newBigHistory(t, 40), failAt: since.AddDate(0, 0, 4), failErr: errors.New("slurmrestd went away")}
	src := &accounting.RESTHistory{Client: slurmdb}
	opt := accounting.SyncOptions{Cluster: "fwlab", Now: now, Initial: since}

	_, _, _, err := store.SyncHistory(ctx, src, opt)
	if err == nil || !strings.Contains(err.Error(), "slurmrestd went away") {
		t.Fatalf("err = %v, want the failed read", err)
	}
	if want := "the watermark at its end: the next sync resumes there, as does an ingest without --since or with --since " + since.AddDate(0, 0, 4).Format(time.RFC3339); !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say where a rerun resumes (%q)", err, want)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = 'fwlab'`); n != 4*40 {
		t.Errorf("%d jobs stored after the fifth day's read failed, want the first four days' %d", n, 4*40)
	}
	wm, ok, err := store.Watermark(ctx, "fwlab", "slurmdbd")
	if err != nil || !ok || !wm.Equal(since.AddDate(0, 0, 4)) {
		t.Errorf("watermark %v (stored %v, %v), want %v: the end of the days stored", wm, ok, err, since.AddDate(0, 0, 4))
	}

	// The next sync (serve's, or ingest without --since) resumes there.
	slurmdb.failAt, slurmdb.windows = time.Time{}, nil
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "fwlab", Now: now}); err != nil {
		t.Fatal(err)
	}
	if first := slurmdb.windows[0][0]; !first.Equal(since.AddDate(0, 0, 4).Add(-time.Hour)) {
		t.Errorf("the resumed sync read from %v, want the watermark less the overlap", first)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = 'fwlab'`); n != 6*40 {
		t.Errorf("%d jobs stored after resuming, want %d", n, 6*40)
	}
}

// TestSyncHistory_ReadsADayAtATime: whatever reads slurmdbd (sacct too,
// which before got the whole window in one `sacct --json`: a year's
// history in one answer held in memory) is asked for a day at most, and a
// re-read of older history never moves the watermark back.
func TestSyncHistory_ReadsADayAtATime(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	src := &windowHistory{jobs: []policy.Job{endedJob("day", 1, now.AddDate(0, 0, -2)), endedJob("day", 2, now.Add(-time.Hour))}}
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "day", Now: now, Initial: now.Add(-70 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	want := [][2]time.Time{
		{now.Add(-70 * time.Hour), now.Add(-46 * time.Hour)},
		{now.Add(-46 * time.Hour), now.Add(-22 * time.Hour)},
		{now.Add(-22 * time.Hour), now},
	}
	if diff := cmp.Diff(want, src.windows); diff != "" {
		t.Errorf("windows asked (-want +got):\n%s", diff)
	}
	// ingest --since a month back after that: the watermark stays at now
	// while the older days are read, however the re-read ends.
	src.windows = nil
	src.fail = now.AddDate(0, 0, -20)
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: "day", Now: now, Initial: now.AddDate(0, 0, -30)}); err == nil {
		t.Fatal("the failing re-read did not fail")
	}
	if wm, _, _ := store.Watermark(ctx, "day", "slurmdbd"); !wm.Equal(now) {
		t.Errorf("watermark %v after a failed re-read of older history, want it kept at %v", wm, now)
	}
}
