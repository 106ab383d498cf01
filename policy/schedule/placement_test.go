package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPool_Place(t *testing.T) {
	tests := []struct {
		name string
		free []int
		need int
		want []Use
	}{
		{"best fit: fewest free that fit", []int{3, 8, 2, 5}, 2, []Use{{2, 2}}},
		{"best fit skips too small nodes", []int{3, 8, 2, 5}, 4, []Use{{3, 4}}},
		{"ties go to the lowest index", []int{5, 8, 5}, 4, []Use{{0, 4}}},
		{"a whole node", []int{3, 8, 2, 8}, 8, []Use{{1, 8}}},
		{"multi-node jobs take whole free nodes", []int{8, 3, 8, 8}, 12, []Use{{0, 8}, {2, 8}}},
		{"not enough whole nodes", []int{8, 7, 7, 7}, 16, nil},
		{"no node fits", []int{3, 3}, 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPoolFree(8, tt.free)
			got := p.Place(tt.need, nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("place(%d) on %v (-want +got):\n%s", tt.need, tt.free, diff)
			}
			if fits := p.Fits(tt.need); fits != (tt.want != nil) {
				t.Errorf("fits(%d) = %v, want %v", tt.need, fits, tt.want != nil)
			}
		})
	}
}

// TestPoolOf checks a partition's view of a machine: it places only on its
// members, keeps the machine's node numbers, passes over the others'
// units in Take and Give, and takes whole nodes of its largest size for a
// job larger than one node.
func TestPoolOf(t *testing.T) {
	units := []int{8, 8, 4, 8}
	member := []bool{false, true, true, true}
	tests := []struct {
		name  string
		taken []Use // allocations of the machine taken first
		need  int
		want  []Use
	}{
		{"best fit among members", nil, 4, []Use{{2, 4}}},
		{"never a non-member", []Use{{2, 4}}, 4, []Use{{1, 4}}},
		{"whole nodes of the largest size", nil, 16, []Use{{1, 8}, {3, 8}}},
		{"a small node is never whole", []Use{{1, 1}}, 12, nil},
		{"others' units pass", []Use{{0, 8}}, 8, []Use{{1, 8}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPoolOf(8, units, member)
			p.Take(tt.taken)
			if got := p.Place(tt.need, nil); !cmp.Equal(tt.want, got) {
				t.Errorf("place(%d) = %v, want %v", tt.need, got, tt.want)
			}
			p.Give(tt.taken)
			if p.Total() != 20 {
				t.Errorf("after giving back: %d free, want 20", p.Total())
			}
		})
	}
}

// TestPool_PlaceAgainstScan plays random takes and gives on pools whose
// nodes hold more units than a word of the level index (up to 300, and one
// node of 1,000: SWF machines are one such node), checking after each that
// Place picks the node a scan of every node picks (fewest free units that
// fit, lowest index on ties) and that Fits agrees.
func TestPool_PlaceAgainstScan(t *testing.T) {
	for _, sz := range []struct{ nodes, perNode int }{{1, 1000}, {5, 300}, {70, 130}} {
		r := rand.New(rand.NewPCG(uint64(sz.nodes), uint64(sz.perNode)))
		p := NewPool(sz.nodes, sz.perNode)
		var held [][]Use
		for step := range 3000 {
			if len(held) > 0 && r.IntN(2) == 0 {
				i := r.IntN(len(held))
				p.Give(held[i])
				held = slices.Delete(held, i, i+1)
			} else if need := 1 + r.IntN(sz.perNode); p.Fits(need) {
				a := slices.Clone(p.Place(need, nil))
				p.Take(a)
				held = append(held, a)
			}
			need := 1 + r.IntN(sz.perNode)
			best := -1
			for i, f := range p.free {
				if f >= need && (best < 0 || f < p.free[best]) {
					best = i
				}
			}
			got := p.Place(need, nil)
			if best < 0 {
				if got != nil || p.Fits(need) {
					t.Fatalf("%d×%d step %d: place(%d) = %v, fits %v on %v; want none", sz.nodes, sz.perNode, step, need, got, p.Fits(need), p.free)
				}
				continue
			}
			if want := []Use{{int32(best), int32(need)}}; !cmp.Equal(want, got) || !p.Fits(need) {
				t.Fatalf("%d×%d step %d: place(%d) = %v, fits %v on %v; want %v", sz.nodes, sz.perNode, step, need, got, p.Fits(need), p.free, want)
			}
		}
	}
}
