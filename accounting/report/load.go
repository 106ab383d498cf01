package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoCluster is returned by Source.Resolve when the database holds no
// cluster, or several and none was named.
var ErrNoCluster = errors.New("no cluster to report on")

// Data is what the accounting database holds about one cluster and month:
// the input of Build. Load fills it; tests may build it by hand.
type Data struct {
	Cluster string
	Month   Month
	// Jobs are the finished jobs that ended in the month or ran during
	// it (a job that ran over the month's end is here for the GPU-hours it
	// used inside the month), in end order.
	Jobs []policy.Job
	// Shares is the cluster's share tree; nil when none is stored, and
	// then every account and user has one share.
	Shares *accounting.ShareTree
	// Outcomes pairs predictions with actual run times, for the jobs that
	// ended in the month (the prediction_outcome view).
	Outcomes []Outcome
	// GPUUsage holds the epilog's records closed in the month.
	GPUUsage []accounting.GPUUsage
	// Decisions sums up the decision log of the month, one entry per job.
	Decisions []JobDecisions
	// Cycles sums up the serve cycles of the month.
	Cycles CycleStats
	// PowerActions are serve's power-saving records up to the month's end
	// (earlier ones too: a node powered down before the month counts from
	// its start), oldest first.
	PowerActions []accounting.PowerAction
	// KeptSince is the start of the oldest month of jobs the database
	// still holds (serve's retention drops older ones); zero when unknown.
	KeptSince time.Time
}

// Outcome is one prediction and the run time the job really had.
type Outcome struct {
	JobID     int64
	Partition string
	Predictor string
	Predicted float64 // seconds
	Actual    float64 // seconds
}

// JobDecisions is what the decision log says about one job over the month.
type JobDecisions struct {
	JobID int64
	Rows  int
	// Written counts the rows of cycles that were not dry runs: values
	// written to Slurm for the job. Serve logs a job only when its value
	// changes, so a job Fairway moved after first placing it has two or more.
	Written int
	// Planned counts the rows of dry-run cycles: values only logged.
	Planned   int    `json:"DryRun"`
	Policy    string // the policy that decided most often
	Predictor string // the predictor used most often ("" for none)
	BestRank  int
	WorstRank int
}

// CycleStats sums up `fairway serve` cycles.
type CycleStats struct {
	Cycles        int
	Planned       int     `json:"DryRun"` // cycles run in dry-run mode
	Written       int64   // values written to Slurm
	WriteErrors   int64   // values Slurm refused
	Failed        int     // cycles that ended in an error
	MedianSeconds float64 // median cycle duration
	// LastAt and LastRunning are the month's last leader cycle: when it
	// started, and the jobs it saw running (zero time: no cycle).
	LastAt      time.Time `json:",omitzero"`
	LastRunning int       `json:",omitempty"`
}

// Source reads report data from the accounting database.
type Source struct {
	pool  *pgxpool.Pool
	store *accounting.Store
}

// NewSource returns a Source over pool; store must be the accounting Store
// on the same database (it loads the share tree).
func NewSource(pool *pgxpool.Pool, store *accounting.Store) *Source {
	return &Source{pool: pool, store: store}
}

// ClusterSpan is one cluster of the database and the ends of its
// finished jobs.
type ClusterSpan struct {
	Name        string
	Jobs        int64
	First, Last time.Time // earliest and latest end time
}

// String spells the span for messages: "kth (2,913 jobs ending 1996-09-23 to 1997-08-31)".
func (c ClusterSpan) String() string {
	return fmt.Sprintf("%s (%s ending %s to %s)", c.Name, plural.N(int(c.Jobs), "job", "jobs"), c.First.UTC().Format("2006-01-02"), c.Last.UTC().Format("2006-01-02"))
}

