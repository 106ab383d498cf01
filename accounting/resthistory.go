package accounting

import (
	"context"
	"log/slog"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// SlurmdbJobs reads slurmdbd's job records through slurmrestd.
// *slurmctl.Client implements it.
type SlurmdbJobs interface {
	// DBJobs returns the body of a /slurmdb/<version>/jobs response (a
	// `sacct --json` document) holding at least every job of cluster ("" for
	// every cluster) that was eligible or running at some time in [since,
	// until], or nil when slurmdbd found no job. A response reporting
	// errors is an error, never a body.
	DBJobs(ctx context.Context, cluster string, since, until time.Time) ([]byte, error)
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
		body, err := h.Client.DBJobs(ctx, h.Cluster, from, to)
		if err != nil {
			return nil, nil, err
		}
		if body == nil {
			empty++
			continue
		}
		ended, unread, err := windowJobs("slurmrestd", "sent", body, from, to)
		if err != nil {
			return nil, nil, err
		}
		bad = append(bad, unread...)
		jobs = append(jobs, ended...)
	}
	return jobs, bad, nil
}
