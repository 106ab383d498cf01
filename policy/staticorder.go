package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// staticKeyed is a Policy whose order of two pending jobs cannot change
// while they wait: its key of a job depends only on the job and on what is
// fixed when the job is submitted or predicted (its time limit, size,
// submit time, true run time, the Snapshot's Predicted entry for it, the
// Service), never on Now, the other jobs, the Ledger or the shares. Its
// ranking of a queue is then the queue sorted by those keys, and a caller
// that sees jobs come and go (the simulator) can keep the queue sorted
// rather than re-rank it at every scheduling point (StaticOrder).
type staticKeyed interface {
	Policy
	// staticOrder reports whether this instance's order is static (f1 is
	// only with a fixed origin).
	staticOrder() bool
	// staticKey is the value that, with the submit time and id as
	// tie-breaks (compareRank), puts j where Rank puts it in any Snapshot
	// with s's Predicted entry of j, TrueRun and Service. An error is one
	// Rank would return for the same job.
	staticKey(s *Snapshot, j *Job) (float64, error)
}

// originKeyed is a staticKeyed policy whose keys also depend on an origin
// the whole queue shares and that moves now and then (f1's default, the
// earliest submit time in the system): while it stays the keys are static;
// when it moves every key must be computed again.
type originKeyed interface {
	staticKeyed
	// keyOrigin is the origin in s, as Rank computes it.
	keyOrigin(s *Snapshot) time.Time
	// staticKeyFrom is staticKey with the origin already computed.
	staticKeyFrom(s *Snapshot, origin time.Time, j *Job) (float64, error)
}

// StaticOrder keeps the pending jobs of a policy with static keys (see
// Traits.StaticOrder) in that policy's ranking order as they come and go:
// a job is keyed once, when added, and again only when its prediction
// changes (Update), instead of the whole queue being re-ranked at every
// cycle. Order is exactly the order Rank would give the same jobs: the
// same keys, computed by the same code, compared by the same comparator
// with the same tie-break (value, then submit time, then job id), which is
// a total order on distinct ids, so the sorted position of every job is
// unique.
//
// A StaticOrder is not safe for concurrent use.
type StaticOrder struct {
	p    staticKeyed
	ents []rankEntry // sorted by compareRank; i holds the caller's tag
	key  map[int64]rankEntry
	tags []int32
	// op is p when its keys count from a shared origin, which is then
	// origin, the one of the keys held.
	op     originKeyed
	origin time.Time
}

// NewStaticOrder returns an empty StaticOrder for p, or false when p's
// order can change while jobs wait (its ranking must then be recomputed
// at every cycle).
func NewStaticOrder(p Policy) (*StaticOrder, bool) {
	sp, ok := p.(staticKeyed)
	if !ok || !sp.staticOrder() {
		return nil, false
	}
	op, _ := p.(originKeyed)
	return &StaticOrder{p: sp, op: op, key: map[int64]rankEntry{}}, true
}

// Moved is called with each cycle's Snapshot before the jobs of the
// cycle are added. It reports whether the origin the policy's keys count
// from moved in s, for a policy whose keys have one (f1 by default): every
// key held is then stale, the order is emptied, and the caller adds every
// pending job again (AddAll).
func (o *StaticOrder) Moved(s *Snapshot) bool {
	if o.op == nil {
		return false
	}
	origin := o.op.keyOrigin(s)
	if origin.Equal(o.origin) {
		return false
	}
	o.origin = origin
	if len(o.ents) == 0 {
		return false
	}
	o.ents = o.ents[:0]
	clear(o.key)
	return true
}

// AddAll adds jobs, jobs[i] with tags[i], to an empty order, as Add would
// one by one.
func (o *StaticOrder) AddAll(s *Snapshot, jobs []Job, tags []int32) error {
	for i := range jobs {
		e, err := o.entry(s, &jobs[i], tags[i])
		if err != nil {
			return err
		}
		o.ents = append(o.ents, e)
		o.key[e.id] = e
	}
	// compareRank is a total order on distinct ids: any correct sort
	// gives the one order binary insertion gives.
	sortRank(o.ents, nil)
	return nil
}

// entry is j's entry, keyed as the policy ranks it in s.
func (o *StaticOrder) entry(s *Snapshot, j *Job, tag int32) (rankEntry, error) {
	var v float64
	var err error
	if o.op != nil {
		v, err = o.op.staticKeyFrom(s, o.origin, j)
	} else {
		v, err = o.p.staticKey(s, j)
	}
	if err != nil {
		return rankEntry{}, err
	}
	if math.IsNaN(v) {
		return rankEntry{}, fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	return rankEntry{value: v, submit: unixNanoOrMin(j.Submit), id: j.ID, i: tag}, nil
}

// Len is the number of jobs held.
func (o *StaticOrder) Len() int { return len(o.ents) }

// Has reports whether the job with this id is held.
func (o *StaticOrder) Has(id int64) bool {
	_, ok := o.key[id]
	return ok
}

// Add inserts pending job j, keyed as the policy ranks it in s, with tag
// (the caller's handle on the job, returned by Tags). A job already held
// is re-keyed. The error is the one the policy's Rank would return for j.
func (o *StaticOrder) Add(s *Snapshot, j *Job, tag int32) error {
	e, err := o.entry(s, j, tag)
	if err != nil {
		return err
	}
	if old, ok := o.key[j.ID]; ok {
		if old == e {
			return nil
		}
		o.remove(old)
	}
	i, _ := slices.BinarySearchFunc(o.ents, e, compareRank)
	o.ents = slices.Insert(o.ents, i, e)
	o.key[j.ID] = e
	return nil
}

// Remove takes the job with this id out, if it is held.
func (o *StaticOrder) Remove(id int64) {
	if e, ok := o.key[id]; ok {
		o.remove(e)
		delete(o.key, id)
	}
}

func (o *StaticOrder) remove(e rankEntry) {
	if i, ok := slices.BinarySearchFunc(o.ents, e, compareRank); ok {
		o.ents = slices.Delete(o.ents, i, i+1)
	}
}

// Tags returns the tags of the jobs held, best first. The slice is reused
// by the next call.
func (o *StaticOrder) Tags() []int32 {
	o.tags = o.tags[:0]
	for _, e := range o.ents {
		o.tags = append(o.tags, e.i)
	}
	return o.tags
}

// TagsFrom returns the tags of the jobs held from place i of the order on,
// best first. The slice is reused by the next call of it or of Tags.
func (o *StaticOrder) TagsFrom(i int) []int32 {
	o.tags = o.tags[:0]
	for _, e := range o.ents[i:] {
		o.tags = append(o.tags, e.i)
	}
	return o.tags
}
