package predict_test

import (
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestFairwayContexts_Synthetic replays the suite's three synthetic
// Helios-like workloads under both protocols through the baselines, the
// fairway predictor as shipped and fairway with Contexts. On these the
// shipped predictor loses the mean absolute error to alea or helios; with
// Contexts its MAE must be lower than as shipped on every one, and its
// median absolute error must stay the lowest of all.
func TestFairwayContexts_Synthetic(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		jobs, err := sim.Synth(sim.SynthParams{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range []predeval.Protocol{predeval.SubmitOrder, predeval.Online} {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, proto), func(t *testing.T) {
				preds := everyPredictor(t)
				ctx, err := predict.NewFairwayPredictor(predict.FairwayParams{Contexts: true})
				if err != nil {
					t.Fatal(err)
				}
				preds = append(preds, ctx)
				res, err := predeval.Run(jobs, preds, predeval.Options{Protocol: proto})
				if err != nil {
					t.Fatal(err)
				}
				ms := res.Predictors
				shipped, withCtx := ms[len(ms)-2], ms[len(ms)-1]
				if shipped.Name != "fairway" || withCtx.Name != "fairway" {
					t.Fatalf("predictors %q, %q: want fairway twice", shipped.Name, withCtx.Name)
				}
				if withCtx.MAE >= shipped.MAE {
					t.Errorf("MAE with Contexts %.0f s, as shipped %.0f s: want lower", withCtx.MAE, shipped.MAE)
				}
				for _, m := range ms[:len(ms)-1] {
					if m.NotApplicable == "" && withCtx.MedAE > m.MedAE {
						t.Errorf("MedAE with Contexts %.0f s, %s %.0f s: want the lowest", withCtx.MedAE, m.Name, m.MedAE)
					}
				}
				for _, m := range ms {
					t.Logf("%-8s MAE %6.0f MedAE %5.0f", m.Name, m.MAE, m.MedAE)
				}
			})
		}
	}
}
