package power

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy/predict/gbt"
)

// Forecaster predicts a series' active nodes ahead of a step.
type Forecaster interface {
	Name() string
	// Forecast fills out[h-1] with the predicted active nodes at step
	// now+h, for h = 1..len(out), using only s.Active[:now+1]: what is
	// known at the start of step now. It never reads later steps.
	Forecast(s *Series, now int, out []float64)
}

// Lags are the artifact's feature offsets at a given step length.
type Lags struct {
	Day    int // the shift of the rolling windows: one day
	Short  int // the short rolling window: 30 min
	Long   int // the long rolling window: 1 h
	Recent int // the lagged value: 3 h
}

// LagsFor converts the artifact's durations into steps of length step; each
// must be a whole number of steps.
func LagsFor(step time.Duration) (Lags, error) {
	var l Lags
	for _, x := range []struct {
		d   time.Duration
		dst *int
	}{{24 * time.Hour, &l.Day}, {30 * time.Minute, &l.Short}, {time.Hour, &l.Long}, {3 * time.Hour, &l.Recent}} {
		if step <= 0 || x.d%step != 0 {
			return l, fmt.Errorf("step %v: the forecaster's windows (30 min, 1 h, 3 h, 1 day) must be whole numbers of steps", step)
		}
		*x.dst = int(x.d / step)
	}
	return l, nil
}

// NumFeatures is the length of a feature row.
const NumFeatures = 16

// FeatureNames names the columns Features fills, in order.
var FeatureNames = [NumFeatures]string{
	"year", "month", "day", "hour", "minute", "dayofweek", "dayofyear", "week",
	"mean_30m_1d_ago", "median_30m_1d_ago", "std_30m_1d_ago",
	"mean_1h_1d_ago", "median_1h_1d_ago", "std_1h_1d_ago",
	"3h_ago", "3h_ago_soft",
}

// Features fills row with the features of the demand at step j, the
// Helios artifact's (CES_Philly.py, feature_engineering): the calendar of
// the step (pandas' fields: dayofweek 0 = Monday, ISO week), the mean,
// median and sample standard deviation of the demand over 30 min and 1 h
// windows ending one day before j, the demand 3 h before j and a softened
// one (½·x[j−3h] + ¼·(x[j−3h−1] + x[j−3h+1])). x(k) is the demand at step
// k; the caller decides whether it is measured or forecast.
//
// The artifact's code shifts the windows by period//24 steps, which at 10
// minutes is one hour, not the day its comment says; in its replay that
// lets a forecast made for 10 hours ahead see demand 9 hours in the
// future. Fairway shifts by the day, so a forecast up to a day ahead needs
// no demand it could not have measured.
func Features(t time.Time, j int, x func(int) float64, l Lags, row []float32) {
	_, week := t.ISOWeek()
	wd := (int(t.Weekday()) + 6) % 7
	row[0], row[1], row[2] = float32(t.Year()), float32(t.Month()), float32(t.Day())
	row[3], row[4], row[5] = float32(t.Hour()), float32(t.Minute()), float32(wd)
	row[6], row[7] = float32(t.YearDay()), float32(week)
	var buf [64]float64
	for k, w := range []int{l.Short, l.Long} {
		v := buf[:0]
		for q := j - l.Day - w + 1; q <= j-l.Day; q++ {
			v = append(v, x(q))
		}
		mean, std := meanStd(v)
		row[8+3*k], row[9+3*k], row[10+3*k] = float32(mean), float32(median(v)), float32(std)
	}
	r := j - l.Recent
	row[14] = float32(x(r))
	row[15] = float32(0.5*x(r) + 0.25*(x(r-1)+x(r+1)))
}

// FirstFeatureStep is the first step whose features need no step before
// 0.
func (l Lags) FirstFeatureStep() int { return max(l.Day+l.Long-1, l.Recent+1) }

func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1)) // pandas' rolling std: ddof 1
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// GBTForecaster is the artifact's forecaster with Fairway's GBT learner in
// place of LightGBM. Beyond the 3 h lag a forecast is recursive: the lag
// features of a step more than 3 h ahead are the forecaster's own earlier
// predictions, because the measured value does not exist yet.
type GBTForecaster struct {
	Model *gbt.Model
	Lags  Lags
	// Delta: the model predicts the change from the demand 3 h earlier,
	// not the demand itself.
	Delta bool
	// Drop lists feature columns held at 0 (left out of the fit).
	Drop []int
	// Variant names the choice of Delta and Drop in tables.
	Variant string
}

// CalendarAbsolute are the calendar columns a month of history cannot
// teach (year, month, day, dayofyear, week: a test month's values were never
// seen in training), the ones GBTVariants may drop.
var CalendarAbsolute = []int{0, 1, 2, 6, 7}

// GBTVariants are the forecaster shapes Evaluate chooses among on the
// validation days: the artifact's (every feature, the demand as target),
// the change from 3 h earlier as target, and that without the absolute
// calendar.
func GBTVariants() []GBTForecaster {
	return []GBTForecaster{
		{Variant: "artifact"},
		{Variant: "delta", Delta: true},
		{Variant: "delta, hour/minute/weekday calendar", Delta: true, Drop: CalendarAbsolute},
	}
}

// predict is the model's demand at step j from the features in row.
func (f *GBTForecaster) predict(row []float32) float64 {
	for _, k := range f.Drop {
		row[k] = 0
	}
	v := float64(f.Model.Predict(row))
	if f.Delta {
		v += float64(row[14])
	}
	return max(v, 0)
}

