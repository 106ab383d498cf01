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
	// clockValues sets each key's value to clockValue of its job's wait
	// at now (clockNow.wait) and constants, the job being jobs[slot]: one
	// call per instant rather than one per job.
	clockValues(keys []clockKey, jobs []clockJob, now *clockNow)
}

// ClockOrder keeps the pending jobs of a policy whose keys are a function
// of each job's wait (wfp3, unicep: see clockKeyed) in the order Rank
// gives them, from one instant to the next: a caller that sees jobs come
// and go (the simulator) adds and removes them, and Advance brings the
// order to a later instant. Advance computes each key from the job's
// wait and two constants; the order is sorted when it is read whole
// (AppendTags), from the last order by insertion (a pair of jobs swaps
// places only when one's key catches up with the other's: about one move
// per three jobs at each point of a big machine's queue), falling back
// to a sort from scratch beyond 4n+64 moves. A scheduling pass reads
// less (Best, Behind): the few best jobs, and behind the first that
// does not fit only the jobs that could start, ordered as far as the
// pass asks. Ranking the Snapshot instead reads every job's record,
// builds its parts and Score and maps the ranking back to the queue.
//
// The order is exact: each key is computed by the policy's own code
// (clockValue) from the same wait as Rank's (secondsClock, or the same
// difference of nanoseconds where that is what it computes), and
// compared as compareRank compares, with the same tie-break, a strict
// total order on distinct ids, so the sorted order is unique.
//
// The order moves 16-byte keys; the jobs' constants stay in a slab of
// the jobs held, whose slots are reused, so that it stays as small as the
// queue and in cache while Advance reads it in the order's order.
//
// Tags are the caller's small non-negative handles on the jobs (the
// simulator's job indices): the ClockOrder keeps a slot number per tag
// up to the largest tag added. Ids must be distinct, as a queue's are. A
// ClockOrder is not safe for concurrent use.
type ClockOrder struct {
	p    clockKeyed
	jobs []clockJob // by slot
	// sized is what Behind and Best read of each job held, by slot:
	// apart from jobs (a job's 80 bytes), so that their scans over every
	// job read 16 bytes of it.
	sized []clockSized
	free  []int32 // slots free
	slot  []int32 // by tag: slot+1, 0 when not held
	// keys is the jobs held and the jobs removed since the last Advance
	// (their clockSized gone), best first at instant last when sorted.
	// Advance only computes the values: the first read of the whole
	// order sorts them (AppendTags), while Best and Behind, which a
	// scheduling pass on a busy machine asks instead, order only the few
	// jobs the pass reads.
	keys   []clockKey
	sorted bool
	heaps  []clockHeap // Behind's
	top    []clockKey  // Best's, when not sorted
	cur    int         // Best's first key (of top, or of keys when sorted) that may be held
	// topValid: top is the best jobs held, but for those removed
	// since, when not sorted (Advance finds it, Add keeps it).
	topValid bool
	live     int
	last     time.Time
	at       clockNow // last
	started  bool
}

// clockNow is an instant as a ClockOrder computes waits from it.
type clockNow struct {
	ns    int64 // in Unix ns, when fast
	fast  bool  // a wall-clock instant in fastRange
	clock secondsClock
}

// wait is j's wait at n, as waited computes it.
func (n *clockNow) wait(j *clockJob) float64 {
	if n.fast && j.fast {
		return max(0, time.Duration(n.ns-j.sinceNS).Seconds())
	}
	return n.slowWait(j)
}

// slowWait is wait where n or j is not fast, kept out of wait's common
// path.
func (n *clockNow) slowWait(j *clockJob) float64 { return max(0, n.clock.since(j.since)) }

// clockKey is one job's place in a ClockOrder.
type clockKey struct {
	value float64 // the key at last
	slot  int32
	tag   int32
}

// clockSized is a job's need and limit (AddSized) and whether it was
// removed (its key goes, and its slot is freed, at the next Advance).
type clockSized struct {
	limit int64
	need  int32
	gone  bool
}

