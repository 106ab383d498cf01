package policy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHeuristics_Order checks each HPC heuristic's formula on jobs whose
// order it decides: r is the time limit, n GPUs when the job has GPUs,
// else CPUs, w the wait.
func TestHeuristics_Order(t *testing.T) {
	now := rkT0
	type spec struct {
		waited, limit time.Duration
		gpus, cpus    int
	}
	tests := []struct {
		policy string
		params any
		jobs   []spec
		want   []int64
	}{
		{"sjf-limit", nil, []spec{{0, time.Hour, 1, 0}, {0, time.Minute, 8, 0}, {0, 0, 1, 0}}, []int64{2, 1, 3}},
		// F1 with the origin an hour before now: job 1 (old, long, wide)
		// against job 2 (fresh, short, narrow).
		{"f1", F1Params{Origin: now.Add(-time.Hour)}, []spec{{time.Hour, 10 * time.Hour, 64, 0}, {0, 10 * time.Minute, 1, 0}}, []int64{1, 2}},
		// Same submit time: log10(r)·n alone, so the narrow job first.
		{"f1", nil, []spec{{time.Hour, time.Hour, 0, 64}, {time.Hour, time.Hour, 0, 2}}, []int64{2, 1}},
		// WFP3: (w/r)³·n. Job 1: (1)³·1 = 1; job 2: (0.5)³·16 = 2; job 3: 0.
		{"wfp3", nil, []spec{{time.Hour, time.Hour, 1, 0}, {time.Hour, 2 * time.Hour, 16, 0}, {0, time.Minute, 1, 0}}, []int64{2, 1, 3}},
		// UNICEP: w/(log2 n·r). Job 1: 1/(4·1); job 2: 0.5/(1·1) (n = 1
		// floored to log2 = 1); job 3: 1/(1·1) on 2 CPUs.
		{"unicep", nil, []spec{{time.Hour, time.Hour, 16, 0}, {30 * time.Minute, time.Hour, 1, 0}, {time.Hour, time.Hour, 0, 2}}, []int64{3, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			s := &Snapshot{Now: now}
			for i, j := range tt.jobs {
				s.Pending = append(s.Pending, Job{ID: int64(i + 1), User: "u", Account: "a", GPUs: j.gpus, CPUs: j.cpus,
					TimeLimit: j.limit, Submit: now.Add(-j.waited), State: StatePending})
			}
			p, err := New(tt.policy, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			scores, err := p.Rank(s)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, sc := range scores {
				got = append(got, sc.JobID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s\nscores %v", diff, scores)
			}
		})
	}
}

// TestF1_Formula checks F1's value against the paper's formula, and that
// an s or r of 0 reads as 0.1 (RLScheduler's guard).
func TestF1_Formula(t *testing.T) {
	now := rkT0
	s := &Snapshot{Now: now, Pending: []Job{
		{ID: 1, CPUs: 32, TimeLimit: 2 * time.Hour, Submit: now.Add(-time.Hour)},
		{ID: 2, CPUs: 4, TimeLimit: 30 * time.Minute, Submit: now.Add(-3 * time.Hour)},
	}}
	p, _ := New("f1", nil)
	scores, err := p.Rank(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]float64{
		1: math.Log10(7200)*32 + 870*math.Log10(7200), // origin: job 2's submit, 2 h before job 1
		2: math.Log10(1800)*4 + 870*math.Log10(0.1),
	}
	for _, sc := range scores {
		if got := sc.Parts.Get("f1"); math.Abs(got-want[sc.JobID]) > 1e-9 || sc.Value != -got {
			t.Errorf("job %d: f1 %v value %v, want f1 %v and value −f1", sc.JobID, got, sc.Value, want[sc.JobID])
		}
	}
}

// TestF1_EarliestSubmitHint checks that f1 ranks a messy snapshot the same
// when the caller names the earliest submit (Snapshot.EarliestSubmit, as
// the simulator keeps it) as when f1 finds it among the jobs itself.
func TestF1_EarliestSubmitHint(t *testing.T) {
	s := rkRandomSnapshot(5, 3000, 100)
	p, err := New("f1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Rank(s)
	if err != nil {
		t.Fatal(err)
	}
	var earliest time.Time
	for _, jobs := range [][]Job{s.Pending, s.Running} {
		for i := range jobs {
			if t := jobs[i].Submit; !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
				earliest = t
			}
		}
	}
	hinted := *s
	hinted.EarliestSubmit = earliest
	got, err := p.Rank(&hinted)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d scores with the hint, %d without", len(got), len(want))
	}
	for i := range want {
		if got[i].JobID != want[i].JobID || !sameBits(got[i].Value, want[i].Value) {
			t.Fatalf("rank %d: job %d (%v) with the hint, %d (%v) without", i, got[i].JobID, got[i].Value, want[i].JobID, want[i].Value)
		}
	}
}
