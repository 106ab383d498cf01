package policy

import (
	"math/bits"
	"sync"
)

// rankMemo remembers the order of a scorer's last ranking by slot of
// Snapshot.Pending: the job in each slot and its place in the order. A
// caller that ranks the same queue again and again (the Engine at each
// scheduling point, the simulator tens of thousands of times) keeps most
// jobs in their slots, and under a key that moves with the clock (wfp3's
// wait, the fair-share family's decayed usage) few pairs of jobs swap
// between two points. Sorting from the last order then costs a pass over
// the queue and a move per swapped pair, where sorting from the slot order
// costs n·log n comparisons.
//
// The memo is only a starting point: compareRank is a strict total order
// on entries of distinct ids, so any correct sort of the same entries
// gives the same result, and sortFrom falls back to sortRank on the slot
// order whenever two entries compare equal (duplicate ids), which is the
// order sortRank alone would have given. A stale or foreign memo (another
// caller ranking other queues through the same policy value) costs time,
// never the result.
type rankMemo struct {
	mu   sync.Mutex // held by one sortFrom; others sort without the memo
	id   []int64    // job id in each slot of the last ranking
	pos  []int32    // its place in that ranking's order
	at   []int32    // sortFrom's scratch: slot by last place
	kept []rankEntry
	new  []rankEntry
}

// memoMin is the shortest queue sorted from the memo: below it sortRank's
// insertion-sorted quicksort is as fast.
const memoMin = 32

// sortFrom sorts entries, given in slot order (entries[i].i == i), by
// compareRank as sortRank(entries, scratch) does, starting from the last
// order it produced, and remembers the new one.
func (m *rankMemo) sortFrom(entries, scratch []rankEntry) {
	m.sortOr(entries, scratch, func() { sortRank(entries, scratch) })
}

// sortOr is sortFrom with sortRank's part played by sorted, which must
// sort entries, in slot order, by compareRank as sortRank would. It is
// called when the memo cannot serve.
func (m *rankMemo) sortOr(entries, scratch []rankEntry, sorted func()) {
	if !m.mu.TryLock() {
		sorted()
		return
	}
	defer m.mu.Unlock()
	m.sortLocked(entries, scratch, sorted)
}

// sortLocked is sortOr with m's lock held.
func (m *rankMemo) sortLocked(entries, scratch []rankEntry, sorted func()) {
	if len(entries) < memoMin || len(m.pos) == 0 || !m.sortKnown(entries, scratch) {
		sorted()
	}
	m.remember(entries)
}

// sortKnown sorts entries from the memo: the jobs still in the slot they
// had are laid out in their last order and insertion-sorted, the others
// are sorted apart and merged in. It reports false, with entries in slot
// order, when the insertion sort would take more moves than a sort from
// scratch (the order changed too much since) or two entries compare
// equal.
func (m *rankMemo) sortKnown(entries, scratch []rankEntry) bool {
	n := len(entries)
	m.at = resize(m.at, len(m.pos))
	for p := range m.at {
		m.at[p] = -1
	}
	m.new = m.new[:0]
	for i := range entries {
		if i < len(m.id) && m.id[i] == entries[i].id {
			m.at[m.pos[i]] = int32(i)
		} else {
			m.new = append(m.new, entries[i])
		}
	}
	m.kept = resize(m.kept, n-len(m.new))
	kept := m.kept
	w := 0
	for _, i := range m.at {
		if i >= 0 {
			kept[w] = entries[i]
			w++
		}
	}
	ok, strict := insertionWithin(kept, 4*len(kept)+64)
	if !ok {
		return false // entries are as given
	}
	if !mergeStrict(entries, kept, m.new, scratch, strict) {
		// Equal entries: put them back in slot order.
		m.kept = append(m.kept[:0], entries...)
		for _, e := range m.kept {
			entries[e.i] = e
		}
		return false
	}
	return true
}

// insertionWithin insertion-sorts e by compareRank unless that takes more
// than budget moves, when it stops and reports false with e in some order.
// strict reports, when ok, whether no two entries of e compare equal: each
// pair of neighbours in the sorted e was compared when it became one, so
// the comparisons that place each entry tell, without another pass.
func insertionWithin(e []rankEntry, budget int) (ok, strict bool) {
	strict = true
	for i := 1; i < len(e); i++ {
		c := compareRank(e[i], e[i-1])
		if c >= 0 {
			strict = strict && c > 0
			continue
		}
		x, k := e[i], i
		for k > 0 {
			if c = compareRank(x, e[k-1]); c >= 0 {
				strict = strict && c > 0
				break
			}
			e[k] = e[k-1]
			k--
		}
		e[k] = x
		if budget -= i - k; budget < 0 {
			return false, false
		}
	}
	return true, strict
}

