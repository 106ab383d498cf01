package policy

import (
	"slices"
	"sync"
)

// rankScratch holds the buffers one vtc or fair-qssf Rank call needs only
// while it runs: the per-job inputs, the association groups, VTC's tags and
// the sort buffers. The simulator ranks millions of queues, and allocating
// these afresh for each would dominate its memory traffic. Nothing a Rank
// returns points into a rankScratch: the Scores and their Parts table are
// allocated for each call, since callers may keep a ranking.
type rankScratch struct {
	run, cost, wait []float64 // fair-qssf (vtc: cost, and submit keys as wait): per pending job
	rate, since     []float64 // fair-qssf: per pending job, Service.Rate and seconds since submit
	sub             []int64   // per pending job: submit time as compareRank sees it
	g               assocGroups
	t               vtcTags
	commU, commA    []float64 // computeVTC: committed service per group, per account
	ctrU            []float64 // computeVTC: VTC counter per group
	acctW           []float64 // computeVTC: account shares
	ents, radix     []rankEntry
	perAcct, fillA  []int32
	order, hint     []int32
	users           map[string]struct{} // themis: pending users not running
}

// rankScratchPool hands each Rank call a rankScratch of its own, so that
// policies stay safe for concurrent use (a Policy value is shared by
// whoever holds it) while a single Engine reuses the same buffers cycle
// after cycle.
var rankScratchPool = sync.Pool{New: func() any { return new(rankScratch) }}

func getRankScratch() *rankScratch { return rankScratchPool.Get().(*rankScratch) }

// pooledGroups is groupByAssoc(jobs) built in a pooled rankScratch: the
// fair-share family groups every queue it ranks, millions of times in one
// simulation, and fresh maps and slices for each were a quarter of the
// simulator's allocations. done returns the buffers to the pool; g must not
// be read after it, so nothing a Rank returns may point into g.
func pooledGroups(jobs []Job) (g *assocGroups, done func()) {
	buf := getRankScratch()
	buf.g.reset(jobs)
	return &buf.g, buf.put
}

// put returns sc to the pool. What its buffers still hold does not leak
// into the next call: every user overwrites or clears what it reads (see
// zeroed). It may keep the last call's user and account names alive until
// the next call or the pool drops it.
func (sc *rankScratch) put() { rankScratchPool.Put(sc) }

// zeroed is s resized to n and cleared, reusing its array when large
// enough.
func zeroed[T any](s []T, n int) []T {
	s = resize(s, n)
	clear(s)
	return s
}

// resize returns s with length n, reusing its array when it is large
// enough; the contents are not cleared. A new array grows as append grows
// one: a buffer that follows a queue growing a job at a time (a big
// machine's, to thousands) is then allocated a few times, not at every
// job, which was a quarter of such a run's allocation.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return slices.Grow(s[:0], n)[:n]
}

// rankOut holds the Scores and parts of the last ranking made into it, for
// a caller that reads each ranking before it asks for the next (the
// simulator, tens of thousands of rankings of hundreds of jobs a run): the
// next ranking overwrites them.
type rankOut struct {
	parts  []float64
	scores []Score
	table  partTable
}

// partsBuf returns n zeroed float64s for a ranking's parts: s.out's when
// s has one, else new ones.
func (s *Snapshot) partsBuf(n int) []float64 {
	if s.out == nil {
		return make([]float64, n)
	}
	s.out.parts = zeroed(s.out.parts, n)
	return s.out.parts
}

// scoresBuf returns n Scores (contents to be overwritten) and a part table
// of names and vals for them: s.out's when s has one, else new ones.
func (s *Snapshot) scoresBuf(n int, names []string, vals []float64) ([]Score, *partTable) {
	if s.out == nil {
		return make([]Score, n), &partTable{names: names, vals: vals}
	}
	s.out.scores = resize(s.out.scores, n)
	s.out.table = partTable{names: names, vals: vals}
	return s.out.scores, &s.out.table
}
