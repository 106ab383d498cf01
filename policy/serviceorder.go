package policy

import (
	"fmt"
	"math"
	"slices"
)

// serviceKeyed is a Policy whose key of a job depends only on the job and
// on what the Ledger charged it (its attained service, the spans it ran),
// never on Now, the other jobs, predictions or the rest of the Ledger:
// tiresias' 2D-LAS without promotion. Its order of two jobs changes only
// when the Ledger charges one of them, so a preemptive caller that knows
// which jobs the Engine charged (those that stopped, and every running job
// when it swept: Engine.Swept) keeps its candidates, pending and running,
// sorted, keying again only those (NewServiceOrder).
type serviceKeyed interface {
	staticKeyed
	// serviceOrder reports whether this instance's keys are so.
	serviceOrder() bool
	// keyFixedUntil is a time, in Unix nanoseconds, before which running
	// job j's key stays the one staticKey gives in s however the Ledger
	// goes on charging it: while every charge since s ends before it.
	// Earlier than the true time is allowed (the job is keyed again for
	// nothing), later is not. A sweep charges thousands of running jobs
	// on a big machine, and a job's key changes only a few times in its
	// run (tiresias: when its service crosses a queue threshold).
	keyFixedUntil(s *Snapshot, j *Job) int64
}

// NewServiceOrder returns an empty ServiceOrder for p when its keys change
// only when the Ledger charges a job (tiresias' 2D-LAS without promotion),
// or false.
func NewServiceOrder(p Policy) (*ServiceOrder, bool) {
	sp, ok := p.(serviceKeyed)
	if !ok || !sp.serviceOrder() {
		return nil, false
	}
	return &ServiceOrder{p: sp}, true
}

// ServiceOrder keeps the candidates of a preemptive scheduler, pending and
// running, in the ranking order of a policy whose keys change only when the
// Ledger charges a job (NewServiceOrder), and picks the jobs to run: the
// best-ranked that fit the capacity (Select). The caller adds (Add) every
// job it ranks, with its need and a tag (its handle on the job: a small
// integer that indexes the order's records, such as the simulator's job
// index); marks the jobs it starts (Started) and requeues (Requeued), adds
// a requeued job again once the Ledger charged it; calls Swept after a
// cycle that charged every running job; removes the jobs that end
// (Remove). Tags is then the order Rank gives the same jobs: the same
// keys, computed by the same code, compared by compareRank, a total order
// on distinct ids.
//
// The work of a scheduling point follows what changed, not the number of
// candidates (thousands run at once on a big machine): the order is held
// in blocks, each with the sum and the least of its jobs' needs and the
// number running, so Select passes over a block whose jobs all fit, or
// none does, without visiting them unless one is to start or be
// preempted; and after a sweep only the running jobs whose key may have
// changed (keyFixedUntil) are keyed again.
//
// A ServiceOrder is not safe for concurrent use.
type ServiceOrder struct {
	p      serviceKeyed
	blocks []soBlock
	refs   []soRef // by tag
	n      int
	// due holds the running jobs by the time from which a sweep keys
	// them again; an item whose time is no longer its job's is stale.
	due []soDue
	// Scratch returned by Select and Tags.
	start, stop, tags []int32
	// spare is the storage of dropped blocks, for new ones: a small
	// queue (CTC's) empties and refills its only block again and again.
	spare [][]soEntry
}

// soBlockLen is a block's length after a split; a block splits beyond
// twice it. Inserting moves at most a block's entries, and Select visits
// about n/soBlockLen block summaries per call.
const soBlockLen = 64

// soEntry is a job in the order.
type soEntry struct {
	rankEntry // i is the caller's tag
	need      int32
	running   bool
}

// soBlock is a run of the order, with summaries of its jobs.
type soBlock struct {
	ents    []soEntry
	last    rankEntry // of ents' last entry, where find reads it
	sum     int64     // of the needs
	min     int32     // least need
	running int32     // jobs running
}

