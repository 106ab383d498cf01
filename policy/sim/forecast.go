package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// ForecastParams configures MeasureForecast.
type ForecastParams struct {
	// Every is the period of the hourly re-forecasts' clock: a job's h-th
	// re-forecast is made at the first multiple of Every (from the first
	// submission) at least h hours after it was submitted. 0 means 10
	// minutes.
	Every time.Duration
	// Resolution is the forecasts' clock step; 0 means
	// schedule.DefaultForecastResolution, as serve uses.
	Resolution time.Duration
	// Oracle also plays every forecast with the true run times of the
	// running jobs, and with the true run times of every job: forecasts
	// nobody can make, which split the predicted forecast's error into
	// what a better run-time predictor could remove and what no predictor
	// can (jobs submitted later, the ranking changing as time passes).
	Oracle bool
}

// Forecast moments.
const (
	MomentSubmit       = "submit"        // when the job is submitted, before any decision on it
	MomentSubmitWaited = "submit-waited" // the same, only for the jobs that did not start at once
	MomentHourly       = "hourly"        // after each hour the job has waited
)

// ForecastErrors summarises the absolute errors of one method's forecasts,
// in seconds.
type ForecastErrors struct {
	MedianAbs float64 `json:"median_abs_s"`
	MeanAbs   float64 `json:"mean_abs_s"`
	P90Abs    float64 `json:"p90_abs_s"`
	// MedianSigned is the median of forecast − actual start: negative
	// when the forecasts are early (optimistic).
	MedianSigned float64 `json:"median_signed_s"`
	// Within is the share of forecasts within ±max(10 min, 20% of the
	// wait that remained when the forecast was made).
	Within float64 `json:"within"`
}

// ForecastAccuracy compares the two methods' forecasts at one moment.
type ForecastAccuracy struct {
	Moment    string `json:"moment"`
	Forecasts int    `json:"forecasts"`
	// Predicted plays predicted run times (Fairway's forecast); Limits
	// plays time limits (what `squeue --start` would say).
	Predicted ForecastErrors `json:"predicted"`
	Limits    ForecastErrors `json:"limits"`
	// With ForecastParams.Oracle: the predicted forecast played with the
	// true run times of the running jobs (TrueRunning), and of every job
	// (TrueRuns).
	TrueRunning *ForecastErrors `json:"true_running,omitempty"`
	TrueRuns    *ForecastErrors `json:"true_runs,omitempty"`
}

// ForecastReport is what MeasureForecast found.
type ForecastReport struct {
	Policy  string             `json:"policy"`
	Moments []ForecastAccuracy `json:"moments"`
	// Result is the simulation the forecasts were measured against,
	// unchanged by the measuring.
	Result *Result `json:"-"`
}

// ForecastPolicy picks the one policy simulate --forecast measures: the
// default unless named is set (then it must name exactly one), and never
// one simulated preemptively.
func ForecastPolicy(named []string, set bool, preempt map[string]bool) (string, error) {
	name := policy.Default
	if set {
		if len(named) != 1 {
			return "", fmt.Errorf("--policies: --forecast measures one policy, got %d", len(named))
		}
		name = named[0]
	}
	if preempt[name] {
		return "", fmt.Errorf("--preempt: %w: leave %s out of --preempt", ErrPreemptForecast, name)
	}
	return name, nil
}

// ErrPreemptForecast is returned by MeasureForecast for a preemptive
// configuration: the forecast plays a non-preemptive scheduler.
var ErrPreemptForecast = errors.New("forecasts are measured without preemption")

// forecastWatch records forecasts during a simulation.
type forecastWatch struct {
	p       ForecastParams
	every   int64
	next    int64   // next re-forecast instant, ns on the simulator's clock
	arrived []int32 // jobs submitted at the current instant
	hours   []int32 // re-forecasts made so far, by job
	records []forecastRecord
	due     []int32 // scratch
	nSubmit int     // due[:nSubmit] were just submitted
	// seen is the engine's predictions as of its last cycle (the map
	// each Snapshot.Predicted is); pred adds the predictor's for the
	// jobs that arrived since.
	seen map[int64]time.Duration
	pred map[int64]time.Duration
	// seenEff and eff are the same for the effective run times
	// (Snapshot.Effective), for a policy that reads them.
	seenEff map[int64]time.Duration
	eff     map[int64]time.Duration
	// oracle is scratch for the oracle forecasts' run times.
	oracle map[int64]time.Duration
}

type forecastRecord struct {
	k         int32
	moment    string
	at        int64 // ns
	predicted int64 // forecast start, ns; -1 when the job never fits
	limits    int64
	// The oracle forecasts' starts, with ForecastParams.Oracle.
	trueRunning, trueRuns int64
}

