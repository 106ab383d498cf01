package sim

import (
	"math/rand/v2"
	"testing"
)

// TestNeeds_MinAgainstScan adds and removes random needs up to a capacity
// of several words and checks the least need pending against a scan of
// the counts after each step.
func TestNeeds_MinAgainstScan(t *testing.T) {
	const capacity = 300
	r := rand.New(rand.NewPCG(1, 2))
	n := newNeeds(capacity)
	var pending []int
	for step := range 5000 {
		if len(pending) > 0 && r.IntN(2) == 0 {
			i := r.IntN(len(pending))
			n.remove(pending[i])
			pending[i] = pending[len(pending)-1]
			pending = pending[:len(pending)-1]
		} else {
			need := 1 + r.IntN(capacity)
			if r.IntN(4) == 0 {
				need = 63 + r.IntN(3) // word edges
			}
			n.add(need)
			pending = append(pending, need)
		}
		want := capacity + 1
		for _, p := range pending {
			want = min(want, p)
		}
		if n.min != want {
			t.Fatalf("step %d: least need %d, want %d (%d pending)", step, n.min, want, len(pending))
		}
	}
}
