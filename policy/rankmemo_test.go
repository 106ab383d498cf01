package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// memoQueue is a queue ranked point after point as the simulator ranks
// its pending list: jobs leave by swap-removal, arrive at the end, and
// their values drift between points.
type memoQueue struct {
	rng    *rand.Rand
	jobs   []rankEntry // by slot; i is rewritten at each point
	nextID int64
}

func (q *memoQueue) step(leave, arrive int, drift, jump float64, dupes bool) {
	for range min(leave, len(q.jobs)) {
		p := q.rng.Intn(len(q.jobs))
		q.jobs[p] = q.jobs[len(q.jobs)-1]
		q.jobs = q.jobs[:len(q.jobs)-1]
	}
	for range arrive {
		q.nextID++
		e := rankEntry{value: q.rng.NormFloat64(), submit: q.rng.Int63n(50), id: q.nextID}
		if q.rng.Intn(4) == 0 {
			e.value = float64(q.rng.Intn(3)) // ties on value
		}
		q.jobs = append(q.jobs, e)
	}
	for k := range q.jobs {
		switch {
		case q.rng.Float64() < jump:
			q.jobs[k].value = q.rng.NormFloat64() * 10
		case drift > 0:
			q.jobs[k].value += q.rng.NormFloat64() * drift
		}
	}
	if dupes && len(q.jobs) > 2 && q.rng.Intn(3) == 0 {
		// Two entries alike but for their slot: compareRank cannot
		// tell them apart, and only sortRank's own order is right.
		a, b := q.rng.Intn(len(q.jobs)), q.rng.Intn(len(q.jobs))
		q.jobs[b] = q.jobs[a]
	}
}

func (q *memoQueue) entries() []rankEntry {
	es := slices.Clone(q.jobs)
	for i := range es {
		es[i].i = int32(i)
	}
	return es
}

// TestRankMemo_SortsAsSortRank checks that sorting from the last order
// gives, at every point of a queue's life, exactly what sortRank gives on
// the slot order, and that the fallback gets the slot order: with values that drift a little (few swaps), jump (more
// swaps than the insertion budget), queues long enough for the radix sort,
// duplicate entries, and a memo that another queue left.
func TestRankMemo_SortsAsSortRank(t *testing.T) {
	for _, tc := range []struct {
		name          string
		start, churn  int
		drift, jump   float64
		dupes, foreig bool
	}{
		{name: "still", start: 100, churn: 2},
		{name: "drift", start: 300, churn: 5, drift: 0.01},
		{name: "jumps", start: 300, churn: 5, drift: 0.05, jump: 0.2},
		{name: "long", start: 2000, churn: 40, drift: 0.001, jump: 0.001},
		{name: "growing from empty", start: 0, churn: 3, drift: 0.02},
		{name: "duplicates", start: 80, churn: 3, drift: 0.01, dupes: true},
		{name: "jumps and duplicates", start: 200, churn: 3, drift: 0.01, jump: 0.3, dupes: true},
		{name: "foreign memo", start: 120, churn: 4, drift: 0.01, foreig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			q := &memoQueue{rng: rng}
			other := &memoQueue{rng: rand.New(rand.NewSource(99)), nextID: 1 << 40}
			q.step(0, tc.start, 0, 0, false)
			other.step(0, tc.start+7, 0, 0, false)
			var m rankMemo
			for point := range 60 {
				q.step(rng.Intn(tc.churn+1), rng.Intn(tc.churn+1)+point%2, tc.drift, tc.jump, tc.dupes)
				if tc.foreig && point%3 == 0 {
					other.step(1, 1, 0.01, 0, false)
					m.sortFrom(other.entries(), nil)
				}
				got, want := q.entries(), q.entries()
				sortRank(want, nil)
				m.sortOr(got, make([]rankEntry, len(got)), func() {
					for i, e := range got {
						if e.i != int32(i) {
							t.Fatalf("point %d: the fallback got slot %d at %d", point, e.i, i)
						}
					}
					sortRank(got, nil)
				})
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(rankEntry{})); diff != "" {
					t.Fatalf("point %d, %d jobs (-sortRank +sortFrom)\n%s", point, len(got), diff)
				}
			}
		})
	}
}

