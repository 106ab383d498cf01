package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// JobHistory is the accounting database's ended jobs (accounting.Store):
// the node-use history the power forecast learns from.
type JobHistory interface {
	FinishedJobs(ctx context.Context, cluster string, since, until time.Time) ([]policy.Job, error)
}

// powerForecaster is serve's node-demand forecast: the GBT forecaster of
// `fairway power eval` (power.Retrained's settings), fitted on the node
// use of the jobs the accounting database saw end over the last weeks
// together with serve's own observations, refit daily; the same step a
// day earlier (seasonal naive) while there is too little history, and
// when the database cannot be read.
type powerForecaster struct {
	hist    JobHistory
	cluster string
	step    time.Duration
	window  time.Duration // how much history a fit reads
	every   time.Duration // how often the history is reread and the model refit
	lags    power.Lags
	cfg     *power.Retrained // the fit's settings; its model unused

	// use is the node use of the history read at the last fit, per step
	// from the step numbered useFirst (Unix / step): computed once per
	// refit, because with each job's nodes named it costs a second and
	// most of a gigabyte on a month of a cluster whose jobs span tens of
	// nodes, and the history does not change until the next refit (its
	// jobs all ended before it, so later steps hold none of them).
	use      []int
	useFirst int64
	model    *power.GBTForecaster
	fitAt    time.Time
	tried    time.Time
	reason   string // why there is no model
}

func newPowerForecaster(hist JobHistory, cluster string, step time.Duration) (*powerForecaster, error) {
	l, err := power.LagsFor(step)
	if err != nil {
		return nil, err
	}
	return &powerForecaster{hist: hist, cluster: cluster, step: step, window: 28 * 24 * time.Hour, every: 24 * time.Hour,
		lags: l, cfg: power.NewRetrained(l)}, nil
}

// forecast is the demand of the n steps after now's, and which forecaster
// made it; nil when even the seasonal-naive one has nothing. observed is
// serve's own busy-node maxima by step index (Unix / step).
func (f *powerForecaster) forecast(ctx context.Context, now time.Time, n int, observed map[int64]int) ([]float64, string) {
	if n <= 0 {
		return nil, ""
	}
	if f.hist != nil && (f.tried.IsZero() || now.Sub(f.tried) >= f.every) {
		f.tried = now
		f.refit(ctx, now, observed)
	}
	cur := now.Unix() / int64(f.step.Seconds())
	if f.model != nil {
		s := f.series(now, observed)
		out := make([]float64, n)
		power.Anchored{F: f.model}.Forecast(s, s.Len()-1, out)
		return out, fmt.Sprintf("GBT (anchored), fitted %s on %d days of node use, refit daily", f.fitAt.UTC().Format(time.DateTime), int(f.window.Hours()/24))
	}
	day := int64((24 * time.Hour) / f.step)
	var out []float64
	for h := 1; h <= n; h++ {
		v, ok := observed[cur+int64(h)-day]
		if !ok {
			return nil, "none: " + f.why() + ", and serve has not seen a day yet for the seasonal-naive fallback"
		}
		out = append(out, float64(v))
	}
	return out, "seasonal naive (same time yesterday): " + f.why()
}

func (f *powerForecaster) why() string {
	switch {
	case f.hist == nil:
		return "no accounting database to learn from"
	case f.reason == "":
		return "no GBT fit yet"
	}
	return f.reason
}

// series is the node use over the window up to now's step: each step's
// most nodes held by the history's jobs or seen busy by serve.
func (f *powerForecaster) series(now time.Time, observed map[int64]int) *power.Series {
	cur := now.Unix() / int64(f.step.Seconds())
	n := int(f.window / f.step)
	first := cur - int64(n) + 1
	start := time.Unix(first*int64(f.step.Seconds()), 0).UTC()
	s := &power.Series{Start: start, Step: f.step, Active: make([]int, n), Total: make([]int, n)}
	for i := range s.Active {
		if k := first + int64(i) - f.useFirst; k >= 0 && k < int64(len(f.use)) {
			s.Active[i] = f.use[k]
		}
		if v, ok := observed[first+int64(i)]; ok {
			s.Active[i] = max(s.Active[i], v)
		}
	}
	return s
}

// refit rereads the history and fits the GBT when there is enough of it.
func (f *powerForecaster) refit(ctx context.Context, now time.Time, observed map[int64]int) {
	jobs, err := f.hist.FinishedJobs(ctx, f.cluster, now.Add(-f.window), time.Time{})
	if err != nil {
		f.reason = fmt.Sprintf("reading the job history failed (%v)", err)
		// A database outage should not cost a day of the GBT: retry in an
		// hour.
		f.tried = now.Add(time.Hour - f.every)
		return
	}
	spans := power.JobSpans(jobs, slurmctl.ExpandHostlist)
	first, last := now, now
	for _, sp := range spans {
		first, last = minTime(first, sp.Start), maxTime(last, sp.End)
	}
	// From the first step of now's window to the step of the last end (a
	// clock ahead of serve's may put one after now), at most until the
	// next refit.
	stepS := int64(f.step.Seconds())
	f.useFirst = now.Unix()/stepS - int64(f.window/f.step) + 1
	last = minTime(last, now.Add(f.every))
	f.use = power.NodeUse(spans, time.Unix(f.useFirst*stepS, 0), f.step, int(last.Unix()/stepS-f.useFirst+1))
	have := int(now.Sub(first) / f.step)
	if have < f.cfg.MinSteps {
		f.model = nil
		f.reason = fmt.Sprintf("%.1f days of node-use history, the GBT needs %d", now.Sub(first).Hours()/24, f.cfg.MinSteps/f.lags.Day)
		return
	}
	s := f.series(now, observed)
	lo := max(0, s.Len()-have)
	m, err := power.TrainGBT(s, lo, s.Len(), f.lags, f.cfg.GBT, f.cfg.Shape)
	if err != nil {
		f.model = nil
		f.reason = fmt.Sprintf("the GBT fit failed (%v)", err)
		return
	}
	f.model, f.fitAt, f.reason = m, now, ""
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
