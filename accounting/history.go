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
	// bad holds one error (a *RecordError) per job record that could not
	// be read, which is not in jobs: whether it stops the sync is the
	// caller's choice (SyncOptions.SkipBad), as for a file's bad records.
	// err is for a read that failed as a whole.
	FinishedJobs(ctx context.Context, since, until time.Time) (jobs []policy.Job, bad []error, err error)
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
	// Step is the longest window one import covers (one day when zero):
	// SyncHistory reads [since, until) a Step at a time and commits each
	// with the watermark at its end. A long history (`fairway ingest
	// --since` a year back, serve's first sync after a week down) is then
	// never held whole in memory, and a failure half way keeps what was
	// stored before it, so the next run resumes at the watermark.
	Step time.Duration
	// SkipBad and Phase are passed to Import.
	SkipBad bool
	Phase   func(string)
}

// SyncHistory imports the jobs that ended since the stored watermark (less
// Overlap, or since an earlier Initial) from src, one Step at a time, and
// moves the watermark to each step's end in the same transaction as the
// step's jobs. It returns the window read and what the imports did. A
// job record src could not read fails the sync, with nothing of its step
// written, unless opt.SkipBad: then it is counted as read and rejected,
// with its reason, like a bad record of a file. Steps committed before a
// failure stay, with the watermark at their end (never moved back before
// one already stored).
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
	if opt.Step <= 0 {
		opt.Step = 24 * time.Hour
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
	var total Summary
	var stored time.Time // the end of the steps committed so far
	for from := since; ; {
		to := from.Add(opt.Step)
		if !to.Before(until) {
			to = until
		}
		// A step of a re-read of older history ends before the stored
		// watermark: moving it back there would only make the next sync
		// read again what is stored. The last step moves it to until.
		var mark *WatermarkUpdate
		if !ok || to.After(wm) || to.Equal(until) {
			mark = &WatermarkUpdate{Cluster: opt.Cluster, Source: opt.Source, At: to}
		}
		sum, err := s.syncStep(ctx, src, opt, from, to, mark)
		total.add(sum)
		if err != nil {
			if !stored.IsZero() {
				// serve's next sync resumes by itself; an ingest resumes
				// without --since, or from the --since named here.
				err = fmt.Errorf("%w (the history of %s..%s is stored, the watermark at its end: the next sync resumes there, as does an ingest without --since or with --since %s)", err,
					since.Format(time.RFC3339), stored.Format(time.RFC3339), stored.Format(time.RFC3339))
			}
			return total, since, until, err
		}
		stored = to
		if !to.Before(until) {
			return total, since, until, nil
		}
		from = to
	}
}

// syncStep imports the jobs src has for [since, until) with mark.
func (s *Store) syncStep(ctx context.Context, src HistorySource, opt SyncOptions, since, until time.Time, mark *WatermarkUpdate) (Summary, error) {
	jobs, bad, err := src.FinishedJobs(ctx, since, until)
	if err == nil {
		err = badRecords(bad, opt.SkipBad)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("read %s history %s..%s: %w", opt.Source, since.Format(time.RFC3339), until.Format(time.RFC3339), err)
	}
	if len(bad) > 0 {
		s.log.Warn("skipped job records that cannot be read", "source", opt.Source, "records", len(bad), "first", bad[0].Error())
	}
	where := make([]string, len(jobs))
	for i, j := range jobs {
		where[i] = fmt.Sprintf("%s job %d", opt.Source, j.ID)
	}
	sum, err := s.Import(ctx, NewJobsSource(jobs, where, len(bad)), ImportOptions{
		Source: opt.Source, SkipBad: opt.SkipBad, Phase: opt.Phase, Watermark: mark,
	})
	for i := 0; i < len(bad) && len(sum.Rejects) < MaxRejects; i++ {
		sum.Rejects = append(sum.Rejects, bad[i])
	}
	return sum, err
}

// add adds o's counts to s, keeping at most MaxRejects reasons.
func (s *Summary) add(o Summary) {
	s.Read += o.Read
	s.Inserted += o.Inserted
	s.Updated += o.Updated
	s.Unchanged += o.Unchanged
	s.Duplicates += o.Duplicates
	s.Unfinished += o.Unfinished
	s.Rejected += o.Rejected
	for _, r := range o.Rejects {
		if len(s.Rejects) >= MaxRejects {
			break
		}
		s.Rejects = append(s.Rejects, r)
	}
}

// badRecords is the error that stops a sync over the job records a
// history source could not read: none when there are none or skipBad.
func badRecords(bad []error, skipBad bool) error {
	if len(bad) == 0 || skipBad {
		return nil
	}
	return fmt.Errorf("%d job record(s) could not be read, first: %w (nothing imported; --skip-bad imports the rest)", len(bad), bad[0])
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
func (h *SacctHistory) FinishedJobs(ctx context.Context, since, until time.Time) ([]policy.Job, []error, error) {
	if h.Slurm == nil {
		return nil, nil, errors.New("sacct history: no sacct runner configured")
	}
	out, err := h.Slurm.SacctJobsJSON(ctx, h.Path, h.Cluster, since, until)
	if err != nil {
		return nil, nil, err
	}
	return windowJobs("sacct", "printed", out, since, until)
}

// windowJobs parses slurmdbd's answer for a window, as from (sacct or
// slurmrestd) sent or printed it, and keeps the jobs that ended in
// [since, until), with the records it could not read. No record readable
// is a format this Fairway does not know rather than an odd job: failing
// keeps the watermark, so that history is read once Fairway is upgraded
// instead of skipped for good.
func windowJobs(from, sent string, body []byte, since, until time.Time) ([]policy.Job, []error, error) {
	doc, err := ParseSacctJSON(from, body)
	if err != nil {
		return nil, nil, err
	}
	if len(doc.Bad) > 0 && len(doc.Jobs) == 0 {
		return nil, nil, fmt.Errorf("none of the %d job record(s) %s %s could be read, first: %w", len(doc.Bad), from, sent, doc.Bad[0])
	}
	return endedIn(doc.Jobs, since, until), doc.Bad, nil
}

// endedIn keeps, in place, the jobs of a slurmdbd window query that finished
// in [since, until). slurmdbd selects the jobs active in a window, so this
// drops those still running and those that ended after it.
func endedIn(jobs []policy.Job, since, until time.Time) []policy.Job {
	kept := jobs[:0]
	for _, j := range jobs {
		if finishedIn(j, since, until) {
			kept = append(kept, j)
		}
	}
	return kept
}

// finishedIn reports whether j finished in [since, until).
func finishedIn(j policy.Job, since, until time.Time) bool {
	return j.State.Finished() && !j.End.IsZero() && !j.End.Before(since) && j.End.Before(until)
}
