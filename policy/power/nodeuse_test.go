package power

import (
	"slices"
	"testing"
	"time"
)

func TestNodeUse(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name  string
		spans []Span
		want  []int
	}{
		{"one job over two steps", []Span{{at(5), at(15), 2}}, []int{2, 2, 0}},
		{"the step's peak, not its end", []Span{{at(1), at(3), 4}, {at(2), at(4), 1}}, []int{5, 0, 0}},
		{"an end and a start at one instant are not both counted", []Span{{at(0), at(10), 3}, {at(10), at(20), 3}}, []int{3, 3, 0}},
		{"a job running before the start counts", []Span{{at(-30), at(12), 1}}, []int{1, 1, 0}},
		{"no nodes and backwards spans are left out", []Span{{at(1), at(2), 0}, {at(5), at(3), 4}}, []int{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeUse(tc.spans, t0, 10*time.Minute, 3); !slices.Equal(got, tc.want) {
				t.Errorf("NodeUse = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRetrained: seasonal naive until MinSteps steps are measured, then
// the anchored GBT, refit every Every steps and not between; it says which.
func TestRetrained(t *testing.T) {
	l, err := LagsFor(30 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	n := 30 * l.Day
	s := &Series{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Step: 30 * time.Minute, Active: make([]int, n), Total: make([]int, n)}
	for i := range n {
		s.Active[i] = 5
		if h := i % l.Day; h >= 16 && h < 40 {
			s.Active[i] = 30
		}
	}
	r := NewRetrained(l)
	out := make([]float64, 3)
	r.Forecast(s, 3*l.Day, out)
	if r.Name() != "same time yesterday" || r.model != nil {
		t.Fatalf("after 3 days: forecaster %q, want the seasonal fallback", r.Name())
	}
	r.Forecast(s, r.MinSteps, out)
	if r.Name() != "gbt anchored" {
		t.Fatalf("after %d steps: forecaster %q (%s), want the GBT", r.MinSteps, r.Name(), r.Explain())
	}
	m := r.model
	r.Forecast(s, r.MinSteps+l.Day-2, out)
	if r.model != m {
		t.Error("refit within a day")
	}
	r.Forecast(s, r.MinSteps+l.Day, out)
	if r.model == m {
		t.Error("no refit after a day")
	}
}