// remember stores the order of entries, which are sorted and whose i are
// the slots 0..len(entries)-1.
func (m *rankMemo) remember(entries []rankEntry) {
	m.id = resize(m.id, len(entries))
	m.pos = resize(m.pos, len(entries))
	for r, e := range entries {
		m.id[e.i], m.pos[e.i] = e.id, int32(r)
	}
}

// segMemo is rankMemo for a ranking made of segments, each sorted on its
// own (computeVTC sorts the jobs of each account by user tag): it
// remembers, by slot of Snapshot.Pending, the job there and its place in
// the last sorted entries, and sorts each segment starting from the order
// its jobs had then. As with rankMemo, the memo only chooses where the
// sort starts: each segment's result is checked strictly ordered by
// compareRank, and a segment that is not (equal entries), or whose order
// moved too much, is sorted by sortRank from the order given, which is
// what sortRank alone would have done.
type segMemo struct {
	mu         sync.Mutex // held by one sortSegments; others sort without the memo
	id         []int64    // job id in each slot at the last sort
	pos        []int32    // its place in the last sorted entries, -1 when not among them
	at         []int32    // scratch: index in entries by last place
	seg        []int32    // scratch: segment of each index of entries
	kc, cur    []int32    // scratch: per segment, kept entries and a write cursor
	kept       []bool     // scratch: per index of entries, whether its slot kept its job
	tmp, given []rankEntry
}

// sortSegments sorts each segment entries[bounds[a]:bounds[a+1]] by
// compareRank as sortRank would. The entries' i are slots of a queue of n
// jobs, each slot at most once; scratch, when not nil, is as long as
// entries and is the sorts' second buffer.
func (m *segMemo) sortSegments(entries []rankEntry, bounds []int32, n int, scratch []rankEntry) {
	scr := func(lo, hi int32) []rankEntry {
		if scratch == nil {
			return nil
		}
		return scratch[lo:hi]
	}
	plain := func() {
		for a := 0; a+1 < len(bounds); a++ {
			if lo, hi := bounds[a], bounds[a+1]; hi-lo > 1 {
				sortRank(entries[lo:hi], scr(lo, hi))
			}
		}
	}
	if !m.mu.TryLock() {
		plain()
		return
	}
	defer m.mu.Unlock()
	if len(entries) < memoMin || len(m.pos) == 0 {
		plain()
	} else {
		m.sortKnown(entries, bounds, scr)
	}
	m.id, m.pos = resize(m.id, n), resize(m.pos, n)
	for i := range m.pos {
		m.pos[i] = -1
	}
	for r, e := range entries {
		m.id[e.i], m.pos[e.i] = e.id, int32(r)
	}
}

// sortKnown is sortSegments from the memo.
func (m *segMemo) sortKnown(entries []rankEntry, bounds []int32, scr func(lo, hi int32) []rankEntry) {
	ns := len(bounds) - 1
	m.given = append(m.given[:0], entries...)
	m.seg = resize(m.seg, len(entries))
	m.kc, m.cur = zeroed(m.kc, ns), resize(m.cur, ns)
	for a := range ns {
		for k := bounds[a]; k < bounds[a+1]; k++ {
			m.seg[k] = int32(a)
		}
	}
	m.at = resize(m.at, len(m.pos))
	for p := range m.at {
		m.at[p] = -1
	}
	m.kept = resize(m.kept, len(entries))
	for k, e := range entries {
		s := int(e.i)
		m.kept[k] = s < len(m.pos) && m.pos[s] >= 0 && m.id[s] == e.id
		if m.kept[k] {
			m.at[m.pos[s]] = int32(k)
			m.kc[m.seg[k]]++
		}
	}
	m.tmp = resize(m.tmp, len(entries))
	tmp := m.tmp
	// Each segment in tmp: its kept entries in their last order, then the
	// others in the order given.
	copy(m.cur, bounds[:ns])
	for _, k := range m.at {
		if k >= 0 {
			a := m.seg[k]
			tmp[m.cur[a]] = entries[k]
			m.cur[a]++
		}
	}
	for k, e := range entries {
		if !m.kept[k] {
			a := m.seg[k]
			tmp[m.cur[a]] = e
			m.cur[a]++
		}
	}
	for a := range ns {
		lo, hi := bounds[a], bounds[a+1]
		if hi-lo < 2 {
			continue
		}
		kept, added := tmp[lo:lo+m.kc[a]], tmp[lo+m.kc[a]:hi]
		ok, strict := insertionWithin(kept, 4*len(kept)+64)
		if !ok || !mergeStrict(entries[lo:hi], kept, added, scr(lo, hi), strict) {
			copy(entries[lo:hi], m.given[lo:hi])
			sortRank(entries[lo:hi], scr(lo, hi))
		}
	}
}

