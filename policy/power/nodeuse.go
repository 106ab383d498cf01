package power

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// Span is one ended (or running) job's hold on nodes: Nodes from Start to
// End. Hosts, where known, names them: jobs that share a node (several
// GPU jobs on one GPU node) then count it once.
type Span struct {
	Start, End time.Time
	Nodes      int
	Hosts      []string
}

// NodeUse is the node demand of spans over n steps of step from start:
// each step's most nodes held at any instant in it (the artifact's
// 10-minute maxima), the sequence the forecaster learns from. A node named
// by the Hosts of several spans at once counts once; a span without Hosts
// counts its Nodes. Spans with no nodes, or ending before they start, are
// left out.
func NodeUse(spans []Span, start time.Time, step time.Duration, n int) []int {
	// Months of jobs spanning tens of nodes are tens of millions of
	// events: each is 16 bytes (40 with a time.Time), its instant an
	// offset from start (Sub saturates, so none wraps) that sorts fast.
	type event struct {
		at   time.Duration
		d    int32 // nodes taken (> 0) or freed (< 0); ±1 for a named host
		host int32 // index into hold, or -1
	}
	size := 0
	for _, s := range spans {
		size += 2 * max(len(s.Hosts), 1)
	}
	ev := make([]event, 0, size)
	index := map[string]int32{}
	for _, s := range spans {
		if !s.End.After(s.Start) {
			continue
		}
		from, to := s.Start.Sub(start), s.End.Sub(start)
		if len(s.Hosts) == 0 {
			if s.Nodes > 0 {
				d := int32(min(s.Nodes, math.MaxInt32))
				ev = append(ev, event{from, d, -1}, event{to, -d, -1})
			}
			continue
		}
		for _, h := range s.Hosts {
			k, ok := index[h]
			if !ok {
				k = int32(len(index))
				index[h] = k
			}
			ev = append(ev, event{from, 1, k}, event{to, -1, k})
		}
	}
	// Ends before starts at the same instant: a node freed and taken at
	// once is not two nodes.
	slices.SortFunc(ev, func(a, b event) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.d, b.d)
	})
	hold := make([]int, len(index)) // spans holding each named host
	apply := func(e event) int {
		if e.host < 0 {
			return int(e.d)
		}
		before := hold[e.host]
		hold[e.host] += int(e.d)
		switch {
		case before == 0 && hold[e.host] > 0:
			return 1
		case before > 0 && hold[e.host] == 0:
			return -1
		}
		return 0
	}
	out := make([]int, n)
	cur, k := 0, 0
	for i := range n {
		from, to := time.Duration(i)*step, time.Duration(i+1)*step
		for k < len(ev) && ev[k].at <= from {
			cur += apply(ev[k])
			k++
		}
		peak := cur
		for k < len(ev) && ev[k].at < to {
			cur += apply(ev[k])
			k++
			peak = max(peak, cur)
		}
		out[i] = peak
	}
	return out
}

// JobSpans are the node holds of the jobs that ran (started and ended):
// each names its nodes where expand reads the job's Hosts (Slurm's
// hostlist; the caller's reader, as this package parses no Slurm syntax),
// else counts its node count, at least 1.
func JobSpans(jobs []policy.Job, expand func(string) ([]string, error)) []Span {
	var out []Span
	for _, j := range jobs {
		if j.Start.IsZero() || j.End.IsZero() {
			continue
		}
		s := Span{Start: j.Start, End: j.End, Nodes: max(j.Nodes, 1)}
		if j.Hosts != "" {
			if h, err := expand(j.Hosts); err == nil && len(h) > 0 {
				s.Hosts = h
			}
		}
		out = append(out, s)
	}
	return out
}

// UseSequence is the node use of spans as a sequence of one sample a
// minute over [from, to): each minute's most nodes held, out of total
// (raised to the most in use, so that no sample holds more active nodes
// than the cluster). It is what `fairway power eval --from-db` replays.
func UseSequence(spans []Span, from, to time.Time, total int) []Sample {
	from = from.Truncate(time.Minute)
	n := int(to.Sub(from) / time.Minute)
	if n <= 0 {
		return nil
	}
	use := NodeUse(spans, from, time.Minute, n)
	total = max(total, slices.Max(use), 1)
	out := make([]Sample, n)
	for i, u := range use {
		out[i] = Sample{Time: from.Add(time.Duration(i) * time.Minute), Active: u, Total: total}
	}
	return out
}
