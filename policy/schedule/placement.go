package schedule

import (
	"iter"
	"math"
	"math/bits"
)

// Use is the part of one node a job holds: Units of node Node.
type Use struct {
	Node  int32
	Units int32
}

// Pool is the free units of a machine of identical nodes, with the two
// numbers that decide whether a job fits anywhere: the largest free amount
// on one node, and how many nodes are wholly free. It implements Helios'
// consolidated placement (Hu et al., SC'21, §5.1, the artifact's
// "consolidate" placer): a job that fits on one node goes to the node with
// the fewest free units that can take it (best fit, lowest index on ties),
// so large free nodes stay whole; a job larger than a node takes
// ceil(need/perNode) wholly free nodes and holds them whole.
//
// The simulator and the start-time forecast place jobs with the same Pool,
// so a forecast made with true run times replays the simulator exactly.
type Pool struct {
	perNode int
	free    []int
	total   int // Σ free
	maxFree int
	// count[f] is how many nodes have f units free; bits holds those
	// nodes as one bit set per f (words words each), so that best fit
	// finds its node without a scan of every node; hint[f] is the first
	// word of f's set that may have a bit.
	count []int32
	bits  []uint64
	hint  []int32
	words int
	// levels has bit f set while count[f] > 0: best fit and maxFree find
	// the next level that has nodes in a scan of words, not of every
	// level, which on a one-node pool of 100,000 units is most of them.
	levels []uint64
	// member, when not nil, marks the nodes the pool may place on: a
	// partition's view of a larger machine, whose node numbers stay the
	// machine's. The others hold no free units, and Take and Give pass
	// over them, so every view can play every allocation.
	member []bool
	// moves counts the node moves (set) made: what a pass cost, which
	// tests bound.
	moves int
}

// NewPool returns a pool of nodes wholly free nodes of perNode units.
func NewPool(nodes, perNode int) *Pool {
	free := make([]int, nodes)
	for i := range free {
		free[i] = perNode
	}
	return NewPoolFree(perNode, free)
}

// NewPoolFree returns a pool of nodes of perNode units, node i having
// free[i] free (copied).
func NewPoolFree(perNode int, free []int) *Pool {
	p := &Pool{perNode: perNode, free: append([]int(nil), free...)}
	p.refresh()
	return p
}

// NewPoolOf returns a pool over the nodes of a machine for which member
// is true, node i having units[i] units, all free; perNode is the largest
// of them. A node smaller than perNode takes jobs that fit on one node; a
// job larger than one node takes whole nodes of perNode units.
func NewPoolOf(perNode int, units []int, member []bool) *Pool {
	free := make([]int, len(units))
	for i, u := range units {
		if member[i] {
			free[i] = u
		}
	}
	p := &Pool{perNode: perNode, free: free, member: append([]bool(nil), member...)}
	p.refresh()
	return p
}

// Total is the number of free units, over all nodes.
func (p *Pool) Total() int { return p.total }

// CopyFrom makes p an independent copy of q, reusing p's storage.
func (p *Pool) CopyFrom(q *Pool) {
	p.perNode, p.words = q.perNode, q.words
	p.free = append(p.free[:0], q.free...)
	p.count = append(p.count[:0], q.count...)
	p.bits = append(p.bits[:0], q.bits...)
	p.hint = append(p.hint[:0], q.hint...)
	p.levels = append(p.levels[:0], q.levels...)
	p.total, p.maxFree = q.total, q.maxFree
	p.member = q.member // never written after NewPoolOf
}

// refresh rebuilds the summary and the index from free.
func (p *Pool) refresh() {
	p.words = (len(p.free) + 63) / 64
	levels := p.perNode + 1
	p.count = resize(p.count, levels)
	clear(p.count)
	p.hint = resize(p.hint, levels)
	clear(p.hint)
	p.bits = resize(p.bits, levels*p.words)
	clear(p.bits)
	p.levels = resize(p.levels, (levels+63)/64)
	clear(p.levels)
	p.total, p.maxFree = 0, 0
	for i, f := range p.free {
		p.total += f
		p.maxFree = max(p.maxFree, f)
		p.count[f]++
		p.bits[f*p.words+i>>6] |= 1 << (i & 63)
		p.levels[f>>6] |= 1 << (f & 63)
	}
}

