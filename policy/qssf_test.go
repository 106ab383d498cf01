package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQSSF_Rank(t *testing.T) {
	min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	tests := []struct {
		name string
		jobs []rkJob
		want []int64
		gpuS map[int64]float64
	}{{
		// GPU time, not duration: 8 GPUs × 10 min (4800) after 1 GPU ×
		// 60 min (3600).
		name: "predicted GPU time ascending",
		jobs: []rkJob{
			{id: 1, submit: 0, gpus: 8, run: min(10)},
			{id: 2, submit: 1, gpus: 1, run: min(60)},
			{id: 3, submit: 2, gpus: 2, run: min(1)},
		},
		want: []int64{3, 2, 1},
		gpuS: map[int64]float64{1: 4800, 2: 3600, 3: 120},
	}, {
		// No prediction: the time limit; neither: UnknownRun (7 days).
		name: "fallbacks",
		jobs: []rkJob{
			{id: 1, submit: 0},
			{id: 2, submit: 1, limit: 2 * time.Hour},
			{id: 3, submit: 2, run: 3 * time.Hour, limit: 4 * time.Hour},
		},
		want: []int64{2, 3, 1},
		gpuS: map[int64]float64{1: UnknownRun.Seconds(), 2: 7200, 3: 10800},
	}, {
		name: "ties to the older job",
		jobs: []rkJob{
			{id: 5, submit: 3, gpus: 2, run: min(30)},
			{id: 6, submit: 1, gpus: 1, run: min(60)},
			{id: 4, submit: 1, gpus: 4, run: min(15)},
		},
		want: []int64{4, 6, 5},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, by := rkRank(t, "qssf", nil, rkSnap(100, tc.jobs...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, g := range tc.gpuS {
				if by[id].Parts.Get("predicted_gpu_s") != g || by[id].Value != -g {
					t.Errorf("job %d: parts %v value %v, want GPU time %v", id, by[id].Parts, by[id].Value, g)
				}
			}
		})
	}
}

func TestSJFOracle_Rank(t *testing.T) {
	jobs := []rkJob{
		{id: 1, submit: 0, gpus: 8, trueRun: 10 * time.Minute, run: time.Minute},
		{id: 2, submit: 1, gpus: 1, trueRun: 20 * time.Minute, run: time.Minute},
		{id: 3, submit: 2, gpus: 1, trueRun: 10 * time.Minute},
	}
	got, _ := rkRank(t, "sjf-oracle", nil, rkSnap(5, jobs...))
	if diff := cmp.Diff([]int64{1, 3, 2}, got); diff != "" {
		t.Errorf("by true run time, predictions ignored (-want +got):\n%s", diff)
	}
	got, _ = rkRank(t, "sjf-oracle", SJFOracleParams{ByService: true}, rkSnap(5, jobs...))
	if diff := cmp.Diff([]int64{3, 2, 1}, got); diff != "" {
		t.Errorf("by true GPU time (-want +got):\n%s", diff)
	}

	s := rkSnap(5, rkJob{id: 1, trueRun: time.Minute}, rkJob{id: 2})
	p, err := NewSJFOracle(SJFOracleParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Rank(s); !errors.Is(err, ErrNoTrueRun) {
		t.Errorf("job without a true run time: err %v, want ErrNoTrueRun", err)
	}
}

// TestThemis_Rank: 8 GPUs, users alice, bob (pending) and carol (running):
// N = 3, a share is 8/3 GPUs. At minute 120:
//
//	job 1: alice, 4 GPUs, 60 min, waited 60: T_id = 60·(4·3/8) = 90, T_sh = 120, ρ = 1.333
//	job 2: bob, 1 GPU, 10 min, waited 20:    T_id = 10,           T_sh = 30,  ρ = 3
//	job 3: bob, 1 GPU, predicted 0, waited 5 s: T_id = 10 s (MinRun), T_sh = 5 s, ρ = 0.5
func TestThemis_Rank(t *testing.T) {
	s := rkSnap(120,
		rkJob{id: 1, user: "alice", submit: 60, gpus: 4, run: time.Hour},
		rkJob{id: 2, user: "bob", submit: 100, gpus: 1, run: 10 * time.Minute},
		rkJob{id: 3, user: "bob", submit: 120 - 5.0/60, gpus: 1},
	)
	s.Predicted[3] = 0
	s.Running = []Job{{ID: 9, User: "carol", GPUs: 4, Start: rkAt(0), State: StateRunning}}
	s.GPUs = 8
	got, by := rkRank(t, "themis", nil, s)
	if diff := cmp.Diff([]int64{2, 1, 3}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	for id, rho := range map[int64]float64{1: 120.0 / 90, 2: 3, 3: 0.5} {
		if !rkClose(by[id].Value, rho) {
			t.Errorf("job %d: ρ = %v, want %v (parts %v)", id, by[id].Value, rho, by[id].Parts)
		}
	}
	// Capacity unknown: no slowdown, so job 1's ρ is 120/60 = 2.
	s.GPUs = 0
	_, by = rkRank(t, "themis", nil, s)
	if !rkClose(by[1].Value, 2) {
		t.Errorf("job 1 without capacity: ρ = %v, want 2", by[1].Value)
	}
}
