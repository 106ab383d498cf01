package slurmctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DBJobsMargin widens the window DBJobs asks slurmdbd for on both sides. The
// window is sent relative to the server's clock (see DBJobs), so the margin
// must cover the clock skew between this host and slurmrestd's plus the time
// the request takes, retries included. Five minutes is what munge itself
// tolerates: a cluster whose clocks disagree by more does not run.
const DBJobsMargin = 5 * time.Minute

// errNothingFound is slurmdbd's answer to a job query that matched no job
// (HTTP 200 with this error number): an empty result, not a failure.
const errNothingFound = 9003

// DBJobsSink takes the job records of a DBJobs answer as they are
// decoded, so that a large answer (a busy day: hundreds of MB) is never
// held whole. It is an alias of an interface literal, so that a package
// that must not import this one (accounting: the adapters stay apart)
// can name the same type with its own alias, and *Client satisfies its
// interface of DBJobs.
type DBJobsSink = interface {
	// Restart is called before each attempt's first record: a read that
	// failed part way is tried again from its start, and what the sink
	// took before is void.
	Restart()
	// Record takes the answer's next job record, the JSON object as
	// slurmrestd sent it; raw is valid only during the call.
	Record(raw json.RawMessage)
}

// DBJobs hands sink slurmdbd's job records, through slurmrestd, of the
// jobs of cluster ("" means every cluster slurmdbd keeps) that were
// eligible or running at any time in [since, until], steps left out, as
// they arrive. The records are those of the "jobs" array of the response
// (the document `sacct --json` prints: dbv0.0.38 job objects, or the
// data_parser shape for v0.0.40 to v0.0.45), read under the same checks as
// every other read: HTTP status, the response cap, the errors array,
// retries of transient failures. found is false when the query matched no
// job (slurmdbd reports it as error 9003, "Nothing found", or 23.02 on as
// a "found nothing" warning); sink may have taken records of an answer that
// turned out to be an error, which the caller drops.
//
// The window asked for is wider than [since, until] by DBJobsMargin on each
// side, and may contain jobs still running or that ended outside it: the
// caller keeps what it wants by the records' own times. The times are sent
// relative to slurmrestd's clock ("now-N" seconds), the one form of Slurm's
// time syntax that does not depend on the server's time zone: absolute times
// are read in slurmrestd's local time, with no zone suffix accepted, and Unix
// seconds are refused by Slurm 22.05 ("Unable to parse time format").
func (c *Client) DBJobs(ctx context.Context, cluster string, since, until time.Time, sink DBJobsSink) (found bool, err error) {
	if until.Before(since) {
		return false, fmt.Errorf("slurmdbd jobs: window %s..%s ends before it starts", since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	path := "/slurmdb/" + c.version + "/jobs"
	q := dbJobsQuery(c.version, cluster, since, until, time.Now())
	op := "GET " + path
	var env *envelope
	var sawJobs bool
	status, err := c.stream(ctx, http.MethodGet, path+"?"+q.Encode(), true, func(r io.Reader) error {
		sink.Restart()
		sawJobs = false
		var derr error
		env, derr = decodeAnswer(r, "jobs", func(key string, dec *json.Decoder) (bool, error) {
			if key != "jobs" {
				return false, nil
			}
			var err error
			sawJobs, err = streamRecords(dec, sink)
			return true, err
		})
		return derr
	})
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			hint := "is slurmrestd running its slurmdbd plugin? (Slurm 22.05: -s openapi/dbv0.0.38 beside openapi/v0.0.38; 23.11 on: openapi/slurmdbd, loaded by default)"
			if ae.Detail != "" {
				hint = ae.Detail + "; " + hint
			}
			ae.Detail = hint
		}
		return false, err
	}
	if nothingFound(env.Errors) || len(env.Errors) == 0 && foundNothingWarning(env.Warnings) {
		return false, nil
	}
	var perr error
	if !sawJobs && len(env.Errors) == 0 {
		perr = fmt.Errorf("%w: no %q array", ErrMalformed, "jobs")
	}
	if err := c.check(op, status, env, perr); err != nil {
		return false, err
	}
	return true, nil
}

// streamRecords hands sink each record of the array dec is at, and
// reports whether there was one ("jobs": null is none). A record is handed
// on undecoded: only a body that is not JSON stops the read.
func streamRecords(dec *json.Decoder, sink DBJobsSink) (bool, error) {
	t, err := dec.Token()
	if err != nil || t == nil {
		return false, err
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return false, fmt.Errorf("%w: \"jobs\" is not an array", ErrMalformed)
	}
	var raw json.RawMessage // reused: the sink keeps no record
	for n := 1; dec.More(); n++ {
		if err := dec.Decode(&raw); err != nil {
			return true, fmt.Errorf("%w: jobs: record %d: %w", ErrMalformed, n, err)
		}
		sink.Record(raw)
	}
	_, err = dec.Token()
	return true, err
}

// dbJobsQuery is the query string of a DBJobs request of API version made
// at now.
//
// From v0.0.40 on it also names the flags whose defaults skip_steps clears
// in Slurm 23.11 and 24.05 before 24.05.8: there, any flag in the query
// resets scheduler_unset (then no job matches: "found nothing", seen on
// 23.11.11), show_duplicates and disable_truncate_usage_time. Naming them
// asks every release for the same thing, its default (SchedMD's NEWS for
// 24.05.8).
func dbJobsQuery(version, cluster string, since, until, now time.Time) url.Values {
	rel := func(t time.Time) string {
		s := int64(now.Sub(t).Round(time.Second) / time.Second)
		if s < 0 {
			return "now+" + strconv.FormatInt(-s, 10)
		}
		return "now-" + strconv.FormatInt(s, 10)
	}
	q := url.Values{}
	q.Set("start_time", rel(since.Add(-DBJobsMargin)))
	q.Set("end_time", rel(until.Add(DBJobsMargin)))
	q.Set("skip_steps", "true")
	if version != V0038 {
		q.Set("scheduler_unset", "true")
		q.Set("show_duplicates", "true")
		q.Set("disable_truncate_usage_time", "true")
	}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	return q
}

// nothingFound reports whether errs is exactly slurmdbd's "Nothing found".
func nothingFound(errs []wireError) bool {
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if e.slurm().Number != errNothingFound {
			return false
		}
	}
	return true
}

// foundNothingWarning reports whether ws is exactly the warning Slurm 23.02
// and later send, with HTTP 200 and no error, for a job query that matched
// no job ("slurmdb_jobs_get() found nothing"): an empty window, as common
// as a quiet day, not something to warn about once per day of an ingest.
func foundNothingWarning(ws []wireError) bool {
	if len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		if !strings.Contains(w.Description, "found nothing") {
			return false
		}
	}
	return true
}
