package accounting

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// HistorySource is a Slurm cluster's accounting history (slurmdbd).
// RESTHistory reads it through slurmrestd (/slurmdb/v0.0.38/jobs and the
// data_parser versions), SacctHistory through the sacct command. slurmdbd
// keeps no job deadlines (22.05, see sacctJob), so neither sets
// Job.Deadline; a sync never erases one stored from slurmctld.
type HistorySource interface {
	// FinishedJobs returns the cluster's jobs that ended in [since, until).
	// It may return more (jobs still running, jobs that ended just outside
	// the window): Import keeps only finished jobs, and it is idempotent.
	FinishedJobs(ctx context.Context, since, until time.Time) ([]policy.Job, error)
}

// SyncOptions tune SyncHistory.
type SyncOptions struct {
	// Cluster is the cluster the watermark belongs to.
	Cluster string
	// Source names the history in job.source and in the watermark key;
	// "slurmdbd" when empty.
	Source string
	// Now is the end of the window; the current time when zero.
	Now time.Time
	// Overlap is how far before the stored watermark a window starts, so
	// that jobs slurmdbd records late (its agent queue drains after an
	// outage) are not missed. One hour when zero. Re-reading is free: the
	// import is idempotent.
	Overlap time.Duration
	// Initial is where the window starts when there is no watermark yet
	// (30 days before Now when zero), and where it starts when it is
	// earlier than the watermark less Overlap: an explicit request to
	// re-read older history (`fairway ingest --since` after serve's sync
	// stored a watermark). A later Initial is not used then, since starting
	// there would leave out what ended between the watermark and it.
	Initial time.Time
	// SkipBad and Phase are passed to Import.
	SkipBad bool
	Phase   func(string)
}

// SyncHistory imports the jobs that ended since the stored watermark (less
// Overlap, or since an earlier Initial) from src, and moves the watermark to the window's end in the
// same transaction. It returns the window read and what the import did.
func (s *Store) SyncHistory(ctx context.Context, src HistorySource, opt SyncOptions) (Summary, time.Time, time.Time, error) {
	if opt.Cluster == "" {
		return Summary{}, time.Time{}, time.Time{}, errors.New("sync history: no cluster name")
	}
	if opt.Source == "" {
		opt.Source = "slurmdbd"
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	if opt.Overlap == 0 {
		opt.Overlap = time.Hour
	}
	until := opt.Now.UTC().Truncate(time.Second)
	since := opt.Initial
	if since.IsZero() {
		since = until.Add(-30 * 24 * time.Hour)
	}
	wm, ok, err := s.Watermark(ctx, opt.Cluster, opt.Source)
	if err != nil {
		return Summary{}, since, until, err
	}
	if from := wm.Add(-opt.Overlap); ok && (opt.Initial.IsZero() || from.Before(opt.Initial)) {
		since = from
	}
	jobs, err := src.FinishedJobs(ctx, since, until)
	if err != nil {
		return Summary{}, since, until, fmt.Errorf("read %s history %s..%s: %w", opt.Source, since.Format(time.RFC3339), until.Format(time.RFC3339), err)
	}
	where := make([]string, len(jobs))
	for i, j := range jobs {
		where[i] = fmt.Sprintf("%s job %d", opt.Source, j.ID)
	}
	sum, err := s.Import(ctx, NewJobsSource(jobs, where, 0), ImportOptions{
		Source: opt.Source, SkipBad: opt.SkipBad, Phase: opt.Phase,
		Watermark: &WatermarkUpdate{Cluster: opt.Cluster, Source: opt.Source, At: until},
	})
	return sum, since, until, err
}

// SacctRunner runs `sacct --json` for every user's jobs active in [since,
// until) and returns what it printed; slurmctl.Commands implements it. A
// path "" means sacct on PATH, a cluster "" the local one.
type SacctRunner interface {
	SacctJobsJSON(ctx context.Context, path, cluster string, since, until time.Time) ([]byte, error)
}

// SacctHistory is a HistorySource that reads slurmdbd through the sacct
// command (`sacct --json`), for hosts where slurmrestd has no dbv0.0.38
// plugin or is not running. It needs the Slurm client and munge access, as
// on the slurmctld host.
type SacctHistory struct {
	Path    string      // sacct binary; "sacct" on PATH when empty
	Cluster string      // -M; the local cluster when empty
	Slurm   SacctRunner // runs sacct (its environment says which cluster answers)
}

// FinishedJobs implements HistorySource: every user's jobs that ended in
// [since, until). sacct selects the jobs active in the window; those that
// had not ended by until are dropped, so reading the same window twice
// gives the same jobs however the cluster moved on in between.
func (h *SacctHistory) FinishedJobs(ctx context.Context, since, until time.Time) ([]policy.Job, error) {
	if h.Slurm == nil {
		return nil, errors.New("sacct history: no sacct runner configured")
	}
	out, err := h.Slurm.SacctJobsJSON(ctx, h.Path, h.Cluster, since, until)
	if err != nil {
		return nil, err
	}
	doc, err := ParseSacctJSON("sacct", out)
	if err != nil {
		return nil, err
	}
	if len(doc.Bad) > 0 {
		return nil, fmt.Errorf("%d job record(s) sacct printed could not be read, first: %w", len(doc.Bad), doc.Bad[0])
	}
	return endedIn(doc.Jobs, since, until), nil
}

// endedIn keeps, in place, the jobs of a slurmdbd window query that finished
// in [since, until). slurmdbd selects the jobs active in a window, so this
// drops those still running and those that ended after it.
func endedIn(jobs []policy.Job, since, until time.Time) []policy.Job {
	kept := jobs[:0]
	for _, j := range jobs {
		if j.State.Finished() && !j.End.IsZero() && !j.End.Before(since) && j.End.Before(until) {
			kept = append(kept, j)
		}
	}
	return kept
}
