package schedule

import (
	"fmt"
	"iter"
	"math/rand"
	"slices"
	"testing"
)

// boundedPlay runs a pass over c's queue at time 0 on a fresh machine of
// c, as the simulator does for a queue it orders lazily when bounded is
// true: the jobs that fit start in order, each by a Pass of its own; the
// first that does not is the head; PassMore then walks the head and,
// pulled one at a time, only the jobs behind it within BackfillBounds
// and the bounds PassMore gives. Otherwise one Pass walks the whole
// queue. It returns the jobs started, in order, with their allocations,
// the free units left, and how many jobs the bounded walk was given.
func (c easyCase) boundedPlay(bounded bool) ([]string, []int, int) {
	e := NewEASY(c.nodes, c.perNode)
	for _, r := range c.running {
		e.Free.Take(r.alloc)
	}
	running := slices.Clone(c.running)
	var ends iter.Seq2[int64, []Use] = func(yield func(int64, []Use) bool) {
		for _, r := range running {
			if !yield(r.end, r.alloc) {
				return
			}
		}
	}
	var started []string
	var q Queue
	start := func(i int, a []Use) {
		job := q.Order[i]
		started = append(started, fmt.Sprint(job, a))
		k := len(running)
		for k > 0 && running[k-1].end > c.limit[job] {
			k--
		}
		running = slices.Insert(running, k, easyRun{end: c.limit[job], alloc: slices.Clone(a)})
	}
	if !bounded {
		for i := range c.need {
			q.Add(int32(i), int(c.need[i]), c.limit[i])
		}
		e.Pass(0, &q, ends, true, start)
		return started, slices.Clone(e.Free.free), len(c.need)
	}
	head := 0
	for ; head < len(c.need); head++ {
		q.Reset()
		q.Add(int32(head), int(c.need[head]), c.limit[head])
		if !e.Free.Fits(int(c.need[head])) {
			break
		}
		e.Pass(0, &q, ends, true, start)
	}
	if head == len(c.need) {
		return started, slices.Clone(e.Free.free), 0
	}
	fitCap, heldCap, shadow := e.BackfillBounds(0, int(c.need[head]), ends)
	next, given := head+1, 0
	e.PassMore(0, &q, ends, true, start, func(q *Queue, fc, hc int) bool {
		for ; next < len(c.need); next++ {
			n := int(c.need[next])
			if n <= min(fitCap, fc) && (c.limit[next] <= shadow || n <= min(heldCap, hc)) {
				q.Add(int32(next), n, c.limit[next])
				next++
				given++
				return true
			}
		}
		return false
	})
	return started, slices.Clone(e.Free.free), given
}

// TestEASY_BoundedPassStartsWhatThePassStarts checks on random machines
// and queues that a pass given only the head and the jobs behind it
// within BackfillBounds (and PassMore's shrinking bounds), the jobs
// before the head started one pass each, starts exactly the jobs the
// pass over the whole queue starts, on the same nodes, in the same
// order: the simulator orders only those jobs of wfp3's and unicep's
// queues.
func TestEASY_BoundedPassStartsWhatThePassStarts(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	pruned, backfilled := 0, 0
	for n := range 4000 {
		c := newEasyCase(r)
		if n%3 == 0 {
			// Queues of several blocks, for the walk's block skips.
			for range r.Intn(400) {
				c.need = append(c.need, int32(1+r.Intn(3*c.perNode)))
				c.limit = append(c.limit, int64(1+r.Intn(120)))
			}
		}
		if n%4 == 1 {
			// Needs and limits that tie.
			for i := range c.need {
				c.need[i] = 1 + c.need[i]%3
				c.limit[i] = 40 + c.limit[i]%3*30
			}
		}
		want, wantFree, _ := c.boundedPlay(false)
		got, gotFree, given := c.boundedPlay(true)
		if !slices.Equal(got, want) || !slices.Equal(gotFree, wantFree) {
			t.Fatalf("case %d (%+v): bounded pass started %v, free %v; want %v, free %v", n, c, got, gotFree, want, wantFree)
		}
		if given+len(want) < len(c.need)-1 && len(c.need) > len(want)+1 {
			pruned++
		}
		if len(want) > 0 {
			backfilled++
		}
	}
	if pruned < 500 || backfilled < 1000 {
		t.Fatalf("%d cases pruned the queue, %d started a job, of 4000: the test checks too little", pruned, backfilled)
	}
}
