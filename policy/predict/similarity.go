package predict

import "slices"

// nameMatcher computes Python difflib's SequenceMatcher.ratio, the name
// similarity the Helios estimator uses (difflib.get_close_matches), so that
// the helios baseline picks the same "similar" job names as the artifact.
// Ratcliff and Obershelp, "Pattern Matching: The Gestalt Approach", Dr.
// Dobb's Journal, July 1988; ratio = 2·M / (len(a)+len(b)) where M is the
// total size of the matching blocks found by recursively taking the longest
// common block, earliest in a then earliest in b. Like difflib, b (the word
// searched for) drops "popular" runes from its index when it has at least
// 200 runes.
type nameMatcher struct {
	b   []rune
	b2j map[rune][]int
	// prev and cur are findLongest's scratch rows (difflib's j2len and
	// newj2len), indexed by j+1; touched lists the cur entries to clear.
	prev, cur   []int
	touchedPrev []int
	touchedCur  []int
}

func newNameMatcher(word string) *nameMatcher {
	b := []rune(word)
	m := &nameMatcher{b: b, b2j: map[rune][]int{}, prev: make([]int, len(b)+1), cur: make([]int, len(b)+1)}
	for j, r := range m.b {
		m.b2j[r] = append(m.b2j[r], j)
	}
	if n := len(m.b); n >= 200 {
		ntest := n/100 + 1
		for r, idx := range m.b2j {
			if len(idx) > ntest {
				delete(m.b2j, r)
			}
		}
	}
	return m
}

// ratio is SequenceMatcher(None, a, word).ratio().
func (m *nameMatcher) ratio(a []rune) float64 {
	la, lb := len(a), len(m.b)
	if la+lb == 0 {
		return 1
	}
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, la, 0, lb}}
	matched := 0
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		i, j, k := m.findLongest(a, s.alo, s.ahi, s.blo, s.bhi)
		if k == 0 {
			continue
		}
		matched += k
		if s.alo < i && s.blo < j {
			queue = append(queue, span{s.alo, i, s.blo, j})
		}
		if i+k < s.ahi && j+k < s.bhi {
			queue = append(queue, span{i + k, s.ahi, j + k, s.bhi})
		}
	}
	return 2 * float64(matched) / float64(la+lb)
}

// findLongest is difflib's find_longest_match without a junk function.
func (m *nameMatcher) findLongest(a []rune, alo, ahi, blo, bhi int) (besti, bestj, bestsize int) {
	besti, bestj = alo, blo
	short := len(m.b) < 200 // no popular runes dropped: scan b itself
	for i := alo; i < ahi; i++ {
		var idx []int
		if !short {
			idx = m.b2j[a[i]]
		}
		for p := blo; ; p++ {
			var j int
			if short {
				if p >= bhi {
					break
				}
				if m.b[p] != a[i] {
					continue
				}
				j = p
			} else {
				if p-blo >= len(idx) {
					break
				}
				j = idx[p-blo]
				if j < blo {
					continue
				}
				if j >= bhi {
					break
				}
			}
			k := m.prev[j] + 1 // prev[j] is j2len[j-1]
			m.cur[j+1] = k
			m.touchedCur = append(m.touchedCur, j+1)
			if k > bestsize {
				besti, bestj, bestsize = i-k+1, j-k+1, k
			}
		}
		for _, t := range m.touchedPrev {
			m.prev[t] = 0
		}
		m.prev, m.cur = m.cur, m.prev
		m.touchedPrev, m.touchedCur = m.touchedCur, m.touchedPrev[:0]
	}
	for _, t := range m.touchedPrev {
		m.prev[t] = 0
	}
	m.touchedPrev = m.touchedPrev[:0]
	// Extend over runes dropped from the index as popular (no-ops otherwise).
	for besti > alo && bestj > blo && a[besti-1] == m.b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && a[besti+bestsize] == m.b[bestj+bestsize] {
		bestsize++
	}
	return besti, bestj, bestsize
}

// quickRatio is an upper bound of ratio (difflib's quick_ratio): the runes
// shared as multisets, counted by merging the two names' runes in sorted
// order (a and b must be sorted).
func quickRatio(a, b []rune) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(n) / float64(len(a)+len(b))
}

// sortedRunes returns r's runes in ascending order, for quickRatio.
func sortedRunes(r []rune) []rune {
	s := slices.Clone(r)
	slices.Sort(s)
	return s
}

// closeMatch is one candidate of getCloseMatches.
type closeMatch struct {
	score float64
	name  string
}

// better orders matches as Python's heapq.nlargest on (score, name) tuples:
// higher score first, then the greater name.
func (c closeMatch) better(d closeMatch) bool {
	if c.score != d.score {
		return c.score > d.score
	}
	return c.name > d.name
}

// offer keeps the n best matches in top, best first.
func offer(top []closeMatch, n int, c closeMatch) []closeMatch {
	pos := len(top)
	for pos > 0 && c.better(top[pos-1]) {
		pos--
	}
	if pos >= n {
		return top
	}
	if len(top) < n {
		top = append(top, closeMatch{})
	}
	copy(top[pos+1:], top[pos:len(top)-1])
	top[pos] = c
	return top
}
