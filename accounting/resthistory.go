package accounting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// SlurmdbJobs reads slurmdbd's job records through slurmrestd.
// *slurmctl.Client implements it.
type SlurmdbJobs interface {
	// DBJobs hands sink the job records of a /slurmdb/<version>/jobs
	// response (a `sacct --json` document) as they arrive: at least every
	// job of cluster ("" for every cluster) that was eligible or running at
	// some time in [since, until]. found is false when slurmdbd found no
	// job. A response reporting errors is an error, whatever sink took.
	DBJobs(ctx context.Context, cluster string, since, until time.Time, sink JobRecordSink) (found bool, err error)
}

// JobRecordSink takes a DBJobs answer's job records as they are decoded:
// Restart before each attempt's first record (what it took before is
// void), Record with each record as slurmrestd sent it (raw valid during
// the call only). The same type as slurmctl.DBJobsSink: both are aliases
// of this interface literal, so accounting need not import slurmctl.
type JobRecordSink = interface {
	Restart()
	Record(raw json.RawMessage)
}

// RESTHistory is a HistorySource that reads slurmdbd through slurmrestd
// (/slurmdb/v0.0.38/jobs on Slurm 22.05, the data_parser /slurmdb/v0.0.40 to
// v0.0.45 paths later). It needs no Slurm client or munge on this host: the
// same URL and token serve reads. slurmrestd must run its slurmdbd plugin
// (openapi/dbv0.0.38 on 22.05; openapi/slurmdbd, loaded by default from
// 23.11 on).
type RESTHistory struct {
	Client  SlurmdbJobs
	Cluster string // only this cluster's jobs; every cluster slurmdbd keeps when empty
	// Chunk is the longest window one request asks for; one day when zero.
	// slurmrestd builds a whole answer in memory before sending it (about
	// 3 kB a job on 22.05, steps left out), so a first sync of 30 days of a
	// busy cluster in one request would outlast the client's request
	// timeout or the response size limit.
	Chunk time.Duration
	// Log receives the summary of the windows slurmdbd found empty; nil
	// discards it.
	Log *slog.Logger
}

// FinishedJobs implements HistorySource: the jobs that ended in [since,
// until), like SacctHistory's, read one Chunk at a time. slurmdbd answers
// with the jobs active in a wider window; those not ended by its end, and
// those that ended outside it, are dropped (a long job active in several
// chunks is kept only in the one it ended in), so reading the same window
// twice gives the same jobs however the cluster moved on in between.
func (h *RESTHistory) FinishedJobs(ctx context.Context, since, until time.Time) ([]policy.Job, []error, error) {
	chunk := h.Chunk
	if chunk <= 0 {
		chunk = 24 * time.Hour
	}
	var jobs []policy.Job
	var bad []error
	chunks, empty := 0, 0
	defer func() {
		// One line for the empty windows, not one per window: a quiet
		// month is thirty empty days.
		if empty > 0 && h.Log != nil {
			lvl := slog.LevelInfo
			if chunks == 1 {
				lvl = slog.LevelDebug // a serve sync of a quiet moment
			}
			h.Log.Log(ctx, lvl, "slurmdbd found no jobs in some windows", "empty_windows", empty, "windows", chunks,
				"window_hours", chunk.Hours())
		}
	}()
	for from := since; from.Before(until); from = from.Add(chunk) {
		to := from.Add(chunk)
		if to.After(until) {
			to = until
		}
		chunks++
		ended, unread, found, err := h.window(ctx, from, to)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			empty++
			continue
		}
		bad = append(bad, unread...)
		jobs = append(jobs, ended...)
	}
	return jobs, bad, nil
}

// minWindow is the shortest window RESTHistory splits an answer too large
// for the client into. slurmdbd answers with every job active in a window
// (DBJobs widens it by minutes on each side), so below this a shorter
// window no longer means a smaller answer.
const minWindow = 15 * time.Minute

// tooLarge is implemented by the error of a read refused for the size of
// its answer (slurmctl's *APIError over Config.MaxResponseBytes).
type tooLarge interface{ TooLarge() bool }

// window reads the jobs that ended in [from, to), and whether slurmdbd
// found any job. An answer over the client's size cap (a busy day: about
// 55,000 jobs of Slurm 24.11 and later in the default 256 MiB) is read
// again in two halves, down to minWindow.
func (h *RESTHistory) window(ctx context.Context, from, to time.Time) ([]policy.Job, []error, bool, error) {
	w := newWindowSink("slurmrestd", from, to)
	found, err := h.Client.DBJobs(ctx, h.Cluster, from, to, w)
	var tl tooLarge
	if errors.As(err, &tl) && tl.TooLarge() {
		mid := from.Add(to.Sub(from) / 2).Truncate(time.Second)
		if to.Sub(from) < 2*minWindow || !mid.After(from) {
			return nil, nil, false, fmt.Errorf("slurmdbd's jobs of %s..%s: %w (even this short a window: raise the cap)",
				from.Format(time.RFC3339), to.Format(time.RFC3339), err)
		}
		if h.Log != nil {
			h.Log.Info("slurmdbd's answer is over the size cap: reading the window in halves",
				"window_start", from.Format(time.RFC3339), "window_hours", to.Sub(from).Hours())
		}
		j1, b1, f1, err := h.window(ctx, from, mid)
		if err != nil {
			return nil, nil, false, err
		}
		j2, b2, f2, err := h.window(ctx, mid, to)
		if err != nil {
			return nil, nil, false, err
		}
		return append(j1, j2...), append(b1, b2...), f1 || f2, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if !found {
		return nil, nil, false, nil
	}
	jobs, bad, err := w.result("sent")
	return jobs, bad, err == nil, err
}

// windowSink decodes slurmdbd's answer for a window as it arrives, one job
// record at a time, keeping the jobs that ended in [since, until) and the
// records it could not read: the answer (about 5 kB a job) is never held
// whole, only the jobs kept.
type windowSink struct {
	from         string
	since, until time.Time
	n, good      int // records taken, and those that could be read
	jobs         []policy.Job
	bad          []error
}

func newWindowSink(from string, since, until time.Time) *windowSink {
	return &windowSink{from: from, since: since, until: until}
}

// Restart implements JobRecordSink.
func (w *windowSink) Restart() { w.n, w.good, w.jobs, w.bad = 0, 0, nil, nil }

// Record implements JobRecordSink: it reads the record as
// ParseSacctJSON reads one of a document's.
func (w *windowSink) Record(raw json.RawMessage) {
	var sj sacctJob
	err := json.Unmarshal(raw, &sj)
	j, err := recordJob(w.from, w.n, &sj, err)
	w.n++
	if err != nil {
		w.bad = append(w.bad, err)
		return
	}
	w.good++
	if finishedIn(j, w.since, w.until) {
		w.jobs = append(w.jobs, j)
	}
}

// result is what windowJobs returns for the records taken.
func (w *windowSink) result(sent string) ([]policy.Job, []error, error) {
	if len(w.bad) > 0 && w.good == 0 {
		return nil, nil, fmt.Errorf("none of the %d job record(s) %s %s could be read, first: %w", len(w.bad), w.from, sent, w.bad[0])
	}
	return w.jobs, w.bad, nil
}
