package schedule

import (
	"github.com/fairway-hpc/fairway/policy"
	"slices"

	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestNewForecast plays small queues by hand on one node of 4 GPUs.
func TestNewForecast(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	job := func(id int64, gpus int, limit time.Duration) policy.Job {
		return policy.Job{ID: id, User: "u", Account: "a", GPUs: gpus, TimeLimit: limit, Submit: t0.Add(-h), ArrayTask: -1}
	}
	running := func(id int64, gpus int, limit time.Duration, started time.Duration) policy.Job {
		j := job(id, gpus, limit)
		j.State, j.Start = policy.StateRunning, t0.Add(-started)
		return j
	}
	tests := []struct {
		name      string
		running   []policy.Job
		pending   []policy.Job // in ranking order
		predicted map[int64]time.Duration
		limits    bool
		want      map[int64]time.Duration // start after t0, by id; -1 never
	}{
		{
			name:      "running job ends at its prediction, the queue follows in order",
			running:   []policy.Job{running(1, 4, 10*h, h)},
			pending:   []policy.Job{job(2, 2, 4*h), job(3, 4, 4*h)},
			predicted: map[int64]time.Duration{1: 2 * h, 2: h, 3: h},
			want:      map[int64]time.Duration{2: h, 3: 2 * h},
		},
		{
			name:      "with time limits the same queue waits for the limits",
			running:   []policy.Job{running(1, 4, 10*h, h)},
			pending:   []policy.Job{job(2, 2, 4*h), job(3, 4, 4*h)},
			predicted: map[int64]time.Duration{1: 2 * h, 2: h, 3: h},
			limits:    true,
			want:      map[int64]time.Duration{2: 9 * h, 3: 13 * h},
		},
		{
			name:      "a running job past its prediction runs as long again, up to its limit",
			running:   []policy.Job{running(1, 4, 10*h, 3*h), running(4, 0, 0, 0)},
			pending:   []policy.Job{job(2, 4, 4*h)},
			predicted: map[int64]time.Duration{1: h},
			want:      map[int64]time.Duration{2: 3 * h},
		},
		{
			name:      "a job larger than the machine never starts, the others go on",
			running:   nil,
			pending:   []policy.Job{job(2, 5, h), job(3, 4, h)},
			predicted: map[int64]time.Duration{},
			want:      map[int64]time.Duration{2: -1, 3: 0},
		},
		{
			// Job 2 waits for 4 GPUs (reserved at 1 h, when job 1's limit
			// ends); job 3 ends by its limit before that and backfills;
			// job 4 would delay job 2 and waits for job 2 to end.
			name:      "EASY backfill by time limits",
			running:   []policy.Job{running(1, 3, 2*h, h)},
			pending:   []policy.Job{job(2, 4, h), job(3, 1, h/2), job(4, 1, 3*h)},
			predicted: map[int64]time.Duration{1: 2 * h, 3: h / 4},
			want:      map[int64]time.Duration{2: h, 3: 0, 4: 2 * h},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &policy.Snapshot{Now: t0, Running: tt.running, Pending: tt.pending, Predicted: tt.predicted}
			var ranking []policy.Score
			for _, j := range tt.pending {
				ranking = append(ranking, policy.Score{JobID: j.ID})
			}
			f, err := NewForecast(s, ranking, ForecastParams{Machine: Machine{Nodes: 1, PerNode: 4}, Limits: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]time.Duration{}
			for r, e := range f.Pending {
				if e.Rank != r+1 {
					t.Errorf("job %d rank %d, want %d", e.JobID, e.Rank, r+1)
				}
				got[e.JobID] = e.Start.Sub(t0)
				if e.Never {
					got[e.JobID] = -1
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForecast_Before lists what must happen before a job starts.
func TestForecast_Before(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	s := &policy.Snapshot{Now: t0,
		Running: []policy.Job{{ID: 1, GPUs: 3, TimeLimit: 2 * h, Start: t0.Add(-h), State: policy.StateRunning}},
		Pending: []policy.Job{{ID: 2, GPUs: 4, TimeLimit: h}, {ID: 3, GPUs: 1, TimeLimit: h / 2}, {ID: 4, GPUs: 1, TimeLimit: 3 * h}},
	}
	f, err := NewForecast(s, []policy.Score{{JobID: 2}, {JobID: 3}, {JobID: 4}}, ForecastParams{Machine: Machine{Nodes: 1, PerNode: 4}})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(es []Expected) (out []int64) {
		for _, e := range es {
			out = append(out, e.JobID)
		}
		return out
	}
	for _, tc := range []struct {
		id                    int64
		ends, ahead, backfill []int64
	}{
		// Job 4 (rank 3) starts when job 1 ends: 3 and 2, both ranked
		// ahead, start by then.
		{id: 4, ends: []int64{1}, ahead: []int64{3, 2}},
		// Job 2 (rank 1) waits for job 1; job 3 (rank 2) starts before it
		// by backfill: it is not ahead of job 2 and need not start first.
		{id: 2, ends: []int64{1}, backfill: []int64{3}},
		// Job 3 fits now: nothing happens before it.
		{id: 3},
	} {
		p, ok := f.Before(tc.id, 0, nil)
		if !ok {
			t.Fatalf("job %d not found", tc.id)
		}
		if diff := cmp.Diff([][]int64{tc.ends, tc.ahead, tc.backfill}, [][]int64{ids(p.Ends), ids(p.Ahead), ids(p.Backfill)}); diff != "" {
			t.Errorf("job %d: ends, ahead, backfill (-want +got):\n%s", tc.id, diff)
		}
		if got, want := []int{p.EndCount, p.AheadCount, p.BackfillCount}, []int{len(tc.ends), len(tc.ahead), len(tc.backfill)}; !slices.Equal(got, want) {
			t.Errorf("job %d: counts %v, want %v", tc.id, got, want)
		}
	}
	// A bound lists the earliest; a filter lists only what it accepts,
	// still the earliest of those; the counts count them all.
	p, _ := f.Before(4, 1, nil)
	if got := [][]int64{ids(p.Ends), ids(p.Ahead)}; !cmp.Equal(got, [][]int64{{1}, {3}}) || p.AheadCount != 2 {
		t.Errorf("Before(4, 1): ends, ahead %v, ahead count %d; want [[1] [3]], 2", got, p.AheadCount)
	}
	p, _ = f.Before(4, 1, func(e Expected) bool { return e.JobID != 3 })
	if got := [][]int64{ids(p.Ends), ids(p.Ahead)}; !cmp.Equal(got, [][]int64{{1}, {2}}) || p.AheadCount != 2 {
		t.Errorf("Before(4, 1, not 3): ends, ahead %v, ahead count %d; want [[1] [2]], 2", got, p.AheadCount)
	}
	if _, ok := f.Before(1, 0, nil); ok {
		t.Error("Before(running job) ok, want not pending")
	}
}

// TestForecast_ZeroPredictionIsAPrediction: a job predicted to run 0 s (a
// test cluster's history of jobs that end at once) ends when it starts; a
// job with no prediction is played for its time limit. Before, 0 s counted
// as missing, so every expected start on such a cluster was the time-limit
// bound.
func TestForecast_ZeroPredictionIsAPrediction(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	for _, tc := range []struct {
		name      string
		predicted map[int64]time.Duration
		want      time.Time // job 3's expected start, after job 2
	}{
		{"zero", map[int64]time.Duration{2: 0}, t0},
		{"minute", map[int64]time.Duration{2: time.Minute}, t0.Add(time.Minute)},
		{"none", nil, t0.Add(h)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &policy.Snapshot{Now: t0, Predicted: tc.predicted,
				Pending: []policy.Job{{ID: 2, GPUs: 4, TimeLimit: h}, {ID: 3, GPUs: 4, TimeLimit: h}},
			}
			f, err := NewForecast(s, []policy.Score{{JobID: 2}, {JobID: 3}}, ForecastParams{Machine: Machine{Nodes: 1, PerNode: 4}})
			if err != nil {
				t.Fatal(err)
			}
			e, ok := f.Job(3)
			if !ok || !e.Start.Equal(tc.want) {
				t.Errorf("job 3 expected at %v (found %v), want %v", e.Start, ok, tc.want)
			}
		})
	}
}
