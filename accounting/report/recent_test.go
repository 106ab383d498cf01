package report_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
)

// TestRecentJobs: what predict eval --from-db replays is the cluster's
// stored jobs that ended in the last days, found without naming the
// cluster when the database holds one.
func TestRecentJobs(t *testing.T) {
	if _, _, err := report.RecentJobs(context.Background(), "", "kth", 30, time.Now()); !errors.Is(err, accounting.ErrNoDatabase) {
		t.Fatalf("no URL: err = %v, want ErrNoDatabase", err)
	}
	m := report.Month{Year: 1996, Month: time.October}
	fx := kthFixture(t, m.Start(), m.End())
	url := fx.Pool.Config().ConnString()
	now, days := m.End(), 10
	since := now.AddDate(0, 0, -days)
	want := 0
	for _, j := range fx.Jobs {
		if !j.End.Before(since) && j.End.Before(now) {
			want++
		}
	}
	if want == 0 {
		t.Fatal("the fixture has no job ending in the window: the test would prove nothing")
	}
	jobs, name, err := report.RecentJobs(context.Background(), url, "", days, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != want || name != fx.Cluster+" (database, last 10 days)" {
		t.Errorf("got %d jobs as %q, want %d as %q", len(jobs), name, want, fx.Cluster+" (database, last 10 days)")
	}
	for _, j := range jobs {
		if j.End.Before(since) || !j.End.Before(now) {
			t.Fatalf("job %v ended %s, outside [%s, %s)", j.ID, j.End, since, now)
		}
	}
	if _, _, err := report.RecentJobs(context.Background(), url, "nosuch", days, now); err == nil || !strings.Contains(err.Error(), `no finished jobs of cluster "nosuch" in the last 10 days`) {
		t.Errorf("unknown cluster: err = %v", err)
	}
}
