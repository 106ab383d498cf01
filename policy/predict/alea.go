package predict

import (
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// AleaParams configures the alea predictor.
type AleaParams struct {
	// Window is how many of the user's previous jobs are looked at; 0 means
	// the published 5.
	Window int
}

// aleaPredictor is the per-user predictor of the Alea scheduling simulator
// (Klusáček and Rudová, "Alea 2 – Job Scheduling Simulator", SIMUTools 2010;
// the walltime-prediction page of the HPC job scheduling repository): the
// job's requested time × the largest run/request ratio among the user's
// previous 5 jobs. A user's first job is predicted as its request. Jobs
// without a request teach nothing and are predicted as 0.
//
// As published, the prediction is not capped at the request: where jobs ran
// past their requested time (9% of CTC's did), a ratio above 1 predicts past
// the limit. This is the one predictor that breaks Prediction's "never above
// TimeLimit" rule, deliberately, so that its published errors are reproduced
// (capped, CTC gives MAE 6877 s / MedAE 596 s instead of 7118 / 636).
type aleaPredictor struct {
	window int
	ratios map[string]*ring
}

// NewAleaPredictor returns the "alea" baseline.
func NewAleaPredictor(p AleaParams) (policy.Predictor, error) {
	if p.Window < 0 {
		return nil, fmt.Errorf("alea: window %d: want >= 0", p.Window)
	}
	if p.Window == 0 {
		p.Window = 5
	}
	return &aleaPredictor{window: p.Window, ratios: map[string]*ring{}}, nil
}

func (a *aleaPredictor) Name() string         { return "alea" }
func (a *aleaPredictor) NeedsTimeLimit() bool { return true }

func (a *aleaPredictor) Observe(j *policy.Job) {
	if j.TimeLimit <= 0 {
		return
	}
	r := a.ratios[j.User]
	if r == nil {
		r = newRing(a.window)
		a.ratios[j.User] = r
	}
	r.push(float64(j.RunTime()) / float64(j.TimeLimit))
}

func (a *aleaPredictor) Predict(j *policy.Job) policy.Prediction {
	if j.TimeLimit <= 0 {
		return policy.Prediction{Source: "none"}
	}
	r := a.ratios[j.User]
	if r == nil || r.len() == 0 {
		return policy.Prediction{Run: j.TimeLimit, Source: "limit"}
	}
	run := time.Duration(float64(j.TimeLimit) * r.max())
	return policy.Prediction{Run: run, Source: "user-max-ratio"}
}
