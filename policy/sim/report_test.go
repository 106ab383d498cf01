package sim

import (
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
)

func TestRunConfigValidate(t *testing.T) {
	ok := RunConfig{Policies: []string{"fifo"}, Predictor: "none", Parallel: 1, Load: 1}
	for _, tc := range []struct {
		name string
		edit func(*RunConfig)
		want string
	}{
		{"valid", func(*RunConfig) {}, ""},
		{"predictor", func(c *RunConfig) { c.Predictor = "oracle" }, `Predictor: unknown predictor "oracle"`},
		{"nodes", func(c *RunConfig) { c.Nodes = -1 }, "Nodes -1, PerNode 0: want >= 0"},
		{"helios", func(c *RunConfig) { c.Trace, c.Format = "h.csv", "helios" }, "--nodes: required for Helios"},
		{"parallel", func(c *RunConfig) { c.Parallel = 0 }, "Parallel 0: want >= 1"},
		{"load", func(c *RunConfig) { c.Load = 0 }, "Load 0: want a factor > 0"},
		{"load too high", func(c *RunConfig) { c.Load = 1e300 }, "Load 1e+300: want a factor > 0 and at most 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNameList(t *testing.T) {
	got, err := NameList(" fifo, fair-sjf,,fifo ", IsPolicy)
	if err != nil || strings.Join(got, ",") != "fifo,fair-sjf" {
		t.Errorf("NameList = %v, %v; want fifo,fair-sjf", got, err)
	}
	if _, err := NameList("fifo,lottery", IsPolicy); err == nil || !strings.Contains(err.Error(), `"lottery"`) {
		t.Errorf("an unknown policy: %v", err)
	}
}

func TestParseChoice(t *testing.T) {
	ch, err := ParseChoice(" fifo,fair-sjf,fifo", "tiresias,", "none", "alea")
	if err != nil || strings.Join(ch.Policies, ",") != "fifo,fair-sjf" || len(ch.Preempt) != 1 || !ch.Preempt["tiresias"] ||
		ch.Backfill != NoBackfill || ch.Predictor != "alea" {
		t.Fatalf("ParseChoice = %+v, %v", ch, err)
	}
	if ch, err := ParseChoice("", "", "easy", "none"); err != nil || ch.Policies != nil || ch.Preempt == nil || len(ch.Preempt) != 0 {
		t.Errorf("nothing named: %+v, %v; want no policies and an empty preempt set", ch, err)
	}
	for _, tc := range []struct{ policies, preempt, backfill, predictor, want string }{
		{"fifo,lottery", "", "easy", "none", `Policies: unknown name "lottery" (want some of fifo,`},
		{"fifo", "lottery", "easy", "none", `Preempt: unknown name "lottery"`},
		{"fifo", "", "conservative", "none", `Backfill: unknown backfill "conservative": want easy or none`},
		{"fifo", "", "easy", "oracle", `Predictor: unknown predictor "oracle": want one of`},
	} {
		if _, err := ParseChoice(tc.policies, tc.preempt, tc.backfill, tc.predictor); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseChoice(%q, %q, %q, %q) = %v, want %q", tc.policies, tc.preempt, tc.backfill, tc.predictor, err, tc.want)
		}
	}
}

func TestParseLoads(t *testing.T) {
	if got, err := ParseLoads("0.8, 1,1.2"); err != nil || !slices.Equal(got, []float64{0.8, 1, 1.2}) {
		t.Errorf("ParseLoads = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-1", "1,x"} {
		var fe *FieldError
		if _, err := ParseLoads(bad); !errors.As(err, &fe) || len(fe.Fields) != 1 || fe.Fields[0].Field != "Loads" {
			t.Errorf("ParseLoads(%q) = %v, want a FieldError of Loads", bad, err)
		}
	}
}

func TestForecastPolicy(t *testing.T) {
	tiresias := map[string]bool{"tiresias": true}
	for _, tc := range []struct {
		named         []string
		set           bool
		preempt       map[string]bool
		want, wantErr string
	}{
		{nil, false, tiresias, policy.Default, ""},
		{[]string{"fifo", "sjf"}, false, nil, policy.Default, ""},
		{[]string{"fifo"}, true, tiresias, "fifo", ""},
		{[]string{"fifo", "sjf"}, true, nil, "", "--policies: --forecast measures one policy, got 2"},
		{[]string{"tiresias"}, true, tiresias, "", "--preempt: forecasts are measured without preemption: leave tiresias out of --preempt"},
	} {
		got, err := ForecastPolicy(tc.named, tc.set, tc.preempt)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("ForecastPolicy(%v, %v, %v) = %q, %v; want %q, %q", tc.named, tc.set, tc.preempt, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestReportWriteCSV compares two policies on the bundled workload and
// checks the CSV files hold a row per policy and per policy and user.
func TestReportWriteCSV(t *testing.T) {
	c := RunConfig{Policies: []string{"fifo", "fair-sjf"}, Predictor: "none", Parallel: 1, Load: 1, Backfill: EASY}
	w, err := c.LoadWorkload()
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Compare(t.Context(), w, CompareConfig{Policies: c.Policies, Predictor: c.Predictor, Backfill: c.Backfill, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(w, runs, c)
	if rep.Jobs == 0 || len(rep.Policies) != 2 || rep.Cluster != InfoOf(w.Cluster) || rep.Skipped != nil && len(rep.Skipped) == 0 {
		t.Fatalf("report %+v", rep)
	}
	dir := t.TempDir()
	if err := rep.WriteCSV(dir, runs); err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if p := read("policies.csv"); len(p) != 3 || p[1][0] != "fifo" || p[2][0] != "fair-sjf" {
		t.Errorf("policies.csv: %v", p)
	}
	if u := read("users.csv"); len(u) != 1+len(runs[0].Users)+len(runs[1].Users) || len(runs[0].Users) == 0 {
		t.Errorf("users.csv: %d rows for %d+%d users", len(u), len(runs[0].Users), len(runs[1].Users))
	}
}

// TestCluster_TooLarge: a cluster whose placement index would exhaust
// memory (a mistyped --nodes or --per-node) is an error naming its size,
// and a large real machine is not.
func TestCluster_TooLarge(t *testing.T) {
	for _, tc := range []struct {
		c    Cluster
		want string
	}{
		{Cluster{Nodes: 100_000_000, PerNode: 8, Unit: GPUs}, "100000000 nodes × 8 gpus: too large"},
		{Cluster{Nodes: 1 << 20, PerNode: 1 << 20, Unit: CPUs}, "too large"},
		{Cluster{Nodes: 1, PerNode: 1 << 23, Unit: CPUs}, "too large"},
		{Cluster{Nodes: 1, PerNode: 100_000, Unit: CPUs}, ""},
		{Cluster{Nodes: 100_000, PerNode: 8, Unit: GPUs}, ""},
		{Cluster{Nodes: 1 << 20, PerNode: 128, Unit: CPUs}, ""},
	} {
		err := tc.c.validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%d × %d: validate() = %v, want %q", tc.c.Nodes, tc.c.PerNode, err, tc.want)
		}
	}
}
