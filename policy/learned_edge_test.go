package policy

import (
	"math"
	"testing"
	"time"
)

// TestLearned_EdgeCasesExplainTheKey checks, for snapshots at the edges of
// what serve reads (no prediction, a prediction of 0, no time limit, no
// usage, a single association, CPU-only jobs of 0 CPUs, waits of years,
// and exponents at Validate's bounds), that every point Validate accepts
// gives keys that are finite and positive, whose explain terms add up to
// ln key, and that rank by their log keys: a key that overflowed or
// underflowed would tie jobs whose log keys differ. A point Validate
// refuses is not ranked.
func TestLearned_EdgeCasesExplainTheKey(t *testing.T) {
	now := rkAt(1e6)
	day := 24 * time.Hour
	tests := []struct {
		name   string
		p      LearnedParams
		jobs   []Job
		pred   map[int64]time.Duration
		shares *Shares
	}{
		{"prediction of 0 and none, no limit, 0 CPUs", LearnedParams{Run: 1, Limit: 1, Size: 1, Usage: 2, Counter: 1, Age: 1},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: now.Add(-time.Hour)},
				{ID: 2, User: "a", Account: "x", Submit: now.Add(-time.Minute), TimeLimit: time.Hour, CPUs: 4},
			}, map[int64]time.Duration{1: 0}, nil},
		{"waits of decades", LearnedParams{Run: 1, Age: 16},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: now.Add(-250000 * day), TimeLimit: time.Minute},
				{ID: 2, User: "b", Account: "x", Submit: now.Add(-200000 * day), TimeLimit: time.Minute},
			}, nil, nil},
		{"large jobs, no shares, exponents at the bound", LearnedParams{Run: 16, Limit: 16, Size: 16, Usage: 16, Counter: 0, Age: 0.25},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: now.Add(-time.Hour), TimeLimit: 7 * day, CPUs: 1024},
				{ID: 2, User: "a", Account: "x", Submit: now.Add(-time.Minute), TimeLimit: 7 * day, CPUs: 2048},
			}, nil, &Shares{Accounts: map[string]float64{"x": 1}, Users: map[Assoc]float64{{Account: "x", User: "a"}: 0}}},
		{"large jobs, no shares, the tuner's box corner", LearnedParams{Run: 3, Limit: 3, Size: 2, Usage: 8, Counter: 4, Age: 4},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: now.Add(-time.Hour), TimeLimit: 365 * day, CPUs: 100000},
				{ID: 2, User: "b", Account: "y", Submit: time.Time{}, TimeLimit: 365 * day, CPUs: 200000},
			}, nil, &Shares{Accounts: map[string]float64{"x": 1, "y": 1}, Users: map[Assoc]float64{{Account: "x", User: "a"}: 0}}},
		{"large jobs, negative exponents and aging at the bound, no submit time", LearnedParams{Run: -16, Limit: -16, Size: -16, Age: 16},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: time.Time{}, TimeLimit: 30 * day, CPUs: 1024},
				{ID: 2, User: "a", Account: "x", Submit: time.Time{}, TimeLimit: 30 * day, CPUs: 2048},
			}, nil, nil},
		{"large jobs, negative exponents at the bound", LearnedParams{Run: -16, Limit: -16, Size: -16, Age: 0.25},
			[]Job{
				{ID: 1, User: "a", Account: "x", Submit: now.Add(-time.Hour), TimeLimit: 30 * day, CPUs: 1024},
				{ID: 2, User: "a", Account: "x", Submit: now.Add(-time.Minute), TimeLimit: 30 * day, CPUs: 2048},
			}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := NewLearned(tt.p)
			if err != nil {
				t.Logf("refused: %v", err)
				return
			}
			pred := tt.pred
			if pred == nil {
				pred = map[int64]time.Duration{}
			}
			for i := range tt.jobs {
				tt.jobs[i].ArrayTask = -1
			}
			s := &Snapshot{Now: now, Pending: tt.jobs, Predicted: pred, Shares: tt.shares, GPUs: 8}
			scores, err := pol.Rank(s)
			if err != nil {
				t.Fatal(err)
			}
			prev := math.Inf(-1)
			for _, sc := range scores {
				m := sc.Parts.Map()
				key := m["key"]
				if math.IsNaN(key) || math.IsInf(key, 0) || key <= 0 {
					t.Fatalf("job %d: key %v, want a finite positive number: %v", sc.JobID, key, m)
				}
				sum := 0.0
				for _, c := range pol.(Decomposer).Contributions(m) {
					if math.IsNaN(c.LogKey) || math.IsInf(c.LogKey, 0) {
						t.Fatalf("job %d: %s's term %v", sc.JobID, c.Feature, c.LogKey)
					}
					sum += c.LogKey
				}
				if !rkClose(sum, math.Log(key)) {
					t.Fatalf("job %d: terms add up to %v, ln key is %v", sc.JobID, sum, math.Log(key))
				}
				if sum < prev && !rkClose(sum, prev) {
					t.Fatalf("job %d ranks after a job of larger log key (%v > %v)", sc.JobID, prev, sum)
				}
				prev = sum
			}
		})
	}
}
