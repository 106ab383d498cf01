package power

import (
	"fmt"

	"github.com/fairway-hpc/fairway/policy/predict/gbt"
)

// Retrained is the GBT forecaster for a sequence that grows while it is
// forecast (the simulator's node usage, serve's observations): at an
// issue it refits the model on every step measured so far once Every
// steps have passed since the last fit, and forecasts with the anchored
// model (Anchored), the one `fairway power eval` drives the hybrid with.
// Until MinSteps steps are measured it forecasts with Fallback (a
// seasonal-naive forecast), as it does when a fit fails.
type Retrained struct {
	Lags  Lags
	GBT   gbt.Config
	Shape GBTForecaster // Delta and Drop; Model is fitted here
	// Every is the steps between fits (a day: Lags.Day); MinSteps the
	// steps measured before the first fit.
	Every, MinSteps int
	// Window is the most recent steps a fit learns from (0: all), so a
	// long run's daily fits stay cheap and follow the recent demand.
	Window   int
	Fallback Forecaster

	model   *GBTForecaster
	fitAt   int // the steps measured at the last fit
	lastErr error
}

// NewRetrained is Retrained with the settings `fairway power eval` chose
// on Philly's validation days (the change from 3 h earlier as target, 10
// trees; the learner's other settings as the artifact's), refit daily,
// on the last 28 days, after two weeks of steps (a week of lags and a
// week to learn from), falling back to the demand a day earlier.
func NewRetrained(l Lags) *Retrained {
	return &Retrained{Lags: l, GBT: gbt.Config{Trees: 10, Depth: 6, Rate: 0.1, MinLeaf: 20, Subsample: 0.85},
		Shape: GBTForecaster{Variant: "delta", Delta: true}, Every: l.Day,
		MinSteps: max(14*l.Day, l.FirstFeatureStep()+l.Day), Window: 28 * l.Day,
		Fallback: Seasonal{Label: "same time yesterday", Period: l.Day}}
}

// Name implements Forecaster: the forecaster the last issue used.
func (r *Retrained) Name() string {
	if r.model == nil {
		return r.Fallback.Name()
	}
	return "gbt anchored"
}

// Explain says which forecaster the last issue used and why.
func (r *Retrained) Explain() string {
	switch {
	case r.model != nil:
		return fmt.Sprintf("GBT forecast (anchored), fitted on %d steps, refit every %d", r.fitAt, r.Every)
	case r.lastErr != nil:
		return fmt.Sprintf("%s forecast: the GBT fit failed: %v", r.Fallback.Name(), r.lastErr)
	}
	return fmt.Sprintf("%s forecast: %d of the %d steps of history the GBT needs", r.Fallback.Name(), r.fitAt, r.MinSteps)
}

// Forecast implements Forecaster; it reads only steps ≤ now.
func (r *Retrained) Forecast(s *Series, now int, out []float64) {
	n := now + 1
	if n >= r.MinSteps && (r.model == nil || n-r.fitAt >= r.Every) {
		lo := 0
		if r.Window > 0 {
			lo = max(0, n-r.Window)
		}
		m, err := TrainGBT(s, lo, n, r.Lags, r.GBT, r.Shape)
		r.lastErr = err
		if err == nil {
			r.model = m
		}
		r.fitAt = n
	} else if r.model == nil {
		r.fitAt = n
	}
	if r.model == nil || now < r.Lags.FirstFeatureStep() {
		r.Fallback.Forecast(s, now, out)
		return
	}
	Anchored{F: r.model}.Forecast(s, now, out)
}