// set moves node i from f units free to g.
func (p *Pool) set(i, f, g int) {
	p.moves++
	p.free[i] = g
	p.count[f]--
	p.bits[f*p.words+i>>6] &^= 1 << (i & 63)
	if p.count[f] == 0 {
		p.levels[f>>6] &^= 1 << (f & 63)
	}
	p.count[g]++
	p.levels[g>>6] |= 1 << (g & 63)
	w := i >> 6
	p.bits[g*p.words+w] |= 1 << (i & 63)
	if int32(w) < p.hint[g] {
		p.hint[g] = int32(w)
	}
	p.total += g - f
	if g > p.maxFree {
		p.maxFree = g
	}
	if p.count[p.maxFree] == 0 {
		p.maxFree = max(p.levelAtMost(p.maxFree), 0)
	}
}

// levelAtMost is the highest level at most f that has nodes, -1 when none.
func (p *Pool) levelAtMost(f int) int {
	w := f >> 6
	if b := p.levels[w] & (1<<(f&63+1) - 1); b != 0 {
		return w<<6 + 63 - bits.LeadingZeros64(b)
	}
	for w--; w >= 0; w-- {
		if p.levels[w] != 0 {
			return w<<6 + 63 - bits.LeadingZeros64(p.levels[w])
		}
	}
	return -1
}

// levelAtLeast is the lowest level from f to maxFree that has nodes, -1
// when none.
func (p *Pool) levelAtLeast(f int) int {
	if f > p.maxFree {
		return -1
	}
	w, last := f>>6, p.maxFree>>6
	b := p.levels[w] &^ (1<<(f&63) - 1)
	for b == 0 {
		if w++; w > last {
			return -1
		}
		b = p.levels[w]
	}
	if l := w<<6 + bits.TrailingZeros64(b); l <= p.maxFree {
		return l
	}
	return -1
}

// lowest returns the lowest-index node with f units free, -1 when none.
func (p *Pool) lowest(f int) int {
	if p.count[f] == 0 {
		return -1
	}
	set := p.bits[f*p.words : (f+1)*p.words]
	for w := int(p.hint[f]); w < len(set); w++ {
		if set[w] != 0 {
			p.hint[f] = int32(w)
			return w<<6 + bits.TrailingZeros64(set[w])
		}
	}
	return -1
}

// Fits reports whether a job of need units can be placed now.
func (p *Pool) Fits(need int) bool {
	if need <= p.perNode {
		return p.maxFree >= need
	}
	return int(p.count[p.perNode]) >= NodesFor(need, p.perNode)
}

// NodesFor is how many whole nodes of perNode units a job of need units takes.
func NodesFor(need, perNode int) int { return (need + perNode - 1) / perNode }

// Place chooses the nodes for a job of need units without taking them; it
// returns nil when the job does not fit. dst is reused.
func (p *Pool) Place(need int, dst []Use) []Use {
	dst = dst[:0]
	if need <= p.perNode {
		if f := p.levelAtLeast(max(need, 0)); f >= 0 {
			return append(dst, Use{int32(p.lowest(f)), int32(need)})
		}
		return nil
	}
	k := NodesFor(need, p.perNode)
	if int(p.count[p.perNode]) < k {
		return nil
	}
	set := p.bits[p.perNode*p.words : (p.perNode+1)*p.words]
	for w := int(p.hint[p.perNode]); w < len(set); w++ {
		for b := set[w]; b != 0; b &= b - 1 {
			dst = append(dst, Use{int32(w<<6 + bits.TrailingZeros64(b)), int32(p.perNode)})
			if len(dst) == k {
				return dst
			}
		}
	}
	return nil
}

// Take removes an allocation from the free units.
func (p *Pool) Take(a []Use) {
	for _, u := range a {
		if p.member != nil && !p.member[u.Node] {
			continue
		}
		f := p.free[u.Node]
		p.set(int(u.Node), f, f-int(u.Units))
	}
}

// Give returns an allocation to the free units.
func (p *Pool) Give(a []Use) {
	for _, u := range a {
		if p.member != nil && !p.member[u.Node] {
			continue
		}
		f := p.free[u.Node]
		p.set(int(u.Node), f, f+int(u.Units))
	}
}

