package accounting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	fsql "github.com/fairway-hpc/fairway/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is Fairway's accounting database. It is safe for concurrent use;
// each method takes one pooled connection for its duration.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu     sync.Mutex
	months map[string]bool // "table YYYYMM" partitions known to exist
}

// New returns a Store over pool. log should already carry
// component=accounting.
func New(pool *pgxpool.Pool, log *slog.Logger) *Store {
	return &Store{pool: pool, log: log, months: map[string]bool{}}
}

// Check verifies that the database answers and has exactly the schema this
// binary expects (see sql.CheckCurrent).
func (s *Store) Check(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to the accounting database: %w", err)
	}
	defer conn.Release()
	return fsql.CheckCurrent(ctx, conn.Conn())
}

// partitioned are the tables split by month, with the column they are
// split on.
var partitioned = map[string]string{
	"job":           "submit_time",
	"prediction":    "submit_time",
	"decision":      "decided_at",
	"job_gpu_usage": "ended_at",
}

// month is a calendar month in UTC, as year*12 + month-1.
type month int

func monthOf(t time.Time) month {
	t = t.UTC()
	return month(t.Year()*12 + int(t.Month()) - 1)
}

func (m month) start() time.Time {
	return time.Date(int(m)/12, time.Month(int(m)%12+1), 1, 0, 0, 0, 0, time.UTC)
}

func (m month) String() string { return m.start().Format("200601") }

// ensureMonths creates the monthly partitions of table for the given months,
// each in its own short transaction (so an import that later rolls back
// leaves at most empty partitions, and readers of the parent are blocked
// only for an instant).
func (s *Store) ensureMonths(ctx context.Context, q querier, table string, ms map[month]bool) error {
	if _, ok := partitioned[table]; !ok {
		return fmt.Errorf("table %s is not partitioned", table)
	}
	for m := range ms {
		key := table + " " + m.String()
		s.mu.Lock()
		known := s.months[key]
		s.mu.Unlock()
		if known {
			continue
		}
		if _, err := q.Exec(ctx, `SELECT fairway_ensure_month($1::regclass, $2)`, table, m.start()); err != nil {
			return fmt.Errorf("create partition %s_p%s: %w", table, m, err)
		}
		s.mu.Lock()
		s.months[key] = true
		s.mu.Unlock()
	}
	return nil
}

// forgetMonths drops the partition cache after retention removed some.
func (s *Store) forgetMonths() {
	s.mu.Lock()
	s.months = map[string]bool{}
	s.mu.Unlock()
}

