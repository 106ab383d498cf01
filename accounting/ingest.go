package accounting

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Source yields jobs to import, one at a time, in input order.
type Source interface {
	// Next advances to the next job; false at the end or on an error.
	Next() bool
	// Job is the job Next advanced to.
	Job() policy.Job
	// Err is the error that stopped Next, nil at a clean end.
	Err() error
	// Where locates the current job for messages, e.g. "log.csv:12".
	Where() string
	// Skipped counts malformed records the source skipped on its own
	// (under a skip-bad option); they count as read and rejected.
	Skipped() int
}

// ImportOptions tune Import.
type ImportOptions struct {
	// Source names where the jobs come from (slurmdbd, sacct-json, swf,
	// helios, philly-mix, slurmctld), recorded in job.source.
	Source string
	// SkipBad rejects invalid jobs and imports the rest. By default the
	// first invalid job fails the whole import and nothing is written.
	SkipBad bool
	// Phase, when set, is told when the import moves on: "copy" (reading
	// the input into the staging table), "merge" (the upsert) and "usage"
	// (rebuilding the daily usage ledger).
	Phase func(phase string)
	// Watermark, when set, is stored in the same transaction as the jobs,
	// so an incremental source resumes exactly where the committed data
	// ends.
	Watermark *WatermarkUpdate
}

// WatermarkUpdate moves the watermark of an incremental source.
type WatermarkUpdate struct {
	Cluster string
	Source  string
	At      time.Time
}

// Summary counts what an import did. Read = Inserted + Updated + Unchanged
// + Duplicates + Unfinished + Rejected.
type Summary struct {
	Read       int // records read from the input
	Inserted   int // jobs new to the database
	Updated    int // jobs already there, with different values now
	Unchanged  int // jobs already there with the same values
	Duplicates int // repeats of a key earlier in the same input; the last one wins
	Unfinished int // pending or running jobs: not history yet, left out
	Rejected   int // invalid records (only under SkipBad; otherwise the import fails)
	// Rejects holds the first MaxRejects reasons, with their locations.
	Rejects []error
}

// MaxRejects is how many reject reasons a Summary keeps.
const MaxRejects = 20

// ErrInvalidJob is wrapped by the reasons a job is refused.
var ErrInvalidJob = errors.New("invalid job")

// validate refuses a job that cannot be keyed or stored faithfully.
func validate(j *policy.Job) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidJob}, a...)...)
	}
	switch {
	case j.Cluster == "":
		return bad("no cluster name")
	case j.ID <= 0:
		return bad("job id %d is not positive", j.ID)
	case j.ArrayTask < -1:
		return bad("array task %d", j.ArrayTask)
	case j.Submit.IsZero():
		return bad("no submit time")
	case j.Nodes < 0 || j.CPUs < 0 || j.GPUs < 0 || j.Shards < 0 || j.MemoryMB < 0:
		return bad("negative resources (nodes %d, cpus %d, gpus %d, shards %d, memory %d MB)", j.Nodes, j.CPUs, j.GPUs, j.Shards, j.MemoryMB)
	case j.TimeLimit < 0:
		return bad("negative time limit %s", j.TimeLimit)
	}
	for _, t := range []time.Time{j.Submit, j.Eligible, j.Start, j.End} {
		if !t.IsZero() && (t.Year() < 1900 || t.Year() > 9999) {
			return bad("time %s out of range", t.Format(time.RFC3339))
		}
	}
	return nil
}

const stageTable = "fairway_stage_job"

// stageColumns are the columns copied into the staging table, in Values
// order. seq keeps input order, so that of two rows with one key the later
// wins.
var stageColumns = []string{"seq", "cluster", "job_id", "array_task", "submit_time", "array_job_id", "het_job",
	"user_name", "account", "partition", "qos", "name", "eligible_time", "start_time", "end_time", "time_limit_s",
	"nodes", "cpus", "memory_mb", "gpus", "gpu_type", "shards", "state", "exit_code"}

// jobKey and jobData split job's columns into key and the rest.
var (
	jobKey  = []string{"cluster", "job_id", "array_task", "submit_time"}
	jobData = stageColumns[5:]
)

const createStage = `CREATE TEMP TABLE IF NOT EXISTS ` + stageTable + ` (
	seq bigint, cluster text, job_id bigint, array_task integer, submit_time timestamptz,
	array_job_id bigint, het_job boolean, user_name text, account text, partition text, qos text, name text,
	eligible_time timestamptz, start_time timestamptz, end_time timestamptz, time_limit_s bigint,
	nodes integer, cpus integer, memory_mb bigint, gpus integer, gpu_type text, shards integer,
	state text, exit_code integer)`

