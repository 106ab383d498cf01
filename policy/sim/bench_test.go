package sim

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// BenchmarkSimulate measures whole simulations as `fairway simulate` runs
// them, with a predictor learning online: fairway (the default, gradient-
// boosted trees retrained as history grows) or tsafrir (a running mean):
//
//   - trace=CTC/policies=N: the whole CTC SP2 log (77,222 jobs, 338
//     processors, EASY) through every registered policy, GOMAXPROCS at a
//     time as the CLI does (target: under 20 s);
//   - synth=1000000/policy=P: a million synthetic jobs (Helios
//     calibration, 3,000 users, load 0.9 on 128 nodes × 8 GPUs) through
//     the default policy (target: under 60 s).
//
// Each checks every result is non-trivial (the runs are too long to
// repeat once more before timing).
func BenchmarkSimulate(b *testing.B) {
	for _, predictor := range []string{"fairway", "tsafrir"} {
		benchmarkSimulate(b, predictor)
	}
}

func benchmarkSimulate(b *testing.B, predictor string) {
	b.Run(fmt.Sprintf("trace=CTC/policies=%d/predictor=%s", len(policy.Names()), predictor), func(b *testing.B) {
		jobs, cluster := readShared(b, ctcTrace)
		once := func() []Metrics {
			out := make([]Metrics, len(policy.Names()))
			sem := make(chan struct{}, runtime.GOMAXPROCS(0))
			var wg sync.WaitGroup
			for i, name := range policy.Names() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					res, err := Run(jobs, smConfig(b, cluster, name, predictor))
					if err != nil {
						b.Error(err)
						return
					}
					out[i] = Measure(res, MetricsParams{})
				}()
			}
			wg.Wait()
			return out
		}
		for b.Loop() {
			for _, m := range once() {
				if m.Jobs != 77222 || m.AvgWait <= 0 {
					b.Fatalf("%s: %d jobs, average wait %v: trivial", m.Name, m.Jobs, m.AvgWait)
				}
			}
		}
	})
	b.Run(fmt.Sprintf("synth=%d/policy=%s/predictor=%s", 1000000, policy.Default, predictor), func(b *testing.B) {
		jobs, err := Synth(SynthParams{Jobs: 1000000, Users: 3000, Nodes: 128, GPUsPerNode: 8, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		cluster := Cluster{Nodes: 128, PerNode: 8, Unit: GPUs}
		b.ResetTimer()
		for b.Loop() {
			res, err := Run(jobs, smConfig(b, cluster, policy.Default, predictor))
			if err != nil {
				b.Fatal(err)
			}
			if m := Measure(res, MetricsParams{}); m.Jobs != 1000000 || m.AvgWait <= 0 {
				b.Fatalf("%d jobs, average wait %v: trivial", m.Jobs, m.AvgWait)
			}
		}
	})
}

// BenchmarkSimulateCTC replays the whole CTC SP2 log (77,222 jobs, 338
// processors, EASY, the fairway predictor learning online) through one
// registered policy at a time, as `fairway simulate --policies P` does:
// the per-policy cost the target "CTC through every registered policy in
// under 10 s" adds up.
func BenchmarkSimulateCTC(b *testing.B) {
	for _, name := range policy.Names() {
		b.Run(fmt.Sprintf("policy=%s/predictor=fairway", name), func(b *testing.B) {
			jobs, cluster := readShared(b, ctcTrace)
			for b.Loop() {
				res, err := Run(jobs, smConfig(b, cluster, name, "fairway"))
				if err != nil {
					b.Fatal(err)
				}
				if m := Measure(res, MetricsParams{}); m.Jobs != 77222 || m.AvgWait <= 0 {
					b.Fatalf("%d jobs, average wait %v: trivial", m.Jobs, m.AvgWait)
				}
			}
		})
	}
}

// BenchmarkEvaluate measures one evaluation as a tuner makes thousands of:
// the time split at 0.7 of the 30,000-job synthetic workload
// (`fairway trace synth --jobs 30000`, seed 1, on 8 × 8 GPUs), replaying
// the last 9,000 jobs under the default policy with EASY backfilling,
// warmed on the history before the split. The Evaluator is built once,
// outside the timing; with predictions=at-submit each replay looks the
// predictions up, with predictions=online it warms and trains its own
// fairway predictor.
func BenchmarkEvaluate(b *testing.B) {
	jobs, err := Synth(SynthParams{Jobs: 30000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	cluster := Cluster{Nodes: SynthNodes, PerNode: SynthGPUsPerNode, Unit: GPUs}
	for _, mode := range []PredictionMode{PredictAtSubmit, PredictOnline} {
		b.Run(fmt.Sprintf("split=0.7/jobs=30000/policy=%s/predictions=%s", policy.Default, mode), func(b *testing.B) {
			e, err := NewEvaluator(jobs, cluster, Protocol{Kind: Split, Split: 0.7, Predictions: mode,
				NewPredictor: func() (policy.Predictor, error) { return predict.New("fairway", predict.Params{}) }})
			if err != nil {
				b.Fatal(err)
			}
			mk := func() (policy.Policy, error) { return policy.New(policy.Default, nil) }
			check := func(ev Evaluation) {
				if ev.Jobs != 9000 || ev.AvgWait <= 0 || ev.AvgBSLD <= 1 {
					b.Fatalf("%d jobs, avg wait %v, avg bsld %v: trivial", ev.Jobs, ev.AvgWait, ev.AvgBSLD)
				}
			}
			ev, err := e.Evaluate(context.Background(), mk)
			if err != nil {
				b.Fatal(err)
			}
			check(ev)
			b.ResetTimer()
			for b.Loop() {
				if ev, err = e.Evaluate(context.Background(), mk); err != nil {
					b.Fatal(err)
				}
			}
			check(ev)
		})
	}
}