// DropMonthsBefore drops the monthly partitions of table (job, prediction,
// decision or job_gpu_usage) that end on or before cutoff, and returns
// their names. This is the retention mechanism: instant, and no bloat.
func (s *Store) DropMonthsBefore(ctx context.Context, table string, cutoff time.Time) ([]string, error) {
	if _, ok := partitioned[table]; !ok {
		return nil, fmt.Errorf("table %q is not partitioned by month (want job, prediction, decision or job_gpu_usage)", table)
	}
	rows, err := s.pool.Query(ctx, `SELECT fairway_drop_months_before($1::regclass, $2)`, table, cutoff)
	if err != nil {
		return nil, fmt.Errorf("drop partitions of %s: %w", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	s.forgetMonths()
	if err != nil {
		return nil, fmt.Errorf("drop partitions of %s: %w", table, err)
	}
	return names, nil
}

// DropMonthsFrom drops the monthly partitions of table whose month starts
// on or after start and returns their names. It drops dropMonthsBatch per
// transaction: a dropped table stays locked until commit, and a few
// thousand in one transaction exhaust PostgreSQL's lock table ("out of
// shared memory"), which is how many a node's login could make before
// migration 0005.
func (s *Store) DropMonthsFrom(ctx context.Context, table string, start time.Time) ([]string, error) {
	if _, ok := partitioned[table]; !ok {
		return nil, fmt.Errorf("table %q is not partitioned by month (want job, prediction, decision or job_gpu_usage)", table)
	}
	defer s.forgetMonths()
	var all []string
	for {
		rows, err := s.pool.Query(ctx, `SELECT fairway_drop_months_from($1::regclass, $2, $3)`, table, start, dropMonthsBatch)
		if err != nil {
			return all, fmt.Errorf("drop partitions of %s from %s: %w", table, start.Format("2006-01"), err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		all = append(all, names...)
		if err != nil {
			return all, fmt.Errorf("drop partitions of %s from %s: %w", table, start.Format("2006-01"), err)
		}
		if len(names) < dropMonthsBatch {
			return all, nil
		}
	}
}

// dropMonthsBatch is how many partitions one DropMonthsFrom transaction
// drops; PostgreSQL's default lock table holds 64 per connection slot.
const dropMonthsBatch = 200

// querier is what both a connection and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ensureClusters records cluster names (kv_state references them).
func ensureClusters(ctx context.Context, tx pgx.Tx, names []string) error {
	if len(names) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO cluster (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, names)
	if err != nil {
		return fmt.Errorf("record clusters: %w", err)
	}
	return nil
}

// Watermark returns the instant up to which the named incremental source
// (e.g. "slurmdbd") has been imported for cluster, and false when it never
// has.
func (s *Store) Watermark(ctx context.Context, cluster, source string) (time.Time, bool, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT value FROM kv_state WHERE cluster = $1 AND key = $2`, cluster, watermarkKey(source)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read %s watermark: %w", source, err)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s watermark %q: %w", source, v, err)
	}
	return t, true, nil
}

func watermarkKey(source string) string { return "watermark." + source }

func setWatermark(ctx context.Context, tx pgx.Tx, cluster, source string, at time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO kv_state (cluster, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (cluster, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
		WHERE kv_state.value IS DISTINCT FROM EXCLUDED.value`,
		cluster, watermarkKey(source), at.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return fmt.Errorf("store %s watermark: %w", source, err)
	}
	return nil
}

// FinishedJobs returns the jobs of cluster that ended at or after since (and
// before until, when until is not zero), in end order (ties by job id and
// array task). Serve replays them into the fairness ledger and the
// predictor when it starts cold.
func (s *Store) FinishedJobs(ctx context.Context, cluster string, since, until time.Time) ([]policy.Job, error) {
	return s.endedJobs(ctx, "load finished jobs", "end_time", cluster, since, until)
}

// JobsThatRan returns the finished jobs of cluster that ran during [since,
// until): ended at or after since and, when until is not zero, started
// before it, in end order as FinishedJobs. A job that ended after until
// held its nodes up to until, which the node use of the period counts.
func (s *Store) JobsThatRan(ctx context.Context, cluster string, since, until time.Time) ([]policy.Job, error) {
	return s.endedJobs(ctx, "load jobs that ran", "start_time", cluster, since, until)
}

// endedJobs is the jobs of cluster that ended at or after since and, when
// until is not zero, whose before column (end_time or start_time) is
// before it, in end order (ties by job id and array task).
func (s *Store) endedJobs(ctx context.Context, what, before, cluster string, since, until time.Time) ([]policy.Job, error) {
	q := `SELECT ` + jobColumnList + ` FROM job WHERE cluster = $1 AND end_time >= $2`
	args := []any{cluster, since}
	if !until.IsZero() {
		q += ` AND ` + before + ` < $3`
		args = append(args, until)
	}
	q += ` ORDER BY end_time, job_id, array_task`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return jobs, nil
}

// FinishedJob returns the newest stored record of job id on cluster (by
// submit time, then array task), nil when the history has none: explain's
// answer for a job Slurm no longer lists.
func (s *Store) FinishedJob(ctx context.Context, cluster string, id int64) (*policy.Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumnList+` FROM job WHERE cluster = $1 AND job_id = $2
		ORDER BY submit_time DESC, array_task DESC LIMIT 1`, cluster, id)
	if err != nil {
		return nil, fmt.Errorf("look up job %d: %w", id, err)
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("look up job %d: %w", id, err)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return &jobs[0], nil
}

const jobColumnList = `cluster, job_id, array_job_id, array_task, het_job, user_name, account, partition, qos, name,
	submit_time, eligible_time, start_time, end_time, time_limit_s, nodes, cpus, memory_mb, gpus, gpu_type, shards,
	state, exit_code, deadline, hosts`

func scanJob(r pgx.CollectableRow) (policy.Job, error) {
	var (
		j                          policy.Job
		elig, start, end, deadline *time.Time
		limit                      *int64
		state                      string
		hosts                      *string
	)
	err := r.Scan(&j.Cluster, &j.ID, &j.ArrayJob, &j.ArrayTask, &j.HetJob, &j.User, &j.Account, &j.Partition, &j.QOS, &j.Name,
		&j.Submit, &elig, &start, &end, &limit, &j.Nodes, &j.CPUs, &j.MemoryMB, &j.GPUs, &j.GPUType, &j.Shards,
		&state, &j.ExitCode, &deadline, &hosts)
	if err != nil {
		return j, err
	}
	j.Submit = j.Submit.UTC()
	j.Eligible, j.Start, j.End, j.Deadline = utcOrZero(elig), utcOrZero(start), utcOrZero(end), utcOrZero(deadline)
	if limit != nil {
		j.TimeLimit = time.Duration(*limit) * time.Second
	}
	j.State = policy.ParseState(state)
	if hosts != nil {
		j.Hosts = *hosts
	}
	return j, nil
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