// soRef is what finds a held job's entry (its key), and whether it is
// due.
type soRef struct {
	key  rankEntry
	next int64 // running: when a sweep keys it again (its soDue)
	// at is where the entry was last seen (block, place): still there
	// when the entry there has its key. Select notes the jobs it lists,
	// which the caller then starts or preempts.
	at   [2]int32
	held bool
	run  bool
}

type soDue struct {
	t   int64
	tag int32
}

// Len is the number of jobs held.
func (o *ServiceOrder) Len() int { return o.n }

// ref is the record of tag, nil when no job with it is held.
func (o *ServiceOrder) ref(tag int32) *soRef {
	if tag < 0 || int(tag) >= len(o.refs) || !o.refs[tag].held {
		return nil
	}
	return &o.refs[tag]
}

// Add inserts pending job j, keyed as the policy ranks it in s, with tag
// (at least 0; returned by Tags and Select) and need (the capacity it
// takes when it runs, at least 0). The job held with tag, j itself when it
// was added before, is keyed again and marked pending. The error is the
// one the policy's Rank would return for j.
func (o *ServiceOrder) Add(s *Snapshot, j *Job, tag, need int32) error {
	if need < 0 || tag < 0 {
		return fmt.Errorf("%s: job %d: need %d, tag %d: want >= 0", o.p.Name(), j.ID, need, tag)
	}
	v, err := o.key(s, j)
	if err != nil {
		return err
	}
	e := soEntry{rankEntry: rankEntry{value: v, submit: unixNanoOrMin(j.Submit), id: j.ID, i: tag}, need: need}
	if r := o.ref(tag); r != nil {
		o.remove(r)
	}
	o.insert(e)
	if n := int(tag) + 1; n > cap(o.refs) {
		// Doubling: append grows a large slice by a quarter, which
		// copied the records five times over as tags came one by one.
		o.refs = append(make([]soRef, 0, max(n, 2*cap(o.refs))), o.refs...)
	}
	if n := int(tag) + 1; n > len(o.refs) {
		o.refs = o.refs[:n] // never written past len: zero
	}
	o.refs[tag] = soRef{key: e.rankEntry, held: true}
	return nil
}

// key is j's key in s.
func (o *ServiceOrder) key(s *Snapshot, j *Job) (float64, error) {
	v, err := o.p.staticKey(s, j)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	return v, nil
}

// Started marks job j, held with tag, running from its Start on, in s
// (the Snapshot it was picked in). Its key stays until the Engine charges
// it; a sweep keys it again once it may have changed.
func (o *ServiceOrder) Started(s *Snapshot, j *Job, tag int32) {
	r := o.ref(tag)
	if r == nil || r.run {
		return
	}
	o.setRunning(r, true)
	r.run, r.next = true, o.p.keyFixedUntil(s, j)
	o.push(soDue{r.next, tag})
}

// Requeued marks the job held with tag pending again. The caller adds it
// again (Add) once the Engine charged the span it ran.
func (o *ServiceOrder) Requeued(tag int32) {
	if r := o.ref(tag); r != nil && r.run {
		o.setRunning(r, false)
		r.run = false
	}
}

// Remove takes the job held with tag out, if there is one.
func (o *ServiceOrder) Remove(tag int32) {
	if r := o.ref(tag); r != nil {
		o.remove(r)
		*r = soRef{}
	}
}

// Swept keys again, after a cycle in s whose Engine charged every running
// job up to s.Now, each running job whose key may have changed since it
// was last keyed; job returns the running job with a tag. Only the jobs
// keyed again are asked for, so a caller that keeps the Ledger itself
// may charge a job there, when asked, rather than every running job at
// every sweep (the charges of a job that runs without a break make one
// span however they are cut).
func (o *ServiceOrder) Swept(s *Snapshot, job func(tag int32) *Job) error {
	now := s.Now.UnixNano()
	for len(o.due) > 0 && o.due[0].t <= now {
		d := o.pop()
		r := o.ref(d.tag)
		if r == nil || !r.run || r.next != d.t {
			continue // left, requeued or already keyed again
		}
		b, i := o.find(r)
		e := o.blocks[b].ents[i]
		j := job(d.tag)
		v, err := o.key(s, j)
		if err != nil {
			return err
		}
		if v != e.value {
			o.removeAt(b, i)
			e.value = v
			o.insert(e)
			r.key.value = v
		}
		// Past now, so that the loop ends: a key that may change at
		// once is looked at again at the next sweep.
		r.next = max(o.p.keyFixedUntil(s, j), now+1)
		o.push(soDue{r.next, d.tag})
	}
	if len(o.due) > 4*o.n+64 {
		o.compactDue()
	}
	return nil
}