// TestRankMemo_Busy checks that a memo another ranking holds is left alone:
// the entries are sorted without it and it keeps the order it had.
func TestRankMemo_Busy(t *testing.T) {
	q := &memoQueue{rng: rand.New(rand.NewSource(3))}
	q.step(0, 50, 0, 0, false)
	var m rankMemo
	m.sortFrom(q.entries(), nil)
	id, pos := slices.Clone(m.id), slices.Clone(m.pos)
	q.step(5, 9, 0.1, 0, false)
	got, want := q.entries(), q.entries()
	sortRank(want, nil)
	m.mu.Lock()
	m.sortFrom(got, nil)
	m.mu.Unlock()
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(rankEntry{})); diff != "" {
		t.Errorf("(-sortRank +sortFrom)\n%s", diff)
	}
	if !slices.Equal(id, m.id) || !slices.Equal(pos, m.pos) {
		t.Errorf("a busy memo changed: ids %v → %v", id, m.id)
	}
}

// TestInsertionWithin checks the budgeted insertion sort: it sorts when
// the moves fit the budget and gives up, reporting so, when they do not,
// and tells whether two entries compare equal.
func TestInsertionWithin(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		budget int
		want   bool
	}{
		{[]float64{5, 4, 3, 2, 1}, 0, true},
		{[]float64{5, 3, 4, 2, 1}, 1, true},
		{[]float64{1, 2, 3, 4, 5}, 9, false},
		{[]float64{1, 2, 3, 4, 5}, 10, true},
		{nil, 0, true},
		// Ids 0, 1, 2, 0: the last entry equals the first.
		{[]float64{5, 4, 3, 5}, 10, true},
		{[]float64{3, 4, 5, 3}, 10, true},
	} {
		t.Run(fmt.Sprint(tc.values, tc.budget), func(t *testing.T) {
			es := make([]rankEntry, len(tc.values))
			for i, v := range tc.values {
				es[i] = rankEntry{value: v, id: int64(i % 3), i: int32(i)}
			}
			ok, strict := insertionWithin(es, tc.budget)
			if ok != tc.want {
				t.Fatalf("insertionWithin = %v, want %v", ok, tc.want)
			}
			if ok && !slices.IsSortedFunc(es, compareRank) {
				t.Errorf("reported sorted, got %v", es)
			}
			want := true
			for k := 1; k < len(es); k++ {
				want = want && compareRank(es[k-1], es[k]) < 0
			}
			if ok && strict != want {
				t.Errorf("strict = %v, want %v for %v", strict, want, es)
			}
		})
	}
}

// TestSegMemo_SortsAsSortRank checks that sorting segments from the last
// order gives, at every point of a queue's life, exactly what sortRank
// gives on each segment as given: jobs grouped into segments by a key (an
// account) that some jobs change between points, segments listing their
// jobs in slot order, with drift, jumps, duplicates, the radix sort's
// lengths and a memo another queue left.
func TestSegMemo_SortsAsSortRank(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		start, churn, segs   int
		drift, jump, regroup float64
		dupes, foreign       bool
	}{
		{name: "one segment", start: 600, churn: 5, segs: 1, drift: 0.01},
		{name: "still", start: 100, churn: 2, segs: 4},
		{name: "drift", start: 300, churn: 5, segs: 3, drift: 0.01},
		{name: "jumps", start: 300, churn: 5, segs: 5, drift: 0.05, jump: 0.2},
		{name: "regrouped", start: 300, churn: 5, segs: 4, drift: 0.01, regroup: 0.05},
		{name: "long", start: 2000, churn: 40, segs: 2, drift: 0.001, jump: 0.001},
		{name: "many small", start: 400, churn: 10, segs: 150, drift: 0.02},
		{name: "growing from empty", start: 0, churn: 3, segs: 2, drift: 0.02},
		{name: "duplicates", start: 80, churn: 3, segs: 2, drift: 0.01, dupes: true},
		{name: "foreign memo", start: 120, churn: 4, segs: 3, drift: 0.01, foreign: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			q := &memoQueue{rng: rng}
			other := &memoQueue{rng: rand.New(rand.NewSource(99)), nextID: 1 << 40}
			segOf := map[int64]int{}
			// segmented lays q's entries out by segment, each in slot
			// order, as computeVTC does, with the segments' bounds.
			segmented := func(q *memoQueue) ([]rankEntry, []int32) {
				es := q.entries()
				bounds := make([]int32, tc.segs+1)
				for _, e := range es {
					if _, ok := segOf[e.id]; !ok || rng.Float64() < tc.regroup {
						segOf[e.id] = rng.Intn(tc.segs)
					}
					bounds[segOf[e.id]+1]++
				}
				for a := range tc.segs {
					bounds[a+1] += bounds[a]
				}
				out := make([]rankEntry, len(es))
				fill := slices.Clone(bounds[:tc.segs])
				for _, e := range es {
					a := segOf[e.id]
					out[fill[a]] = e
					fill[a]++
				}
				return out, bounds
			}
			q.step(0, tc.start, 0, 0, false)
			other.step(0, tc.start+7, 0, 0, false)
			var m segMemo
			fromMemo := 0
			for point := range 60 {
				q.step(rng.Intn(tc.churn+1), rng.Intn(tc.churn+1)+point%2, tc.drift, tc.jump, tc.dupes)
				if tc.foreign && point%3 == 0 {
					other.step(1, 1, 0.01, 0, false)
					es, bounds := segmented(other)
					m.sortSegments(es, bounds, len(other.jobs), nil)
				}
				got, bounds := segmented(q)
				want := slices.Clone(got)
				for a := range tc.segs {
					sortRank(want[bounds[a]:bounds[a+1]], nil)
				}
				if len(m.pos) > 0 && len(got) >= memoMin {
					fromMemo++
				}
				var scratch []rankEntry
				if point%2 == 0 {
					scratch = make([]rankEntry, len(got))
				}
				m.sortSegments(got, bounds, len(q.jobs), scratch)
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(rankEntry{})); diff != "" {
					t.Fatalf("point %d, %d jobs (-sortRank +sortSegments)\n%s", point, len(got), diff)
				}
			}
			if tc.start > 0 && fromMemo == 0 {
				t.Fatal("no point was sorted from the memo")
			}
		})
	}
}