// MeasureForecast simulates jobs under cfg, as Run does, and measures
// Fairway's start-time forecast (schedule.NewForecast) against the simulated
// starts: for every job, the forecast made when it is submitted (before
// the scheduling cycle at that instant acts) and the one made after each
// hour it has waited, with predicted run times and with time limits. A
// forecast made at a cycle uses that cycle's snapshot and ranking, the
// ones serve would answer from; between cycles it ranks the queue as it
// stands with cfg.Policy, the cycle's predictions and effective run times
// (the predictor's for jobs that arrived since) and the ledger as last
// charged. The simulation itself is the same as Run's.
func MeasureForecast(jobs []policy.Job, cfg Config, p ForecastParams) (*ForecastReport, error) {
	if cfg.Preempt {
		return nil, ErrPreemptForecast
	}
	if p.Every <= 0 {
		p.Every = 10 * time.Minute
	}
	w := &forecastWatch{p: p, every: int64(p.Every)}
	cfg.watch = w
	res, err := Run(jobs, cfg)
	if err != nil {
		return nil, err
	}
	return w.report(res), nil
}

// catchUp sizes the per-job state on first use.
func (w *forecastWatch) catchUp(s *simulator) {
	if w.hours == nil {
		w.hours = make([]int32, len(s.jobs))
	}
}

// dueJobs lists the jobs due a forecast now: those just submitted and
// those whose next hourly re-forecast has come.
func (w *forecastWatch) dueJobs(s *simulator) []int32 {
	w.catchUp(s)
	w.due = append(w.due[:0], w.arrived...)
	w.nSubmit = len(w.due)
	if s.now >= w.next {
		for _, k := range s.pendK {
			if s.now-s.submitAt(int(k)) >= int64(w.hours[k]+1)*int64(time.Hour) {
				w.due = append(w.due, k)
			}
		}
		w.next = (s.now/w.every + 1) * w.every
	}
	return w.due
}

// cycle makes the due forecasts from a cycle's snapshot and ranking.
func (w *forecastWatch) cycle(s *simulator, snap *policy.Snapshot, ranking []policy.Score) error {
	w.seen, w.seenEff = snap.Predicted, snap.Effective
	due := w.dueJobs(s)
	w.arrived = w.arrived[:0]
	if len(due) == 0 {
		return nil
	}
	return w.forecast(s, snap, ranking, due)
}

// idle makes the due forecasts at an instant without a cycle.
func (w *forecastWatch) idle(s *simulator) error {
	due := w.dueJobs(s)
	w.arrived = w.arrived[:0]
	if len(due) == 0 {
		return nil
	}
	// Predictions: the engine's for the jobs it has seen, the
	// predictor's for the others.
	if w.pred == nil {
		w.pred = map[int64]time.Duration{}
	}
	clear(w.pred)
	// Effective run times as the engine gives them: for a policy that
	// reads them, from its last cycle, else the predictor's beside its
	// prediction; without them the queue is ranked otherwise than a cycle
	// at this instant would.
	ep, _ := s.cfg.Predictor.(policy.EffectivePredictor)
	if !policy.ReadsEffective(s.cfg.Policy) {
		ep = nil
	}
	if w.eff == nil {
		w.eff = map[int64]time.Duration{}
	}
	clear(w.eff)
	for _, js := range [][]policy.Job{s.pending, s.running} {
		for i := range js {
			j := &js[i]
			if d, ok := w.seen[j.ID]; ok {
				w.pred[j.ID] = d
				if e, ok := w.seenEff[j.ID]; ok && ep != nil {
					w.eff[j.ID] = e
				}
			} else if s.cfg.Predictor != nil {
				if pr := s.cfg.Predictor.Predict(j); pr.Source != "none" {
					w.pred[j.ID] = pr.Run
					if ep != nil {
						if e := ep.Effective(j, pr.Run); e > 0 {
							w.eff[j.ID] = e
						}
					}
				}
			}
		}
	}
	snap := policy.Snapshot{Now: s.at(s.now), Pending: s.pending, Running: s.running, Predicted: w.pred, Effective: w.eff,
		Shares: s.cfg.Shares, Ledger: s.eng.Ledger(), Service: s.cfg.service(), GPUs: float64(s.cfg.Cluster.Capacity())}
	ranking, err := s.cfg.Policy.Rank(&snap)
	if err != nil {
		return fmt.Errorf("forecast at %s: rank: %w", snap.Now.Format(time.RFC3339), err)
	}
	return w.forecast(s, &snap, ranking, due)
}

// forecast plays snap forward both ways and records the due jobs'
// forecast starts.
func (w *forecastWatch) forecast(s *simulator, snap *policy.Snapshot, ranking []policy.Score, due []int32) error {
	fp := schedule.ForecastParams{Machine: s.cfg.Cluster.Machine(), NoBackfill: s.cfg.Backfill == NoBackfill,
		DefaultLimit: s.cfg.DefaultLimit, Resolution: w.p.Resolution}
	pf, err := schedule.NewForecast(snap, ranking, fp)
	if err != nil {
		return err
	}
	fp.Limits = true
	lf, err := schedule.NewForecast(snap, ranking, fp)
	if err != nil {
		return err
	}
	var running, all *schedule.Forecast
	if w.p.Oracle {
		fp.Limits = false
		if running, err = w.oracleForecast(s, snap, ranking, fp, snap.Running); err != nil {
			return err
		}
		if all, err = w.oracleForecast(s, snap, ranking, fp, snap.Running, snap.Pending); err != nil {
			return err
		}
	}
	for i, k := range due {
		moment := MomentSubmit
		if i >= w.nSubmit {
			moment = MomentHourly
			w.hours[k]++
		}
		id := s.in[s.jobs[k].src].ID
		r := forecastRecord{k: k, moment: moment, at: s.now,
			predicted: w.startOf(s, pf, id), limits: w.startOf(s, lf, id)}
		if w.p.Oracle {
			r.trueRunning, r.trueRuns = w.startOf(s, running, id), w.startOf(s, all, id)
		}
		w.records = append(w.records, r)
	}
	return nil
}

