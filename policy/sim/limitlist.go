package sim

import (
	"slices"
	"sort"
)

// limitBlock is half the most entries a block of a limitList holds: a
// full block splits in two.
const limitBlock = 256

// limitList holds the running jobs' limit ends in compareLimit order (a
// total order: the job index breaks ties) as a list of sorted blocks, so
// that a start or a stop moves at most one block's entries: one sorted
// slice of a big machine's thousands of running jobs was moved in half at
// every start and stop. Iterating the blocks in order gives the one
// sorted order.
type limitList struct {
	blocks [][]limitEntry // none empty; each block's entries before the next's
	moved  int            // entries moved by inserts and removes, which tests bound
}

// block is the block e belongs in: the first whose last entry is not
// before e, else the last.
func (l *limitList) block(e limitEntry) int {
	b := sort.Search(len(l.blocks), func(i int) bool {
		blk := l.blocks[i]
		return compareLimit(blk[len(blk)-1], e) >= 0
	})
	return min(b, len(l.blocks)-1)
}

func (l *limitList) insert(e limitEntry) {
	if len(l.blocks) == 0 {
		l.blocks = append(l.blocks, append(make([]limitEntry, 0, 2*limitBlock), e))
		return
	}
	b := l.block(e)
	blk := l.blocks[b]
	i, _ := slices.BinarySearchFunc(blk, e, compareLimit)
	l.moved += len(blk) - i
	blk = slices.Insert(blk, i, e)
	if len(blk) < 2*limitBlock {
		l.blocks[b] = blk
		return
	}
	hi := make([]limitEntry, limitBlock, 2*limitBlock)
	copy(hi, blk[limitBlock:])
	l.moved += limitBlock
	l.blocks[b] = blk[:limitBlock]
	l.blocks = slices.Insert(l.blocks, b+1, hi)
}

func (l *limitList) remove(e limitEntry) {
	if len(l.blocks) == 0 {
		return
	}
	b := l.block(e)
	blk := l.blocks[b]
	i, ok := slices.BinarySearchFunc(blk, e, compareLimit)
	if !ok {
		return
	}
	l.moved += len(blk) - i - 1
	blk = slices.Delete(blk, i, i+1)
	if len(blk) == 0 {
		l.blocks = slices.Delete(l.blocks, b, b+1)
		return
	}
	l.blocks[b] = blk
}

// all yields the entries in order.
func (l *limitList) all(yield func(limitEntry) bool) {
	for _, blk := range l.blocks {
		for _, e := range blk {
			if !yield(e) {
				return
			}
		}
	}
}

// len is the number of entries.
func (l *limitList) len() int {
	n := 0
	for _, blk := range l.blocks {
		n += len(blk)
	}
	return n
}