// TestMergeStrict checks the merge of kept and added entries against a
// pass over its result: dst is kept and added in compareRank's order, and
// strict says whether no two neighbours compare equal, for few added
// entries (placed by binary search) and many (merged in a row), with
// equal entries within kept, within added and across them.
func TestMergeStrict(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kept, added   int
		values        int // distinct values drawn: few make ties on value
		dupKept, dupX bool
		dupAdded      bool
	}{
		{name: "few-added", kept: 300, added: 3, values: 1000},
		{name: "few-added/dup-across", kept: 300, added: 3, values: 1000, dupX: true},
		{name: "few-added/dup-kept", kept: 300, added: 3, values: 1000, dupKept: true},
		{name: "few-added/value-ties", kept: 300, added: 4, values: 5},
		{name: "few-added/dup-added", kept: 300, added: 4, values: 1000, dupAdded: true},
		{name: "many-added/dup-added", kept: 40, added: 30, values: 100, dupAdded: true},
		{name: "many-added", kept: 40, added: 30, values: 100},
		{name: "many-added/dup-across", kept: 40, added: 30, values: 100, dupX: true},
		{name: "many-added/dup-kept", kept: 40, added: 30, values: 100, dupKept: true},
		{name: "none-added", kept: 50, added: 0, values: 100},
		{name: "none-kept", kept: 0, added: 5, values: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			for round := range 200 {
				entry := func(id int) rankEntry {
					return rankEntry{value: float64(rng.Intn(tc.values)), submit: int64(rng.Intn(3)), id: int64(id)}
				}
				kept := make([]rankEntry, tc.kept)
				for k := range kept {
					kept[k] = entry(k)
				}
				added := make([]rankEntry, tc.added)
				for k := range added {
					added[k] = entry(tc.kept + k)
				}
				if tc.dupKept && len(kept) > 1 && round%2 == 0 {
					kept[rng.Intn(len(kept))] = kept[rng.Intn(len(kept))]
				}
				if tc.dupAdded && len(added) > 1 && round%2 == 0 {
					added[0] = added[1+rng.Intn(len(added)-1)]
				}
				if tc.dupX && len(kept) > 0 && len(added) > 0 && round%2 == 0 {
					added[rng.Intn(len(added))] = kept[rng.Intn(len(kept))]
				}
				slices.SortFunc(kept, compareRank)
				keptStrict := true
				for k := 1; k < len(kept); k++ {
					keptStrict = keptStrict && compareRank(kept[k-1], kept[k]) < 0
				}
				want := slices.SortedFunc(slices.Values(slices.Concat(kept, added)), compareRank)
				wantStrict := true
				for k := 1; k < len(want); k++ {
					wantStrict = wantStrict && compareRank(want[k-1], want[k]) < 0
				}
				dst := make([]rankEntry, len(want))
				got := mergeStrict(dst, kept, added, nil, keptStrict)
				if got != wantStrict {
					t.Fatalf("round %d: strict %v, want %v", round, got, wantStrict)
				}
				for k := range dst {
					if compareRank(dst[k], want[k]) != 0 {
						t.Fatalf("round %d: place %d: %+v, want %+v", round, k, dst[k], want[k])
					}
				}
			}
		})
	}
}