// EASY is one scheduling pass as Slurm's scheduler makes it over a ranked
// queue, with EASY backfilling (Lifka, "The ANL/IBM SP scheduling system",
// JSSPP 1995; Mu'alem and Feitelson, IEEE TPDS 12(6), 2001), as Slurm's
// backfill plugin does it for the top job: jobs start in order while they
// fit; the first that does not gets a reservation at the earliest time it
// fits, judged by the time limits of the running jobs; a lower-ranked job
// may start now if it fits and either ends (by its own time limit) before
// that time or uses only units the reservation leaves free. The simulator
// and the forecast both schedule with it.
type EASY struct {
	// Free is the machine's free units; Pass takes what it starts.
	Free *Pool
	buf  []Use
	resv []Use // the reservation's nodes
	// long[r] is what a job still running at the reservation may use of
	// node resv[r]: the smaller of its free units now and at the
	// reservation. Elsewhere that is what is free now, since the
	// reservation only adds to what the node has free by then.
	long  []int
	hold  []Use // Free minus long, where it is more
	gives [][]Use
	// reserve's walk over the ends (playEnd): the time reached, whether
	// no end was given yet, the units reserved, and the walk's step.
	at      int64
	first   bool
	need    int
	giveEnd func(int64, []Use) bool
	// asked counts the jobs the backfill walks looked at one by one:
	// what a pass cost, which tests bound.
	asked int
}

// NewEASY returns a pass over a machine of nodes wholly free nodes of
// perNode units.
func NewEASY(nodes, perNode int) *EASY {
	return &EASY{Free: NewPool(nodes, perNode)}
}

// NewEASYOn returns a pass over the free units of p (a partition's view,
// NewPoolOf), which it takes what it starts from.
func NewEASYOn(p *Pool) *EASY { return &EASY{Free: p} }

// Queue is the ranked queue a Pass schedules, best first: job i is the
// caller's job Order[i], needs Need[i] units and holds them for at most
// Limit[i] ns (its remaining time limit). Pass marks the jobs it starts
// with a Need of -1 and passes over them after.
type Queue struct {
	Order []int32
	Need  []int32
	Limit []int64
	// Lo is where the jobs not started begin: Order[:Lo] have started.
	Lo   int
	live int
	// blockMin[b] is the least Need of the jobs not started in
	// Need[b*queueBlock:(b+1)*queueBlock], so a pass skips a block
	// where nothing fits.
	blockMin []int32
	// blockMinLimit[b] is the least Limit of the same jobs, so a pass
	// also skips a block where nothing fits beside the reservation's hold
	// and nothing ends before the reservation.
	blockMinLimit []int64
}

const queueBlock = 64

// Reset empties q, keeping its storage.
func (q *Queue) Reset() {
	q.Order, q.Need, q.Limit, q.blockMin, q.blockMinLimit = q.Order[:0], q.Need[:0], q.Limit[:0], q.blockMin[:0], q.blockMinLimit[:0]
	q.Lo, q.live = 0, 0
}

// Add appends job k, needing need units for at most limit ns.
func (q *Queue) Add(k int32, need int, limit int64) {
	if len(q.Order)%queueBlock == 0 {
		q.blockMin = append(q.blockMin, math.MaxInt32)
		q.blockMinLimit = append(q.blockMinLimit, math.MaxInt64)
	}
	q.Order, q.Need, q.Limit = append(q.Order, k), append(q.Need, int32(need)), append(q.Limit, limit)
	b := &q.blockMin[len(q.blockMin)-1]
	*b = min(*b, int32(need))
	l := &q.blockMinLimit[len(q.blockMinLimit)-1]
	*l = min(*l, limit)
	q.live++
}

// Fill makes q the queue of the jobs of order, best first, keeping its
// storage: job k needs need[k] units for at most limit[k] ns. It is Reset
// and Add for each job in order, but reads the jobs from dense arrays and
// stores q's slices once: a queue rebuilt at every scheduling point from
// an order that moves with time (hundreds of jobs on a big machine) spent
// most of its time in the stores of each Add and in reading each job from
// the caller's larger records.
func (q *Queue) Fill(order []int32, need []int32, limit []int64) {
	n := len(order)
	nb := (n + queueBlock - 1) / queueBlock
	o, nd, lm := resize(q.Order, n), resize(q.Need, n), resize(q.Limit, n)
	bm, bl := resize(q.blockMin, nb), resize(q.blockMinLimit, nb)
	copy(o, order)
	for b := range nb {
		lo, hi := b*queueBlock, min((b+1)*queueBlock, n)
		m, ml := int32(math.MaxInt32), int64(math.MaxInt64)
		for i, k := range o[lo:hi] {
			x, l := need[k], limit[k]
			nd[lo+i], lm[lo+i] = x, l
			m, ml = min(m, x), min(ml, l)
		}
		bm[b], bl[b] = m, ml
	}
	q.Order, q.Need, q.Limit, q.blockMin, q.blockMinLimit = o, nd, lm, bm, bl
	q.Lo, q.live = 0, n
}

// Live is how many jobs of q have not started.
func (q *Queue) Live() int { return q.live }

