package tune

import (
	"context"
	"runtime"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// BenchmarkTune30k tunes on the README's 30,000-job synthetic workload
// (`fairway trace synth --jobs 30000`, seed 1, 8 × 8 GPUs) as `fairway
// tune` does by default (objective fair, the fairway predictor at submit,
// the first 70% looked at, the last 30% of that validating), with a fixed
// budget of evaluations: the start, fairshare and the anchors on the three
// training windows and the validation window, two generations of CMA-ES
// (18 points), and 13 candidates (the anchors and 8 drawn) validated. One op is
// the whole run, windows included, GOMAXPROCS evaluations at a time. A
// full `fairway tune` runs as many generations as its --budget allows; its
// wall time is in docs/BENCHMARKS.md.
func BenchmarkTune30k(b *testing.B) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 30000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	cluster := sim.Cluster{Nodes: 8, PerNode: 8, Unit: sim.GPUs}
	setup := Setup{Objective: Fair, Seen: 0.7, Validate: 0.3, Predictions: sim.PredictAtSubmit,
		NewPredictor: func() (policy.Predictor, error) { return predict.New("fairway", predict.Params{}) }}
	for b.Loop() {
		w, err := NewWindows(jobs, cluster, setup)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
			Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: runtime.GOMAXPROCS(0), Population: 9, Generations: 2,
			Anchors: Anchors()})
		if err != nil {
			b.Fatal(err)
		}
		if res.Evaluations != 18 || len(res.Candidates) != 8+len(Anchors()) || res.Start.Validation == nil || res.Start.Train.Value <= 0 {
			b.Fatalf("%d evaluations, %d candidates, start %+v: trivial", res.Evaluations, len(res.Candidates), res.Start)
		}
	}
}
