package report_test

import (
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
)

// TestLoad_CyclesOfTheLeader: the report's cycle figures are the cycles
// that ran the cluster, the leader's, dry run or not; an HA follower's
// plan-only cycles (stamped dry_run, leader false) would double the count
// and show every one as a dry run.
func TestLoad_CyclesOfTheLeader(t *testing.T) {
	pool, store := freshDB(t)
	ctx := t.Context()
	start := time.Date(2026, 10, 2, 3, 0, 0, 0, time.UTC)
	for i := range 3 {
		at := start.Add(time.Duration(i) * 30 * time.Second)
		cycles := []accounting.Cycle{
			{Cluster: "c", Cycle: int64(i + 1), Started: at, Policy: "fifo", Leader: true, Planned: i == 2, Written: 5, Total: time.Second, Running: 7 + i},
			{Cluster: "c", Cycle: int64(100 + i), Started: at.Add(time.Second), Policy: "fifo", Leader: false, Planned: true, Total: 3 * time.Second},
		}
		for _, c := range cycles {
			if err := store.RecordCycle(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A failed read after them saw nothing running: not the month's last
	// look at the cluster.
	failed := accounting.Cycle{Cluster: "c", Cycle: 4, Started: start.Add(time.Hour), Policy: "fifo", Leader: true, Error: "read: slurmrestd unreachable"}
	if err := store.RecordCycle(ctx, failed); err != nil {
		t.Fatal(err)
	}
	d, err := report.NewSource(pool, store).Load(ctx, "c", report.Month{Year: 2026, Month: time.October}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := report.CycleStats{Cycles: 4, Planned: 1, Written: 15, Failed: 1, MedianSeconds: 1,
		LastAt: start.Add(time.Minute), LastRunning: 9}
	if d.Cycles != want {
		t.Errorf("cycle stats %+v, want the leader's %+v", d.Cycles, want)
	}
}
