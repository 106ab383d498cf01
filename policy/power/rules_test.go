package power

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func series(active ...int) *Series {
	s := &Series{Start: time.Date(2017, 12, 1, 0, 0, 0, 0, time.UTC), Step: 10 * time.Minute, Active: active}
	for range active {
		s.Total = append(s.Total, 10)
	}
	return s
}

func constant(v float64) func(int) []float64 {
	return func(int) []float64 {
		out := make([]float64, 8)
		for i := range out {
			out[i] = v
		}
		return out
	}
}

// plan drives r over s as ReplayRule and the simulator do, and returns
// its decisions: the nodes kept powered after each step.
func plan(r Rule, s *Series) []int {
	r.Reset(s)
	prev := s.Total[0]
	out := make([]int, 0, s.Len())
	for i := range s.Active {
		prev = max(min(r.Powered(i, prev), s.Total[i]), s.Active[i])
		out = append(out, prev)
	}
	return out
}

func TestPredictive_HandChecked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		active   []int
		forecast func(int) []float64
		keep     int
		wantOn   []int
	}{
		// Step 2's demand is above the 6 planned: up to 8+1, held for 2
		// steps; step 4 fell over the last step with a low forecast: down
		// to 6+1; step 5 down to 4+1; step 6 did not fall: no change.
		{"falls with a low forecast", []int{5, 5, 8, 8, 6, 4, 4}, constant(0), 2,
			[]int{6, 6, 9, 9, 7, 5, 5}},
		// The forecast stays above demand: never down.
		{"forecast above demand holds", []int{5, 5, 8, 8, 6, 4, 4}, constant(100), 2,
			[]int{6, 6, 9, 9, 9, 9, 9}},
		// Keep 3 holds the power-up at step 2 through step 4.
		{"keep holds after a power-up", []int{5, 5, 8, 8, 6, 4, 4}, constant(0), 3,
			[]int{6, 6, 9, 9, 9, 5, 5}},
		// Never above the cluster: demand 10 of 10 with buffer 1 powers 10.
		{"capped at the cluster", []int{5, 10, 10}, constant(0), 2,
			[]int{6, 10, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Predictive{Buffer: 1, History: 1, Future: 2, Keep: tc.keep, WarmUp: 1, Forecast: tc.forecast}
			if diff := cmp.Diff(tc.wantOn, plan(p, series(tc.active...))); diff != "" {
				t.Errorf("powered (-want +got)\n%s", diff)
			}
		})
	}
}

// TestPredictive_RisingForecastHolds: a forecast whose far half is higher
// than its near half keeps the nodes on (the artifact's "not rising" test).
func TestPredictive_RisingForecastHolds(t *testing.T) {
	rising := func(int) []float64 { return []float64{0, 0, 9, 9, 9, 9, 9, 9} }
	p := &Predictive{Buffer: 1, History: 1, Future: 2, Keep: 0, WarmUp: 1, Forecast: rising}
	if diff := cmp.Diff([]int{9, 9, 9}, plan(p, series(8, 6, 4))); diff != "" {
		t.Errorf("powered (-want +got)\n%s", diff)
	}
}

// TestIdleTime_HandChecked covers the step-maxima form the simulator
// drives.
func TestIdleTime_HandChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		suspend time.Duration
		active  []int
		total   int
		wantOn  []int
	}{
		// 8 nodes idle from step 0 are off after 2 steps; the rise at step 2
		// resumes exactly 3; the 2 freed at step 3 go off after step 4.
		{"suspend 20m", 20 * time.Minute, []int{2, 2, 5, 3, 3, 3, 6}, 10,
			[]int{10, 2, 5, 5, 3, 3, 6}},
		// A rise takes the most recently idled node, so the 2 idle since step
		// 0 reach SuspendTime (3 steps) at step 2 while those idled at step 2
		// stay up.
		{"last idled is first taken", 30 * time.Minute, []int{0, 2, 0, 1}, 4,
			[]int{4, 4, 2, 2}},
		// SuspendTime shorter than a step still waits one step.
		{"suspend 1m rounds up to a step", time.Minute, []int{1, 1, 2}, 4,
			[]int{1, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := series(tc.active...)
			for i := range s.Total {
				s.Total[i] = tc.total
			}
			if diff := cmp.Diff(tc.wantOn, plan(&IdleTime{SuspendTime: tc.suspend}, s)); diff != "" {
				t.Errorf("powered (-want +got)\n%s", diff)
			}
		})
	}
}

func TestSummarise_HandChecked(t *testing.T) {
	steps := []Step{{Active: 1, Total: 4, Powered: 4}, {Active: 2, Total: 4, Powered: 2}, {Active: 3, Total: 4, Powered: 3, Lack: 1}}
	got := Summarise("x", steps, 10*time.Minute)
	want := Metrics{Rule: "x", Steps: 3, Days: 1.0 / 48, MeanOff: 1, NodeHoursOff: 0.5, UtilPowered: 0.75, UtilCluster: 0.5,
		ChangesPerDay: 96, UpsPerDay: 48, NodesUpPerDay: 48, LackNodeMinutes: 10, LackEvents: 1}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestDominance(t *testing.T) {
	row := func(kind, name string, off, lack float64) RuleRow {
		return RuleRow{Kind: kind, Metrics: Metrics{Rule: name, NodeHoursOff: off, LackNodeMinutes: lack}}
	}
	rows := []RuleRow{row("predictive", "p0", 100, 50), row("predictive", "p20", 80, 10),
		row("idle-time", "i10", 90, 60), row("idle-time", "i60", 85, 10), row("reference", "oracle", 200, 0)}
	got, all := Dominance(rows)
	want := []Verdict{{Idle: "i10", Witness: "p0", Holds: true}, {Idle: "i60", Holds: false}}
	if diff := cmp.Diff(want, got); diff != "" || all {
		t.Errorf("all = %v, want false; (-want +got)\n%s", all, diff)
	}
}