// Compact drops the started jobs once they are a good part of q.
func (q *Queue) Compact() {
	if q.live >= (len(q.Order)-q.Lo)*3/4 {
		return
	}
	order, need, limit := q.Order[q.Lo:], q.Need[q.Lo:], q.Limit[q.Lo:]
	q.Reset()
	for i, k := range order {
		if need[i] >= 0 {
			q.Add(k, int(need[i]), limit[i])
		}
	}
}

// minNeed is the least need of the jobs not started, MaxInt32 when none.
func (q *Queue) minNeed() int {
	m := int32(math.MaxInt32)
	for _, b := range q.blockMin[q.Lo/queueBlock:] {
		m = min(m, b)
	}
	return int(m)
}

// started marks job i started.
func (q *Queue) started(i int) {
	q.Need[i] = -1
	q.live--
	b := i / queueBlock
	m, ml := int32(math.MaxInt32), int64(math.MaxInt64)
	lo := b * queueBlock
	for x, n := range q.Need[lo:min(lo+queueBlock, len(q.Need))] {
		if n >= 0 {
			m, ml = min(m, n), min(ml, q.Limit[lo+x])
		}
	}
	q.blockMin[b], q.blockMinLimit[b] = m, ml
}

// FitCap is the largest need that fits now: Fits(n) is n <= FitCap().
// A pass (EASY.Pass) only takes units, so no job of a larger need fits
// at any step of the pass that follows, nor starts in it.
func (p *Pool) FitCap() int { return p.fitCap() }

// fitCap is FitCap.
func (p *Pool) fitCap() int {
	if w := int(p.count[p.perNode]); w > 0 {
		return w * p.perNode
	}
	return p.maxFree
}

// Pass schedules q at instant now (any clock, in ns). ends yields the
// running jobs' limit ends and allocations in time order, including the
// jobs this pass started, as start records them. Without backfill the
// pass stops at the first job that does not fit. For every job it
// starts, Pass takes the units from Free, marks the job started in q and
// calls start with the job's place in q and its allocation (valid only
// during the call).
func (e *EASY) Pass(now int64, q *Queue, ends iter.Seq2[int64, []Use], backfill bool, start func(i int, a []Use)) {
	e.PassMore(now, q, ends, backfill, start, nil)
}

// PassMore is Pass over q and the jobs more appends to it (Queue.Add)
// when the backfill walk reaches q's end: more is called with the largest
// need that fits now and the largest that may fit beside the
// reservation's hold (both only shrink during the pass: no job of a larger
// need starts, unless it ends before the reservation), and reports
// whether it appended any (the walk skips a block whose jobs all
// need more than fits only once the block is whole). A caller
// that orders the queue lazily (a heap) then orders only the jobs the
// walk reaches before nothing more fits.
func (e *EASY) PassMore(now int64, q *Queue, ends iter.Seq2[int64, []Use], backfill bool, start func(i int, a []Use),
	more func(q *Queue, fitCap, heldCap int) bool) {
	free := e.Free
	need := q.Need
	i := q.Lo
	for ; i < len(need); i++ {
		if need[i] < 0 {
			continue
		}
		if !free.Fits(int(need[i])) {
			break
		}
		e.start(q, i, free.Place(int(need[i]), e.buf), start)
	}
	for q.Lo < len(need) && need[q.Lo] < 0 {
		q.Lo++
	}
	if i >= len(need) || !backfill {
		return
	}
	// The reservation is made when a job first fits: often none does.
	head, shadow := i, int64(-1)
	// A job running past the reservation looks at Free with the
	// reservation's share held back (hold). The hold stays taken from one
	// such job to the next until a job starts, which alone changes it:
	// taking and giving back a big reservation's nodes for each of
	// hundreds of waiting jobs was most of a big machine's pass. While
	// held, total and fitCap are Free's without the hold.
	held := false
	total, fitCap := free.total, free.fitCap()
	heldCap := math.MaxInt // the least fitCap seen while held
	unhold := func() {
		if held {
			free.Give(e.hold)
			held = false
		}
	}
	for x := i + 1; ; x++ {
		if !held {
			total, fitCap = free.total, free.fitCap()
		}
		if total == 0 {
			break
		}
		if x >= len(need) {
			if more == nil || !more(q, fitCap, heldCap) {
				break
			}
			need = q.Need
		}
		if x%queueBlock == 0 && (more == nil || x+queueBlock <= len(need)) {
			// While held, a job starts only if it fits beside the
			// hold or ends before the reservation.
			b := x / queueBlock
			if m := int(q.blockMin[b]); m > fitCap || held && m > free.fitCap() && q.blockMinLimit[b] > shadow-now {
				x += queueBlock - 1
				continue
			}
		}
		e.asked++
		n := int(need[x])
		if n < 0 || n > fitCap { // Fits(n) is n <= fitCap()
			continue
		}
		if shadow < 0 {
			shadow = e.reserve(now, int(need[head]), ends)
		}
		if now+q.Limit[x] <= shadow {
			unhold()
			a := free.Place(n, e.buf)
			e.start(q, x, a, start)
			for r, u := range e.resv {
				e.long[r] = min(e.long[r], free.free[u.Node])
			}
			continue
		}
		if !held {
			e.hold = e.hold[:0]
			for r, u := range e.resv {
				if h := free.free[u.Node] - e.long[r]; h > 0 {
					e.hold = append(e.hold, Use{u.Node, int32(h)})
				}
			}
			free.Take(e.hold)
			held = true
		}
		heldCap = min(heldCap, free.fitCap())
		var a []Use
		if free.Fits(n) {
			a = free.Place(n, e.buf)
		}
		if a == nil {
			continue
		}
		unhold()
		for _, v := range a {
			for r, u := range e.resv {
				if u.Node == v.Node {
					e.long[r] -= int(v.Units)
				}
			}
		}
		e.start(q, x, a, start)
	}
	unhold()
}