// clockJob is what a ClockOrder keeps of a job it holds.
type clockJob struct {
	a, b    float64
	sinceNS int64 // waitingSince in Unix ns, when fast
	submit  int64 // unixNanoOrMin(Submit), the first tie-break
	id      int64
	fast    bool // waitingSince is in fastRange
	since   time.Time
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

// AppendTags appends to tags the tags of the jobs held, best first, in
// the order Rank gives them at the last instant the order was brought to
// (Advance, Add), and returns the extended slice.
func (o *ClockOrder) AppendTags(tags []int32) []int32 {
	o.sort()
	for i := range o.keys {
		if k := &o.keys[i]; !o.sized[k.slot].gone {
			tags = append(tags, k.tag)
		}
	}
	return tags
}

// Best returns the tag of the best job held at the last instant the
// order was brought to, false when none is held. A scheduling pass asks
// it for the jobs it starts in order, which it removes, and for the first
// that does not fit (the head): on a busy machine two or three of a
// thousand jobs, which Advance's pass over the keys finds among the
// clockTop best (and Add keeps), rather than sorting the order; past
// them, it sorts the order.
func (o *ClockOrder) Best() (int32, bool) {
	if !o.sorted && !o.topValid {
		o.fillTop()
	}
	if !o.sorted {
		for ; o.cur < len(o.top); o.cur++ {
			if k := &o.top[o.cur]; !o.sized[k.slot].gone {
				return k.tag, true
			}
		}
		if len(o.top) < clockTop {
			return 0, false // every job held was in top
		}
		o.sort()
	}
	for ; o.cur < len(o.keys); o.cur++ {
		if k := &o.keys[o.cur]; !o.sized[k.slot].gone {
			return k.tag, true
		}
	}
	return 0, false
}

// clockTop is how many of the best jobs Best finds in one scan.
const clockTop = 4

// fillTop sets top to the clockTop best jobs held, best first (all of
// them, when fewer), in one scan of the keys.
func (o *ClockOrder) fillTop() {
	o.top, o.cur, o.topValid = o.top[:0], 0, true
	for i := range o.keys {
		if k := &o.keys[i]; !o.sized[k.slot].gone {
			o.pushTop(k)
		}
	}
}

// pushTop puts k into top if it is among the clockTop best.
func (o *ClockOrder) pushTop(k *clockKey) {
	n := len(o.top)
	if n == clockTop && o.compare(k, &o.top[n-1]) >= 0 {
		return
	}
	if n < clockTop {
		o.top = append(o.top, *k)
	} else {
		n--
	}
	for ; n > 0 && o.compare(k, &o.top[n-1]) < 0; n-- {
		o.top[n] = o.top[n-1]
	}
	o.top[n] = *k
}

// Behind readies NextBehind's walk over the jobs held other than head
// that could start behind it in a pass bounded by fitCap, heldCap and
// until (schedule.EASY.BackfillBounds): of need (AddSized) at most
// fitCap, and either of limit at most until (short) or of need at most
// heldCap. On a big machine's busy points those are a few of a thousand
// jobs, or hundreds of which the pass starts one or two before nothing
// more fits: they are kept in heaps, one per need and kind (short or
// not), ordered only as far as the pass asks, and a heap whose need no
// longer fits is passed over whole.
func (o *ClockOrder) Behind(head int32, fitCap, heldCap int, until int64) {
	for i := range o.heaps {
		o.heaps[i].keys = o.heaps[i].keys[:0]
	}
	o.heaps = o.heaps[:0]
	for i := range o.keys {
		k := &o.keys[i]
		j := &o.sized[k.slot]
		n := int(j.need)
		if n > fitCap || j.gone || k.tag == head {
			continue
		}
		short := j.limit <= until
		if !short && n > heldCap {
			continue
		}
		h := o.heapFor(n, short)
		h.keys = append(h.keys, *k)
	}
	for i := range o.heaps {
		h := o.heaps[i].keys
		for x := len(h)/2 - 1; x >= 0; x-- {
			o.down(h, x)
		}
	}
}

// heapFor is Behind's heap of the jobs of need n and kind short, added
// when there is none. Past clockHeaps heaps (a queue of many different
// needs), the jobs of the other needs share one heap of their kind, of
// need −1, whose jobs NextBehind checks one by one: finding a job's heap
// stays a scan of a few.
func (o *ClockOrder) heapFor(n int, short bool) *clockHeap {
	for i := range o.heaps {
		if h := &o.heaps[i]; h.need == n && h.short == short {
			return h
		}
	}
	if len(o.heaps) >= clockHeaps {
		n = -1
		for i := range o.heaps {
			if h := &o.heaps[i]; h.need == n && h.short == short {
				return h
			}
		}
	}
	if len(o.heaps) < cap(o.heaps) {
		o.heaps = o.heaps[:len(o.heaps)+1]
	} else {
		o.heaps = append(o.heaps, clockHeap{})
	}
	h := &o.heaps[len(o.heaps)-1]
	h.keys, h.need, h.short = h.keys[:0], n, short
	return h
}

// clockHeaps is how many heaps of one need Behind makes.
const clockHeaps = 32

// clockHeap is a heap of Behind's: jobs of one need (of several when
// need is −1), short (ending before the reservation) or not.
type clockHeap struct {
	keys  []clockKey
	need  int
	short bool
}

// NextBehind returns the next job of Behind's walk, in the order
// AppendTags gives them, of those that can still start in a pass where
// fitCap and heldCap (which only shrink) bound what starts, as Behind's
// do; false when none is left.
func (o *ClockOrder) NextBehind(fitCap, heldCap int) (int32, bool) {
	var best *clockHeap
	for i := range o.heaps {
		h := &o.heaps[i]
		if h.need < 0 {
			// Jobs of several needs: drop the best while it no
			// longer fits (the bounds only shrink).
			for len(h.keys) > 0 {
				if n := int(o.sized[h.keys[0].slot].need); n <= fitCap && (h.short || n <= heldCap) {
					break
				}
				o.pop(h)
			}
		}
		if len(h.keys) == 0 || h.need > fitCap || !h.short && h.need > heldCap {
			continue
		}
		if best == nil || o.compare(&h.keys[0], &best.keys[0]) < 0 {
			best = h
		}
	}
	if best == nil {
		return 0, false
	}
	return o.pop(best).tag, true
}

// pop removes the best job of h.
func (o *ClockOrder) pop(h *clockHeap) clockKey {
	k, n := h.keys[0], len(h.keys)-1
	h.keys[0] = h.keys[n]
	h.keys = h.keys[:n]
	o.down(h.keys, 0)
	return k
}

// down moves h[i] down heap h to its place.
func (o *ClockOrder) down(h []clockKey, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && o.compare(&h[c+1], &h[c]) < 0 {
			c++
		}
		if o.compare(&h[c], &h[i]) >= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// sort puts the keys in order, when they are not: by insertion from the
// last order (a pair of jobs swaps places only when one's key catches up
// with the other's), from scratch beyond 4n+64 moves.
func (o *ClockOrder) sort() {
	if o.sorted {
		return
	}
	if !o.insertionWithin(4*len(o.keys) + 64) {
		slices.SortFunc(o.keys, func(a, b clockKey) int { return o.compare(&a, &b) })
	}
	o.sorted, o.cur = true, 0
}

// compare is compareRank on two keys of o.
func (o *ClockOrder) compare(a, b *clockKey) int {
	switch {
	case a.value > b.value:
		return -1
	case a.value < b.value:
		return 1
	}
	ja, jb := &o.jobs[a.slot], &o.jobs[b.slot]
	switch {
	case ja.submit < jb.submit:
		return -1
	case ja.submit > jb.submit:
		return 1
	case ja.id < jb.id:
		return -1
	case ja.id > jb.id:
		return 1
	}
	return 0
}

// Advance brings the order to instant now: afterwards Tags is the order
// Rank gives the jobs held in a Snapshot at now.
func (o *ClockOrder) Advance(now time.Time) {
	o.started, o.last = true, now
	o.at = clockNow{clock: newSecondsClock(now)}
	o.at.fast = o.at.clock.wall && inFastRange(now)
	if o.at.fast {
		o.at.ns = now.UnixNano()
	}
	o.p.clockValues(o.keys, o.jobs, &o.at)
	// One pass drops the removed jobs' keys, freeing their slots, and
	// finds Best's top.
	o.sorted, o.cur, o.topValid = false, 0, true
	o.top = o.top[:0]
	w := 0
	for i := range o.keys {
		k := o.keys[i]
		if o.sized[k.slot].gone {
			o.free = append(o.free, k.slot)
			continue
		}
		o.keys[w] = k
		w++
		o.pushTop(&k)
	}
	o.keys = o.keys[:w]
}

// insertionWithin is insertionWithin for o's keys.
func (o *ClockOrder) insertionWithin(budget int) bool {
	e := o.keys
	for i := 1; i < len(e); i++ {
		if o.compare(&e[i], &e[i-1]) >= 0 {
			continue
		}
		x, k := e[i], i
		for k > 0 && o.compare(&x, &e[k-1]) < 0 {
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

// search is the first place of the order whose job goes after key x.
func (o *ClockOrder) search(x *clockKey) (int, bool) {
	return slices.BinarySearchFunc(o.keys, x, func(k clockKey, x *clockKey) int { return o.compare(&k, x) })
}

// Add inserts pending job j, with tag, keyed as the policy ranks it in s,
// first bringing the order to s.Now if it is elsewhere. The error is the
// one Rank would return for j (a key that is not a number), or a tag that
// is negative or already held.
func (o *ClockOrder) Add(s *Snapshot, j *Job, tag int32) error {
	return o.AddSized(s, j, tag, 0, 0)
}

// AddSized is Add, recording the caller's need and limit of the job for
// AppendBehind, which reads them for every job held: from the order's
// slab, where the caller's arrays of every job would be read out of
// order.
func (o *ClockOrder) AddSized(s *Snapshot, j *Job, tag int32, need int32, limit int64) error {
	if tag < 0 {
		return fmt.Errorf("clock order: tag %d: want >= 0", tag)
	}
	if int(tag) >= len(o.slot) {
		o.slot = append(o.slot, make([]int32, int(tag)+1-len(o.slot))...)
	}
	if o.slot[tag] != 0 {
		return fmt.Errorf("clock order: tag %d already held", tag)
	}
	if !o.started || s.Now != o.last {
		o.Advance(s.Now)
	}
	a, b := o.p.clockConsts(s, j)
	since := waitingSince(j)
	cj := clockJob{a: a, b: b, submit: unixNanoOrMin(j.Submit), id: j.ID, fast: inFastRange(since), since: since}
	if cj.fast {
		cj.sinceNS = since.UnixNano()
	}
	x := clockKey{value: o.p.clockValue(o.at.wait(&cj), a, b), tag: tag}
	if math.IsNaN(x.value) {
		return fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	if n := len(o.free); n > 0 {
		x.slot, o.free = o.free[n-1], o.free[:n-1]
		o.jobs[x.slot] = cj
		o.sized[x.slot] = clockSized{need: need, limit: limit}
	} else {
		x.slot = int32(len(o.jobs))
		o.jobs = append(o.jobs, cj)
		o.sized = append(o.sized, clockSized{need: need, limit: limit})
	}
	o.slot[tag] = x.slot + 1
	if o.sorted {
		p, _ := o.search(&x)
		o.keys = slices.Insert(o.keys, p, x)
		o.cur = 0
	} else {
		o.keys = append(o.keys, x)
		if o.topValid && o.cur == 0 {
			o.pushTop(&x)
		} else {
			o.topValid = false // Best finds its top again
		}
	}
	o.live++
	return nil
}

// Remove takes the job with this tag out, if it is held. Its key stays
// in its place, marked gone, until the next Advance, which frees its
// slot: the keys need not be in order to find it.
func (o *ClockOrder) Remove(tag int32) {
	if tag < 0 || int(tag) >= len(o.slot) || o.slot[tag] == 0 {
		return
	}
	o.sized[o.slot[tag]-1].gone = true
	o.slot[tag] = 0
	o.live--
}