// Select returns the jobs the order runs on capacity units: going down the
// order, each job whose need fits what the jobs taken before it left is
// taken. start is the jobs taken that are pending, in order; stop the
// running jobs not taken, in order. Both slices are reused by the next
// call.
func (o *ServiceOrder) Select(capacity int64) (start, stop []int32) {
	o.start, o.stop = o.start[:0], o.stop[:0]
	left := capacity
	for bi := range o.blocks {
		b := &o.blocks[bi]
		switch {
		case b.sum <= left:
			// All fit: only the pending ones are news.
			left -= b.sum
			if int(b.running) < len(b.ents) {
				for i, e := range b.ents {
					if !e.running {
						o.start = append(o.start, o.note(e.i, bi, i))
					}
				}
			}
		case int64(b.min) > left:
			// None fits: only the running ones are news.
			if b.running > 0 {
				for i, e := range b.ents {
					if e.running {
						o.stop = append(o.stop, o.note(e.i, bi, i))
					}
				}
			}
		default:
			for i, e := range b.ents {
				switch {
				case int64(e.need) <= left:
					left -= int64(e.need)
					if !e.running {
						o.start = append(o.start, o.note(e.i, bi, i))
					}
				case e.running:
					o.stop = append(o.stop, o.note(e.i, bi, i))
				}
			}
		}
	}
	return o.start, o.stop
}

// note records that tag's entry is at place i of block b, and returns
// tag.
func (o *ServiceOrder) note(tag int32, b, i int) int32 {
	o.refs[tag].at = [2]int32{int32(b), int32(i)}
	return tag
}

// Tags returns the tags of the jobs held, best first. The slice is reused
// by the next call.
func (o *ServiceOrder) Tags() []int32 {
	o.tags = o.tags[:0]
	for _, b := range o.blocks {
		for _, e := range b.ents {
			o.tags = append(o.tags, e.i)
		}
	}
	return o.tags
}

// find is the block and place of the held job with ref r.
func (o *ServiceOrder) find(r *soRef) (int, int) {
	k := r.key
	if b, i := int(r.at[0]), int(r.at[1]); b < len(o.blocks) && i < len(o.blocks[b].ents) && o.blocks[b].ents[i].rankEntry == k {
		return b, i
	}
	b := o.searchBlocks(k)
	ents := o.blocks[min(b, len(o.blocks)-1)].ents
	i := searchEnts(ents, k)
	if i == len(ents) || ents[i].rankEntry != k {
		panic(fmt.Sprintf("policy: service order lost job %d", k.id))
	}
	r.at = [2]int32{int32(b), int32(i)}
	return b, i
}

