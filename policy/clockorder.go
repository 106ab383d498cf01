package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// clockKeyed is a Policy whose key of a pending job is a function of the
// job's wait alone, w = max(0, Now − waitingSince), through constants of
// the job fixed while it waits (its time limit, its size): wfp3's
// (w/r)³·n and unicep's w/(max(log2 n,1)·r). It reads nothing else: no
// prediction, no Ledger, no other job. The order of two jobs changes
// while they wait, but little from one scheduling point to the next, and
// a caller that keeps the queue (ClockOrder) recomputes each key from two
// numbers instead of ranking the Snapshot.
type clockKeyed interface {
	Policy
	// clockConsts returns the constants of j's key in s.
	clockConsts(s *Snapshot, j *Job) (a, b float64)
	// clockValue is the Value Rank gives a job of constants a, b that
	// waited w seconds (as waited computes w), bit for bit.
	clockValue(w, a, b float64) float64
	// clockValues replaces each entry's value, a wait, by clockValue of
	// it: one call per instant rather than one per job.
	clockValues(es []clockEnt)
}

// ClockOrder keeps the pending jobs of a policy whose keys are a function
// of each job's wait (wfp3, unicep: see clockKeyed) in the order Rank
// gives them, from one instant to the next: a caller that sees jobs come
// and go (the simulator) adds and removes them, and Advance brings the
// order to a later instant. Advance computes each key from the job's
// wait and two constants kept beside it in the order, then sorts from the
// last order by insertion (a pair of jobs swaps places only when one's
// key catches up with the other's: a few hundred moves in a queue of
// hundreds of jobs on a big machine), falling back to a sort from scratch
// beyond 4n+64 moves. Ranking the Snapshot instead reads every job's
// record, builds its parts and Score and maps the ranking back to the
// queue.
//
// The order is exact: each key is computed by the policy's own code
// (clockValue) from the same wait as Rank's (secondsClock, or the same
// difference of nanoseconds where that is what it computes), and
// compared as compareRank compares, with the same tie-break, a strict
// total order on distinct ids, so the sorted order is unique.
//
// Tags are the caller's small non-negative handles on the jobs (the
// simulator's job indices): the ClockOrder keeps a record per tag up to
// the largest tag added. Ids must be distinct, as a queue's are. A
// ClockOrder is not safe for concurrent use.
type ClockOrder struct {
	p    clockKeyed
	recs []clockRec // by tag
	// ents is the jobs held, best first at instant last, and the jobs
	// removed since the last Advance (tag −1), in their place.
	ents    []clockEnt
	live    int
	tags    []int32 // Tags' slice
	last    time.Time
	lastNS  int64 // last in Unix ns, when fast
	fast    bool  // last is a wall-clock instant in fastRange
	clock   secondsClock
	started bool
}

// clockEnt is one job of a ClockOrder.
type clockEnt struct {
	value   float64 // the key at last (a wait, within Advance)
	submit  int64   // unixNanoOrMin(Submit), the first tie-break
	id      int64
	sinceNS int64 // waitingSince in Unix ns, when fast
	a, b    float64
	tag     int32
	fast    bool // waitingSince is in fastRange
}

// clockRec is what a ClockOrder keeps of a job by its tag: its entry (but
// the value) and its waitingSince.
type clockRec struct {
	ent   clockEnt
	since time.Time
	held  bool
}

// fastFrom and fastTo bound the instants whose waits Advance computes
// as the difference of their Unix nanoseconds: well inside int64 Unix
// nanoseconds and less than 2³³ seconds apart, where secondsClock's since
// is that difference (a wall-clock now; see secondsClock).
var (
	fastFrom = time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)
	fastTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

func inFastRange(t time.Time) bool { return !t.Before(fastFrom) && t.Before(fastTo) }

// NewClockOrder returns an empty ClockOrder for p, or false when p's keys
// are not clock keyed (clockKeyed).
func NewClockOrder(p Policy) (*ClockOrder, bool) {
	cp, ok := p.(clockKeyed)
	if !ok {
		return nil, false
	}
	return &ClockOrder{p: cp}, true
}

// Len is the number of jobs held.
func (o *ClockOrder) Len() int { return o.live }

// Tags returns the tags of the jobs held, best first, in the order Rank
// gives them at the last instant the order was brought to (Advance, Add).
// The slice is reused by the next call.
func (o *ClockOrder) Tags() []int32 {
	o.tags = o.tags[:0]
	for i := range o.ents {
		if t := o.ents[i].tag; t >= 0 {
			o.tags = append(o.tags, t)
		}
	}
	return o.tags
}

