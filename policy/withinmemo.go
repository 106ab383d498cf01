package policy

import "math"

// withinMemo keeps, between computeVTC's calls, each association's
// pending jobs in the within order (the order sortRank gives that
// association's entries), so that a call sorts only the associations
// whose jobs changed: a job arrived in, left or moved out of one of its
// queue slots, or its within key, submit or association changed. The
// simulator's queue keeps most of its hundreds of jobs in their slots
// from one scheduling point to the next, and under vtc (FIFO within a
// user) and fair-qssf (predicted service) their keys stay put, where
// sorting each association from its last order (segMemo) passes over
// every job several times at every point.
//
// Why the orders it gives are sortRank's: the result of sortRank on one
// association's entries, laid out in slot order as assocGroups lays them
// out, depends only on those entries. When no two compare equal it is the
// one strictly ascending order of them, which an association's kept order
// with the changed entries merged in is whenever the merge checks strictly
// ascending (mergeStrict); otherwise the association is sorted by sortRank
// from slot order, as segMemo and the plain sort do for such a segment.
// An association none of whose slots changed has the same entries in the
// same slots, hence the same order as before. A NaN key, for which
// compareRank is not a strict order, makes the caller sort as before and
// the memo start over.
//
// The memo belongs to the groupMemo whose association numbers it uses and
// is read and written under that memo's lock.
type withinMemo struct {
	// Per slot at the last call: the entry there and its association's
	// number (groupMemo's); n slots were used.
	ent []rankEntry
	num []int32
	n   int
	// Per association number: its entries in within order, slots as i.
	ord [][]rankEntry
	// Scratch: per slot whether it changed; per association number its
	// entries that arrived, and whether it is dirty; the dirty ones.
	changed []bool
	add     [][]rankEntry
	isDirty []bool
	dirty   []int32
	kept    []rankEntry
	merged  []rankEntry
	scratch []rankEntry
}

// reset forgets every order: the next call sorts every association.
func (w *withinMemo) reset() {
	w.n = 0
	for a := range w.ord {
		w.ord[a] = w.ord[a][:0]
	}
}

// membersWithin sets g.members, which resetWith(pending, m) left in slot
// order within each group, to each group's jobs in the within order, the
// entries of job i being rankEntry{-within[i], sub[i], pending[i].ID, i}.
// It reports false, leaving g.members in slot order and the memo reset,
// when a key is NaN (or, were it a bug here, when the memo lost track of
// a job).
func (w *withinMemo) membersWithin(g *assocGroups, m *groupMemo, pending []Job, within []float64, sub []int64) bool {
	n := len(pending)
	na := len(m.stamp)
	for len(w.ord) < na {
		w.ord, w.add = append(w.ord, nil), append(w.add, nil)
		w.isDirty = append(w.isDirty, false)
	}
	for len(w.ent) < n {
		w.ent, w.num = append(w.ent, rankEntry{}), append(w.num, -1)
	}
	w.changed = resize(w.changed, max(n, w.n)) // every entry read is written below
	w.dirty = w.dirty[:0]
	mark := func(a int32) {
		if !w.isDirty[a] {
			w.isDirty[a] = true
			w.dirty = append(w.dirty, a)
		}
	}
	for i := range n {
		e := rankEntry{value: -within[i], submit: sub[i], id: pending[i].ID, i: int32(i)}
		if math.IsNaN(e.value) {
			w.abandon()
			return false
		}
		a := m.num[i]
		if i < w.n {
			old := &w.ent[i]
			if w.num[i] == a && old.id == e.id && old.submit == e.submit &&
				math.Float64bits(old.value) == math.Float64bits(e.value) {
				w.changed[i] = false
				continue
			}
			mark(w.num[i])
		}
		w.changed[i] = true
		w.ent[i], w.num[i] = e, a
		mark(a)
		w.add[a] = append(w.add[a], e)
	}
	for i := n; i < w.n; i++ {
		w.changed[i] = true
		mark(w.num[i])
	}
	w.n = n

	for _, a := range w.dirty {
		w.isDirty[a] = false
		w.kept = w.kept[:0]
		strict := true
		for _, e := range w.ord[a] {
			if int(e.i) < n && !w.changed[e.i] {
				if k := len(w.kept); k > 0 && compareRank(w.kept[k-1], e) >= 0 {
					strict = false
				}
				w.kept = append(w.kept, e)
			}
		}
		added := w.add[a]
		total := len(w.kept) + len(added)
		w.merged = resize(w.merged, total)
		if len(added) > 0 {
			w.scratch = resize(w.scratch, len(added))
			strict = mergeStrict(w.merged, w.kept, added, w.scratch, strict)
		} else {
			copy(w.merged, w.kept)
		}
		if !strict {
			// Equal entries: sortRank from slot order, as the sort
			// without the memo does.
			x := m.grp[a]
			for k, i := range g.group(int(x)) {
				w.merged[k] = w.ent[i]
			}
			w.scratch = resize(w.scratch, total)
			sortRank(w.merged, w.scratch)
		}
		w.ord[a] = append(w.ord[a][:0], w.merged...)
		clear(w.add[a])
		w.add[a] = w.add[a][:0]
	}

	// Every job of group x has one association number, the one its
	// first job has. The lengths agree unless the memo lost track of a
	// job, which would be a bug here: then sort as without it.
	for x := range g.keys {
		if mem := g.group(x); len(w.ord[m.num[mem[0]]]) != len(mem) {
			w.abandon()
			return false
		}
	}
	for x := range g.keys {
		mem := g.group(x)
		for k, e := range w.ord[m.num[mem[0]]] {
			mem[k] = e.i
		}
	}
	return true
}

// abandon resets the memo in the middle of a call.
func (w *withinMemo) abandon() {
	for _, a := range w.dirty {
		w.isDirty[a] = false
	}
	for a := range w.add {
		w.add[a] = w.add[a][:0]
	}
	w.dirty = w.dirty[:0]
	w.reset()
}
