package predict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFwUser_ScanSkipsOnlyWhatFails checks that a scan which skips the
// newest items that ended too late (newerThan) aggregates and matches
// exactly what a scan of every item does, and that descents counts the
// ring's end-order descents: histories observed in end order, with a few
// late observations (a live system) and shuffled, through rings smaller
// and larger than the recent window, end filters before, inside and after
// the kept items' ends.
func TestFwUser_ScanSkipsOnlyWhatFails(t *testing.T) {
	for _, capacity := range []int{1, 2, 5, fwRecent, 64} {
		for _, late := range []float64{0, 0.05, 1} {
			t.Run(fmt.Sprintf("capacity=%d/late=%v", capacity, late), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(capacity), math.Float64bits(late)))
				u := &fwUser{}
				ms := newFwMatches()
				end, skipped := int64(1000), 0
				for n := range 400 {
					end += int64(r.IntN(30))
					e := end
					if r.Float64() < late {
						e -= int64(r.IntN(2000))
					}
					it := fwItem{submit: e - int64(r.IntN(300)), end: e, run: float32(r.IntN(100)), limit: float32(60 * r.IntN(3)),
						name: int32(r.IntN(3)), cpus: int32(1 + r.IntN(2)), failed: r.IntN(5) == 0}
					it.lrun = log1p32(it.run)
					if it.limit > 0 {
						it.ratio = it.run / it.limit
					}
					u.add(it, capacity, &ms)
					if want := bruteDescents(u); u.descents != want {
						t.Fatalf("after %d items: descents %d, the ring has %d", n+1, u.descents, want)
					}
					for range 3 {
						sub := e - int64(r.IntN(400)) + 100
						if r.IntN(2) == 0 { // at a kept item's end: the filter's edge
							sub = u.at(r.IntN(len(u.items))).end + int64(r.IntN(2))
						}
						endBefore := sub
						if r.IntN(4) == 0 {
							endBefore = math.MaxInt64
						}
						keys := fwKeysOf(u.id, int32(r.IntN(3)), int32(1+r.IntN(2)), 0, float32(60*r.IntN(3)))
						if k, _ := u.newerThan(endBefore); k > 0 {
							skipped++
						}
						gotS, gotM := u.scanStats(sub, endBefore), u.scanMatches(&keys, sub, endBefore)
						known := knownThen(u, sub, endBefore)
						wantS, wantM := known.scanStats(math.MaxInt64, math.MaxInt64), known.scanMatches(&keys, math.MaxInt64, math.MaxInt64)
						opt := cmp.AllowUnexported(fwStats{}, fwMatch{})
						if d := cmp.Diff(wantS, gotS, opt); d != "" {
							t.Fatalf("after %d items, sub %d, end before %d: stats (-every item filtered +scanned):\n%s", n+1, sub, endBefore, d)
						}
						if d := cmp.Diff(wantM, gotM, opt); d != "" {
							t.Fatalf("after %d items, sub %d, end before %d: matches (-every item filtered +scanned):\n%s", n+1, sub, endBefore, d)
						}
					}
				}
				if late < 1 && capacity > 1 && skipped == 0 {
					t.Errorf("no scan skipped an item: the test checks little")
				}
			})
		}
	}
}

// knownThen is a user whose ring holds, in the same order, the items of
// u's that pass the filter (sub, endBefore), found by testing each.
func knownThen(u *fwUser, sub, endBefore int64) *fwUser {
	k := &fwUser{id: u.id}
	for n := len(u.items) - 1; n >= 0; n-- { // oldest first
		if it := u.at(n); it.submit <= sub && it.end < endBefore {
			k.items = append(k.items, *it)
		}
	}
	return k // next 0: the last item is the newest
}

// bruteDescents counts the kept items that ended before the item just
// older than them.
func bruteDescents(u *fwUser) int {
	n := 0
	for k := 0; k+1 < len(u.items); k++ {
		if u.at(k).end < u.at(k+1).end {
			n++
		}
	}
	return n
}
