package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
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
			var forecasts []*schedule.Forecast
			cfg := Config{Cluster: tt.cluster, Policy: smPolicy(t, "fifo", nil), Backfill: tt.backfill,
				OnCycle: func(o *policy.Observation, s *policy.Snapshot, ranking []policy.Score) {
					if !tt.allCycles && len(forecasts) > 0 {
						return
					}
					snap := *s
					snap.Predicted = s.TrueRun
					f, err := schedule.NewForecast(&snap, ranking, schedule.ForecastParams{Machine: tt.cluster.Machine(),
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

// TestMeasureForecast checks the measurement leaves the simulation as Run
// makes it, makes one submit-time forecast per job and the hourly ones the
// waits allow, and that forecasts from an oracle's run times on a queue
// where nothing arrives later are exact.
func TestMeasureForecast(t *testing.T) {
	t.Run("synthetic workload", func(t *testing.T) {
		jobs, cluster := smSynth(t)
		want, err := Run(copyJobs(jobs), smConfig(t, cluster, policy.Default, "fairway"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := MeasureForecast(copyJobs(jobs), smConfig(t, cluster, policy.Default, "fairway"), ForecastParams{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rep.Result); diff != "" {
			t.Fatalf("measuring changed the simulation (-Run +MeasureForecast):\n%s", diff)
		}
		maxHourly, waited := 0, 0
		for _, j := range want.Jobs {
			maxHourly += int(j.Start.Sub(j.Submit) / time.Hour)
			if j.Start.After(j.Submit) {
				waited++
			}
		}
		byMoment := map[string]ForecastAccuracy{}
		for _, m := range rep.Moments {
			byMoment[m.Moment] = m
		}
		if got := byMoment[MomentSubmit].Forecasts; got != len(want.Jobs) {
			t.Errorf("%d submit-time forecasts, want one per job: %d", got, len(want.Jobs))
		}
		if got := byMoment[MomentSubmitWaited].Forecasts; got != waited {
			t.Errorf("%d submit-time forecasts of jobs that waited, want %d", got, waited)
		}
		if got := byMoment[MomentHourly].Forecasts; got == 0 || got > maxHourly {
			t.Errorf("%d hourly forecasts, want some and at most %d (whole hours waited)", got, maxHourly)
		}
		for _, m := range rep.Moments {
			t.Logf("%+v", m)
		}
	})
	t.Run("oracle, nothing arrives later", func(t *testing.T) {
		cluster := Cluster{Nodes: 1, PerNode: 64, Unit: CPUs}
		cfg := Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil)}
		jobs := fcQueue(3, 200, 40)
		runs := map[int64]time.Duration{}
		for _, j := range jobs {
			runs[j.ID] = j.RunTime()
		}
		cfg.Predictor = trueRuns(runs)
		rep, err := MeasureForecast(jobs, cfg, ForecastParams{Resolution: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rep.Moments {
			if m.Forecasts == 0 || m.Predicted.MeanAbs != 0 || m.Predicted.Within != 1 {
				t.Errorf("%s: %+v, want exact forecasts", m.Moment, m)
			}
			if m.Moment == MomentHourly && m.Limits.MedianAbs <= 0 {
				t.Errorf("%s: time-limit forecasts exact (%+v): the queue tests nothing", m.Moment, m.Limits)
			}
		}
	})
}

// TestMeasureForecast_Oracle checks the oracle forecasts: on a queue where
// nothing arrives later and no job has a prediction (every forecast plays
// time limits), the forecast with every job's true run time is exact, the
// one with only the running jobs' true run times lies between it and the
// predicted one, and without Oracle none is reported.
func TestMeasureForecast_Oracle(t *testing.T) {
	cluster := Cluster{Nodes: 1, PerNode: 64, Unit: CPUs}
	cfg := Config{Cluster: cluster, Policy: smPolicy(t, "fifo", nil)}
	rep, err := MeasureForecast(fcQueue(5, 200, 40), cfg, ForecastParams{Resolution: time.Nanosecond, Oracle: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Moments {
		if m.TrueRunning == nil || m.TrueRuns == nil {
			t.Fatalf("%s: oracle forecasts missing: %+v", m.Moment, m)
		}
		if m.Forecasts == 0 || m.TrueRuns.MeanAbs != 0 || m.TrueRuns.Within != 1 {
			t.Errorf("%s: true run times of all jobs %+v, want exact forecasts", m.Moment, *m.TrueRuns)
		}
		if m.Moment == MomentHourly && !(m.Predicted.MeanAbs > m.TrueRunning.MeanAbs && m.TrueRunning.MeanAbs > 0) {
			t.Errorf("%s: mean abs error predicted %v, true running %v: want predicted > true running > 0",
				m.Moment, m.Predicted.MeanAbs, m.TrueRunning.MeanAbs)
		}
	}
	rep, err = MeasureForecast(fcQueue(5, 200, 40), cfg, ForecastParams{Resolution: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Moments {
		if m.TrueRunning != nil || m.TrueRuns != nil {
			t.Errorf("%s: oracle forecasts reported without Oracle", m.Moment)
		}
	}
}

// trueRuns predicts every job's run time from a table of the true ones.
type trueRuns map[int64]time.Duration

func (r trueRuns) Name() string        { return "true-runs" }
func (r trueRuns) Observe(*policy.Job) {}
func (r trueRuns) Predict(j *policy.Job) policy.Prediction {
	return policy.Prediction{Run: r[j.ID], Source: "table"}
}

// effRuns is trueRuns that also gives effective run times from eff.
type effRuns struct {
	trueRuns
	eff map[int64]time.Duration
}

func (r effRuns) Effective(j *policy.Job, _ time.Duration) time.Duration { return r.eff[j.ID] }

// TestMeasureForecast_Effective: between cycles the forecast ranks the
// queue as the engine would, effective run times included, for a learned
// policy that reads them. One CPU is busy for 3 hours; bob's hour-long
// job and alice's, alike but for her effective run time of 10 minutes,
// arrive together while nothing fits, so their forecasts rank without a
// cycle, and alice's runs first when the CPU frees. With the true run
// times as predictions every forecast is exact.
func TestMeasureForecast_Effective(t *testing.T) {
	jobs := []policy.Job{smJob(1, "carol", 0, 1, 3*3600, 4*3600), smJob(2, "bob", 10, 1, 3600, 7200), smJob(3, "alice", 10, 1, 3600, 7200)}
	runs := trueRuns{}
	for _, j := range jobs {
		runs[j.ID] = j.RunTime()
	}
	pol, err := policy.NewLearned(policy.LearnedParams{Run: 1, Effective: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Cluster: Cluster{Nodes: 1, PerNode: 1, Unit: CPUs}, Policy: pol,
		Predictor: effRuns{runs, map[int64]time.Duration{3: 10 * time.Minute}}}
	rep, err := MeasureForecast(jobs, cfg, ForecastParams{Resolution: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Result.Jobs {
		if want := map[int64]float64{1: 0, 2: 4 * 3600, 3: 3 * 3600}[j.ID]; j.Start.Sub(smT0).Seconds() != want {
			t.Fatalf("job %d started at %v s, want %v s (alice's first: her effective run time)", j.ID, j.Start.Sub(smT0).Seconds(), want)
		}
	}
	for _, m := range rep.Moments {
		if m.Forecasts == 0 || m.Predicted.MeanAbs != 0 {
			t.Errorf("%s: %+v, want exact forecasts", m.Moment, m)
		}
	}
}
