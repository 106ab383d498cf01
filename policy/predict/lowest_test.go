package predict_test

import (
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestFairwayRequestShare_LowestErrors replays the suite's three synthetic
// Helios-like workloads and the start of a shared archive trace under both
// protocols through every registered predictor and fairway with
// RequestShare, and checks what the suite checks of a predictor: fairway
// with RequestShare has a lower mean and a lower median absolute error than
// every baseline. As shipped, fairway keeps the lowest MedAE; on the
// synthetic workloads, whose few long jobs carry most of the seconds of
// error, its MAE must be higher than with RequestShare.
func TestFairwayRequestShare_LowestErrors(t *testing.T) {
	type workload struct {
		name string
		jobs func(t *testing.T) []policy.Job
		// tail: RequestShare must lower the MAE of fairway as shipped.
		tail bool
	}
	var cases []workload
	for seed := uint64(1); seed <= 3; seed++ {
		cases = append(cases, workload{fmt.Sprintf("synthetic-seed=%d", seed), func(t *testing.T) []policy.Job {
			jobs, err := sim.Synth(sim.SynthParams{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			return jobs
		}, true})
	}
	cases = append(cases, workload{"KTH-first-8000", func(t *testing.T) []policy.Job {
		return sharedTrace(t, "KTH-SP2-filtered.swf.gz", trace.SWF)[:8000]
	}, false})
	for _, w := range cases {
		for _, proto := range []predeval.Protocol{predeval.SubmitOrder, predeval.Online} {
			t.Run(w.name+"/"+string(proto), func(t *testing.T) {
				jobs := w.jobs(t)
				preds := everyPredictor(t)
				share, err := predict.NewFairwayPredictor(predict.FairwayParams{RequestShare: true})
				if err != nil {
					t.Fatal(err)
				}
				res, err := predeval.Run(jobs, append(preds, share), predeval.Options{Protocol: proto})
				if err != nil {
					t.Fatal(err)
				}
				ms := res.Predictors
				for _, m := range ms {
					t.Logf("%-8s MAE %6.0f MedAE %5.0f", m.Name, m.MAE, m.MedAE)
				}
				shipped, withShare := ms[len(ms)-2], ms[len(ms)-1]
				if shipped.Name != "fairway" || withShare.Name != "fairway" {
					t.Fatalf("predictors %q, %q: want fairway twice", shipped.Name, withShare.Name)
				}
				for _, m := range ms[:len(ms)-2] {
					if m.NotApplicable != "" {
						continue
					}
					if withShare.MAE >= m.MAE {
						t.Errorf("MAE with RequestShare %.0f s, %s %.0f s: want the lowest", withShare.MAE, m.Name, m.MAE)
					}
					if withShare.MedAE >= m.MedAE {
						t.Errorf("MedAE with RequestShare %.0f s, %s %.0f s: want the lowest", withShare.MedAE, m.Name, m.MedAE)
					}
					if shipped.MedAE >= m.MedAE {
						t.Errorf("MedAE as shipped %.0f s, %s %.0f s: want the lowest", shipped.MedAE, m.Name, m.MedAE)
					}
				}
				if w.tail && withShare.MAE >= shipped.MAE {
					t.Errorf("MAE with RequestShare %.0f s, as shipped %.0f s: want lower", withShare.MAE, shipped.MAE)
				}
			})
		}
	}
}

// everyPredictor builds one of each registered predictor with its defaults,
// the field a variant has to beat.
func everyPredictor(t *testing.T) []policy.Predictor {
	t.Helper()
	var preds []policy.Predictor
	for _, n := range predict.Names() {
		p, err := predict.New(n, predict.Params{})
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, p)
	}
	return preds
}
