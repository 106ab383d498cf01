package policy

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rkRanking(ids ...int64) []Score {
	out := make([]Score, len(ids))
	for i, id := range ids {
		out[i] = Score{JobID: id, Value: float64(-i)}
	}
	return out
}

// rkCheckAssign checks the invariants of an assignment: in range,
// decreasing along the ranking by at least the gap.
func rkCheckAssign(t *testing.T, vals []int64, r SlurmRange) {
	t.Helper()
	for i, v := range vals {
		if v < r.Min || v > r.Max {
			t.Fatalf("value %d at rank %d outside [%d, %d]", v, i, r.Min, r.Max)
		}
		if i > 0 && vals[i-1]-v < r.Gap {
			t.Fatalf("ranks %d and %d: %d then %d, want a gap of at least %d", i-1, i, vals[i-1], v, r.Gap)
		}
	}
}

func rkPrev(r []Score, vals []int64) map[int64]int64 {
	m := map[int64]int64{}
	for i, s := range r {
		m[s.JobID] = vals[i]
	}
	return m
}

func TestAssign_Cases(t *testing.T) {
	r := SlurmRange{Min: 1, Max: 1000, Gap: 10}
	first := rkRanking(1, 2, 3, 4)
	base, err := Assign(first, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	// Spread evenly between the sentinels 1010 and −9.
	if diff := cmp.Diff([]int64{807, 603, 399, 195}, base); diff != "" {
		t.Fatalf("first assignment (-want +got):\n%s", diff)
	}
	prev := rkPrev(first, base)

	tests := []struct {
		name    string
		ranking []Score
		changed int // jobs whose value differs from prev (new jobs included)
	}{
		{"unchanged ranking writes nothing", first, 0},
		{"a new job at the head costs one write", rkRanking(9, 1, 2, 3, 4), 1},
		{"a new job in the middle costs one write", rkRanking(1, 2, 9, 3, 4), 1},
		{"one job moving up costs one write", rkRanking(1, 4, 2, 3), 1},
		{"a finished job costs nothing", rkRanking(1, 3, 4), 0},
		{"reversal keeps one", rkRanking(4, 3, 2, 1), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Assign(tc.ranking, prev, r)
			if err != nil {
				t.Fatal(err)
			}
			rkCheckAssign(t, got, r)
			changed := 0
			for i, s := range tc.ranking {
				if v, ok := prev[s.JobID]; !ok || v != got[i] {
					changed++
				}
			}
			if changed != tc.changed {
				t.Errorf("%d jobs changed, want %d (values %v)", changed, tc.changed, got)
			}
		})
	}
}

func TestAssign_Errors(t *testing.T) {
	if _, err := Assign(rkRanking(1, 2, 3), nil, SlurmRange{Min: 1, Max: 20, Gap: 10}); !errors.Is(err, ErrRangeTooSmall) {
		t.Errorf("3 jobs, gap 10 in [1, 20]: err %v, want ErrRangeTooSmall", err)
	}
	if _, err := Assign(rkRanking(1), nil, SlurmRange{Min: 5, Max: 1, Gap: 1}); err == nil {
		t.Error("min > max accepted")
	}
	if got, err := Assign(rkRanking(1, 2, 3), nil, SlurmRange{Min: 1, Max: 21, Gap: 10}); err != nil || !cmp.Equal(got, []int64{21, 11, 1}) {
		t.Errorf("exact fit: %v, %v, want [21 11 1]", got, err)
	}
	if got, err := Assign(nil, nil, SiteFactorRange()); err != nil || got != nil {
		t.Errorf("empty ranking: %v, %v", got, err)
	}
}

// TestAssign_Random replays random cycles: jobs arrive, leave and move; the
// invariants hold every cycle and an unchanged ranking is rewritten to the
// same values.
func TestAssign_Random(t *testing.T) {
	for _, r := range []SlurmRange{SiteFactorRange(), PriorityRange(), {Min: 1, Max: 5000, Gap: 3}} {
		rng := rand.New(rand.NewSource(7))
		ids := []int64{}
		next := int64(1)
		var prev map[int64]int64
		for cycle := range 200 {
			// Some leave, some arrive, some move.
			for i := 0; i < len(ids); i++ {
				if rng.Intn(10) == 0 {
					ids = append(ids[:i], ids[i+1:]...)
				}
			}
			for range rng.Intn(20) {
				at := rng.Intn(len(ids) + 1)
				ids = append(ids[:at], append([]int64{next}, ids[at:]...)...)
				next++
			}
			for range rng.Intn(3) {
				if len(ids) > 1 {
					a, b := rng.Intn(len(ids)), rng.Intn(len(ids))
					ids[a], ids[b] = ids[b], ids[a]
				}
			}
			ranking := rkRanking(ids...)
			got, err := Assign(ranking, prev, r)
			if err != nil {
				t.Fatalf("cycle %d: %v", cycle, err)
			}
			rkCheckAssign(t, got, r)
			again, err := Assign(ranking, rkPrev(ranking, got), r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Fatalf("cycle %d: unchanged ranking rewritten (-first +second):\n%s", cycle, diff)
			}
			prev = rkPrev(ranking, got)
		}
	}
}
