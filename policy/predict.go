package policy

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// PredictorParams configures the registered predictors; each constructor
// reads its own part. The zero value gives every predictor its published
// defaults.
type PredictorParams struct {
	Limit   LimitParams
	Tsafrir TsafrirParams
	Alea    AleaParams
	Helios  HeliosParams
	Fairway FairwayParams
}

// Predictors is the registry of run-time predictors by name. The four
// baselines reproduce published methods; "fairway" is Fairway's own.
var Predictors = map[string]func(PredictorParams) (Predictor, error){
	"limit":   func(p PredictorParams) (Predictor, error) { return NewLimitPredictor(p.Limit) },
	"tsafrir": func(p PredictorParams) (Predictor, error) { return NewTsafrirPredictor(p.Tsafrir) },
	"alea":    func(p PredictorParams) (Predictor, error) { return NewAleaPredictor(p.Alea) },
	"helios":  func(p PredictorParams) (Predictor, error) { return NewHeliosPredictor(p.Helios) },
	"fairway": func(p PredictorParams) (Predictor, error) { return NewFairwayPredictor(p.Fairway) },
}

// PredictorNames lists the registered predictors in a fixed order: the
// baselines first, as the issue lists them, then fairway.
func PredictorNames() []string {
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

// NewPredictor builds the registered predictor called name.
func NewPredictor(name string, p PredictorParams) (Predictor, error) {
	mk, ok := Predictors[name]
	if !ok {
		return nil, fmt.Errorf("unknown predictor %q: want one of %s", name, strings.Join(PredictorNames(), ", "))
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
func clampRun(j *Job, d time.Duration) time.Duration {
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
func NewLimitPredictor(LimitParams) (Predictor, error) { return limitPredictor{}, nil }

func (limitPredictor) Name() string         { return "limit" }
func (limitPredictor) Observe(*Job)         {}
func (limitPredictor) NeedsTimeLimit() bool { return true }

func (limitPredictor) Predict(j *Job) Prediction {
	if j.TimeLimit <= 0 {
		return Prediction{Source: "none"}
	}
	return Prediction{Run: j.TimeLimit, Source: "limit"}
}

// ConcurrentPredictor is implemented by a Predictor whose Predict only
// reads its state, so that many goroutines may call it at once while no
// Observe runs.
type ConcurrentPredictor interface {
	Predictor
	ConcurrentPredict()
}

// predictAllMinPerWorker is the fewest jobs worth a goroutine of
// PredictAll: below it, starting and joining goroutines costs more than
// the predictions they share out.
const predictAllMinPerWorker = 4096

// PredictAll predicts every job of jobs into out, which must be as long.
// A ConcurrentPredictor's predictions are shared among up to GOMAXPROCS
// goroutines when the batch is large (a full queue after a restart, a
// user's thousand queued jobs after one of theirs finished); the results
// are the same as predicting one job after another.
func PredictAll(p Predictor, jobs []*Job, out []Prediction) {
	if len(out) != len(jobs) {
		panic(fmt.Sprintf("PredictAll: %d jobs, %d predictions", len(jobs), len(out)))
	}
	workers := 1
	if _, ok := p.(ConcurrentPredictor); ok {
		workers = min(runtime.GOMAXPROCS(0), len(jobs)/predictAllMinPerWorker)
	}
	if workers <= 1 {
		for i, j := range jobs {
			out[i] = p.Predict(j)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (len(jobs) + workers - 1) / workers
	for lo := 0; lo < len(jobs); lo += chunk {
		hi := min(lo+chunk, len(jobs))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = p.Predict(jobs[i])
			}
		})
	}
	wg.Wait()
}
