package sim

import "math/bits"

// needs counts the pending jobs by the units they need and keeps the least
// need among them, the number that decides whether any pending job could
// start. A bit set of the needs present finds the next least need when the
// last job of the least one leaves, in a scan of words rather than of every
// need up to the cluster's capacity (100,000 on a big SWF machine).
type needs struct {
	count []int32
	bits  []uint64
	// min is the least need pending, len(count) when none is.
	min int
}

func newNeeds(capacity int) needs {
	return needs{count: make([]int32, capacity+1), bits: make([]uint64, (capacity+64)/64), min: capacity + 1}
}

func (n *needs) add(need int) {
	if n.count[need] == 0 {
		n.bits[need>>6] |= 1 << (need & 63)
	}
	n.count[need]++
	n.min = min(n.min, need)
}

func (n *needs) remove(need int) {
	n.count[need]--
	if n.count[need] > 0 {
		return
	}
	n.bits[need>>6] &^= 1 << (need & 63)
	if need != n.min {
		return
	}
	n.min = len(n.count)
	w := need >> 6
	if b := n.bits[w] &^ (1<<(need&63+1) - 1); b != 0 {
		n.min = w<<6 + bits.TrailingZeros64(b)
		return
	}
	for w++; w < len(n.bits); w++ {
		if n.bits[w] != 0 {
			n.min = w<<6 + bits.TrailingZeros64(n.bits[w])
			return
		}
	}
}
