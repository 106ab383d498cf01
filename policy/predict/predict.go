package predict

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// Params configures the registered predictors; each constructor
// reads its own part. The zero value gives every predictor its published
// defaults.
type Params struct {
	Limit   LimitParams
	Tsafrir TsafrirParams
	Alea    AleaParams
	Helios  HeliosParams
	Fairway FairwayParams
}

// Predictors is the registry of run-time predictors by name. The four
// baselines reproduce published methods; "fairway" is Fairway's own.
var Predictors = map[string]func(Params) (policy.Predictor, error){
	"limit":   func(p Params) (policy.Predictor, error) { return NewLimitPredictor(p.Limit) },
	"tsafrir": func(p Params) (policy.Predictor, error) { return NewTsafrirPredictor(p.Tsafrir) },
	"alea":    func(p Params) (policy.Predictor, error) { return NewAleaPredictor(p.Alea) },
	"helios":  func(p Params) (policy.Predictor, error) { return NewHeliosPredictor(p.Helios) },
	"fairway": func(p Params) (policy.Predictor, error) { return NewFairwayPredictor(p.Fairway) },
}

// Names lists the registered predictors in a fixed order: the published
// baselines first, from the simplest, then fairway.
func Names() []string {
	order := map[string]int{"limit": 0, "tsafrir": 1, "alea": 2, "helios": 3, "fairway": 4}
	names := make([]string, 0, len(Predictors))
	for n := range Predictors {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		oa, okA := order[names[a]]
		ob, okB := order[names[b]]
		if okA != okB {
			return okA
		}
		if oa != ob {
			return oa < ob
		}
		return names[a] < names[b]
	})
	return names
}

// New builds the registered predictor called name.
func New(name string, p Params) (policy.Predictor, error) {
	mk, ok := Predictors[name]
	if !ok {
		return nil, fmt.Errorf("unknown predictor %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return mk(p)
}

// NeedsTimeLimit is implemented by predictors that are meaningless without
// requested times (limit, alea): an evaluation reports them as not
// applicable on a trace whose jobs have none.
type NeedsTimeLimit interface {
	NeedsTimeLimit() bool
}

// clampRun bounds a predicted run time to [0, TimeLimit] (no upper bound
// when the job has no limit): a job is killed at its limit, so predicting
// past it is always wrong.
func clampRun(j *policy.Job, d time.Duration) time.Duration {
	if d < 0 {
		d = 0
	}
	if j.TimeLimit > 0 && d > j.TimeLimit {
		d = j.TimeLimit
	}
	return d
}

// LimitParams configures the limit predictor; it has no settings.
type LimitParams struct{}

// limitPredictor predicts the requested time limit, which is what Slurm's
// backfill scheduler assumes (Slurm sched_config "bf_*"; Mu'alem and
// Feitelson, IEEE TPDS 12(6), 2001, for EASY with user estimates).
type limitPredictor struct{}

// NewLimitPredictor returns the "limit" baseline.
func NewLimitPredictor(LimitParams) (policy.Predictor, error) { return limitPredictor{}, nil }

func (limitPredictor) Name() string         { return "limit" }
func (limitPredictor) Observe(*policy.Job)  {}
func (limitPredictor) NeedsTimeLimit() bool { return true }

func (limitPredictor) Predict(j *policy.Job) policy.Prediction {
	if j.TimeLimit <= 0 {
		return policy.Prediction{Source: "none"}
	}
	return policy.Prediction{Run: j.TimeLimit, Source: "limit"}
}
