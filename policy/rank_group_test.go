package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestScorer_RankByGroupAgainstRank ranks random queues whose Value is
// one per association (values shared by several associations, ±0, tied
// and unknown submit times) with rankByGroup (from its memo of the order
// and without) and with rank, and checks
// the same Scores: order, Value bits and parts rows; a NaN value gives
// rank's error.
func TestScorer_RankByGroupAgainstRank(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	levels := []float64{0.5, 0.25, math.Copysign(0, -1), 0, 1e-300, 0.5}
	for c := range 2000 {
		sc := scorer{names: []string{"f", "age", "x", "y"}, weights: []float64{[]float64{1, 2.5, -1}[c%3], 0, 0, 0}}
		users := 1 + r.Intn(12)
		n := r.Intn(700)
		s := &Snapshot{Now: rkAt(1e6)}
		for i := range n {
			j := Job{ID: int64(r.Intn(5 * (n + 1))), User: fmt.Sprint("u", r.Intn(users)), Account: fmt.Sprint("a", r.Intn(2)), GPUs: 1}
			if r.Intn(10) > 0 {
				j.Submit = rkAt(float64(r.Intn(50)))
			}
			j.ID = int64(i)*7 + int64(r.Intn(7)) // distinct
			s.Pending = append(s.Pending, j)
		}
		r.Shuffle(len(s.Pending), func(i, k int) { s.Pending[i], s.Pending[k] = s.Pending[k], s.Pending[i] })
		g := groupByAssoc(s.Pending)
		f := make([]float64, len(g.keys))
		for x := range f {
			f[x] = levels[r.Intn(len(levels))]
		}
		nan := c%50 == 49 && len(f) > 0
		if nan {
			f[r.Intn(len(f))] = math.NaN()
		}
		parts := make([]float64, 4*n)
		for i := range n {
			parts[4*i], parts[4*i+1], parts[4*i+2], parts[4*i+3] = f[g.of[i]], r.Float64(), r.Float64(), float64(i)
		}
		// A fresh scorer sorts by group; one that just ranked the queue
		// sorts from its memo.
		fresh := scorer{names: sc.names, weights: sc.weights}
		want, werr := sc.rank(s, slices.Clone(parts), nil)
		got, gerr := sc.rankByGroup(s, slices.Clone(parts), g)
		if c%2 == 0 {
			got, gerr = fresh.rankByGroup(s, slices.Clone(parts), g)
		}
		if nan {
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() || !errors.Is(gerr, ErrBadScore) {
				t.Fatalf("case %d: NaN: error %v, rank's %v", c, gerr, werr)
			}
			continue
		}
		if werr != nil || gerr != nil {
			t.Fatalf("case %d: errors %v, %v", c, gerr, werr)
		}
		if len(got) != len(want) {
			t.Fatalf("case %d: %d scores, want %d", c, len(got), len(want))
		}
		for i := range want {
			a, b := got[i], want[i]
			if a.JobID != b.JobID || math.Float64bits(a.Value) != math.Float64bits(b.Value) || !slices.Equal(a.Parts.values(), b.Parts.values()) {
				t.Fatalf("case %d, rank %d: %d %v %v, want %d %v %v", c, i, a.JobID, a.Value, a.Parts.values(), b.JobID, b.Value, b.Parts.values())
			}
		}
	}
}
