package policy

import (
	"fmt"
	"math"
	"slices"
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
}

// NewStaticOrder returns an empty StaticOrder for p, or false when p's
// order can change while jobs wait (its ranking must then be recomputed
// at every cycle).
func NewStaticOrder(p Policy) (*StaticOrder, bool) {
	sp, ok := p.(staticKeyed)
	if !ok || !sp.staticOrder() {
		return nil, false
	}
	return &StaticOrder{p: sp, key: map[int64]rankEntry{}}, true
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
	v, err := o.p.staticKey(s, j)
	if err != nil {
		return err
	}
	if math.IsNaN(v) {
		return fmt.Errorf("%s: job %d: %w", o.p.Name(), j.ID, ErrBadScore)
	}
	e := rankEntry{value: v, submit: unixNanoOrMin(j.Submit), id: j.ID, i: tag}
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