// oracleForecast plays snap forward with the true run times of the jobs
// in exact, the predictions for the others.
func (w *forecastWatch) oracleForecast(s *simulator, snap *policy.Snapshot, ranking []policy.Score, fp schedule.ForecastParams, exact ...[]policy.Job) (*schedule.Forecast, error) {
	if w.oracle == nil {
		w.oracle = map[int64]time.Duration{}
	}
	clear(w.oracle)
	for id, d := range snap.Predicted {
		w.oracle[id] = d
	}
	for _, js := range exact {
		for i := range js {
			w.oracle[js[i].ID] = s.trueRun[js[i].ID]
		}
	}
	o := *snap
	o.Predicted = w.oracle
	return schedule.NewForecast(&o, ranking, fp)
}

// startOf is job id's forecast start on the simulator's clock.
func (w *forecastWatch) startOf(s *simulator, f *schedule.Forecast, id int64) int64 {
	e, ok := f.Job(id)
	if !ok || e.Never {
		return -1
	}
	return int64(e.Start.Sub(s.origin))
}

// report compares the recorded forecasts with the simulated starts.
func (w *forecastWatch) report(res *Result) *ForecastReport {
	rep := &ForecastReport{Policy: res.Policy, Result: res}
	origin := time.Time{}
	if len(res.Jobs) > 0 {
		origin = res.Jobs[0].Submit
	}
	type acc struct {
		pred, lim, preds, lims []float64
		pin, lin, n            int
		// the oracle forecasts': absolute and signed errors, within counts
		orc       [2][2][]float64
		orcWithin [2]int
	}
	accs := map[string]*acc{}
	for _, m := range []string{MomentSubmit, MomentSubmitWaited, MomentHourly} {
		accs[m] = &acc{}
	}
	for _, r := range w.records {
		j := &res.Jobs[r.k]
		actual := int64(j.Start.Sub(origin))
		remaining := float64(actual-r.at) / 1e9
		tol := max(600, 0.2*remaining)
		moments := []string{r.moment}
		if r.moment == MomentSubmit && j.Start.After(j.Submit) {
			moments = append(moments, MomentSubmitWaited)
		}
		for _, m := range moments {
			a := accs[m]
			a.n++
			ps, ls := signedErr(r.predicted, actual), signedErr(r.limits, actual)
			pe, le := math.Abs(ps), math.Abs(ls)
			a.pred, a.lim = append(a.pred, pe), append(a.lim, le)
			a.preds, a.lims = append(a.preds, ps), append(a.lims, ls)
			if pe <= tol {
				a.pin++
			}
			if le <= tol {
				a.lin++
			}
			if w.p.Oracle {
				for o, f := range []int64{r.trueRunning, r.trueRuns} {
					se := signedErr(f, actual)
					a.orc[o][0], a.orc[o][1] = append(a.orc[o][0], math.Abs(se)), append(a.orc[o][1], se)
					if math.Abs(se) <= tol {
						a.orcWithin[o]++
					}
				}
			}
		}
	}
	for _, m := range []string{MomentSubmit, MomentSubmitWaited, MomentHourly} {
		a := accs[m]
		fa := ForecastAccuracy{Moment: m, Forecasts: a.n}
		if a.n > 0 {
			fa.Predicted = errorsOf(a.pred, a.preds, a.pin)
			fa.Limits = errorsOf(a.lim, a.lims, a.lin)
			if w.p.Oracle {
				tr, ta := errorsOf(a.orc[0][0], a.orc[0][1], a.orcWithin[0]), errorsOf(a.orc[1][0], a.orc[1][1], a.orcWithin[1])
				fa.TrueRunning, fa.TrueRuns = &tr, &ta
			}
		}
		rep.Moments = append(rep.Moments, fa)
	}
	return rep
}

// signedErr is forecast − actual in seconds; a forecast of never counts
// as infinitely late.
func signedErr(forecast, actual int64) float64 {
	if forecast < 0 {
		return math.Inf(1)
	}
	return float64(forecast-actual) / 1e9
}

func errorsOf(abs, signed []float64, within int) ForecastErrors {
	return ForecastErrors{MeanAbs: mean(abs), MedianAbs: percentile(abs, 0.5), P90Abs: percentile(abs, 0.9),
		MedianSigned: percentile(signed, 0.5), Within: float64(within) / float64(len(abs))}
}
