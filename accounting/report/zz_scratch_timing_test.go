package report

import (
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

func TestScratchSimTiming(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 100000, Nodes: 64, GPUsPerNode: 8, Load: 0.9, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("span %s .. %s", jobs[0].Submit, jobs[len(jobs)-1].Submit)
	for _, name := range []string{"fairshare", "fair-qssf"} {
		for _, pred := range []string{"", "tsafrir", "fairway"} {
			if name == "fairshare" && pred != "" {
				continue
			}
			p, _ := policy.NewPolicy(name, policy.PolicyParams{})
			var pr policy.Predictor
			if pred != "" {
				pr, _ = policy.NewPredictor(pred, policy.PredictorParams{})
			}
			t0 := time.Now()
			res, err := sim.Run(jobs, sim.Config{Cluster: sim.Cluster{Nodes: 64, PerNode: 8, Unit: sim.GPUs}, Policy: p, Predictor: pr})
			if err != nil {
				t.Fatal(err)
			}
			m := sim.Measure(res, sim.MetricsParams{})
			t.Logf("%s/%s: %s cycles=%d avgwait=%.0f util=%.2f", name, pred, time.Since(t0), res.Cycles, m.AvgWait, m.Utilization)
		}
	}
}
