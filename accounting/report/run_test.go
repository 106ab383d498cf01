package report_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
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

// TestRun: the command's run opens the database, writes the report and
// draws its stages on one line that it ends.
func TestRun(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := report.Run(context.Background(), "", report.GenerateConfig{}, nil, quiet); !errors.Is(err, accounting.ErrNoDatabase) {
		t.Fatalf("no URL: err = %v, want ErrNoDatabase", err)
	}
	m := report.Month{Year: 1996, Month: time.October}
	fx := kthFixture(t, m.Prev().Start(), m.End())
	opt := kthOptions()
	opt.Counterfactual = false
	out := t.TempDir()
	var show bytes.Buffer
	g, err := report.Run(context.Background(), fx.Pool.Config().ConnString(), report.GenerateConfig{Month: m, Formats: []string{"json"}, Out: out, Options: opt}, &show, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if g.Cluster != fx.Cluster || g.Month != m || !slices.Equal(g.Files, []string{filepath.Join(out, "report.json")}) {
		t.Errorf("generated %+v, want %s %s in %s/report.json", g, fx.Cluster, m, out)
	}
	want := "\r\033[Kreport " + fx.Cluster + " 1996-10: reading the accounting database\r\033[Kreport " + fx.Cluster +
		" 1996-10: computing\r\033[Kreport " + fx.Cluster + " 1996-10: writing\n"
	if show.String() != want {
		t.Errorf("progress %q, want %q", show.String(), want)
	}
}

func TestParseFormats(t *testing.T) {
	if got, err := report.ParseFormats(" html,,csv "); err != nil || !slices.Equal(got, []string{"html", "csv"}) {
		t.Errorf("ParseFormats = %q, %v; want html, csv", got, err)
	}
	for list, want := range map[string]string{
		"html,pdf": `Formats "pdf": want some of html, md, csv, json`,
		" , ":      "Formats: empty",
	} {
		if _, err := report.ParseFormats(list); err == nil || err.Error() != want {
			t.Errorf("ParseFormats(%q) = %v, want %q", list, err, want)
		}
	}
}

// TestRecentJobs_OtherCase: a cluster named in another case than the
// database spells it (Slurm's ClusterName is case-sensitive there) is
// answered with the clusters the database holds, as simulate and tune
// answer it, not with advice to ingest a history that is there.
func TestRecentJobs_OtherCase(t *testing.T) {
	pool, store := freshDB(t)
	now := time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC)
	j := policy.Job{Cluster: "alps", ID: 1, ArrayTask: -1, User: "u", Account: "a", GPUs: 1, Submit: now.Add(-3 * time.Hour),
		Start: now.Add(-2 * time.Hour), End: now.Add(-time.Hour), State: policy.StateCompleted}
	if _, err := store.Import(context.Background(), accounting.NewJobsSource([]policy.Job{j}, nil, 0), accounting.ImportOptions{Source: "slurmdbd"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := report.RecentJobs(context.Background(), pool.Config().ConnString(), "ALPS", 10, now)
	if want := `no finished jobs of cluster "ALPS" in the last 10 days; clusters in the database: alps (1 job ending 2026-10-19 to 2026-10-19)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
