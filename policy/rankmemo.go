package policy

import "sync"

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
	if !insertionWithin(kept, 4*len(kept)+64) {
		return false // entries are as given
	}
	sortRank(m.new, scratch)
	// Merge the two sorted runs into entries.
	a, b := kept, m.new
	r := 0
	for len(a) > 0 && len(b) > 0 {
		if compareRank(b[0], a[0]) < 0 {
			entries[r], b = b[0], b[1:]
		} else {
			entries[r], a = a[0], a[1:]
		}
		r++
	}
	r += copy(entries[r:], a)
	copy(entries[r:], b)
	for r := 1; r < n; r++ {
		if compareRank(entries[r-1], entries[r]) >= 0 {
			// Equal entries: put them back in slot order.
			m.kept = append(m.kept[:0], entries...)
			for _, e := range m.kept {
				entries[e.i] = e
			}
			return false
		}
	}
	return true
}

// insertionWithin insertion-sorts e by compareRank unless that takes more
// than budget moves, when it stops and reports false with e in some order.
func insertionWithin(e []rankEntry, budget int) bool {
	for i := 1; i < len(e); i++ {
		if compareRank(e[i], e[i-1]) >= 0 {
			continue
		}
		x, k := e[i], i
		for k > 0 && compareRank(x, e[k-1]) < 0 {
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

// remember stores the order of entries, which are sorted and whose i are
// the slots 0..len(entries)-1.
func (m *rankMemo) remember(entries []rankEntry) {
	m.id = resize(m.id, len(entries))
	m.pos = resize(m.pos, len(entries))
	for r, e := range entries {
		m.id[e.i], m.pos[e.i] = e.id, int32(r)
	}
}
