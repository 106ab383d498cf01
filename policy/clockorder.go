package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// clockKeyed is a Policy whose key of a pending job is a function of the
// job's wait, w = max(0, Now − waitingSince), through constants of
// the job fixed while it waits (its time limit, its size): wfp3's
// (w/r)³·n and unicep's w/(max(log2 n,1)·r). They read nothing else: no
// prediction, no Ledger, no other job. themis' ρ = (w + run)/tid, w =
// Now − Submit, is one too between the instants where N (the users with
// a pending or running job) or the job's prediction changes, which the
// caller tells the ClockOrder (SetUsers, Rekey; clockReadsUsers). The
// order of two jobs changes
// while they wait, but little from one scheduling point to the next, and
// a caller that keeps the queue (ClockOrder) recomputes each key from two
// numbers instead of ranking the Snapshot.
type clockKeyed interface {
	Policy
	// clockConsts returns the constants of j's key in s, users being N,
	// the number of users with a pending or running job (read only where
	// clockReadsUsers), and i j's index in s.Pending, -1 when j is not
	// there.
	clockConsts(s *Snapshot, j *Job, i int, users float64) (a, b float64)
	// clockSince is when j's wait starts, and signed whether the wait is
	// the signed time since then (themis' Now − Submit) rather than
	// waited's, never below 0.
	clockSince(j *Job) (since time.Time, signed bool)
	// clockReadsUsers is whether the constants read N and the job's
	// prediction (themis): the caller then sets N (SetUsers) and keys a
	// job again when its prediction changes (Rekey).
	clockReadsUsers() bool
	// clockValue is the Value Rank gives a job of constants a, b that
	// waited w seconds (as clockNow.wait computes w), bit for bit.
	clockValue(w, a, b float64) float64
	// clockValues sets each key's value to clockValue of its job's wait
	// at now (clockNow.wait) and constants, the job being jobs[slot]: one
	// call per instant rather than one per job.
	clockValues(keys []clockKey, jobs []clockJob, now *clockNow)
	// clockSlope is c of a job of constants a, b: its key is a
	// non-decreasing function f of c·w, w its wait in seconds. Bounding
	// c·w over a set of jobs bounds their keys (clockBound).
	clockSlope(a, b float64) float64
	// clockBound, of a y at least 0, is f(y) grown by a margin (clockMargin) over the
	// rounding of the key's and the bound's arithmetic, a few units of
	// 2⁻⁵³ each: at least clockValue of every job whose c·w, computed in
	// float64, is at most y.
	clockBound(y float64) float64
}

