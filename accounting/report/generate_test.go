package report_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/google/go-cmp/cmp"
)

// TestGenerate_KTH: Generate finds the database's only cluster, reports
// its stages in order with the cluster and month resolved, and writes
// exactly the report that loading, Build and Write give by hand.
func TestGenerate_KTH(t *testing.T) {
	m := report.Month{Year: 1996, Month: time.October}
	fx := kthFixture(t, m.Prev().Start(), m.End())
	opt := kthOptions()
	opt.Counterfactual = false // the replay is Build's to test; this is the run around it
	var steps []string
	out := t.TempDir()
	g, err := report.Generate(context.Background(), report.NewSource(fx.Pool, fx.Store), report.GenerateConfig{
		Month: m, Formats: []string{"json", "md"}, Out: out, Options: opt,
		Step: func(cluster string, got report.Month, what string) {
			if cluster != fx.Cluster || got != m {
				t.Errorf("step %q for %s %s, want %s %s", what, cluster, got, fx.Cluster, m)
			}
			steps = append(steps, what)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	files := g.Files
	if g.Cluster != fx.Cluster || g.Month != m || g.Jobs == 0 {
		t.Errorf("generated %s %s with %d jobs, want %s %s and some jobs", g.Cluster, g.Month, g.Jobs, fx.Cluster, m)
	}
	if want := []string{"reading the accounting database", "computing", "writing"}; !cmp.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	if !slices.Contains(files, filepath.Join(out, "report.json")) || !slices.Contains(files, filepath.Join(out, "report.md")) {
		t.Fatalf("files written %q: want report.json and report.md in %s", files, out)
	}
	got, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.WriteJSON(&want, fx.build(t, m, opt)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.String(), string(got)); d != "" {
		t.Errorf("report.json differs from Build's report of the same month (-by hand +Generate):\n%.2000s", d)
	}
}

// TestGenerate_UnknownCluster: a cluster the database does not hold fails
// before anything is computed or written, naming the clusters it holds.
func TestGenerate_UnknownCluster(t *testing.T) {
	m := report.Month{Year: 1996, Month: time.October}
	fx := kthFixture(t, m.Prev().Start(), m.End())
	out := t.TempDir()
	_, err := report.Generate(context.Background(), report.NewSource(fx.Pool, fx.Store), report.GenerateConfig{
		Cluster: "nope", Month: m, Formats: []string{"json"}, Out: out, Options: kthOptions(),
		Step: func(_ string, _ report.Month, what string) { t.Errorf("step %q after a failed resolve", what) },
	})
	if err == nil || !strings.Contains(err.Error(), fx.Cluster) {
		t.Errorf("Generate for cluster nope: %v, want an error naming %s", err, fx.Cluster)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("%d files written after a failed resolve", len(ents))
	}
}
