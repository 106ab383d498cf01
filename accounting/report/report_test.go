package report_test

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// kthOptions is the KTH SP2: one pool of 100 processors (the trace's
// MaxProcs), counted as processor-hours.
func kthOptions() report.Options {
	return report.Options{
		Cluster:        sim.Cluster{Nodes: 1, PerNode: 100, Unit: sim.CPUs},
		Now:            time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Counterfactual: true,
	}
}

// TestReport_GoldenKTH builds the report of October 1996 from the KTH trace
// loaded through the ingest path, checks its figures against the database's
// own usage ledger and against each other, and compares the Markdown, CSV
// and JSON renderings with the golden files (go test -update rewrites them).
func TestReport_GoldenKTH(t *testing.T) {
	m := report.Month{Year: 1996, Month: time.October}
	fx := kthFixture(t, m.Prev().Start(), m.End())
	r := fx.build(t, m, kthOptions())

	t.Run("ledger", func(t *testing.T) {
		// The usage ledger (usage_daily, rebuilt by SQL from job) splits
		// processor-seconds over days as the report does in Go.
		usage, err := fx.Store.UsageBetween(context.Background(), fx.Cluster, m.Start(), m.End())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{}
		for _, u := range usage {
			want[u.Account] += u.CPUSeconds / 3600
		}
		got := map[string]float64{}
		for _, a := range r.Accounts {
			got[a.Account] = float64(a.Hours)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
			t.Errorf("processor-hours per account vs usage ledger (-want +got):\n%s", diff)
		}
		var ended int
		err = fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM job WHERE cluster = $1 AND end_time >= $2 AND end_time < $3`,
			fx.Cluster, m.Start(), m.End()).Scan(&ended)
		if err != nil {
			t.Fatal(err)
		}
		if r.Summary.Jobs != ended {
			t.Errorf("summary jobs = %d, database has %d jobs ended in %s", r.Summary.Jobs, ended, m)
		}
	})

	t.Run("consistent", func(t *testing.T) {
		checkConsistent(t, r)
		if r.Previous == nil || r.Previous.Jobs == 0 {
			t.Errorf("previous month: %+v, want September 1996's jobs", r.Previous)
		}
		if r.Changes.Jobs == 0 || r.Changes.Reranked == 0 || r.Changes.Policy != "fair-qssf" || r.Changes.Predictor != "tsafrir" {
			t.Errorf("changes = %+v, want the replayed decision log", r.Changes)
		}
		if !slices.ContainsFunc(r.Predictions, func(p report.PredictionRow) bool { return p.Predictor == "tsafrir" && p.Jobs > 0 }) {
			t.Errorf("predictions = %+v, want tsafrir rows", r.Predictions)
		}
		if r.Efficiency.Records == 0 || r.Efficiency.ShardRecords == 0 || len(r.Efficiency.IdleJobs) != 10 {
			t.Errorf("efficiency: %d records, %d shard records, %d idle jobs; want some, some, 10",
				r.Efficiency.Records, r.Efficiency.ShardRecords, len(r.Efficiency.IdleJobs))
		}
		cf := r.Counterfactual
		if cf == nil || len(cf.Scenarios) != 3 || cf.Jobs == 0 {
			t.Fatalf("counterfactual = %+v, want three scenarios over the month's jobs", cf)
		}
		for _, s := range cf.Scenarios {
			if !s.MedianWait.OK() || !s.P95Rho.OK() {
				t.Errorf("scenario %s: %+v, want waits and ρ", s.Name, s)
			}
		}
	})

	t.Run("golden", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := report.Write(dir, r, []string{"md", "csv", "json"}); err != nil {
			t.Fatal(err)
		}
		compareGolden(t, dir, filepath.Join("testdata", "golden", "kth-1996-10"))
	})
}

// checkConsistent checks that the report's parts add up.
func checkConsistent(t *testing.T, r *report.Report) {
	t.Helper()
	s := r.Summary
	var jobs int
	var stateHours, acctHours, userHours, dayHours, lost float64
	for _, st := range r.States {
		jobs += st.Jobs
		stateHours += float64(st.Hours)
	}
	for _, a := range r.Accounts {
		acctHours += float64(a.Hours)
		lost += float64(a.Cancelled + a.Failed)
	}
	for _, u := range r.Users {
		userHours += float64(u.Hours)
	}
	for _, d := range r.Daily {
		dayHours += float64(d.Hours)
	}
	if jobs != s.Jobs {
		t.Errorf("jobs by state add up to %d, summary says %d", jobs, s.Jobs)
	}
	for name, h := range map[string]float64{"states": stateHours, "accounts": acctHours, "users": userHours, "days": dayHours} {
		if !approx(h, float64(s.Hours)) {
			t.Errorf("hours over %s add up to %.3f, summary says %.3f", name, h, float64(s.Hours))
		}
	}
	if !approx(lost, float64(s.CancelledHours+s.FailedHours)) {
		t.Errorf("cancelled+failed over accounts %.3f, summary %.3f", lost, float64(s.CancelledHours+s.FailedHours))
	}
	if s.Hours <= 0 || !s.Utilization.OK() || s.Utilization <= 0 || s.Utilization > 1 {
		t.Errorf("summary hours %v, utilization %v: want positive, at most 100%%", s.Hours, s.Utilization)
	}
	if !s.Jain.OK() || s.Jain <= 0 || s.Jain > 1 {
		t.Errorf("Jain's index %v, want in (0, 1]", s.Jain)
	}
	var ent float64
	for _, a := range r.Accounts {
		ent += float64(a.Entitled)
	}
	if ent > 1+1e-9 {
		t.Errorf("entitled shares of the accounts with jobs add up to %.4f > 1", ent)
	}
}

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// compareGolden compares every file in dir except SVGs with the file of
// the same name in golden, and the file lists, rewriting golden under
// -update. SVGs are checked to be SVG documents with drawing in them; their
// bytes depend on gonum/plot's version, not on the report.
func compareGolden(t *testing.T, dir, golden string) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".svg") {
			if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("<path")) {
				t.Errorf("%s: not an SVG with paths", e.Name())
			}
			continue
		}
		got = append(got, e.Name())
		path := filepath.Join(golden, e.Name())
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test -update)", e.Name(), err)
			continue
		}
		if diff := cmp.Diff(string(want), string(b)); diff != "" {
			t.Errorf("%s differs from %s (-want +got):\n%s", e.Name(), path, diff)
		}
	}
	wantEntries, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range wantEntries {
		want = append(want, e.Name())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files written vs golden files (-want +got):\n%s", diff)
	}
}
