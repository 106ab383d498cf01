package schedule

import (
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
