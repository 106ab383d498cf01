package power

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

func TestNodeUse(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name  string
		spans []Span
		want  []int
	}{
		{"one job over two steps", []Span{{Start: at(5), End: at(15), Nodes: 2}}, []int{2, 2, 0}},
		{"the step's peak, not its end", []Span{{Start: at(1), End: at(3), Nodes: 4}, {Start: at(2), End: at(4), Nodes: 1}}, []int{5, 0, 0}},
		{"an end and a start at one instant are not both counted", []Span{{Start: at(0), End: at(10), Nodes: 3}, {Start: at(10), End: at(20), Nodes: 3}}, []int{3, 3, 0}},
		{"a job running before the start counts", []Span{{Start: at(-30), End: at(12), Nodes: 1}}, []int{1, 1, 0}},
		{"no nodes and backwards spans are left out", []Span{{Start: at(1), End: at(2), Nodes: 0}, {Start: at(5), End: at(3), Nodes: 4}}, []int{0, 0, 0}},
		// Eight one-GPU jobs on one GPU node are one node in use.
		{"jobs sharing a node count it once", []Span{{Start: at(0), End: at(12), Nodes: 1, Hosts: []string{"g1"}},
			{Start: at(1), End: at(25), Nodes: 1, Hosts: []string{"g1"}}, {Start: at(2), End: at(5), Nodes: 2, Hosts: []string{"g1", "g2"}}}, []int{2, 1, 1}},
		{"a node freed by one job and held by another stays in use", []Span{{Start: at(0), End: at(10), Nodes: 1, Hosts: []string{"g1"}},
			{Start: at(10), End: at(20), Nodes: 1, Hosts: []string{"g1"}}}, []int{1, 1, 0}},
		{"named and unnamed spans add up", []Span{{Start: at(0), End: at(15), Nodes: 1, Hosts: []string{"g1"}},
			{Start: at(0), End: at(15), Nodes: 1, Hosts: []string{"g1"}}, {Start: at(3), End: at(8), Nodes: 3}}, []int{4, 1, 0}},
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

// TestJobSpans: jobs that ran become spans naming their nodes where the
// reader reads their Hosts, else counting their node count (at least 1);
// a job that never started, or has not ended, holds nothing.
func TestJobSpans(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expand := func(s string) ([]string, error) {
		if strings.HasSuffix(s, "[") {
			return nil, errors.New("unterminated")
		}
		return strings.Split(s, ","), nil
	}
	jobs := []policy.Job{
		{ID: 1, Start: t0, End: t0.Add(time.Hour), Nodes: 2, Hosts: "g1,g2"},
		{ID: 2, Start: t0, End: t0.Add(time.Hour), Nodes: 3, Hosts: "g["},
		{ID: 3, Start: t0, End: t0.Add(time.Hour)},
		{ID: 4, End: t0.Add(time.Hour), Nodes: 1, Hosts: "g1"},
		{ID: 5, Start: t0, Nodes: 1},
	}
	want := []Span{
		{Start: t0, End: t0.Add(time.Hour), Nodes: 2, Hosts: []string{"g1", "g2"}},
		{Start: t0, End: t0.Add(time.Hour), Nodes: 3},
		{Start: t0, End: t0.Add(time.Hour), Nodes: 1},
	}
	if diff := cmp.Diff(want, JobSpans(jobs, expand)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestUseSequence: one sample a minute from the minute holding from, each
// the minute's most nodes held, the total raised to the most in use.
func TestUseSequence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spans := []Span{{Start: t0.Add(90 * time.Second), End: t0.Add(3 * time.Minute), Nodes: 1, Hosts: []string{"g1"}},
		{Start: t0.Add(2 * time.Minute), End: t0.Add(4 * time.Minute), Nodes: 1, Hosts: []string{"g1"}},
		{Start: t0.Add(2 * time.Minute), End: t0.Add(3 * time.Minute), Nodes: 4}}
	got := UseSequence(spans, t0.Add(30*time.Second), t0.Add(5*time.Minute), 3)
	at := func(m, active int) Sample {
		return Sample{Time: t0.Add(time.Duration(m) * time.Minute), Active: active, Total: 5}
	}
	want := []Sample{at(0, 0), at(1, 1), at(2, 5), at(3, 1), at(4, 0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got := UseSequence(spans, t0, t0, 3); got != nil {
		t.Errorf("an empty period: %v, want none", got)
	}
}

// TestNodeUse_Memory: NodeUse allocates little more than 16 bytes an
// event (a span's start and end on each node it names): three months of
// 100,000 jobs a month on up to 64 nodes are tens of millions of events,
// which power eval --from-db and serve's forecast hold at once.
func TestNodeUse_Memory(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hosts := make([]string, 512)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("g%03d", i)
	}
	var spans []Span
	events := 0
	for i := range 50000 {
		start := t0.Add(time.Duration(i*7919%(90*24*60)) * time.Minute)
		n := 1 + i%16
		first := i % (len(hosts) - n)
		spans = append(spans, Span{Start: start, End: start.Add(time.Duration(1+i%600) * time.Minute), Nodes: n, Hosts: hosts[first : first+n]})
		events += 2 * n
	}
	steps := 91 * 24 * 60
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	use := NodeUse(spans, t0, time.Minute, steps)
	runtime.ReadMemStats(&after)
	if slices.Max(use) == 0 {
		t.Fatal("no node in use")
	}
	perEvent := float64(after.TotalAlloc-before.TotalAlloc-uint64(8*steps)) / float64(events)
	if perEvent > 24 {
		t.Errorf("NodeUse allocated %.1f bytes an event (%d events), want at most 24", perEvent, events)
	}
}