// compareClock is compareRank on clock entries.
func compareClock(a, b *clockEnt) int {
	switch {
	case a.value > b.value:
		return -1
	case a.value < b.value:
		return 1
	case a.submit < b.submit:
		return -1
	case a.submit > b.submit:
		return 1
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// wait is e's wait at last, as waited computes it.
func (o *ClockOrder) wait(e *clockEnt) float64 {
	if o.fast && e.fast {
		return max(0, time.Duration(o.lastNS-e.sinceNS).Seconds())
	}
	return max(0, o.clock.since(o.recs[e.tag].since))
}

// Advance brings the order to instant now: afterwards Tags is the order
// Rank gives the jobs held in a Snapshot at now.
func (o *ClockOrder) Advance(now time.Time) {
	o.started, o.last = true, now
	o.clock = newSecondsClock(now)
	o.fast = o.clock.wall && inFastRange(now)
	if o.fast {
		o.lastNS = now.UnixNano()
	}
	w := 0
	for i := range o.ents {
		if o.ents[i].tag < 0 {
			continue
		}
		e := o.ents[i]
		e.value = o.wait(&e)
		o.ents[w] = e
		w++
	}
	clear(o.ents[w:])
	o.ents = o.ents[:w]
	o.p.clockValues(o.ents)
	if !o.insertionWithin(4*len(o.ents) + 64) {
		slices.SortFunc(o.ents, func(a, b clockEnt) int { return compareClock(&a, &b) })
	}
}

// insertionWithin is insertionWithin for clock entries.
func (o *ClockOrder) insertionWithin(budget int) bool {
	e := o.ents
	for i := 1; i < len(e); i++ {
		if compareClock(&e[i], &e[i-1]) >= 0 {
			continue
		}
		x, k := e[i], i
		for k > 0 && compareClock(&x, &e[k-1]) < 0 {
			e[k] = e[k-1]
			k--
		}
		e[k] = x
		if budget -= i - k; budget < 0 {
			return false
		}
	}
	return true
}

// Add inserts pending job j, with tag, keyed as the policy ranks it in s,
// first bringing the order to s.Now if it is elsewhere. The error is the
// one Rank would return for j (a key that is not a number), or a tag that
// is negative or already held.
func (o *ClockOrder) Add(s *Snapshot, j *Job, tag int32) error {
	if tag < 0 {
		return fmt.Errorf("clock order: tag %d: want >= 0", tag)
	}
	if int(tag) >= len(o.recs) {
		o.recs = slices.Grow(o.recs, int(tag)+1-len(o.recs))[:int(tag)+1]
	}
	r := &o.recs[tag]
	if r.held {
		return fmt.Errorf("clock order: tag %d already held", tag)
	}
	if !o.started || s.Now != o.last {
		o.Advance(s.Now)
	}
	a, b := o.p.clockConsts(s, j)
	since := waitingSince(j)
	e := clockEnt{submit: unixNanoOrMin(j.Submit), id: j.ID, a: a, b: b, tag: tag, fast: inFastRange(since)}
	if e.fast {
		e.sinceNS = since.UnixNano()
	}
	*r = clockRec{ent: e, since: since, held: true}
	e.value = o.p.clockValue(o.wait(&e), a, b)
	if math.IsNaN(e.value) {
		r.held = false
		return fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	p, _ := slices.BinarySearchFunc(o.ents, &e, func(x clockEnt, e *clockEnt) int { return compareClock(&x, e) })
	o.ents = slices.Insert(o.ents, p, e)
	o.live++
	return nil
}

// Remove takes the job with this tag out, if it is held. Its place is
// freed at the next Advance.
func (o *ClockOrder) Remove(tag int32) {
	if tag < 0 || int(tag) >= len(o.recs) || !o.recs[tag].held {
		return
	}
	r := &o.recs[tag]
	r.held = false
	o.live--
	e := r.ent
	e.value = o.p.clockValue(o.wait(&e), e.a, e.b)
	p, ok := slices.BinarySearchFunc(o.ents, &e, func(x clockEnt, e *clockEnt) int { return compareClock(&x, e) })
	if !ok || o.ents[p].tag != tag {
		// Not where its key puts it (duplicate ids): look for it.
		p = slices.IndexFunc(o.ents, func(x clockEnt) bool { return x.tag == tag })
	}
	o.ents[p].tag = -1
}
