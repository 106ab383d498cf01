package accounting

import (
	"context"
	"fmt"
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
// (/slurmdb/v0.0.38/jobs on Slurm 22.05, the data_parser /slurmdb/v0.0.40 and
// v0.0.41 paths later). It needs no Slurm client or munge on this host: the
// same URL and token serve reads. slurmrestd must run its slurmdbd plugin
// (openapi/dbv0.0.38, or openapi/slurmdbd from 23.02).
type RESTHistory struct {
	Client  SlurmdbJobs
	Cluster string // only this cluster's jobs; every cluster slurmdbd keeps when empty
	// Chunk is the longest window one request asks for; one day when zero.
	// slurmrestd builds a whole answer in memory before sending it (about
	// 3 kB a job on 22.05, steps left out), so a first sync of 30 days of a
	// busy cluster in one request would outlast the client's request
	// timeout or the response size limit.
	Chunk time.Duration
}

// FinishedJobs implements HistorySource: the jobs that ended in [since,
// until), like SacctHistory's, read one Chunk at a time. slurmdbd answers
// with the jobs active in a wider window; those not ended by its end, and
// those that ended outside it, are dropped (a long job active in several
// chunks is kept only in the one it ended in), so reading the same window
// twice gives the same jobs however the cluster moved on in between.
func (h *RESTHistory) FinishedJobs(ctx context.Context, since, until time.Time) ([]policy.Job, error) {
	chunk := h.Chunk
	if chunk <= 0 {
		chunk = 24 * time.Hour
	}
	var jobs []policy.Job
	for from := since; from.Before(until); from = from.Add(chunk) {
		to := from.Add(chunk)
		if to.After(until) {
			to = until
		}
		body, err := h.Client.DBJobs(ctx, h.Cluster, from, to)
		if err != nil {
			return nil, err
		}
		if body == nil {
			continue
		}
		doc, err := ParseSacctJSON("slurmrestd", body)
		if err != nil {
			return nil, err
		}
		if len(doc.Bad) > 0 {
			return nil, fmt.Errorf("%d job record(s) slurmrestd sent could not be read, first: %w", len(doc.Bad), doc.Bad[0])
		}
		jobs = append(jobs, endedIn(doc.Jobs, from, to)...)
	}
	return jobs, nil
}