// mergeStrict sorts added (with scratch as sortRank's second buffer),
// merges it with kept, sorted, into dst and reports whether dst is then
// strictly ordered by compareRank; keptStrict says whether kept is. dst
// is always the merge, equal entries or not (rankMemo puts its entries
// back in slot order from it). Each pair of neighbours in dst is compared
// as it is merged, so strictness costs no pass of its own; a few added
// entries (a queue seen again: the jobs new since) are each placed by a
// binary search among the kept ones, whose runs are copied whole.
func mergeStrict(dst, kept, added, scratch []rankEntry, keptStrict bool) bool {
	sortRank(added, scratch)
	strict := keptStrict
	for r := 1; r < len(added); r++ {
		strict = strict && compareRank(added[r-1], added[r]) < 0
	}
	a, r := kept, 0
	if len(added)*bits.Len(uint(len(kept))) < len(kept) {
		for _, b := range added {
			// lo: how many of a come before b.
			lo, hi := 0, len(a)
			for lo < hi {
				mid := int(uint(lo+hi) >> 1)
				c := compareRank(a[mid], b)
				if c == 0 {
					strict = false
				}
				if c < 0 {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			r += copy(dst[r:], a[:lo])
			dst[r] = b
			r++
			a = a[lo:]
		}
		copy(dst[r:], a)
		return strict
	}
	b := added
	for len(a) > 0 && len(b) > 0 {
		c := compareRank(b[0], a[0])
		if c < 0 {
			dst[r], b = b[0], b[1:]
		} else {
			strict = strict && c > 0
			dst[r], a = a[0], a[1:]
		}
		r++
	}
	r += copy(dst[r:], a)
	copy(dst[r:], b)
	return strict
}

// sortHinted is sortFrom for a caller that knows an order close to the
// result: hint, a permutation of the slots of entries (given in slot
// order), is an order where most jobs already stand as compareRank puts
// them and the others would rank earlier than they stand (vtc's and
// fair-qssf's tag order, from which the guards lift jobs forward). The
// jobs that keep ascending along hint stay as they are, the others are
// sorted apart and merged in. When the result is not strictly ascending
// (equal entries), or more than a quarter of the jobs were out of place,
// it sorts as sortFrom. A strictly ascending order of the entries is the
// only one, the one any sort by compareRank gives, so the hint chooses
// only the work.
func (m *rankMemo) sortHinted(entries, scratch []rankEntry, hint []int32) {
	if !m.mu.TryLock() {
		sortRank(entries, scratch)
		return
	}
	defer m.mu.Unlock()
	n := len(entries)
	sorted := func() { sortRank(entries, scratch) }
	if len(hint) != n || n < memoMin {
		m.sortLocked(entries, scratch, sorted)
		return
	}
	m.kept = resize(m.kept, n)[:0]
	m.new = m.new[:0]
	for _, i := range hint {
		e := entries[i]
		if k := len(m.kept); k == 0 || compareRank(m.kept[k-1], e) < 0 {
			m.kept = append(m.kept, e)
			continue
		}
		if m.new = append(m.new, e); 4*len(m.new) > n {
			m.sortLocked(entries, scratch, sorted)
			return
		}
	}
	var sc []rankEntry
	if scratch != nil {
		sc = scratch[:len(m.new)]
	}
	// entries is the merge's destination: put it back in slot order from
	// the merge when that is not strictly ascending.
	if !mergeStrict(entries, m.kept, m.new, sc, true) {
		m.kept = append(m.kept[:0], entries...)
		for _, e := range m.kept {
			entries[e.i] = e
		}
		m.sortLocked(entries, scratch, sorted)
		return
	}
	m.remember(entries)
}