// ClockOrder keeps the pending jobs of a policy whose keys are a function
// of each job's wait (wfp3, unicep, themis: see clockKeyed) in the order Rank
// gives them, from one instant to the next: a caller that sees jobs come
// and go (the simulator) adds and removes them, and Advance brings the
// order to a later instant. The order is sorted when it is read whole
// (AppendTags), from the last order by insertion (a pair of jobs swaps
// places only when one's key catches up with the other's: about one move
// per three jobs at each point of a big machine's queue), falling back
// to a sort from scratch beyond 4n+64 moves. A scheduling pass reads
// less (Best, Behind): the few best jobs, and behind the first that
// does not fit only the jobs that could start, ordered as far as the
// pass asks. Ranking the Snapshot instead reads every job's record,
// builds its parts and Score and maps the ranking back to the queue.
//
// A pass on a big machine's busy point reads two or three of a thousand
// jobs, and computing every key at every point would be most of its
// cost, so the jobs are kept in blocks that bound their keys: a job's key
// is a non-decreasing function of c·w (clockSlope), and a block of jobs
// of nearly the same c (one slope class: c within 1/32 of an octave)
// that arrived close together holds at most f(cmax·(now − earliest)),
// which is near its best key. Best's top and Behind's walk compute the keys of
// a block only when that bound can reach the keys they have already
// found; the others keep the values of an earlier instant, which nothing
// compares.
//
// The order is exact: each key compared is computed by the policy's own
// code (clockValue) from the same wait as Rank's (secondsClock, or the
// same difference of nanoseconds where that is what it computes) at the
// last instant, and compared as compareRank compares, with the same
// tie-break, a strict total order on distinct ids, so the sorted order is
// unique. A bound is over the rounding of both computations
// (clockBound), and a block is passed over only when its bound is below
// a key found (a tie is looked at).
//
// The order moves 16-byte keys; the jobs' constants stay in a slab of
// the jobs held, whose slots are reused, so that it stays as small as the
// queue and in cache.
//
// Tags are the caller's small non-negative handles on the jobs (the
// simulator's job indices): the ClockOrder keeps a slot number per tag
// up to the largest tag added. Ids must be distinct, as a queue's are. A
// ClockOrder is not safe for concurrent use.
type ClockOrder struct {
	p    clockKeyed
	jobs []clockJob // by slot
	// sized is what Behind and Best read of each job held, by slot:
	// apart from jobs (a job's 80 bytes), so that their checks read 16
	// bytes of it.
	sized []clockSized
	place []clockPlace // by slot: the job's block and its index there
	free  []int32      // slots free
	slot  []int32      // by tag: slot+1, 0 when not held
	// keys is the jobs held and the jobs removed (gone of them) since the
	// last compaction, which frees their slots, in the order of the last
	// sort. Their values are the keys at last only when sorted: the sort
	// computes them all.
	keys   []clockKey
	gone   int
	sorted bool
	// blocks hold the jobs held, each a copy of its key (current when the
	// block's at is this instant's epoch); active are those holding any,
	// spare the empty ones no slope class joins.
	blocks []clockBlock
	active []int32
	spare  []int32
	open   map[uint64]int32 // by slope class: the block its jobs join
	users  float64          // N (SetUsers), where clockReadsUsers
	epoch  uint64           // counts instants (Advance)
	stamp  uint64           // counts fillTop's
	top    []clockKey       // Best's, when not sorted
	seeds  []int32
	cur    int // Best's first key (of top, or of keys when sorted) that may be held
	// topValid: top is the best jobs held, but for those removed
	// since, when not sorted (Advance finds it, Add keeps it).
	topValid bool
	// Behind's walk: the blocks not yet looked at that may hold a job
	// within its bounds, best bound first, and the jobs of the blocks
	// looked at within them, best first.
	front   []clockFront
	cand    []clockKey
	head    int32
	until   int64
	live    int
	last    time.Time
	at      clockNow // last
	started bool
}

// clockNow is an instant as a ClockOrder computes waits from it.
type clockNow struct {
	ns    int64 // in Unix ns, when fast
	fast  bool  // a wall-clock instant in fastRange
	clock secondsClock
}

// wait is j's wait at n, as waited computes it (as secondsClock.since
// does when j's is signed).
func (n *clockNow) wait(j *clockJob) float64 {
	if n.fast && j.fast {
		w := time.Duration(n.ns - j.sinceNS).Seconds()
		if j.signed {
			return w
		}
		return max(0, w)
	}
	return n.slowWait(j)
}

// slowWait is wait where n or j is not fast, kept out of wait's common
// path.
func (n *clockNow) slowWait(j *clockJob) float64 {
	if j.signed {
		return n.clock.since(j.since)
	}
	return max(0, n.clock.since(j.since))
}

// clockKey is one job's place in a ClockOrder.
type clockKey struct {
	value float64 // the key at some instant (see ClockOrder)
	slot  int32
	tag   int32
}

// clockSized is a job's need and limit (AddSized) and whether it was
// removed (its key goes, and its slot is freed, at a later Advance).
type clockSized struct {
	limit int64
	need  int32
	gone  bool
}

// clockJob is what a ClockOrder keeps of a job it holds.
type clockJob struct {
	a, b    float64
	slope   float64 // clockSlope(a, b)
	sinceNS int64   // waitingSince in Unix ns, when fast
	submit  int64   // unixNanoOrMin(Submit), the first tie-break
	id      int64
	fast    bool      // since is in fastRange
	signed  bool      // clockSince's
	since   time.Time // clockSince's
}

