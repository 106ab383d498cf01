package schedule

import (
	"github.com/fairway-hpc/fairway/policy"

	"testing"
	"time"
)

// TestNewForecast_ArrayTasksAndShards: a pending array record of 3 tasks
// of 2 GPUs on one node of 4 is 3 jobs, not one: two start now, the
// third when the first ends. On a machine counted in shards (4 a GPU) a
// 3-shard job waits for room like any job instead of asking for nothing.
func TestNewForecast_ArrayTasksAndShards(t *testing.T) {
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	pend := func(id int64, gpus, shards, tasks int) policy.Job {
		return policy.Job{ID: id, GPUs: gpus, Shards: shards, Tasks: tasks, TimeLimit: time.Hour, State: policy.StatePending, ArrayTask: -1, Submit: now}
	}
	for _, tc := range []struct {
		name        string
		m           Machine
		running     []policy.Job
		pending     policy.Job
		start, last time.Duration
		units       int
	}{
		{"array of 3 x 2 GPUs", Machine{Nodes: 1, PerNode: 4}, nil, pend(10, 2, 0, 3), 0, time.Hour, 2},
		{"one job", Machine{Nodes: 1, PerNode: 4}, nil, pend(11, 2, 0, 0), 0, 0, 2},
		{"3 shards, node full", Machine{Nodes: 1, PerNode: 16, ShardsPerGPU: 4},
			[]policy.Job{{ID: 1, GPUs: 4, TimeLimit: 2 * time.Hour, State: policy.StateRunning, Start: now, ArrayTask: -1}}, pend(12, 0, 3, 1), 2 * time.Hour, 2 * time.Hour, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &policy.Snapshot{Now: now, Running: tc.running, Pending: []policy.Job{tc.pending}}
			f, err := NewForecast(s, []policy.Score{{JobID: tc.pending.ID}}, ForecastParams{Machine: tc.m, Limits: true, Resolution: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			e, _ := f.Job(tc.pending.ID)
			if e.Start != now.Add(tc.start) || e.LastStart != now.Add(tc.last) || e.Units != tc.units || e.Tasks != max(tc.pending.Tasks, 1) {
				t.Errorf("got start +%s, last task +%s, %d units, %d tasks; want +%s, +%s, %d units", e.Start.Sub(now), e.LastStart.Sub(now), e.Units, e.Tasks,
					tc.start, tc.last, tc.units)
			}
		})
	}
}
