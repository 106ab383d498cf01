package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

func TestQuantile_Table(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"one", []float64{7}, 0.95, 7},
		{"median odd", []float64{3, 1, 2}, 0.5, 2},
		{"median even", []float64{4, 1, 3, 2}, 0.5, 2.5},
		{"p95 interpolates", []float64{0, 10}, 0.95, 9.5},
		{"max", []float64{5, 9, 1}, 1, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantile(tc.xs, tc.q); got != tc.want {
				t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
			}
		})
	}
	if !math.IsNaN(quantile(nil, 0.5)) {
		t.Error("quantile of nothing: want NaN")
	}
}

func TestJain_Table(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"equal", []float64{2, 2, 2}, 1},
		{"one has all", []float64{1, 0, 0, 0}, 0.25},
		{"half", []float64{1, 0}, 0.5},
		{"mixed", []float64{1, 2, 3}, 36.0 / 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("jain(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
	for _, xs := range [][]float64{nil, {3}, {0, 0}} {
		if !math.IsNaN(jain(xs)) {
			t.Errorf("jain(%v): want NaN", xs)
		}
	}
}

func TestActiveUsers_Mean(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	jobs := []policy.Job{
		{User: "a", Submit: h(0), End: h(4)},
		{User: "a", Submit: h(2), End: h(6)}, // overlaps a's first: a counts once
		{User: "b", Submit: h(3), End: h(5)},
	}
	s := activeUsers(jobs)
	for _, tc := range []struct {
		from, to int
		want     float64
	}{
		{0, 2, 1}, {3, 5, 2}, {0, 6, 8.0 / 6}, {6, 8, 0},
	} {
		if got := s.Mean(h(tc.from), h(tc.to)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("mean over [%d h, %d h) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestPeakUnits_EndBeforeStart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := []policy.Job{
		{GPUs: 2, Start: t0, End: t0.Add(time.Hour)},
		{GPUs: 3, Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}, // takes the GPUs freed at once
		{GPUs: 1, Start: t0.Add(30 * time.Minute), End: t0.Add(90 * time.Minute)},
	}
	if got := peakUnits(jobs, policy.Service{}); got != 4 {
		t.Errorf("peak = %v, want 4", got)
	}
}

func TestFormat_Table(t *testing.T) {
	got := []string{fmtDur(Num(42)), fmtDur(Num(720)), fmtDur(Num(3.4 * 3600)), fmtDur(Num(2.5 * 86400)), fmtDur(NaN()),
		fmtPct(Num(0.1234)), fmtHours(Num(1234.56)), groupDigits("1234567.8"), groupDigits("12345"), groupDigits("1234"),
		groupDigits("+12345%"), fmtChange(Num(0.5), Num(0.25), true), fmtChange(Num(3), Num(2), false), fmtChange(Num(3), Num(0), false),
		fmtHours(Num(0.4)), fmtHours(Num(0.00417)), fmtHours(Num(3.24)), fmtHours(Num(0)), fmtPct(Num(0.00042)), fmtPct(Num(0)),
		waitOr(NaN())}
	want := []string{"42 s", "12 min", "3.4 h", "2.5 d", "–", "12.3%", "1234.6", "1,234,567.8", "12,345", "1234",
		"+12,345%", "+25.0 pts", "+50%", "was 0",
		"0.40", "0.0042", "3.2", "0", "0.042%", "0.0%",
		"none started"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("formats (-want +got):\n%s", diff)
	}
}

func TestMonth_Parse(t *testing.T) {
	m, err := ParseMonth("2026-12")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "2026-12" || m.Days() != 31 || m.Prev().String() != "2026-11" || !m.End().Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month %v: string %s, %d days, prev %s, end %s", m, m, m.Days(), m.Prev(), m.End())
	}
	for _, bad := range []string{"2026-13", "10/2026", "2026"} {
		if _, err := ParseMonth(bad); err == nil {
			t.Errorf("ParseMonth(%q): want an error", bad)
		}
	}
}

// TestTables_EveryKeyDefined: every column and row that links to a
// definition links to one that exists.
func TestTables_EveryKeyDefined(t *testing.T) {
	r := &Report{Unit: "GPU", Month: "2026-10", Summary: Summary{Month: "2026-10"}, Previous: &Summary{Month: "2026-09"},
		Counterfactual: &Counterfactual{Scenarios: []Scenario{{Label: "x"}}, Accounts: []ScenarioAccount{{Account: "a", MedianWait: []Num{1}}}}}
	keys := glossaryKeys(r)
	for _, tb := range tables(r) {
		for _, c := range tb.Cols {
			if c.Key != "" && !keys[c.Key] {
				t.Errorf("table %s column %q: no definition %q", tb.Name, c.Head, c.Key)
			}
		}
		for _, row := range tb.Rows {
			for _, cl := range row {
				if cl.Key != "" && !keys[cl.Key] {
					t.Errorf("table %s cell %q: no definition %q", tb.Name, cl.Text, cl.Key)
				}
			}
		}
	}
}

// TestWaitsPlot_SameWaits: when every job started at once (all waits 0)
// the wait chart once panicked (gonum widened the empty log-scale range
// down to 0); it draws, in seconds.
func TestWaitsPlot_SameWaits(t *testing.T) {
	for _, waits := range [][]float64{{0, 0, 0}, {5}, {0.5, 30}, {3 * 86400, 4 * 86400}} {
		r := &Report{Unit: "GPU", waits: []accountWaits{{account: "a", waits: waits}}}
		p, err := waitsPlot(r)
		if err != nil || p == nil {
			t.Fatalf("waits %v: plot %v, %v", waits, p, err)
		}
		if _, err := svg(p); err != nil {
			t.Fatalf("waits %v: %v", waits, err)
		}
		want := "seconds"
		if waits[0] > 86400 {
			want = "days"
		}
		if !strings.Contains(p.X.Label.Text, want) {
			t.Errorf("waits %v: axis %q, want %s", waits, p.X.Label.Text, want)
		}
	}
}

// glossaryKeys is the set of keys Glossary defines for r.
func glossaryKeys(r *Report) map[string]bool {
	out := map[string]bool{}
	for _, t := range Glossary(r) {
		out[t.Key] = true
	}
	return out
}
