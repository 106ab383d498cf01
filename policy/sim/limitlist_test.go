package sim

import (
	"math/rand"
	"slices"
	"testing"
)

// TestLimitList_AgainstSortedSlice inserts and removes limit ends at
// random, with ties on the time, and checks after each step that the list
// yields what one sorted slice holds.
func TestLimitList_AgainstSortedSlice(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	var l limitList
	var want []limitEntry
	k := int32(0)
	for step := range 20000 {
		if len(want) == 0 || r.Intn(5) < 3 {
			e := limitEntry{t: int64(r.Intn(3000)), k: k}
			k++
			l.insert(e)
			i, _ := slices.BinarySearchFunc(want, e, compareLimit)
			want = slices.Insert(want, i, e)
		} else {
			e := want[r.Intn(len(want))]
			l.remove(e)
			i, _ := slices.BinarySearchFunc(want, e, compareLimit)
			want = slices.Delete(want, i, i+1)
		}
		if step%97 == 0 || step > 19900 {
			got := slices.Collect(l.all)
			if !slices.Equal(got, want) || l.len() != len(want) {
				t.Fatalf("step %d: list %v (len %d), want %v", step, got, l.len(), want)
			}
		}
	}
	l.remove(limitEntry{t: -1, k: -1}) // absent: nothing happens
	if l.len() != len(want) {
		t.Fatalf("removing an absent entry changed the length to %d, want %d", l.len(), len(want))
	}
}

// TestLimitList_MovesOneBlock: with thousands of running jobs, a start or
// a stop moves at most a block's entries, not half of all of them.
func TestLimitList_MovesOneBlock(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var l limitList
	var held []limitEntry
	for k := range int32(8000) {
		e := limitEntry{t: int64(r.Intn(1 << 30)), k: k}
		l.insert(e)
		held = append(held, e)
	}
	l.moved = 0
	const ops = 4000
	for k := range int32(ops) {
		i := r.Intn(len(held))
		l.remove(held[i])
		held[i] = limitEntry{t: int64(r.Intn(1 << 30)), k: 8000 + k}
		l.insert(held[i])
	}
	if per := l.moved / (2 * ops); per > 2*limitBlock {
		t.Fatalf("%d entries moved per start or stop among 8000, above a block (%d)", per, 2*limitBlock)
	}
}