// upsertSQL merges the staging table into job in one statement. A row whose
// values did not change is not touched (no new row version, updated_at
// kept), so re-importing leaves the table identical. from is the staging
// relation, possibly de-duplicated. A returned row was inserted when its
// ingested_at is this transaction's now() (xmax = 0, the usual test, is not
// available on a partitioned table); an updated row keeps the ingested_at
// of the earlier transaction that inserted it.
func upsertSQL(from string) string {
	cols := strings.Join(stageColumns[1:], ", ")
	var set, old, neu []string
	for _, c := range jobData {
		set = append(set, c+" = EXCLUDED."+c)
		old = append(old, "j."+c)
		neu = append(neu, "EXCLUDED."+c)
	}
	return `WITH up AS (
	INSERT INTO job AS j (` + cols + `, source)
	SELECT ` + cols + `, $1::text FROM ` + from + `
	ON CONFLICT (` + strings.Join(jobKey, ", ") + `) DO UPDATE SET ` + strings.Join(set, ", ") + `,
		source = EXCLUDED.source, updated_at = now()
	WHERE (` + strings.Join(old, ", ") + `) IS DISTINCT FROM (` + strings.Join(neu, ", ") + `)
	RETURNING (j.ingested_at = now()) AS inserted
)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up`
}

var dedupedStage = `(SELECT DISTINCT ON (` + strings.Join(jobKey, ", ") + `) * FROM ` + stageTable +
	` ORDER BY ` + strings.Join(jobKey, ", ") + `, seq DESC) s`