// Name implements Forecaster.
func (f *GBTForecaster) Name() string { return "gbt" }

// Forecast implements Forecaster.
func (f *GBTForecaster) Forecast(s *Series, now int, out []float64) {
	x := func(k int) float64 {
		if k <= now {
			return float64(s.Active[k])
		}
		return out[k-now-1]
	}
	var row [NumFeatures]float32
	for h := 1; h <= len(out); h++ {
		j := now + h
		Features(s.Time(j), j, x, f.Lags, row[:])
		out[h-1] = f.predict(row[:])
	}
}

// Anchored is a GBT forecast shifted, at every lead, by the model's error
// at the issue step: its prediction for step now from measured features
// against the demand measured there. The GBT's freshest lag is 3 h old,
// so its level misses what happened since; its errors persist from one
// step to the next, so the last one is the best guess of the next.
type Anchored struct{ F *GBTForecaster }

// Name implements Forecaster.
func (a Anchored) Name() string { return "gbt anchored" }

// Forecast implements Forecaster. now must be at least
// a.F.Lags.FirstFeatureStep().
func (a Anchored) Forecast(s *Series, now int, out []float64) {
	a.F.Forecast(s, now, out)
	var row [NumFeatures]float32
	Features(s.Time(now), now, func(k int) float64 { return float64(s.Active[k]) }, a.F.Lags, row[:])
	r := float64(s.Active[now]) - a.F.predict(row[:])
	for h := range out {
		out[h] = max(out[h]+r, 0)
	}
}

// Seasonal is the seasonal-naive forecaster: the demand one Period
// earlier (a day: same time yesterday; a week: same time last week). Beyond
// one period ahead it repeats its own forecast.
type Seasonal struct {
	Label  string
	Period int // in steps
}

// Name implements Forecaster.
func (f Seasonal) Name() string { return f.Label }

// Forecast implements Forecaster.
func (f Seasonal) Forecast(s *Series, now int, out []float64) {
	for h := 1; h <= len(out); h++ {
		k := now + h - f.Period
		switch {
		case k > now:
			out[h-1] = out[k-now-1]
		case k >= 0:
			out[h-1] = float64(s.Active[k])
		default:
			out[h-1] = float64(s.Active[0])
		}
	}
}

// TrainGBT fits the GBT forecaster on the steps [lo, hi) of s, with
// features from measured demand (every window lies before the target).
// Steps before lags.FirstFeatureStep() are left out.
func TrainGBT(s *Series, lo, hi int, l Lags, cfg gbt.Config, opt GBTForecaster) (*GBTForecaster, error) {
	lo = max(lo, l.FirstFeatureStep())
	if hi-lo < 2*max(cfg.MinLeaf, 1) {
		return nil, fmt.Errorf("train forecaster: %d steps to learn from, want at least %d", max(hi-lo, 0), 2*max(cfg.MinLeaf, 1))
	}
	x := func(k int) float64 { return float64(s.Active[k]) }
	rows := make([]float32, 0, (hi-lo)*NumFeatures)
	y := make([]float32, 0, hi-lo)
	var row [NumFeatures]float32
	for j := lo; j < hi; j++ {
		Features(s.Time(j), j, x, l, row[:])
		for _, k := range opt.Drop {
			row[k] = 0
		}
		rows = append(rows, row[:]...)
		target := float32(s.Active[j])
		if opt.Delta {
			target -= row[14]
		}
		y = append(y, target)
	}
	t := &gbt.Trainer{Config: cfg}
	opt.Model, opt.Lags = t.Train(rows, y, NumFeatures), l
	return &opt, nil
}

// Errors are a forecast's errors over a set of steps.
type Errors struct {
	RMSE  float64
	SMAPE float64 // percent: mean of 2·|p−a|/(|p|+|a|), 0 where both are 0
	N     int
}

// Score compares predictions p with actual a.
func Score(p, a []float64) Errors {
	var se, sm float64
	for i := range p {
		d := p[i] - a[i]
		se += d * d
		if den := math.Abs(p[i]) + math.Abs(a[i]); den > 0 {
			sm += 2 * math.Abs(d) / den
		}
	}
	n := float64(len(p))
	if len(p) == 0 {
		return Errors{}
	}
	return Errors{RMSE: math.Sqrt(se / n), SMAPE: 100 * sm / n, N: len(p)}
}

// Forecasts holds, for every issue step i in [Lo, Hi), the forecast made
// at i for steps i+1..i+Horizon.
type Forecasts struct {
	Lo, Hi, Horizon int
	v               []float64
}

// Issue runs f at every step in [lo, hi) for horizon steps ahead.
func Issue(f Forecaster, s *Series, lo, hi, horizon int) *Forecasts {
	fc := &Forecasts{Lo: lo, Hi: hi, Horizon: horizon, v: make([]float64, (hi-lo)*horizon)}
	for i := lo; i < hi; i++ {
		f.Forecast(s, i, fc.At(i))
	}
	return fc
}

// At is the forecast issued at step i: At(i)[h-1] is for step i+h.
func (fc *Forecasts) At(i int) []float64 {
	k := (i - fc.Lo) * fc.Horizon
	return fc.v[k : k+fc.Horizon]
}

// Lead scores the forecasts made h steps ahead for the target steps
// [lo, hi): each target j's prediction is the one issued at j−h.
func (fc *Forecasts) Lead(s *Series, lo, hi, h int) Errors {
	var p, a []float64
	for j := lo; j < hi; j++ {
		p = append(p, fc.At(j - h)[h-1])
		a = append(a, float64(s.Active[j]))
	}
	return Score(p, a)
}
