package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// fcQueue is n jobs all submitted at smT0 (so no job arrives after a
// forecast), with random sizes up to maxUnits, run times and limits of at
// least the run time.
func fcQueue(seed uint64, n, maxUnits int) []policy.Job {
	rng := rand.New(pcg(seed))
	jobs := make([]policy.Job, n)
	for i := range jobs {
		run := float64(60 + rng.IntN(4*3600))
		limit := run * (1 + 3*rng.Float64())
		if rng.IntN(5) == 0 {
			run = limit // runs into its limit
		}
		jobs[i] = smJob(int64(i+1), fmt.Sprintf("u%d", rng.IntN(7)), 0, 1+rng.IntN(maxUnits), run, limit)
	}
	return jobs
}

// TestForecast_ReplaysSimulator checks the forecast against the simulator
// it claims to replay: with the true run times as predictions, exact
// times and no job arriving later, the forecast made at a cycle must give
// every pending job the start the simulation gave it. On a one-node CPU
// machine it must hold at every cycle (running jobs' placement is then
// exact); on a GPU machine of several nodes at the first, when nothing
// runs yet (later, the forecast places running jobs without knowing the
// simulator's nodes).
func TestForecast_ReplaysSimulator(t *testing.T) {
	tests := []struct {
		name      string
		cluster   Cluster
		maxUnits  int
		allCycles bool
		backfill  Backfill
	}{
		{"cpus, every cycle, easy", Cluster{Nodes: 1, PerNode: 64, Unit: CPUs}, 40, true, EASY},
		{"cpus, every cycle, no backfill", Cluster{Nodes: 1, PerNode: 64, Unit: CPUs}, 40, true, NoBackfill},
		{"gpus, first cycle, easy", Cluster{Nodes: 6, PerNode: 8, Unit: GPUs}, 20, false, EASY},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := fcQueue(7, 300, tt.maxUnits)
			var forecasts []*policy.Forecast
			cfg := Config{Cluster: tt.cluster, Policy: smPolicy(t, "fifo", policy.PolicyParams{}), Backfill: tt.backfill,
				OnCycle: func(o *policy.Observation, s *policy.Snapshot, ranking []policy.Score) {
					if !tt.allCycles && len(forecasts) > 0 {
						return
					}
					snap := *s
					snap.Predicted = s.TrueRun
					f, err := policy.NewForecast(&snap, ranking, policy.ForecastParams{Machine: tt.cluster.Machine(),
						NoBackfill: tt.backfill == NoBackfill, Resolution: time.Nanosecond})
					if err != nil {
						t.Fatal(err)
					}
					forecasts = append(forecasts, f)
				}}
			res, err := Run(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			actual := map[int64]time.Time{}
			for _, j := range res.Jobs {
				actual[j.ID] = j.Start
			}
			if len(forecasts) == 0 || len(forecasts[0].Pending) != len(jobs) {
				t.Fatalf("first forecast should cover all %d jobs", len(jobs))
			}
			checked := 0
			for _, f := range forecasts {
				got, want := map[int64]time.Time{}, map[int64]time.Time{}
				for _, e := range f.Pending {
					got[e.JobID], want[e.JobID] = e.Start, actual[e.JobID]
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("forecast at %s (-simulated +forecast):\n%s", f.Now.Sub(smT0), diff)
				}
				checked += len(f.Pending)
			}
			t.Logf("%d forecasts, %d job starts checked", len(forecasts), checked)
		})
	}
}
