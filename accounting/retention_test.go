package accounting_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/google/go-cmp/cmp"
)

func TestRetention_Cutoffs(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	jobs, decisions := accounting.DefaultRetention.Cutoffs(now)
	if want := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC); !jobs.Equal(want) {
		t.Errorf("jobs cutoff %s, want %s", jobs, want)
	}
	if want := time.Date(2026, 8, 26, 9, 30, 0, 0, time.UTC); !decisions.Equal(want) {
		t.Errorf("decisions cutoff %s, want %s", decisions, want)
	}
	if j, d := (accounting.Retention{}).Cutoffs(now); !j.IsZero() || !d.IsZero() {
		t.Errorf("zero retention: cutoffs %s %s, want none", j, d)
	}
}

// TestApplyRetention_Lab fills two years of monthly partitions and cycle
// rows, then applies the default retention: partitions wholly before the
// cutoffs go, the rest stay, and a second run drops nothing. Without it
// (the old serve never called DropMonthsBefore or PruneCycles) every table
// grew for ever.
func TestApplyRetention_Lab(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	for m := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC); !m.After(now); m = m.AddDate(0, 1, 0) {
		for _, table := range []string{"job", "job_gpu_usage", "prediction", "decision"} {
			if _, err := pool.Exec(ctx, `SELECT fairway_ensure_month($1::regclass, $2)`, table, m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pool.Exec(ctx, `INSERT INTO decision (cluster, decided_at, cycle, job_id, policy, rank, score, field, value, dry_run)
			VALUES ('c', $1, 1, 1, 'fifo', 1, 1, 'site_factor', 1, false)`, m.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		c := accounting.Cycle{Cluster: "c", Cycle: 1, Started: m.Add(time.Hour), Policy: "fifo"}
		if err := store.RecordCycle(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := store.ApplyRetention(ctx, now, accounting.DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, table := range []string{"job", "job_gpu_usage", "prediction"} {
		for m := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC); m.Before(time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)); m = m.AddDate(0, 1, 0) {
			want = append(want, fmt.Sprintf("%s_p%s", table, m.Format("200601")))
		}
	}
	for m := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC); m.Before(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)); m = m.AddDate(0, 1, 0) {
		want = append(want, fmt.Sprintf("decision_p%s", m.Format("200601")))
	}
	if diff := cmp.Diff(want, rep.Dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// Cycles of 2024-11 .. 2026-08 started before 2026-08-26: 22 months.
	if rep.CyclesPruned != 22 {
		t.Errorf("cycles pruned %d, want 22", rep.CyclesPruned)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM decision`); n != 4 { // 2026-08 .. 2026-11
		t.Errorf("decisions kept: %d, want 4", n)
	}
	var parts int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'job_gpu_usage'`).Scan(&parts); err != nil || parts != 14 {
		t.Errorf("job_gpu_usage partitions kept: %d, %v; want 14 (2025-10 .. 2026-11)", parts, err)
	}
	again, err := store.ApplyRetention(ctx, now, accounting.DefaultRetention)
	if err != nil || len(again.Dropped) != 0 || again.CyclesPruned != 0 {
		t.Errorf("second run: %+v, %v; want nothing dropped", again, err)
	}
	if none, err := store.ApplyRetention(ctx, now.AddDate(5, 0, 0), accounting.Retention{}); err != nil || len(none.Dropped) != 0 {
		t.Errorf("zero retention five years later: %+v, %v; want nothing dropped", none, err)
	}
}

// TestUsageFrom: the first month no node may write is the one after next.
func TestUsageFrom(t *testing.T) {
	for _, tt := range []struct{ now, want time.Time }{
		{time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC), time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2027, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)}, // 2026-12-31 UTC
	} {
		if got := accounting.UsageFrom(tt.now); !got.Equal(tt.want) {
			t.Errorf("UsageFrom(%s) = %s, want %s", tt.now, got, tt.want)
		}
	}
}

// TestApplyRetention_FutureUsagePartitions_Lab: partitions of
// job_gpu_usage dated after next month, which a GPU node's login could make
// before migration 0005 (one per month it named, year 12000 included), go
// with the default retention and with none; this month's and next month's
// stay with their rows. Before, retention dropped only old partitions and
// all 201 survived.
func TestApplyRetention_FutureUsagePartitions_Lab(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	var us []accounting.GPUUsage
	var want []string
	for i := 0; i < 202; i++ {
		m := time.Date(2026, 11+time.Month(i), 1, 12, 0, 0, 0, time.UTC)
		us = append(us, accounting.GPUUsage{Cluster: "c", JobID: int64(i + 1), Node: "gpu9", Ended: m})
		if i >= 2 {
			want = append(want, "job_gpu_usage_p"+m.Format("200601"))
		}
	}
	us = append(us, accounting.GPUUsage{Cluster: "c", JobID: 999, Node: "gpu9", Ended: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)})
	want = append(want, "job_gpu_usage_p1200001")
	if n, err := store.RecordGPUUsage(ctx, us); err != nil || n != len(us) {
		t.Fatalf("record %d usage rows: %d, %v", len(us), n, err)
	}
	for _, r := range []accounting.Retention{accounting.DefaultRetention, {}} {
		rep, err := store.ApplyRetention(ctx, now, r)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(rep.Dropped)
		slices.Sort(want)
		if diff := cmp.Diff(want, rep.Dropped); diff != "" {
			t.Errorf("retention %+v dropped (-want +got):\n%s", r, diff)
		}
		if n := countRows(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'job_gpu_usage'::regclass`); n != 2 {
			t.Errorf("retention %+v: %d job_gpu_usage partitions left, want 2 (2026-11, 2026-12)", r, n)
		}
		if n := countRows(t, pool, `SELECT count(*) FROM job_gpu_usage`); n != 2 {
			t.Errorf("retention %+v: %d usage rows left, want 2 (this month's and next month's)", r, n)
		}
		// The next run (and the zero retention) finds none.
		want = nil
	}
}
