package policy

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
)

// SlurmRange is the interval of integers Fairway writes into one Slurm job
// field, and the least distance it keeps between two consecutive jobs.
//
// Slurm's multifactor priority is
//
//	priority = Σ PriorityWeightX · factorX + site_factor − nice
//
// with every factorX in [0, 1] (age, association, fair-share, job size,
// partition, QOS, TRES). When Fairway writes the site factor, two jobs
// whose site factors differ by Gap keep Fairway's order as long as the
// weights left non-zero sum to less than Gap, since their other terms can
// differ by at most that sum. INSTALL.md ("Slurm priority settings") gives the
// slurm.conf that sets them all to 0 (then Gap 1 suffices), and the
// variant that keeps a QOS tier above Fairway's order. When Fairway writes
// the admin priority instead, multifactor no longer manages the job and the
// written value is the priority itself, so Gap 1 suffices.
//
// Slurm breaks equal priorities by submit time, then job id — Fairway's own
// tie-break — but Assign never relies on it: every job gets its own value.
type SlurmRange struct {
	Min, Max int64
	Gap      int64
}

// SiteFactorRange is where site factors go: scontrol rejects a SiteFactor
// beyond ±(2^31 − 3), and Fairway stays positive so that, with the other
// weights at 0, no priority reaches 0 (a hold).
func SiteFactorRange() SlurmRange { return SlurmRange{Min: 1, Max: 1<<31 - 3, Gap: 1} }

// PriorityRange is where admin priorities go (slurmrestd's "priority",
// scontrol's Priority=): a 32-bit value where 0 is a hold and the top
// values are Slurm's NO_VAL and INFINITE markers.
func PriorityRange() SlurmRange { return SlurmRange{Min: 1, Max: 4_000_000_000, Gap: 1} }

// ErrRangeTooSmall is returned by Assign when a range cannot hold the
// ranking with the requested gap.
var ErrRangeTooSmall = errors.New("slurm range too small for the ranking")

// Assign maps a ranking, best first as Policy.Rank returns it, to the
// integers written to Slurm: values in [r.Min, r.Max], strictly decreasing
// along the ranking, consecutive values at least r.Gap apart, so Slurm's
// order is the ranking's order. The result is parallel to ranking.
//
// prev holds the values written in the previous cycle (nil at the first).
// Assign keeps as many of them as possible: the jobs that keep their
// previous value are a largest subset already in ranking order with room
// for the jobs between them, and only the others get new values, spread
// evenly in the gaps around them. So a cycle writes only the jobs that
// moved relative to the rest — a new job at the head of the queue costs
// one write, not one per pending job — and an unchanged ranking writes
// nothing. Assign is pure and deterministic.
func Assign(ranking []Score, prev map[int64]int64, r SlurmRange) ([]int64, error) {
	n := int64(len(ranking))
	const limit = 1 << 61
	if r.Gap < 1 || r.Max < r.Min || r.Min < -limit || r.Max > limit || r.Gap > limit {
		return nil, fmt.Errorf("slurm range [%d, %d] gap %d: want min <= max, gap >= 1, all within ±2^61", r.Min, r.Max, r.Gap)
	}
	if n == 0 {
		return nil, nil
	}
	if (r.Max-r.Min)/r.Gap < n-1 {
		return nil, fmt.Errorf("%d jobs with gap %d in [%d, %d]: %w", n, r.Gap, r.Min, r.Max, ErrRangeTooSmall)
	}

	// Job i (0 = best) may keep its previous value v when the jobs above
	// and below it fit with the gap: v + Gap·i <= Max and
	// v + Gap·i >= Min + Gap·(n−1). Two kept jobs i < j leave room for the
	// jobs between them iff v_i + Gap·i >= v_j + Gap·j. So the kept jobs
	// are a longest non-increasing subsequence of key = v + Gap·i among
	// the eligible ones.
	lo, hi := r.Min+r.Gap*(n-1), r.Max
	type cand struct {
		i   int
		key int64
	}
	var cands []cand
	for i, s := range ranking {
		v, ok := prev[s.JobID]
		if !ok || v < r.Min || v > r.Max {
			continue
		}
		if key := v + r.Gap*int64(i); key >= lo && key <= hi {
			cands = append(cands, cand{i, key})
		}
	}
	// Patience sorting for the longest non-increasing subsequence: tails[l]
	// is the candidate ending the best subsequence of length l+1 found so
	// far (the one with the largest key); prevIn links each to its
	// predecessor.
	tails := []int{}
	prevIn := make([]int, len(cands))
	for c := range cands {
		k := cands[c].key
		// First length whose tail key is smaller than k: k cannot follow it.
		l := sort.Search(len(tails), func(x int) bool { return cands[tails[x]].key < k })
		if l > 0 {
			prevIn[c] = tails[l-1]
		} else {
			prevIn[c] = -1
		}
		if l == len(tails) {
			tails = append(tails, c)
		} else {
			tails[l] = c
		}
	}
	kept := make([]int, len(tails)) // ranking indices, ascending
	x := -1
	if len(tails) > 0 {
		x = tails[len(tails)-1]
	}
	for c := len(tails) - 1; c >= 0; c-- {
		kept[c] = cands[x].i
		x = prevIn[x]
	}

	out := make([]int64, n)
	// Sentinels: a virtual job above the best at Max+Gap and one below the
	// worst at Min−Gap. Between two fixed values va > vb with m jobs
	// between them, job t of m gets va − (va−vb)·t/(m+1).
	ia, va := int64(-1), r.Max+r.Gap
	fillTo := func(ib, vb int64) {
		m := ib - ia - 1
		d := va - vb
		for t := int64(1); t <= m; t++ {
			hi, lo := bits.Mul64(uint64(d), uint64(t))
			q, _ := bits.Div64(hi, lo, uint64(m+1)) // d·t/(m+1) < d: no overflow
			out[ia+t] = va - int64(q)
		}
	}
	for _, i := range kept {
		v := prev[ranking[i].JobID]
		fillTo(int64(i), v)
		out[i] = v
		ia, va = int64(i), v
	}
	fillTo(n, r.Min-r.Gap)
	return out, nil
}