func (e *EASY) start(q *Queue, i int, a []Use, start func(int, []Use)) {
	e.Free.Take(a)
	e.buf = a
	q.started(i)
	start(i, a)
}

// BackfillBounds bounds the jobs a backfilling Pass may start behind a
// head of need units that does not fit on Free now, the jobs before it
// started: a job of need n and remaining limit l starts only if
// n <= fitCap and either now+l <= shadow (it ends before the head's
// reservation) or n <= heldCap (it fits beside the reservation's hold).
// The units free, with and without the hold, only shrink as the pass
// starts jobs, so the bounds taken before it hold at each of its steps;
// a caller may then give Pass the head and only the jobs within them, in
// order, and get the same starts, where the whole queue is mostly jobs
// the pass walks over. Free is left as it was. fitCap is −1 when nothing
// is free, where the pass starts nothing.
func (e *EASY) BackfillBounds(now int64, need int, ends iter.Seq2[int64, []Use]) (fitCap, heldCap int, shadow int64) {
	free := e.Free
	if free.total == 0 {
		return -1, -1, now
	}
	fitCap = free.fitCap()
	shadow = e.reserve(now, need, ends)
	e.hold = e.hold[:0]
	for r, u := range e.resv {
		if h := free.free[u.Node] - e.long[r]; h > 0 {
			e.hold = append(e.hold, Use{u.Node, int32(h)})
		}
	}
	free.Take(e.hold)
	heldCap = free.fitCap()
	free.Give(e.hold)
	return fitCap, heldCap, shadow
}

// reserve computes the reservation of a job of need units: the earliest
// time it fits, counting running jobs as ending at their time limits. It
// leaves in e.resv the nodes it would take then and in e.long what a job
// running past that time may use of them, and returns the time, never
// before now. It plays the ends on Free and takes them back after.
func (e *EASY) reserve(now int64, need int, ends iter.Seq2[int64, []Use]) int64 {
	free := e.Free
	e.gives = e.gives[:0]
	e.at, e.need = now, need
	if !free.Fits(need) {
		// A loop over ends would move its variables to the heap at
		// every reservation (ends is any function); a method value
		// kept in e is made once.
		if e.giveEnd == nil {
			e.giveEnd = e.playEnd
		}
		e.first = true
		ends(e.giveEnd)
	}
	t := e.at
	e.resv = free.Place(need, e.resv)
	e.long = resize(e.long, len(e.resv))
	for r, u := range e.resv {
		e.long[r] = free.free[u.Node] - int(u.Units) // free at the reservation
	}
	for _, a := range e.gives {
		free.Take(a)
	}
	clear(e.gives) // keep no allocation alive
	for r, u := range e.resv {
		e.long[r] = min(e.long[r], free.free[u.Node])
	}
	return max(t, now)
}

// playEnd is reserve's step over the running jobs' ends: it gives back
// the allocation a ending at at, until the job of e.need units fits and
// the ends at the instant it fits are all given.
func (e *EASY) playEnd(at int64, a []Use) bool {
	if !e.first && at != e.at && e.Free.Fits(e.need) {
		return false
	}
	e.at, e.first = at, false
	e.Free.Give(a)
	e.gives = append(e.gives, a)
	return true
}

// resize returns s with length n, reusing its array when it is large
// enough; the contents are not cleared.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