// TestRankMemo_SortsHintedAsSortRank checks that sorting from a hint
// gives, at every point of a queue's life, exactly what sortRank gives on
// the slot order, whatever the hint: the sorted order (what vtc's tags
// give), that order with some jobs moved later (fair-qssf's guards lift
// them forward from it), with many moved (past the quarter that is sorted
// apart), reversed, with entries alike but for their slot, and a hint of
// the wrong length. Every other point the memo ranks without a hint, so
// that the two paths take turns at keeping it.
func TestRankMemo_SortsHintedAsSortRank(t *testing.T) {
	var swapAlike func([]int32) // set per point: swaps neighbours alike in a hint
	for _, tc := range []struct {
		name  string
		start int
		moved float64 // share of the hint's jobs moved later
		dupes bool
		hint  func(sorted []int32, rng *rand.Rand) []int32
	}{
		{name: "sorted", start: 300},
		{name: "some lifted", start: 300, moved: 0.05},
		{name: "many lifted", start: 300, moved: 0.4},
		{name: "long, past the radix sort", start: 2000, moved: 0.01},
		{name: "duplicates", start: 100, moved: 0.05, dupes: true},
		{name: "duplicates swapped", start: 100, dupes: true, hint: func(s []int32, _ *rand.Rand) []int32 {
			// Entries alike but for their slot, in the other order than
			// sortRank's: only sortRank's own order is right.
			swapAlike(s)
			return s
		}},
		{name: "short", start: 20, moved: 0.1},
		{name: "reversed", start: 200, hint: func(s []int32, _ *rand.Rand) []int32 { slices.Reverse(s); return s }},
		{name: "wrong length", start: 100, hint: func(s []int32, _ *rand.Rand) []int32 { return s[1:] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(len(tc.name))))
			q := &memoQueue{rng: rng}
			q.step(0, tc.start, 0, 0, false)
			var m rankMemo
			hinted, swapped := 0, 0
			for point := range 80 {
				q.step(rng.Intn(4), rng.Intn(4)+point%2, 0.01, 0.01, tc.dupes)
				got, want := q.entries(), q.entries()
				sortRank(want, nil)
				if point%2 == 1 {
					m.sortFrom(got, nil)
				} else {
					hint := make([]int32, len(want))
					for r, e := range want {
						hint[r] = e.i
					}
					for k := range hint {
						if rng.Float64() < tc.moved {
							to := k + rng.Intn(len(hint)-k)
							x := hint[k]
							copy(hint[k:to], hint[k+1:to+1])
							hint[to] = x
						}
					}
					if tc.hint != nil {
						swapAlike = func(h []int32) {
							for k := 1; k < len(h); k++ {
								if compareRank(got[h[k-1]], got[h[k]]) == 0 {
									h[k-1], h[k] = h[k], h[k-1]
									swapped++
								}
							}
						}
						hint = tc.hint(hint, rng)
					}
					m.sortHinted(got, make([]rankEntry, len(got)), hint)
					hinted++
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(rankEntry{})); diff != "" {
					t.Fatalf("point %d, %d jobs (-sortRank +sortHinted)\n%s", point, len(got), diff)
				}
				// The memo holds the order it gave, as sortFrom leaves it.
				for r, e := range got {
					if m.id[e.i] != e.id || m.pos[e.i] != int32(r) {
						t.Fatalf("point %d: the memo has slot %d at %d, the ranking at %d", point, e.i, m.pos[e.i], r)
					}
				}
			}
			if hinted < 40 || tc.name == "duplicates swapped" && swapped < 10 {
				t.Fatalf("%d points sorted from a hint, %d pairs alike swapped in it", hinted, swapped)
			}
		})
	}
}