// searchBlocks is the first block whose last entry is not before k,
// len(o.blocks) when there is none. The searches are written out, as
// slices.BinarySearchFunc's comparison through a function value was most
// of the cost of finding a job (half a million times on a big machine).
func (o *ServiceOrder) searchBlocks(k rankEntry) int {
	lo, hi := 0, len(o.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareRank(o.blocks[m].last, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// searchEnts is the first place in ents whose entry is not before k.
func searchEnts(ents []soEntry, k rankEntry) int {
	lo, hi := 0, len(ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareRank(ents[m].rankEntry, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (o *ServiceOrder) setRunning(r *soRef, run bool) {
	b, i := o.find(r)
	blk := &o.blocks[b]
	blk.ents[i].running = run
	if run {
		blk.running++
	} else {
		blk.running--
	}
}

// insert puts e in its place.
func (o *ServiceOrder) insert(e soEntry) {
	o.n++
	if len(o.blocks) == 0 {
		o.blocks = append(o.blocks, soBlock{ents: append(o.storage(), e)})
		o.blocks[0].summarize()
		return
	}
	b := min(o.searchBlocks(e.rankEntry), len(o.blocks)-1) // behind every block: the last one's tail
	blk := &o.blocks[b]
	i := searchEnts(blk.ents, e.rankEntry)
	blk.ents = slices.Insert(blk.ents, i, e)
	blk.last = blk.ents[len(blk.ents)-1].rankEntry
	if len(blk.ents) == 1 || e.need < blk.min {
		blk.min = e.need
	}
	blk.sum += int64(e.need)
	if e.running {
		blk.running++
	}
	if len(blk.ents) > 2*soBlockLen {
		o.split(b)
	}
}

// split halves block b.
func (o *ServiceOrder) split(b int) {
	ents := o.blocks[b].ents
	hi := soBlock{ents: append(o.storage(), ents[soBlockLen:]...)}
	o.blocks[b].ents = ents[:soBlockLen:soBlockLen]
	o.blocks[b].summarize()
	hi.summarize()
	o.blocks = slices.Insert(o.blocks, b+1, hi)
}

// storage is empty storage for a block's entries.
func (o *ServiceOrder) storage() []soEntry {
	if n := len(o.spare); n > 0 {
		ents := o.spare[n-1]
		o.spare = o.spare[:n-1]
		return ents
	}
	return make([]soEntry, 0, 2*soBlockLen+1)
}

// summarize computes b's summaries from its entries.
func (b *soBlock) summarize() {
	b.sum, b.min, b.running = 0, math.MaxInt32, 0
	b.last = b.ents[len(b.ents)-1].rankEntry
	for _, e := range b.ents {
		b.sum += int64(e.need)
		b.min = min(b.min, e.need)
		if e.running {
			b.running++
		}
	}
}

// remove takes out the held job with ref r.
func (o *ServiceOrder) remove(r *soRef) {
	b, i := o.find(r)
	o.removeAt(b, i)
}

// removeAt takes out entry i of block b, dropping the block when it
// empties and merging it into the next when both fit in one.
func (o *ServiceOrder) removeAt(b, i int) {
	o.n--
	blk := &o.blocks[b]
	e := blk.ents[i]
	blk.ents = slices.Delete(blk.ents, i, i+1)
	switch {
	case len(blk.ents) == 0:
		o.spare = append(o.spare, blk.ents)
		o.blocks = slices.Delete(o.blocks, b, b+1)
		return
	case b+1 < len(o.blocks) && len(blk.ents)+len(o.blocks[b+1].ents) <= soBlockLen:
		blk.ents = append(blk.ents, o.blocks[b+1].ents...)
		o.spare = append(o.spare, o.blocks[b+1].ents[:0])
		o.blocks = slices.Delete(o.blocks, b+1, b+2)
		blk = &o.blocks[b]
		blk.summarize()
		return
	}
	blk.last = blk.ents[len(blk.ents)-1].rankEntry
	blk.sum -= int64(e.need)
	if e.running {
		blk.running--
	}
	if e.need == blk.min {
		blk.summarize()
	}
}

// push and pop keep due a binary min-heap on t.
func (o *ServiceOrder) push(d soDue) {
	o.due = append(o.due, d)
	i := len(o.due) - 1
	for i > 0 {
		p := (i - 1) / 2
		if o.due[p].t <= d.t {
			break
		}
		o.due[i] = o.due[p]
		i = p
	}
	o.due[i] = d
}

func (o *ServiceOrder) pop() soDue {
	top := o.due[0]
	n := len(o.due) - 1
	last := o.due[n]
	o.due = o.due[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && o.due[c+1].t < o.due[c].t {
			c++
		}
		if last.t <= o.due[c].t {
			break
		}
		o.due[i] = o.due[c]
		i = c
	}
	o.due[i] = last
	return top
}

// compactDue drops the stale items of due, in place.
func (o *ServiceOrder) compactDue() {
	live := o.due[:0]
	for _, d := range o.due {
		if r := o.ref(d.tag); r != nil && r.run && r.next == d.t {
			live = append(live, d)
		}
	}
	o.due = o.due[:0]
	for _, d := range live {
		o.push(d) // writes at most up to where d was read
	}
}