// Import stores the finished jobs of src in the job table, idempotently:
// the key is cluster, job id, array task and submit time, and importing the
// same input twice leaves the tables identical. Jobs are streamed with COPY
// into a session-private staging table, then merged with one upsert; the
// merge, the rebuild of the daily usage ledger for the days the input
// covers and the optional watermark commit together or not at all, so a
// failure (bad input, a dead database, a cancelled context) never leaves a
// partial import. Pending and running jobs are counted and left out.
//
// An invalid record fails the import with its location (file:line and the
// reason), unless opt.SkipBad, which counts it as rejected.
func (s *Store) Import(ctx context.Context, src Source, opt ImportOptions) (Summary, error) {
	var sum Summary
	if opt.Source == "" {
		return sum, errors.New("import: no source name")
	}
	phase := func(p string) {
		if opt.Phase != nil {
			opt.Phase(p)
		}
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return sum, fmt.Errorf("connect to the accounting database: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()

	// A larger temp_buffers keeps the staging table in memory; it only
	// takes effect on a session that has not used temp tables yet.
	if _, err := conn.Exec(ctx, `SET temp_buffers = '256MB'`); err != nil {
		return sum, fmt.Errorf("prepare import: %w", err)
	}
	if _, err := conn.Exec(ctx, createStage); err != nil {
		return sum, fmt.Errorf("create staging table: %w", err)
	}
	defer func() {
		if !conn.IsClosed() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS pg_temp.`+stageTable)
		}
	}()
	if _, err := conn.Exec(ctx, `TRUNCATE `+stageTable); err != nil {
		return sum, fmt.Errorf("clear staging table: %w", err)
	}

	phase("copy")
	cs := newCopySource(src, opt.SkipBad, &sum)
	staged, err := conn.CopyFrom(ctx, pgx.Identifier{stageTable}, stageColumns, cs)
	if cs.err != nil {
		return Summary{}, cs.err
	}
	if err != nil {
		return Summary{}, fmt.Errorf("copy jobs into staging table: %w", err)
	}
	sum.Rejected += src.Skipped()
	sum.Read += src.Skipped()

	if err := s.ensureMonths(ctx, conn, "job", cs.months); err != nil {
		return Summary{}, err
	}

	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		clusters := make([]string, 0, len(cs.windows))
		for c := range cs.clusters {
			clusters = append(clusters, c)
		}
		if opt.Watermark != nil && !cs.clusters[opt.Watermark.Cluster] {
			clusters = append(clusters, opt.Watermark.Cluster)
		}
		sort.Strings(clusters)
		if err := ensureClusters(ctx, tx, clusters); err != nil {
			return err
		}
		phase("merge")
		ins, upd, err := merge(ctx, tx, opt.Source, staged)
		if err != nil {
			return err
		}
		distinct, err := countDistinct(ctx, tx, staged, ins, upd)
		if err != nil {
			return err
		}
		sum.Inserted, sum.Updated = ins, upd
		sum.Duplicates = int(staged) - distinct
		sum.Unchanged = distinct - ins - upd
		phase("usage")
		for _, c := range sortedKeys(cs.windows) {
			w := cs.windows[c]
			if err := refreshUsage(ctx, tx, c, w.lo, w.hi); err != nil {
				return err
			}
		}
		if wm := opt.Watermark; wm != nil {
			if err := setWatermark(ctx, tx, wm.Cluster, wm.Source, wm.At); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Summary{}, fmt.Errorf("import %s jobs: %w", opt.Source, err)
	}
	return sum, nil
}

// merge runs the upsert; when the input repeats a key (which a single
// INSERT ... ON CONFLICT refuses), it runs again over the de-duplicated
// staging table, the last occurrence winning.
func merge(ctx context.Context, tx pgx.Tx, source string, staged int64) (ins, upd int, err error) {
	if staged == 0 {
		return 0, 0, nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("savepoint: %w", err)
	}
	err = sp.QueryRow(ctx, upsertSQL(stageTable), source).Scan(&ins, &upd)
	if err == nil {
		return ins, upd, sp.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "21000" { // cardinality_violation
		return 0, 0, fmt.Errorf("merge staged jobs: %w", err)
	}
	if err := sp.Rollback(ctx); err != nil {
		return 0, 0, fmt.Errorf("roll back to savepoint: %w", err)
	}
	if err := tx.QueryRow(ctx, upsertSQL(dedupedStage), source).Scan(&ins, &upd); err != nil {
		return 0, 0, fmt.Errorf("merge de-duplicated staged jobs: %w", err)
	}
	return ins, upd, nil
}

// countDistinct returns the number of distinct keys staged. Counting costs
// a scan, so it is skipped when the upsert already accounted for every row.
func countDistinct(ctx context.Context, tx pgx.Tx, staged int64, ins, upd int) (int, error) {
	if int64(ins+upd) == staged {
		return int(staged), nil
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT `+strings.Join(jobKey, ", ")+` FROM `+stageTable+`) k`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count staged keys: %w", err)
	}
	return n, nil
}

// refreshUsage rebuilds usage_daily of cluster for the UTC days from lo's to
// hi's from the job table: a job's resource-seconds are split over the days
// it ran, and it counts as ended on the day it ended.
func refreshUsage(ctx context.Context, tx pgx.Tx, cluster string, lo, hi time.Time) error {
	dayLo := lo.UTC().Truncate(24 * time.Hour)
	dayHi := hi.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour) // exclusive
	if _, err := tx.Exec(ctx, `DELETE FROM usage_daily WHERE cluster = $1
		AND day >= ($2::timestamptz AT TIME ZONE 'UTC')::date AND day < ($3::timestamptz AT TIME ZONE 'UTC')::date`,
		cluster, dayLo, dayHi); err != nil {
		return fmt.Errorf("clear usage ledger: %w", err)
	}
	_, err := tx.Exec(ctx, `
INSERT INTO usage_daily (cluster, day, account, user_name, gpu_seconds, shard_seconds, cpu_seconds, jobs_ended)
SELECT $1, d.day::date, j.account, j.user_name,
	sum(j.gpus * d.secs), sum(j.shards * d.secs), sum(j.cpus * d.secs), count(*) FILTER (WHERE d.ended)
FROM (
	SELECT account, user_name, gpus, shards, cpus,
		start_time AT TIME ZONE 'UTC' AS s, end_time AT TIME ZONE 'UTC' AS e
	FROM job
	WHERE cluster = $1 AND end_time >= $2::timestamptz AND start_time < $3::timestamptz AND end_time >= start_time
) j
CROSS JOIN LATERAL (
	SELECT g AS day,
		extract(epoch FROM least(j.e, g + interval '1 day') - greatest(j.s, g))::double precision AS secs,
		j.e < g + interval '1 day' AS ended
	FROM generate_series(greatest(date_trunc('day', j.s), $2::timestamptz AT TIME ZONE 'UTC'),
		least(date_trunc('day', j.e), $3::timestamptz AT TIME ZONE 'UTC' - interval '1 day'), interval '1 day') g
) d
GROUP BY d.day, j.account, j.user_name`, cluster, dayLo, dayHi)
	if err != nil {
		return fmt.Errorf("rebuild usage ledger: %w", err)
	}
	return nil
}

// window is the span of run time an input covers on one cluster.
type window struct{ lo, hi time.Time }

// copySource feeds CopyFrom from a Source, validating each job and noting
// the months, clusters and run-time windows the input covers.
type copySource struct {
	src     Source
	skipBad bool
	sum     *Summary
	seq     int64
	vals    []any
	err     error

	months   map[month]bool
	clusters map[string]bool
	windows  map[string]window
}

func newCopySource(src Source, skipBad bool, sum *Summary) *copySource {
	return &copySource{src: src, skipBad: skipBad, sum: sum, vals: make([]any, len(stageColumns)),
		months: map[month]bool{}, clusters: map[string]bool{}, windows: map[string]window{}}
}

func (c *copySource) Next() bool {
	for c.src.Next() {
		j := c.src.Job()
		c.sum.Read++
		if !j.State.Finished() {
			c.sum.Unfinished++
			continue
		}
		if err := validate(&j); err != nil {
			e := &RecordError{Where: c.src.Where(), Err: err}
			if !c.skipBad {
				c.err = e
				return false
			}
			c.sum.Rejected++
			if len(c.sum.Rejects) < MaxRejects {
				c.sum.Rejects = append(c.sum.Rejects, e)
			}
			continue
		}
		c.fill(&j)
		return true
	}
	if err := c.src.Err(); err != nil {
		c.err = err
	}
	return false
}

func (c *copySource) fill(j *policy.Job) {
	c.seq++
	c.months[monthOf(j.Submit)] = true
	if !c.clusters[j.Cluster] {
		c.clusters[j.Cluster] = true
	}
	if !j.Start.IsZero() && !j.End.IsZero() && !j.End.Before(j.Start) {
		w, ok := c.windows[j.Cluster]
		if !ok || j.Start.Before(w.lo) {
			w.lo = j.Start
		}
		if !ok || j.End.After(w.hi) {
			w.hi = j.End
		}
		c.windows[j.Cluster] = w
	}
	v := c.vals
	v[0] = c.seq
	v[1] = j.Cluster
	v[2] = j.ID
	v[3] = int32(j.ArrayTask)
	v[4] = j.Submit
	v[5] = j.ArrayJob
	v[6] = j.HetJob
	v[7] = j.User
	v[8] = j.Account
	v[9] = j.Partition
	v[10] = j.QOS
	v[11] = j.Name
	v[12] = timeOrNil(j.Eligible)
	v[13] = timeOrNil(j.Start)
	v[14] = timeOrNil(j.End)
	if j.TimeLimit > 0 {
		v[15] = int64(j.TimeLimit / time.Second)
	} else {
		v[15] = nil
	}
	v[16] = int32(j.Nodes)
	v[17] = int32(j.CPUs)
	v[18] = j.MemoryMB
	v[19] = int32(j.GPUs)
	v[20] = j.GPUType
	v[21] = int32(j.Shards)
	v[22] = j.State.String()
	v[23] = int32(j.ExitCode)
}

func (c *copySource) Values() ([]any, error) { return c.vals, nil }
func (c *copySource) Err() error             { return c.err }

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// JobsSource is a Source over jobs already in memory: a decoded sacct
// document, a slurmdbd window, the jobs serve saw finish.
type JobsSource struct {
	jobs  []policy.Job
	where []string
	bad   int
	i     int
}

// NewJobsSource returns a Source over jobs. where, when not nil, locates
// each job for messages; skipped counts records the caller already dropped
// as malformed.
func NewJobsSource(jobs []policy.Job, where []string, skipped int) *JobsSource {
	return &JobsSource{jobs: jobs, where: where, bad: skipped, i: -1}
}

// Next implements Source.
func (s *JobsSource) Next() bool { s.i++; return s.i < len(s.jobs) }

// Job implements Source.
func (s *JobsSource) Job() policy.Job { return s.jobs[s.i] }

// Err implements Source.
func (s *JobsSource) Err() error { return nil }

// Skipped implements Source.
func (s *JobsSource) Skipped() int { return s.bad }

// Where implements Source.
func (s *JobsSource) Where() string {
	if s.i < len(s.where) {
		return s.where[s.i]
	}
	j := s.jobs[s.i]
	return fmt.Sprintf("job %d", j.ID)
}

// RecordFinished stores jobs serve saw finish (source names where they came
// from, e.g. "slurmctld"). Invalid jobs are rejected and counted, never
// fatal: one odd job must not stop the daemon's history.
func (s *Store) RecordFinished(ctx context.Context, source string, jobs []policy.Job) (Summary, error) {
	return s.Import(ctx, NewJobsSource(jobs, nil, 0), ImportOptions{Source: source, SkipBad: true})
}
