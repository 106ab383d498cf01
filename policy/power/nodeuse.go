package power

import (
	"slices"
	"time"
)

// Span is one ended (or running) job's hold on nodes: Nodes from Start to
// End.
type Span struct {
	Start, End time.Time
	Nodes      int
}

// NodeUse is the node demand of spans over n steps of step from start:
// each step's most nodes held at any instant in it (the artifact's
// 10-minute maxima), the sequence the forecaster learns from. Spans with
// no nodes, or ending before they start, are left out.
func NodeUse(spans []Span, start time.Time, step time.Duration, n int) []int {
	type event struct {
		at time.Time
		d  int
	}
	var ev []event
	for _, s := range spans {
		if s.Nodes <= 0 || !s.End.After(s.Start) {
			continue
		}
		ev = append(ev, event{s.Start, s.Nodes}, event{s.End, -s.Nodes})
	}
	// Ends before starts at the same instant: a node freed and taken at
	// once is not two nodes.
	slices.SortFunc(ev, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	out := make([]int, n)
	cur, k := 0, 0
	for i := range n {
		from, to := start.Add(time.Duration(i)*step), start.Add(time.Duration(i+1)*step)
		for k < len(ev) && !ev[k].at.After(from) {
			cur += ev[k].d
			k++
		}
		peak := cur
		for k < len(ev) && ev[k].at.Before(to) {
			cur += ev[k].d
			k++
			peak = max(peak, cur)
		}
		out[i] = peak
	}
	return out
}
