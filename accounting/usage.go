package accounting

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// Usage is one association's usage over a span of days.
type Usage struct {
	Account      string
	User         string
	GPUSeconds   float64 // whole GPUs × seconds run
	ShardSeconds float64 // shards × seconds run
	CPUSeconds   float64
	JobsEnded    int // jobs that ran and ended in the span
}

// UsageBetween sums the daily usage ledger of cluster per association over
// the UTC days [from, to), sorted by account then user. Stale days are
// rebuilt first (RefreshUsage), so the answer always matches job.
func (s *Store) UsageBetween(ctx context.Context, cluster string, from, to time.Time) ([]Usage, error) {
	if _, err := s.RefreshUsage(ctx, cluster); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
SELECT account, user_name, sum(gpu_seconds), sum(shard_seconds), sum(cpu_seconds), sum(jobs_ended)::integer
FROM usage_daily
WHERE cluster = $1 AND day >= ($2::timestamptz AT TIME ZONE 'UTC')::date AND day < ($3::timestamptz AT TIME ZONE 'UTC')::date
GROUP BY account, user_name ORDER BY account, user_name`, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("load usage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Usage, error) {
		var u Usage
		err := r.Scan(&u.Account, &u.User, &u.GPUSeconds, &u.ShardSeconds, &u.CPUSeconds, &u.JobsEnded)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("load usage: %w", err)
	}
	return out, nil
}

// RefreshUsage rebuilds the usage ledger (usage_daily) of cluster for every
// day marked stale since the last refresh, from the job table, and returns
// how many days it rebuilt. A job's resource-seconds are split over the UTC
// days it ran; it counts as ended on the day it ended. Concurrent callers
// serialise; the rebuild commits with the clearing of the marks.
func (s *Store) RefreshUsage(ctx context.Context, cluster string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('fairway usage ' || $1::text))`, cluster); err != nil {
			return fmt.Errorf("take usage lock: %w", err)
		}
		rows, err := tx.Query(ctx, `DELETE FROM usage_dirty WHERE cluster = $1 RETURNING day`, cluster)
		if err != nil {
			return fmt.Errorf("read stale days: %w", err)
		}
		days, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			return fmt.Errorf("read stale days: %w", err)
		}
		n = len(days)
		for _, r := range dayRanges(days) {
			if err := rebuildUsage(ctx, tx, cluster, r.lo, r.hi); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("refresh usage ledger of %s: %w", cluster, err)
	}
	return n, nil
}

// dayRanges groups days into runs of consecutive days, [lo, hi) each.
func dayRanges(days []time.Time) []window {
	sort.Slice(days, func(i, j int) bool { return days[i].Before(days[j]) })
	var out []window
	for _, d := range days {
		d = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
		if k := len(out) - 1; k >= 0 && !d.After(out[k].hi) {
			out[k].hi = d.AddDate(0, 0, 1)
			continue
		}
		out = append(out, window{lo: d, hi: d.AddDate(0, 0, 1)})
	}
	return out
}

// rebuildUsage recomputes usage_daily of cluster for the UTC days [lo, hi).
func rebuildUsage(ctx context.Context, tx pgx.Tx, cluster string, lo, hi time.Time) error {
	if _, err := tx.Exec(ctx, `DELETE FROM usage_daily WHERE cluster = $1
		AND day >= ($2::timestamptz AT TIME ZONE 'UTC')::date AND day < ($3::timestamptz AT TIME ZONE 'UTC')::date`,
		cluster, lo, hi); err != nil {
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
GROUP BY d.day, j.account, j.user_name`, cluster, lo, hi)
	if err != nil {
		return fmt.Errorf("rebuild usage ledger: %w", err)
	}
	return nil
}