// Clusters lists the clusters with finished jobs in the database.
func (s *Source) Clusters(ctx context.Context) ([]ClusterSpan, error) {
	rows, err := s.pool.Query(ctx, `
SELECT cluster, count(*), min(end_time), max(end_time)
FROM job WHERE end_time IS NOT NULL
GROUP BY cluster ORDER BY cluster`)
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClusterSpan, error) {
		var c ClusterSpan
		err := r.Scan(&c.Name, &c.Jobs, &c.First, &c.Last)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	return out, nil
}

// ErrNoJobs is wrapped by Resolve when the cluster has no finished job in
// the month asked for, or none at all.
var ErrNoJobs = errors.New("no jobs")

// spansText lists clusters as error messages name them: "kth (28481 jobs
// ending 1996-09-30 to 1997-08-29), ...".
func spansText(spans []ClusterSpan) string {
	parts := make([]string, len(spans))
	for i, c := range spans {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// Resolve picks what a report with the given settings covers: the cluster
// named, or the only one in the database; the month given, or when m is
// the zero Month the last month in which one of the cluster's jobs ended.
// Its errors say what the database holds instead: "no jobs for cluster X
// between 2026-10-01 and 2026-11-01; clusters in the database: ...".
func (s *Source) Resolve(ctx context.Context, name string, m Month) (string, Month, error) {
	spans, err := s.Clusters(ctx)
	if err != nil {
		return "", m, err
	}
	held := func() string {
		if len(spans) == 0 {
			return "the database holds no finished jobs (fairway ingest, or fairway serve, fills it)"
		}
		return "clusters in the database: " + spansText(spans)
	}
	if name == "" {
		switch len(spans) {
		case 0:
			return "", m, fmt.Errorf("%w: %s", ErrNoCluster, held())
		case 1:
			name = spans[0].Name
		default:
			return "", m, fmt.Errorf("%w: name one with --cluster; %s", ErrNoCluster, held())
		}
	}
	var span *ClusterSpan
	for i := range spans {
		if spans[i].Name == name {
			span = &spans[i]
		}
	}
	if m == (Month{}) {
		if span == nil {
			return name, m, fmt.Errorf("%w for cluster %s; %s", ErrNoJobs, name, held())
		}
		last := span.Last.UTC()
		return name, Month{Year: last.Year(), Month: last.Month()}, nil
	}
	var n int64
	if span != nil {
		// the jobs Load reads: ended in the month or ran during it
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM job
WHERE cluster = $1 AND end_time >= $2 AND (end_time < $3 OR start_time < $3)`, name, m.Start(), m.End()).Scan(&n); err != nil {
			return name, m, fmt.Errorf("count jobs: %w", err)
		}
	}
	if n == 0 {
		return name, m, fmt.Errorf("%w for cluster %s between %s and %s; %s", ErrNoJobs, name,
			m.Start().Format("2006-01-02"), m.End().Format("2006-01-02"), held())
	}
	return name, m, nil
}

// Load reads everything a report on cluster and month needs. With full
// false it reads only the jobs and the share tree, enough for the summary
// of the month before.
func (s *Source) Load(ctx context.Context, cluster string, m Month, full bool) (*Data, error) {
	d := &Data{Cluster: cluster, Month: m}
	from, to := m.Start(), m.End()
	var err error
	if d.Jobs, err = s.jobs(ctx, cluster, from, to); err != nil {
		return nil, err
	}
	tree, err := s.store.LoadShares(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("load shares: %w", err)
	}
	if len(tree.Nodes) > 0 {
		d.Shares = tree
	}
	var oldest *string
	if err := s.pool.QueryRow(ctx, `SELECT min(right(c.relname, 6)) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'job'::regclass AND c.relname ~ '_p[0-9]{6}$'`).Scan(&oldest); err != nil {
		return nil, fmt.Errorf("oldest month kept: %w", err)
	}
	if oldest != nil {
		if t, err := time.Parse("200601", *oldest); err == nil {
			d.KeptSince = t
		}
	}
	if !full {
		return d, nil
	}
	if d.Outcomes, err = s.outcomes(ctx, cluster, from, to); err != nil {
		return nil, err
	}
	if d.GPUUsage, err = s.gpuUsage(ctx, cluster, from, to); err != nil {
		return nil, err
	}
	if d.Decisions, err = s.decisions(ctx, cluster, from, to); err != nil {
		return nil, err
	}
	if d.Cycles, err = s.cycles(ctx, cluster, from, to); err != nil {
		return nil, err
	}
	if d.PowerActions, err = s.store.PowerActions(ctx, cluster, "", time.Time{}, to); err != nil {
		return nil, err
	}
	return d, nil
}

// jobs reads the jobs that ended in [from, to) or ran during it. The lower
// bound on end_time is what the job table's BRIN index serves.
func (s *Source) jobs(ctx context.Context, cluster string, from, to time.Time) ([]policy.Job, error) {
	rows, err := s.pool.Query(ctx, `
SELECT job_id, array_job_id, array_task, het_job, user_name, account, partition, qos, name,
	submit_time, eligible_time, start_time, end_time, time_limit_s, nodes, cpus, memory_mb,
	gpus, gpu_type, shards, state, exit_code
FROM job
WHERE cluster = $1 AND end_time >= $2 AND (end_time < $3 OR start_time < $3)
ORDER BY end_time, job_id, array_task`, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	defer rows.Close()
	var out []policy.Job
	for rows.Next() {
		var (
			j                      policy.Job
			eligible, start, end   *time.Time
			limit                  *int64
			state                  string
			nodes, cpus, gpus, shd int32
		)
		if err := rows.Scan(&j.ID, &j.ArrayJob, &j.ArrayTask, &j.HetJob, &j.User, &j.Account, &j.Partition, &j.QOS, &j.Name,
			&j.Submit, &eligible, &start, &end, &limit, &nodes, &cpus, &j.MemoryMB,
			&gpus, &j.GPUType, &shd, &state, &j.ExitCode); err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		j.Cluster = cluster
		j.Submit = j.Submit.UTC()
		if eligible != nil {
			j.Eligible = eligible.UTC()
		}
		if start != nil {
			j.Start = start.UTC()
		}
		if end != nil {
			j.End = end.UTC()
		}
		if limit != nil {
			j.TimeLimit = time.Duration(*limit) * time.Second
		}
		j.Nodes, j.CPUs, j.GPUs, j.Shards = int(nodes), int(cpus), int(gpus), int(shd)
		j.State = policy.ParseState(state)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	return out, nil
}

// outcomes reads the prediction outcomes of the jobs that ended in [from, to).
func (s *Source) outcomes(ctx context.Context, cluster string, from, to time.Time) ([]Outcome, error) {
	rows, err := s.pool.Query(ctx, `
SELECT job_id, partition, predictor, predicted_s, actual_s
FROM prediction_outcome
WHERE cluster = $1 AND end_time >= $2 AND end_time < $3
ORDER BY job_id, array_task, predictor`, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("read prediction outcomes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Outcome, error) {
		var o Outcome
		err := r.Scan(&o.JobID, &o.Partition, &o.Predictor, &o.Predicted, &o.Actual)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read prediction outcomes: %w", err)
	}
	return out, nil
}

// gpuUsage reads the epilog records closed in [from, to).
func (s *Source) gpuUsage(ctx context.Context, cluster string, from, to time.Time) ([]accounting.GPUUsage, error) {
	rows, err := s.pool.Query(ctx, `
SELECT job_id, node, gpu_minor, started_at, ended_at, gpu_uuid, gpu_model, shards,
	util_avg_pct, util_max_pct, mem_peak_mb, mem_total_mb, energy_joules
FROM job_gpu_usage
WHERE cluster = $1 AND ended_at >= $2 AND ended_at < $3
ORDER BY job_id, ended_at, node, gpu_minor`, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("read GPU usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounting.GPUUsage, error) {
		var (
			u          accounting.GPUUsage
			started    *time.Time
			minor, shd int32
			avg, peak  *float32
		)
		err := r.Scan(&u.JobID, &u.Node, &minor, &started, &u.Ended, &u.UUID, &u.Model, &shd,
			&avg, &peak, &u.MemPeakMB, &u.MemTotalMB, &u.EnergyJ)
		u.Cluster, u.GPUMinor, u.Shards = cluster, int(minor), int(shd)
		u.Ended = u.Ended.UTC()
		if started != nil {
			u.Started = started.UTC()
		}
		if avg != nil {
			v := float64(*avg)
			u.UtilAvgPct = &v
		}
		if peak != nil {
			v := float64(*peak)
			u.UtilMaxPct = &v
		}
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("read GPU usage: %w", err)
	}
	return out, nil
}

// decisions sums up the decision log of [from, to) per job.
func (s *Source) decisions(ctx context.Context, cluster string, from, to time.Time) ([]JobDecisions, error) {
	rows, err := s.pool.Query(ctx, `
SELECT job_id, count(*)::int,
	count(*) FILTER (WHERE NOT dry_run)::int, count(*) FILTER (WHERE dry_run)::int,
	mode() WITHIN GROUP (ORDER BY policy), mode() WITHIN GROUP (ORDER BY predictor),
	min(rank), max(rank)
FROM decision
WHERE cluster = $1 AND decided_at >= $2 AND decided_at < $3
GROUP BY job_id
ORDER BY job_id`, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("read decisions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JobDecisions, error) {
		var d JobDecisions
		var best, worst int32
		err := r.Scan(&d.JobID, &d.Rows, &d.Written, &d.Planned, &d.Policy, &d.Predictor, &best, &worst)
		d.BestRank, d.WorstRank = int(best), int(worst)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read decisions: %w", err)
	}
	return out, nil
}

// cycles sums up the serve cycles that started in [from, to): the
// leader's, dry run or not. An HA follower records its plan-only cycles
// too (leader false); they ran nothing on the cluster.
func (s *Source) cycles(ctx context.Context, cluster string, from, to time.Time) (CycleStats, error) {
	var c CycleStats
	var median *float64
	err := s.pool.QueryRow(ctx, `
SELECT count(*)::int, count(*) FILTER (WHERE dry_run)::int, coalesce(sum(written), 0)::bigint,
	coalesce(sum(write_errors), 0)::bigint, count(*) FILTER (WHERE error <> '')::int,
	percentile_cont(0.5) WITHIN GROUP (ORDER BY total_seconds)
FROM cycle
WHERE cluster = $1 AND started_at >= $2 AND started_at < $3 AND leader`, cluster, from, to).
		Scan(&c.Cycles, &c.Planned, &c.Written, &c.WriteErrors, &c.Failed, &median)
	if err != nil {
		return c, fmt.Errorf("read cycles: %w", err)
	}
	if median != nil {
		c.MedianSeconds = *median
	}
	err = s.pool.QueryRow(ctx, `
SELECT started_at, running FROM cycle
WHERE cluster = $1 AND started_at >= $2 AND started_at < $3 AND leader AND error = ''
ORDER BY started_at DESC LIMIT 1`, cluster, from, to).Scan(&c.LastAt, &c.LastRunning)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("read the month's last cycle: %w", err)
	}
	c.LastAt = c.LastAt.UTC()
	return c, nil
}

// RecentJobs loads the jobs of cluster that ended in the last days days
// before now from the database at url, to replay what a live cluster's
// predictor learns from, and the name to report them under. cluster ""
// is the database's only cluster, as a report finds it.
func RecentJobs(ctx context.Context, url, cluster string, days int, now time.Time) ([]policy.Job, string, error) {
	pool, store, err := accounting.Open(ctx, url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, "", err
	}
	defer pool.Close()
	if cluster == "" {
		if cluster, _, err = NewSource(pool, store).Resolve(ctx, "", Month{}); err != nil {
			return nil, "", fmt.Errorf("--from-db: %w", err)
		}
	}
	jobs, err := store.FinishedJobs(ctx, cluster, now.AddDate(0, 0, -days), now)
	if err != nil {
		return nil, "", fmt.Errorf("load finished jobs of %s: %w", cluster, err)
	}
	if len(jobs) == 0 {
		// A name the database does not hold (a typo, another case: the
		// database keeps ClusterName as Slurm spelled it) is answered with
		// the names it holds, as Resolve answers simulate and tune.
		if spans, err := NewSource(pool, store).Clusters(ctx); err == nil && len(spans) > 0 &&
			!slices.ContainsFunc(spans, func(s ClusterSpan) bool { return s.Name == cluster }) {
			return nil, "", fmt.Errorf("no finished jobs of cluster %q in the last %d days; clusters in the database: %s", cluster, days, spansText(spans))
		}
		return nil, "", fmt.Errorf("no finished jobs of cluster %q in the last %d days in the database (run `fairway ingest --from slurmdbd` or `fairway serve`)", cluster, days)
	}
	return jobs, fmt.Sprintf("%s (database, last %s)", cluster, plural.N(days, "day", "days")), nil
}

// FinishedHistory loads the finished jobs of cluster that ended in [since,
// until) from the database at url (a zero since or until leaves that end
// open), in end order, with the cluster's name: the history `fairway tune
// --from-db` fits a ranking to. cluster "" is the database's only
// cluster, as a report finds it. Its errors say what the database holds
// instead: an unknown cluster lists the clusters with finished jobs, an
// empty period names the span the cluster's jobs ended in.
func FinishedHistory(ctx context.Context, url, cluster string, since, until time.Time) ([]policy.Job, string, error) {
	return history(ctx, url, cluster, since, until, false)
}

// RanHistory is FinishedHistory of the finished jobs that ran during
// [since, until) (Store.JobsThatRan): those that ended after until too, as
// they held nodes before it. `fairway power eval --from-db` replays their
// node use.
func RanHistory(ctx context.Context, url, cluster string, since, until time.Time) ([]policy.Job, string, error) {
	return history(ctx, url, cluster, since, until, true)
}

func history(ctx context.Context, url, cluster string, since, until time.Time, ran bool) ([]policy.Job, string, error) {
	pool, store, err := accounting.Open(ctx, url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, "", err
	}
	defer pool.Close()
	src := NewSource(pool, store)
	if cluster, _, err = src.Resolve(ctx, cluster, Month{}); err != nil {
		return nil, "", err
	}
	read, verb := store.FinishedJobs, "ended"
	if ran {
		read, verb = store.JobsThatRan, "ran"
	}
	jobs, err := read(ctx, cluster, since, until)
	if err != nil {
		return nil, "", fmt.Errorf("load finished jobs of %s: %w", cluster, err)
	}
	if len(jobs) > 0 {
		return jobs, cluster, nil
	}
	held := ""
	if spans, err := src.Clusters(ctx); err == nil {
		for _, s := range spans {
			if s.Name == cluster {
				held = "; the database holds " + s.String()
			}
		}
	}
	return nil, cluster, fmt.Errorf("no finished job of cluster %s %s %s%s", cluster, verb, PeriodText(since, until), held)
}

// PeriodText spells an end-time period for messages: "between 2026-01-01
// and 2026-04-01", "since 2026-01-01", "before 2026-04-01" or "at any time".
func PeriodText(since, until time.Time) string {
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02") }
	switch {
	case !since.IsZero() && !until.IsZero():
		return "between " + day(since) + " and " + day(until)
	case !since.IsZero():
		return "since " + day(since)
	case !until.IsZero():
		return "before " + day(until)
	}
	return "at any time"
}
