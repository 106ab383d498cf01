package accounting

import (
	"context"
	"fmt"
	"time"
)

// Retention is how much history Fairway keeps; a zero field keeps that part
// for ever. Monthly partitions go whole (DropMonthsBefore): instant, and no
// bloat, unlike DELETE.
type Retention struct {
	// JobMonths is how many whole calendar months of job, job_gpu_usage
	// and prediction rows are kept besides the current month (by submit
	// time, end time and submit time). The run-time predictor and the
	// share rule learn from this history; a year and a month covers a
	// yearly cycle of deadlines.
	JobMonths int
	// DecisionDays is how long decision rows (by their cycle's start,
	// whole months past the cutoff) and cycle rows are kept. Decisions
	// are the bulk: one row per changed job per cycle.
	DecisionDays int
}

// DefaultRetention is serve's default (--retention-job-months,
// --retention-decision-days).
var DefaultRetention = Retention{JobMonths: 13, DecisionDays: 90}

// RetentionReport says what ApplyRetention dropped and from when on it
// keeps rows; a zero time means everything is kept.
type RetentionReport struct {
	Dropped        []string // partitions dropped, by table in the order job, job_gpu_usage (old, then future), prediction, decision
	CyclesPruned   int64
	JobsSince      time.Time
	DecisionsSince time.Time
}

// Cutoffs returns the instants before which r lets history go: for jobs
// the first day of the month JobMonths before now's, for decisions now
// less DecisionDays. Zero for a part kept for ever.
func (r Retention) Cutoffs(now time.Time) (jobs, decisions time.Time) {
	now = now.UTC()
	if r.JobMonths > 0 {
		jobs = time.Date(now.Year(), now.Month()-time.Month(r.JobMonths), 1, 0, 0, 0, 0, time.UTC)
	}
	if r.DecisionDays > 0 {
		decisions = now.Add(-time.Duration(r.DecisionDays) * 24 * time.Hour)
	}
	return jobs, decisions
}

// UsageFrom is the first month of job_gpu_usage partitions that cannot
// hold real records at now: a GPU node's login may write records ending
// within a day of the database's clock (migration 0005), so this month's
// and next month's partitions at most. Later ones are what a node could
// make before 0005, one per month it named, without bound.
func UsageFrom(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month()+2, 1, 0, 0, 0, 0, time.UTC)
}

// ApplyRetention drops the monthly partitions that end on or before r's
// cutoffs and deletes older cycle rows. Whatever r says, it also drops the
// partitions of job_gpu_usage from UsageFrom(now) on: they hold no history,
// and thousands of them slow every query on the table. Partitions hold
// every cluster's rows, so retention is the database's, not one
// cluster's: serve's leader runs it.
func (s *Store) ApplyRetention(ctx context.Context, now time.Time, r Retention) (RetentionReport, error) {
	if r.JobMonths < 0 || r.DecisionDays < 0 {
		return RetentionReport{}, fmt.Errorf("retention %+v: want 0 (keep all) or more", r)
	}
	var rep RetentionReport
	rep.JobsSince, rep.DecisionsSince = r.Cutoffs(now)
	for _, table := range []string{"job", "job_gpu_usage", "prediction"} {
		if !rep.JobsSince.IsZero() {
			names, err := s.DropMonthsBefore(ctx, table, rep.JobsSince)
			rep.Dropped = append(rep.Dropped, names...)
			if err != nil {
				return rep, err
			}
		}
		if table == "job_gpu_usage" {
			names, err := s.DropMonthsFrom(ctx, table, UsageFrom(now))
			rep.Dropped = append(rep.Dropped, names...)
			if err != nil {
				return rep, err
			}
		}
	}
	if !rep.DecisionsSince.IsZero() {
		names, err := s.DropMonthsBefore(ctx, "decision", rep.DecisionsSince)
		rep.Dropped = append(rep.Dropped, names...)
		if err != nil {
			return rep, err
		}
		if rep.CyclesPruned, err = s.PruneCycles(ctx, rep.DecisionsSince); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