// clockPlace is where a job held is: keys[pos] of blocks[block].
type clockPlace struct{ block, pos int32 }

// clockBlock is up to clockBlockLen jobs of one slope class. Its
// summaries hold for every job in keys: exact after the block's keys
// are computed (refresh), looser after jobs leave.
type clockBlock struct {
	keys    []clockKey
	class   uint64
	slope   float64 // the largest
	sinceNS int64   // the least (of fast jobs: the slow class has none)
	limit   int64   // the least
	need    int32   // the least
	act     int32   // index in active; -1 when empty
	at      uint64  // the epoch of keys' values; 0: none
	pushed  uint64  // the stamp of the last fillTop that looked at it
}

// clockBlockLen is the most jobs a block takes: a block's bound is that
// of its oldest job of its largest slope, and computing its keys costs
// them all. On the big workload (581 jobs waiting at an instant on
// average, in 49 blocks of 16) an instant computes 26 keys on average,
// against 84 in blocks of 64 and classes of 1/16 octave; smaller blocks
// have more bounds to compute.
const clockBlockLen = 16

// clockSlow is the slope class of the jobs whose keys have no bound
// (waitingSince outside fastRange, a slope not positive and finite):
// they are computed at every look.
const clockSlow = math.MaxUint64

// clockFront is a block of Behind's walk not yet looked at.
type clockFront struct {
	bound float64
	block int32
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
	return &ClockOrder{p: cp, open: map[uint64]int32{}}, true
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
// thousand jobs, which Advance finds among the clockTop best (and Add
// keeps), rather than sorting the order; past them, Best finds the
// clockTop best of those left.
func (o *ClockOrder) Best() (int32, bool) {
	if !o.sorted && !o.topValid {
		o.fillTop()
	}
	for !o.sorted {
		for ; o.cur < len(o.top); o.cur++ {
			if k := &o.top[o.cur]; !o.sized[k.slot].gone {
				return k.tag, true
			}
		}
		if len(o.top) < clockTop {
			return 0, false // every job held was in top
		}
		o.fillTop() // the next best: those of top were removed
	}
	for ; o.cur < len(o.keys); o.cur++ {
		if k := &o.keys[o.cur]; !o.sized[k.slot].gone {
			return k.tag, true
		}
	}
	return 0, false
}

// clockTop is how many of the best jobs Best finds at once.
const clockTop = 4

// fillTop sets top to the clockTop best jobs held, best first (all of
// them, when fewer). It first looks at the blocks of the jobs top held
// (the last instant's best are likely still among the best, and their
// keys raise the bar early), then at each other block whose bound
// reaches the clockTop-th key found so far.
func (o *ClockOrder) fillTop() {
	o.stamp++
	o.seeds = o.seeds[:0]
	for i := o.cur; i < len(o.top); i++ {
		if k := &o.top[i]; !o.sized[k.slot].gone {
			o.seeds = append(o.seeds, o.place[k.slot].block)
		}
	}
	o.top, o.cur, o.topValid = o.top[:0], 0, true
	for _, i := range o.seeds {
		o.pushBlock(i)
	}
	for _, i := range o.active {
		b := &o.blocks[i]
		if b.pushed == o.stamp || len(o.top) == clockTop && o.bound(b) < o.top[clockTop-1].value {
			continue
		}
		o.pushBlock(i)
	}
}

// pushBlock puts the jobs of block i that are among the clockTop best
// into top, once per fillTop.
func (o *ClockOrder) pushBlock(i int32) {
	b := &o.blocks[i]
	if b.pushed == o.stamp {
		return
	}
	b.pushed = o.stamp
	o.refresh(b)
	for x := range b.keys {
		o.pushTop(&b.keys[x])
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

// bound is at least the key at last of every job in b.
func (o *ClockOrder) bound(b *clockBlock) float64 {
	if b.class == clockSlow || !o.at.fast {
		return math.Inf(1)
	}
	d := o.at.ns - b.sinceNS
	if d <= 0 {
		// Every job's wait is at most 0: its key is at most f(0).
		return o.p.clockBound(0)
	}
	// d is exact as a count of nanoseconds: the wait's difference,
	// before rounding to float64.
	if v := o.p.clockBound(b.slope * (float64(d) * 1e-9)); v >= 0 {
		return v
	}
	return math.Inf(1) // NaN
}

// refresh computes the keys of b's jobs at last, once per instant, and
// tightens its summaries to the jobs it holds.
func (o *ClockOrder) refresh(b *clockBlock) {
	if b.at == o.epoch {
		return
	}
	b.at = o.epoch
	o.p.clockValues(b.keys, o.jobs, &o.at)
	slope, since, limit, need := 0.0, int64(math.MaxInt64), int64(math.MaxInt64), int32(math.MaxInt32)
	for x := range b.keys {
		s := b.keys[x].slot
		j, z := &o.jobs[s], &o.sized[s]
		slope, since = max(slope, j.slope), min(since, j.sinceNS)
		limit, need = min(limit, z.limit), min(need, z.need)
	}
	b.slope, b.sinceNS, b.limit, b.need = slope, since, limit, need
}

// Behind readies NextBehind's walk over the jobs held other than head
// that could start behind it in a pass bounded by fitCap, heldCap and
// until (schedule.EASY.BackfillBounds): of need (AddSized) at most
// fitCap, and either of limit at most until (short) or of need at most
// heldCap. On a big machine's busy points those are a few of a thousand
// jobs, or hundreds of which the pass starts one or two before nothing
// more fits: the walk looks at the blocks that may hold such a job,
// best bound first, only while a bound reaches the best job found.
func (o *ClockOrder) Behind(head int32, fitCap, heldCap int, until int64) {
	o.head, o.until = head, until
	o.cand, o.front = o.cand[:0], o.front[:0]
	for _, i := range o.active {
		if b := &o.blocks[i]; o.admits(b, fitCap, heldCap) {
			o.front = append(o.front, clockFront{bound: o.bound(b), block: i})
		}
	}
	for x := len(o.front)/2 - 1; x >= 0; x-- {
		o.downFront(x)
	}
}

// admits is whether block b may hold a job within the walk's bounds.
func (o *ClockOrder) admits(b *clockBlock, fitCap, heldCap int) bool {
	n := int(b.need)
	return n <= fitCap && (b.limit <= o.until || n <= heldCap)
}

// fits is whether the job in slot s is held and within the walk's
// bounds.
func (o *ClockOrder) fits(s int32, fitCap, heldCap int) bool {
	z := &o.sized[s]
	n := int(z.need)
	return !z.gone && n <= fitCap && (z.limit <= o.until || n <= heldCap)
}

// NextBehind returns the next job of Behind's walk, in the order
// AppendTags gives them, of those that can still start in a pass where
// fitCap and heldCap (which only shrink) bound what starts, as Behind's
// do; false when none is left.
func (o *ClockOrder) NextBehind(fitCap, heldCap int) (int32, bool) {
	for {
		if len(o.cand) > 0 && !o.fits(o.cand[0].slot, fitCap, heldCap) {
			// The bounds shrank (a job started): drop every job found
			// that no longer fits at once, most of them when a big
			// one started, rather than popping them one by one.
			w := 0
			for _, k := range o.cand {
				if o.fits(k.slot, fitCap, heldCap) {
					o.cand[w] = k
					w++
				}
			}
			o.cand = o.cand[:w]
			for x := w/2 - 1; x >= 0; x-- {
				o.down(o.cand, x)
			}
		}
		if len(o.front) > 0 && (len(o.cand) == 0 || o.front[0].bound >= o.cand[0].value) {
			b := &o.blocks[o.popFront()]
			if !o.admits(b, fitCap, heldCap) {
				continue
			}
			o.refresh(b)
			for x := range b.keys {
				if k := &b.keys[x]; k.tag != o.head && o.fits(k.slot, fitCap, heldCap) {
					o.pushCand(*k)
				}
			}
			continue
		}
		if len(o.cand) == 0 {
			return 0, false
		}
		return o.popCand().tag, true
	}
}

// popFront removes the block of the best bound from front.
func (o *ClockOrder) popFront() int32 {
	f, n := o.front[0], len(o.front)-1
	o.front[0] = o.front[n]
	o.front = o.front[:n]
	o.downFront(0)
	return f.block
}

// downFront moves front[i] down its heap to its place.
func (o *ClockOrder) downFront(i int) {
	h := o.front
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].bound > h[c].bound {
			c++
		}
		if h[c].bound <= h[i].bound {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// pushCand adds k to the walk's jobs found.
func (o *ClockOrder) pushCand(k clockKey) {
	o.cand = append(o.cand, k)
	h := o.cand
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if o.compare(&h[i], &h[p]) >= 0 {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// popCand removes the best of the walk's jobs found.
func (o *ClockOrder) popCand() clockKey {
	k, n := o.cand[0], len(o.cand)-1
	o.cand[0] = o.cand[n]
	o.cand = o.cand[:n]
	o.down(o.cand, 0)
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

// sort puts the keys in order, when they are not, computing each at
// last: by insertion from the last order (a pair of jobs swaps places
// only when one's key catches up with the other's), from scratch beyond
// 4n+64 moves.
func (o *ClockOrder) sort() {
	if o.sorted {
		return
	}
	o.p.clockValues(o.keys, o.jobs, &o.at)
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
	o.epoch++
	o.sorted = false
	if o.gone > 0 && 4*o.gone >= len(o.keys) {
		o.compact()
	}
	o.fillTop()
}

// compact drops the removed jobs' keys, freeing their slots: when they
// are a quarter of the keys, so that the pass over them all costs a few
// of each removal.
func (o *ClockOrder) compact() {
	w := 0
	for i := range o.keys {
		k := o.keys[i]
		if o.sized[k.slot].gone {
			o.free = append(o.free, k.slot)
			continue
		}
		o.keys[w] = k
		w++
	}
	o.keys, o.gone = o.keys[:w], 0
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
// Behind, which reads them for the jobs it looks at: from the order's
// slab, where the caller's arrays of every job would be read out of
// order.
func (o *ClockOrder) AddSized(s *Snapshot, j *Job, tag int32, need int32, limit int64) error {
	return o.add(s, j, -1, tag, need, limit)
}

// add is AddSized of j, s.Pending[i] when i >= 0.
func (o *ClockOrder) add(s *Snapshot, j *Job, i int, tag int32, need int32, limit int64) error {
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
	a, b := o.p.clockConsts(s, j, i, o.users)
	since, signed := o.p.clockSince(j)
	cj := clockJob{a: a, b: b, slope: o.p.clockSlope(a, b), submit: unixNanoOrMin(j.Submit), id: j.ID, fast: inFastRange(since),
		signed: signed, since: since}
	if cj.fast {
		cj.sinceNS = since.UnixNano()
	}
	x := clockKey{value: o.p.clockValue(o.at.wait(&cj), a, b), tag: tag}
	if math.IsNaN(x.value) {
		return fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	z := clockSized{need: need, limit: limit}
	if n := len(o.free); n > 0 {
		x.slot, o.free = o.free[n-1], o.free[:n-1]
		o.jobs[x.slot], o.sized[x.slot] = cj, z
	} else {
		x.slot = int32(len(o.jobs))
		o.jobs, o.sized = append(o.jobs, cj), append(o.sized, z)
		o.place = append(o.place, clockPlace{})
	}
	o.slot[tag] = x.slot + 1
	o.enter(x, &cj, &z)
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

// enter puts key x, of job j sized z, into the block its slope class
// joins, opening one when that is full.
func (o *ClockOrder) enter(x clockKey, j *clockJob, z *clockSized) {
	class := uint64(clockSlow)
	if j.fast && j.slope > 0 && !math.IsInf(j.slope, 1) {
		// 1/32 of an octave: the sign, the exponent and 5 bits of the
		// mantissa. A bound is then within 2.2% of its oldest job's
		// c·w (7% of its key under wfp3).
		class = math.Float64bits(j.slope) >> 47
	}
	i, ok := o.open[class]
	if !ok || len(o.blocks[i].keys) >= clockBlockLen {
		if n := len(o.spare); n > 0 {
			i, o.spare = o.spare[n-1], o.spare[:n-1]
		} else {
			i = int32(len(o.blocks))
			o.blocks = append(o.blocks, clockBlock{act: -1})
		}
		o.blocks[i].class = class
		o.open[class] = i
	}
	b := &o.blocks[i]
	if len(b.keys) == 0 {
		b.slope, b.sinceNS, b.limit, b.need = j.slope, j.sinceNS, z.limit, z.need
		b.act = int32(len(o.active))
		o.active = append(o.active, i)
	} else {
		b.slope, b.sinceNS = max(b.slope, j.slope), min(b.sinceNS, j.sinceNS)
		b.limit, b.need = min(b.limit, z.limit), min(b.need, z.need)
	}
	o.place[x.slot] = clockPlace{block: i, pos: int32(len(b.keys))}
	b.keys = append(b.keys, x)
}

// Remove takes the job with this tag out, if it is held. Its key leaves
// its block; in keys it stays, marked gone, until an Advance compacts
// them, which frees its slot: the keys need not be in order to find it.
func (o *ClockOrder) Remove(tag int32) {
	if tag < 0 || int(tag) >= len(o.slot) || o.slot[tag] == 0 {
		return
	}
	s := o.slot[tag] - 1
	o.sized[s].gone = true
	o.slot[tag] = 0
	o.live--
	o.gone++
	p := o.place[s]
	b := &o.blocks[p.block]
	n := len(b.keys) - 1
	if moved := b.keys[n]; p.pos != int32(n) {
		b.keys[p.pos] = moved
		o.place[moved.slot].pos = p.pos
	}
	b.keys = b.keys[:n]
	if n > 0 {
		return
	}
	// Empty: no longer active, and spare unless its class still joins it.
	last := o.active[len(o.active)-1]
	o.active[b.act] = last
	o.blocks[last].act = b.act
	o.active = o.active[:len(o.active)-1]
	b.act = -1
	if o.open[b.class] != p.block {
		o.spare = append(o.spare, p.block)
	}
}

// ReadsUsers is whether the keys read the number of users with a pending
// or running job and each job's prediction (themis): the caller then
// sets the number (SetUsers) before adding jobs at an instant, and keys
// again (Rekey) every job held when it changes and each job whose
// prediction changed.
func (o *ClockOrder) ReadsUsers() bool { return o.p.clockReadsUsers() }

// SetUsers sets the number of users with a pending or running job that
// the keys added or keyed again from now on read, and reports whether it
// changed.
func (o *ClockOrder) SetUsers(n float64) bool {
	if n == o.users {
		return false
	}
	o.users = n
	return true
}

// Has is whether the job with this tag is held.
func (o *ClockOrder) Has(tag int32) bool {
	return tag >= 0 && int(tag) < len(o.slot) && o.slot[tag] != 0
}

// Rekey keys the job with this tag, s.Pending[i], again as the policy
// ranks it in s, where its prediction or the number of users
// (SetUsers) may have changed since it was added: a job whose constants
// are the same stays where it is. The error is Add's, or a tag not held
// or held for another job.
func (o *ClockOrder) Rekey(s *Snapshot, i int, tag int32) error {
	if !o.Has(tag) {
		return fmt.Errorf("clock order: tag %d not held", tag)
	}
	j, slot := &s.Pending[i], o.slot[tag]-1
	cj := &o.jobs[slot]
	if cj.id != j.ID {
		return fmt.Errorf("clock order: tag %d holds job %d, not %d", tag, cj.id, j.ID)
	}
	a, b := o.p.clockConsts(s, j, i, o.users)
	if math.Float64bits(a) == math.Float64bits(cj.a) && math.Float64bits(b) == math.Float64bits(cj.b) {
		return nil
	}
	z := o.sized[slot]
	o.Remove(tag)
	return o.add(s, j, i, tag, z.need, z.limit)
}
