package power

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/policy/predict/gbt"
)

// EvalConfig is the offline protocol of `fairway power eval`.
type EvalConfig struct {
	// Step is the forecaster's and the predictive rules' step: the
	// sequence is resampled to its maxima (the artifact's 10 minutes), and
	// the rules decide at the end of each. The rules are replayed against
	// the demand of every minute.
	Step time.Duration
	// Resume is how long a powered-down node takes to become usable
	// (slurm.conf ResumeTimeout), for every rule.
	Resume time.Duration
	// TrainUntil is the first instant not trained on; the last ValidDays
	// before it choose the forecaster's size, then it is refit on all of it.
	TrainUntil time.Time
	// TestFrom and TestUntil bound the replayed steps, [TestFrom, TestUntil).
	TestFrom, TestUntil time.Time
	ValidDays           int
	Buffers             []int
	SuspendTimes        []time.Duration
	// IdleAfter are the hybrid rule's idle times, a parameter of its curve
	// with the buffer.
	IdleAfter []time.Duration
	// History, Future and Keep are the artifact's rule, always replayed;
	// Buffers vary.
	History, Future, Keep int
	// Family is the predictive settings searched on the validation days;
	// the one whose curve best dominates the idle-time rule there is
	// replayed on the test days next to the artifact's. Nil means
	// DefaultFamily(), built only when Evaluate runs: the grid is large and
	// every fairway process builds the command line's defaults.
	Family []Setting
	// TreeChoices are the GBT sizes, and Variants the shapes, tried on the
	// validation days.
	TreeChoices []int
	Variants    []GBTForecaster
	// Pick is how each idle-time setting's row is chosen on the validation
	// days: the first criterion gives the verdict; each other one is
	// replayed on the test days too, for comparison (EvalResult.Compared).
	Pick []PickCriterion
	GBT  gbt.Config
	// Progress, when set, is told each stage as it starts.
	Progress func(stage string)
}

// DefaultEvalConfig is the artifact's split for Philly (train through
// 2017-11-30, test 2017-12-01 to 12-14) and settings.
func DefaultEvalConfig() EvalConfig {
	day := func(m time.Month, d int) time.Time { return time.Date(2017, m, d, 0, 0, 0, 0, time.UTC) }
	return EvalConfig{
		Step: 10 * time.Minute, Resume: 5 * time.Minute,
		TrainUntil: day(12, 1), TestFrom: day(12, 1), TestUntil: day(12, 15), ValidDays: 30,
		Buffers:      []int{0, 1, 2, 3, 5, 10, 20, 30, 40},
		SuspendTimes: []time.Duration{10 * time.Minute, 30 * time.Minute, 60 * time.Minute},
		// Every minute near each default SuspendTime, coarser between.
		IdleAfter: minutesOf(2, 5, 8, 9, 10, 15, 20, 25, 27, 28, 29, 30, 40, 50, 55, 58, 59, 60),
		History:   2, Future: 30, Keep: 10,
		TreeChoices: []int{10, 25, 50, 100, 200},
		Variants:    GBTVariants(),
		Pick:        []PickCriterion{PickMargin},
		// Row subsampling 0.85 as the artifact's bagging_fraction.
		GBT: gbt.Config{Depth: 6, Rate: 0.1, MinLeaf: 20, Subsample: 0.85},
	}
}

// nearSuspend is the hybrid's idle times with, for each SuspendTime T,
// T, T−1m and T−2m added where missing (sorted, each once): the hybrid
// can only keep as many node-hours off as Slurm's rule at T with an idle
// time at or just below T, whatever --hybrid-idle lists. The default idle
// times hold those of the default SuspendTimes already.
func nearSuspend(idle, suspend []time.Duration) []time.Duration {
	out := slices.Clone(idle)
	for _, t := range suspend {
		for _, d := range []time.Duration{t, t - time.Minute, t - 2*time.Minute} {
			if d > 0 && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	if len(out) == len(idle) {
		return idle
	}
	slices.Sort(out)
	return out
}

func minutesOf(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, m := range v {
		out[i] = time.Duration(m) * time.Minute
	}
	return out
}

// ForecastRow is one forecaster's error at one lead.
type ForecastRow struct {
	Forecaster string
	Lead       string // e.g. "3h", "1d", "10m-5h" (the mean over the rule's window)
	Errors
}

// RuleRow is one rule's replay over the test steps.
type RuleRow struct {
	Metrics
	Kind string // "predictive", "idle-time", "reference"
	// parts is the replay summed per day, on the validation days only.
	parts   []partSum
	Setting string // the predictive family's point, without the buffer
	Buffer  int
	Suspend time.Duration
	// IdleAfter is a hybrid row's idle time.
	IdleAfter time.Duration
	Forecast  string // the forecaster driving a predictive rule
}

// Verdict answers, for one idle-time setting, whether a predictive setting
// has at least as many node-hours off and less lack.
type Verdict struct {
	Idle    string
	Witness string // the best such predictive setting; "" when none
	Holds   bool
	// ValidWitness is the chosen setting's row (buffer, idle time) that
	// dominated this idle-time setting on the validation days ("" when
	// none did), and ValidHolds whether it still does on the test days:
	// the verdict with the buffer too fixed before the test. Same says
	// whether it is the test days' Witness.
	ValidWitness string
	ValidHolds   bool
	Same         bool
}

// EvalResult is what Evaluate measured.
type EvalResult struct {
	TrainSteps, ValidSteps, TestSteps int
	Step, Resume                      time.Duration
	Filled                            int
	// FilledMinutes of Minutes are minutes no row of the sequence fell in
	// (a sequence with a row every 5 minutes leaves 4 in 5): the rules
	// are replayed per minute, so their figures rest on held values there.
	FilledMinutes, Minutes int
	Trees                  int     // the GBT size chosen on validation
	Variant                string  // the GBT shape chosen on validation
	ValidRMSE              float64 // its validation RMSE at the 3 h lead
	// Sigma[h−1] and SigmaAnchored[h−1] are the validation forecasts' RMSE
	// h steps ahead (plain and anchored GBT), the envelope's margin unit.
	Sigma, SigmaAnchored []float64
	// TrustLimit is the largest distance between the anchored and the
	// plain forecast's first lead over the validation days: beyond it on
	// the test days the early power-down does not trust the forecast
	// (driver.trust).
	TrustLimit float64
	// Chosen is the family setting chosen on the validation days, out of
	// Searched; Validation holds its rows, the artifact's and the
	// idle-time rule's there.
	Chosen     Setting
	Searched   int
	Validation []RuleRow
	// Ranked is every searched setting's validation score, best first.
	Ranked []RankedSetting
	// MaxNodeHoursOff is Σ (total − active) over the test minutes: no
	// rule keeps more off without lacking.
	MaxNodeHoursOff     float64
	TestFrom, TestUntil time.Time
	Forecasts           []ForecastRow
	Rules               []RuleRow
	Verdicts            []Verdict
	// Dominates says whether, for every idle-time setting, the row picked
	// for it on the validation days (Picks) dominates it on the test days.
	Dominates bool
	// Picks are, per idle-time setting, the family's row (setting, buffer,
	// idle time) that dominated it on the validation days with the most
	// margin, and that row replayed on the test days.
	Picks []Pick
	// Compared is, for each criterion of EvalConfig.Pick (the verdict's
	// first), its picks replayed on the test days.
	Compared []CriterionPicks
}

// Pick is the row chosen on the validation days against one idle-time
// setting, out of every row of every family setting, and how it did on
// the test days.
type Pick struct {
	Idle        string
	Setting     Setting
	Buffer      int
	IdleAfter   time.Duration
	Valid, Test RuleRow
	// ValidMargin is the smaller of its relative node-hours-off gain and
	// its relative lack cut over the idle-time setting on validation.
	ValidMargin, ValidGain, ValidCut float64
	// Gain and Cut are the same on the test days; Holds whether it
	// dominates there.
	Gain, Cut float64
	Holds     bool
}

// pickMargin is how far p dominates idle: the smaller of its relative
// node-hours-off gain and relative lack cut (negative when it does not).
func pickMargin(p, idle RuleRow) (margin, gain, cut float64) {
	gain = (p.NodeHoursOff - idle.NodeHoursOff) / max(idle.NodeHoursOff, 1)
	cut = (idle.LackNodeMinutes - p.LackNodeMinutes) / max(idle.LackNodeMinutes, 1)
	if !dominates(p, idle) {
		return math.Min(math.Min(gain, cut), -1e-12), gain, cut
	}
	return math.Min(gain, cut), gain, cut
}

// Evaluate runs the offline protocol on a sequence: fit the forecaster on
// the training steps of its cfg.Step maxima, score it and the naive
// baselines on the test steps at the same leads, then replay the
// predictive rule at every buffer (deciding at the end of each step from
// forecasts issued from what was measured by then) and the idle-time rule
// at every SuspendTime, both against the demand of every minute.
func Evaluate(samples []Sample, cfg EvalConfig) (*EvalResult, error) {
	if cfg.Step <= 0 || cfg.Step%time.Minute != 0 {
		return nil, fmt.Errorf("evaluate: step %v: want a whole number of minutes", cfg.Step)
	}
	if cfg.Resume <= 0 {
		return nil, fmt.Errorf("evaluate: resume time %v: want a positive duration", cfg.Resume)
	}
	s, err := Resample(samples, cfg.Step)
	if err != nil {
		return nil, err
	}
	fine, err := Resample(samples, time.Minute)
	if err != nil {
		return nil, err
	}
	if cfg.Family == nil {
		cfg.Family = DefaultFamily()
	}
	if fine.Pending != nil {
		cfg.Family = withQueue(cfg.Family)
	}
	l, err := LagsFor(s.Step)
	if err != nil {
		return nil, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if cfg.Future < 1 || cfg.History < 1 || cfg.Keep < 0 {
		return nil, fmt.Errorf("history %d, future %d, keep %d: want history and future at least 1", cfg.History, cfg.Future, cfg.Keep)
	}
	if len(cfg.Buffers) == 0 || len(cfg.SuspendTimes) == 0 || len(cfg.TreeChoices) == 0 || len(cfg.Variants) == 0 || len(cfg.Pick) == 0 {
		return nil, errors.New("evaluate: want at least one buffer, one SuspendTime, one tree count, one forecaster variant and one pick criterion")
	}
	for _, c := range cfg.Pick {
		if _, err := ParsePickCriterion(string(c)); err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
	}
	for _, st := range cfg.Family {
		if st.Hybrid && len(cfg.IdleAfter) == 0 {
			return nil, fmt.Errorf("evaluate: the family has the hybrid %s, want at least one idle time", st)
		}
	}
	for _, d := range cfg.IdleAfter {
		if d <= 0 {
			return nil, fmt.Errorf("evaluate: hybrid idle time %v: want a positive duration", d)
		}
	}
	cfg.IdleAfter = nearSuspend(cfg.IdleAfter, cfg.SuspendTimes)
	trainHi := min(s.Index(cfg.TrainUntil), s.Len())
	testLo, testHi := s.Index(cfg.TestFrom), s.Index(cfg.TestUntil)
	horizon := max(l.Day, 2*cfg.Future)
	maxIdle := time.Duration(0)
	for _, d := range cfg.IdleAfter {
		maxIdle = max(maxIdle, d)
	}
	for _, st := range cfg.Family {
		horizon = max(horizon, st.reach(cfg.Step, cfg.Resume, maxIdle))
	}
	artifact := ArtifactSetting(cfg.History, cfg.Future, cfg.Keep)
	switch {
	case testLo < trainHi:
		return nil, fmt.Errorf("test from %s is before train until %s: the test must not overlap the training", cfg.TestFrom.Format(time.DateTime), cfg.TrainUntil.Format(time.DateTime))
	case testHi <= testLo:
		return nil, fmt.Errorf("test %s to %s: empty", cfg.TestFrom.Format(time.DateTime), cfg.TestUntil.Format(time.DateTime))
	case testLo < 0 || testHi > s.Len():
		return nil, fmt.Errorf("test %s to %s: outside the sequence (%s to %s)", cfg.TestFrom.Format(time.DateTime), cfg.TestUntil.Format(time.DateTime),
			s.Start.Format(time.DateTime), s.Time(s.Len()).Format(time.DateTime))
	case testLo-l.Day < 7*l.Day:
		return nil, fmt.Errorf("test from %s: want at least 8 days of sequence before it (the weekly baseline and a day of forecasts)", cfg.TestFrom.Format(time.DateTime))
	}
	validHi := trainHi
	validLo := max(validHi-cfg.ValidDays*l.Day, 0)
	if validLo-l.FirstFeatureStep() < 7*l.Day {
		return nil, fmt.Errorf("train until %s: want at least %d days of training before the %d validation days (the sequence starts %s; fewer validation days, --validation-days, or a later split need less)",
			cfg.TrainUntil.Format(time.DateTime), 7+1, cfg.ValidDays, s.Start.Format(time.DateTime))
	}
	res := &EvalResult{Step: s.Step, Resume: cfg.Resume, Filled: s.Filled, FilledMinutes: fine.Filled, Minutes: fine.Len(), TestFrom: s.Time(testLo), TestUntil: s.Time(testHi),
		TrainSteps: trainHi - l.FirstFeatureStep(), ValidSteps: validHi - validLo, TestSteps: testHi - testLo}

	// Choose the size on the validation days (the artifact's early stopping
	// on November), at the lead whose features are all measured.
	best := math.Inf(1)
	var chosen GBTForecaster
	var vmodel *GBTForecaster // the chosen shape fitted before validation
	for _, v := range cfg.Variants {
		for _, trees := range cfg.TreeChoices {
			progress(fmt.Sprintf("fitting %s, %d trees, on the steps before validation", v.Variant, trees))
			c := cfg.GBT
			c.Trees = trees
			f, err := TrainGBT(s, 0, validLo, l, c, v)
			if err != nil {
				return nil, err
			}
			if e := measuredLead(f, s, validLo, validHi, l); e.RMSE < best {
				best, res.Trees, chosen, vmodel = e.RMSE, trees, v, f
			}
		}
	}
	res.ValidRMSE, res.Variant = best, chosen.Variant
	progress(fmt.Sprintf("refitting %d trees on all training steps", res.Trees))
	c := cfg.GBT
	c.Trees = res.Trees
	model, err := TrainGBT(s, 0, trainHi, l, c, chosen)
	if err != nil {
		return nil, err
	}

	if err := chooseSetting(res, s, fine, vmodel, validLo, validHi, horizon, l, cfg, progress); err != nil {
		return nil, err
	}

	issueLo := testLo - l.Day
	forecasters := []Forecaster{model, Anchored{F: model}, Seasonal{Label: "same time yesterday", Period: l.Day},
		Seasonal{Label: "same time last week", Period: 7 * l.Day}, Seasonal{Label: "last value", Period: 1}}
	issued := map[string]*Forecasts{}
	for _, f := range forecasters {
		progress("forecasting with " + f.Name())
		issued[f.Name()] = Issue(f, s, issueLo, testHi, horizon)
	}
	lead := func(name, label string, h int) {
		res.Forecasts = append(res.Forecasts, ForecastRow{Forecaster: name, Lead: label, Errors: issued[name].Lead(s, testLo, testHi, h)})
	}
	window := func(name string) {
		var p, a []float64
		for i := testLo; i < testHi; i++ {
			fc := issued[name].At(i)
			for h := 1; h < cfg.Future && i+h < testHi; h++ {
				p = append(p, fc[h-1])
				a = append(a, float64(s.Active[i+h]))
			}
		}
		res.Forecasts = append(res.Forecasts, ForecastRow{Forecaster: name, Lead: fmt.Sprintf("%s-%s", shortDuration(s.Step), shortDuration(time.Duration(cfg.Future-1)*s.Step)), Errors: Score(p, a)})
	}
	// A seasonal forecast is the same at every lead up to its period, so
	// each naive forecaster shows the leads where it differs.
	lead("gbt", "3h", l.Recent)
	lead("gbt", "1d", l.Day)
	window("gbt")
	lead("gbt anchored", "10m", 1)
	lead("gbt anchored", "3h", l.Recent)
	window("gbt anchored")
	for _, name := range []string{"same time yesterday", "same time last week"} {
		lead(name, "1d", l.Day)
		window(name)
	}
	lead("last value", "10m", 1)
	lead("last value", "3h", l.Recent)
	window("last value")

	progress("replaying the power rules")
	test := replayer{decide: s.Slice(testLo, testHi), demand: minutes(s, fine, testLo, testHi), resume: cfg.Resume}
	for i, a := range test.demand.Active {
		res.MaxNodeHoursOff += float64(test.demand.Total[i]-a) * test.demand.Step.Hours()
	}
	from := func(fc *Forecasts) func(int) []float64 {
		return func(i int) []float64 { return fc.At(testLo + i) }
	}
	drive := driver{plain: issued["gbt"], anchored: issued["gbt anchored"], lo: testLo, sigma: res.Sigma, sigmaAnchored: res.SigmaAnchored, trustLimit: res.TrustLimit}
	settings := []Setting{artifact}
	if res.Chosen != artifact {
		settings = append(settings, res.Chosen)
	}
	var chosenT []RuleRow // the chosen setting's test rows, in its validation rows' order
	for _, st := range settings {
		rows, err := replayCurve(st, artifact, cfg.Buffers, cfg.IdleAfter, l.Long, drive, test)
		if err != nil {
			return nil, err
		}
		if st == res.Chosen {
			chosenT = rows
		}
		res.Rules = append(res.Rules, rows...)
	}
	res.Rules = append(res.Rules, test.idleTime(cfg.SuspendTimes)...)
	// References: the artifact's buffer driven by the naive forecast and by
	// the measured future (what a perfect forecast would give), and no
	// power saving at all.
	oracle := &Forecasts{Lo: testLo, Hi: testHi, Horizon: horizon, v: make([]float64, (testHi-testLo)*horizon)}
	for i := testLo; i < testHi; i++ {
		for h, fc := 1, oracle.At(i); h <= horizon; h++ {
			fc[h-1] = float64(s.Active[min(i+h, s.Len()-1)])
		}
	}
	for _, ref := range []struct {
		name string
		fc   *Forecasts
	}{{"same time yesterday", issued["same time yesterday"]}, {"measured future", oracle}} {
		p := ArtifactPredictive(from(ref.fc))
		p.WarmUp = l.Long
		p.Label = fmt.Sprintf("artifact, buffer %d", p.Buffer)
		m, _, err := test.rule(p)
		if err != nil {
			return nil, err
		}
		res.Rules = append(res.Rules, RuleRow{Metrics: m, Kind: "reference", Buffer: p.Buffer, Forecast: ref.name})
	}
	m, _, err := test.rule(&alwaysOn{})
	if err != nil {
		return nil, err
	}
	res.Rules = append(res.Rules, RuleRow{Metrics: m, Kind: "reference"})

	// Each idle-time setting's validation pick, replayed on the test days.
	shown := map[string]bool{}
	for _, r := range res.Rules {
		shown[r.Rule] = true
	}
	var picked []RuleRow
	replayed := map[string]RuleRow{}
	for c := range res.Compared {
		for k := range res.Compared[c].Picks {
			pk := &res.Compared[c].Picks[k]
			if pk.Valid.Rule == "" {
				continue
			}
			rows, ok := replayed[pk.Valid.Rule]
			if !ok {
				if rows, err = replayPoint(pk.Setting, artifact, pk.Buffer, pk.IdleAfter, l.Long, drive, test); err != nil {
					return nil, err
				}
				replayed[pk.Valid.Rule] = rows
			}
			pk.Test = rows
			for _, r := range res.Rules {
				if r.Kind == "idle-time" && r.Rule == pk.Idle {
					_, pk.Gain, pk.Cut = pickMargin(pk.Test, r)
					pk.Holds = dominates(pk.Test, r)
				}
			}
			if c == 0 && !shown[rows.Rule] {
				shown[rows.Rule] = true
				picked = append(picked, rows)
			}
		}
		res.Compared[c].Holds = res.Compared[c].holds()
	}
	res.Picks = res.Compared[0].Picks
	res.Rules = append(picked, res.Rules...)
	res.Verdicts, _ = Dominance(res.Rules)
	res.Dominates = len(res.Picks) > 0
	for _, pk := range res.Picks {
		res.Dominates = res.Dominates && pk.Holds
	}
	// The verdict with the buffer too chosen on validation: the chosen
	// setting's validation witness for each idle-time setting, on the test.
	var idleV []RuleRow
	for _, r := range res.Validation {
		if r.Kind == "idle-time" {
			idleV = append(idleV, r)
		}
	}
	var chosenV []RuleRow
	for _, r := range res.Validation {
		if r.Kind == "predictive" && r.Setting == res.Chosen.String() {
			chosenV = append(chosenV, r)
		}
	}
	w := scoreCurve(chosenV, idleV).witness
	for k := range res.Verdicts {
		v := &res.Verdicts[k]
		var idle RuleRow
		for _, r := range res.Rules {
			if r.Kind == "idle-time" && r.Rule == v.Idle {
				idle = r
			}
		}
		for j, r := range idleV {
			if r.Rule != v.Idle || w[j] < 0 || !dominates(chosenV[w[j]], r) {
				continue
			}
			p := chosenT[w[j]]
			v.ValidWitness, v.ValidHolds = p.Rule, dominates(p, idle)
			v.Same = v.Holds && v.Witness == p.Rule
		}
	}
	return res, nil
}

// RankedSetting is one family setting's score on the validation days:
// how many idle-time settings its curve dominates there, and the sum of
// its relative node-hours-off margins (−1 for an idle-time setting no row
// lacks less than).
type RankedSetting struct {
	Setting   Setting
	Dominated int
	Margin    float64
}

// dominates says whether p keeps at least as many node-hours off as idle
// with less lack.
func dominates(p, idle RuleRow) bool {
	return p.NodeHoursOff >= idle.NodeHoursOff && p.LackNodeMinutes < idle.LackNodeMinutes
}

// driver hands a setting the forecasts issued over a replayed slice
// starting at step lo, and the margins measured on validation.
type driver struct {
	plain, anchored      *Forecasts
	lo                   int
	sigma, sigmaAnchored []float64
	// trustLimit is the largest shift (driver.shift) over the validation
	// days; negative: no guard (driver.trust).
	trustLimit float64
}

// shift is how far the anchored forecast issued at step i is from the
// plain one at the first lead: the model's error at i, the anchor.
func (d driver) shift(i int) float64 {
	return math.Abs(d.anchored.At(i)[0] - d.plain.At(i)[0])
}

// trust is the early power-down's guard for an anchored setting (nil for
// the others): the anchored forecast issued at step i is the plain one
// shifted by the model's error at i, and where that shift is beyond the
// largest the validation days saw (trustLimit), the demand has done what
// the forecast was never validated on (on Philly's test days, the
// sequence falling from 284 active nodes to 0 for 40 minutes and back),
// and the early power-down, a bet on the forecast over the rest of a
// node's idle time, is not made on it. On the validation days it never
// acts, so it changes no choice made there.
func (d driver) trust(st Setting) func(int) bool {
	if !st.Anchored || st.EarlyFrac <= 0 || d.trustLimit < 0 {
		return nil
	}
	return func(i int) bool { return d.shift(d.lo+i) <= d.trustLimit }
}

func (d driver) of(st Setting) (name string, fc func(int) []float64, sigma []float64) {
	f, name, sigma := d.plain, "gbt", d.sigma
	if st.Anchored {
		f, name, sigma = d.anchored, "gbt anchored", d.sigmaAnchored
	}
	return name, func(i int) []float64 { return f.At(d.lo + i) }, sigma
}

// replayer replays rules over one span: decide is its steps (what the
// rules and forecasts read), demand the same span a minute a step (what
// is accounted).
type replayer struct {
	decide, demand *Series
	resume         time.Duration
	// day is the demand steps of a day when the replay is summed per day
	// too (the validation days'), 0 when not.
	day int
}

// parts is a fresh per-day sum, or nil when not asked for.
func (p replayer) parts() *parts {
	if p.day <= 0 {
		return nil
	}
	return &parts{every: p.day}
}

func (pt *parts) days() []partSum {
	if pt == nil {
		return nil
	}
	return pt.sums
}

func (p replayer) rule(r Rule) (Metrics, []partSum, error) {
	pt := p.parts()
	m, err := replayRule(r, p.decide, p.demand, p.resume, nil, pt)
	return m, pt.days(), err
}

func (p replayer) hybrid(h *Hybrid) (Metrics, []partSum, error) {
	pt := p.parts()
	m, err := replayHybrid(h, p.decide, p.demand, p.resume, nil, pt)
	return m, pt.days(), err
}

func (p replayer) idleTime(suspend []time.Duration) []RuleRow {
	var out []RuleRow
	for _, d := range suspend {
		pt := p.parts()
		m := replayIdleTime(d, p.demand, p.resume, nil, pt)
		out = append(out, RuleRow{Metrics: m, Kind: "idle-time", Suspend: d, parts: pt.days()})
	}
	return out
}

// minutes is fine's minutes covering s's steps [lo, hi), starting at the
// same instant; minutes past fine's end carry its last value forward
// (the last step of s may reach past the last sample).
func minutes(s, fine *Series, lo, hi int) *Series {
	a, b := fine.Index(s.Time(lo)), fine.Index(s.Time(hi))
	if b <= fine.Len() {
		return fine.Slice(a, b)
	}
	out := &Series{Start: fine.Time(a), Step: fine.Step, Active: slices.Clone(fine.Active[a:]), Total: slices.Clone(fine.Total[a:])}
	if fine.Pending != nil {
		out.Pending = slices.Clone(fine.Pending[a:])
	}
	for len(out.Active) < b-a {
		out.Active = append(out.Active, out.Active[len(out.Active)-1])
		out.Total = append(out.Total, out.Total[len(out.Total)-1])
		if out.Pending != nil {
			out.Pending = append(out.Pending, out.Pending[len(out.Pending)-1])
		}
	}
	return out
}

// replayCurve replays one family setting at every buffer, and a hybrid
// one at every idle time too.
func replayCurve(st, artifact Setting, buffers []int, idleAfter []time.Duration, warmUp int, d driver, p replayer) ([]RuleRow, error) {
	name, fc, sigma := d.of(st)
	var out []RuleRow
	if st.Hybrid {
		for _, t := range idleAfter {
			for _, b := range buffers {
				h := st.HybridRule(t, b, fc, sigma)
				h.EarlyTrust = d.trust(st)
				m, days, err := p.hybrid(h)
				if err != nil {
					return nil, err
				}
				out = append(out, RuleRow{Metrics: m, Kind: "predictive", Setting: st.String(), Buffer: b, IdleAfter: t, Forecast: name, parts: days})
			}
		}
		return out, nil
	}
	for _, b := range buffers {
		r := st.Rule(b, warmUp, fc, sigma)
		if st == artifact {
			r.(*Predictive).Label = fmt.Sprintf("artifact, buffer %d", b)
		}
		m, days, err := p.rule(r)
		if err != nil {
			return nil, err
		}
		out = append(out, RuleRow{Metrics: m, Kind: "predictive", Setting: st.String(), Buffer: b, Forecast: name, parts: days})
	}
	return out, nil
}

// replayPoint replays one family setting at one buffer (and, for the
// hybrid, one idle time).
func replayPoint(st, artifact Setting, buffer int, idleAfter time.Duration, warmUp int, d driver, p replayer) (RuleRow, error) {
	var idle []time.Duration
	if st.Hybrid {
		idle = []time.Duration{idleAfter}
	}
	rows, err := replayCurve(st, artifact, []int{buffer}, idle, warmUp, d, p)
	if err != nil {
		return RuleRow{}, err
	}
	return rows[0], nil
}

// chooseSetting picks the family's setting on the validation days
// [validLo, validHi), driven by vmodel (fitted before them): the one
// whose curve over the buffers dominates the most idle-time settings
// there, then by the largest node-hours-off margin. It also measures the
// per-lead RMSE the envelope's margin is made of. No test step is read.
func chooseSetting(res *EvalResult, s, fine *Series, vmodel *GBTForecaster, validLo, validHi, horizon int, l Lags, cfg EvalConfig, progress func(string)) error {
	if len(cfg.Family) == 0 {
		return errors.New("evaluate: want at least one predictive setting in the family")
	}
	progress("forecasting the validation days")
	if validHi-validLo <= horizon {
		return fmt.Errorf("evaluate: %d validation steps, want more than the forecast horizon %d", validHi-validLo, horizon)
	}
	d := driver{plain: Issue(vmodel, s, validLo, validHi, horizon), anchored: Issue(Anchored{F: vmodel}, s, validLo, validHi, horizon), lo: validLo}
	for i := validLo; i < validHi; i++ {
		res.TrustLimit = max(res.TrustLimit, d.shift(i))
	}
	d.trustLimit = res.TrustLimit
	res.Sigma, res.SigmaAnchored = make([]float64, horizon), make([]float64, horizon)
	for h := 1; h <= horizon; h++ {
		res.Sigma[h-1] = d.plain.Lead(s, validLo+h, validHi, h).RMSE
		res.SigmaAnchored[h-1] = d.anchored.Lead(s, validLo+h, validHi, h).RMSE
	}
	d.sigma, d.sigmaAnchored = res.Sigma, res.SigmaAnchored
	valid := replayer{decide: s.Slice(validLo, validHi), demand: minutes(s, fine, validLo, validHi), resume: cfg.Resume, day: int(24 * time.Hour / fine.Step)}
	idle := valid.idleTime(cfg.SuspendTimes)
	artifact := ArtifactSetting(cfg.History, cfg.Future, cfg.Keep)
	progress(fmt.Sprintf("replaying %d settings × %d buffers on the validation days", len(cfg.Family), len(cfg.Buffers)))
	var bestCurve, artifactCurve []RuleRow
	best := curveScore{dominated: -1}
	var all []candidate
	for _, st := range cfg.Family {
		curve, err := replayCurve(st, artifact, cfg.Buffers, cfg.IdleAfter, l.Long, d, valid)
		if err != nil {
			return err
		}
		if st == artifact {
			artifactCurve = curve
		}
		for _, p := range curve {
			all = append(all, candidate{st: st, row: p})
		}
		sc := scoreCurve(curve, idle)
		res.Ranked = append(res.Ranked, RankedSetting{Setting: st, Dominated: sc.dominated, Margin: sc.margin})
		if sc.better(best) {
			best, res.Chosen, bestCurve = sc, st, curve
		}
	}
	slices.SortStableFunc(res.Ranked, func(a, b RankedSetting) int {
		if a.Dominated != b.Dominated {
			return b.Dominated - a.Dominated
		}
		return cmp.Compare(b.Margin, a.Margin)
	})
	if artifactCurve == nil {
		var err error
		if artifactCurve, err = replayCurve(artifact, artifact, cfg.Buffers, cfg.IdleAfter, l.Long, d, valid); err != nil {
			return err
		}
	}
	for _, c := range cfg.Pick {
		res.Compared = append(res.Compared, CriterionPicks{Criterion: c, Picks: pickRows(c, all, idle)})
	}
	res.Picks = res.Compared[0].Picks
	res.Searched = len(cfg.Family)
	res.Validation = append(res.Validation, artifactCurve...)
	if res.Chosen != artifact {
		res.Validation = append(res.Validation, bestCurve...)
	}
	for _, pk := range res.Picks {
		if pk.Valid.Rule != "" && !slices.ContainsFunc(res.Validation, func(r RuleRow) bool { return r.Rule == pk.Valid.Rule }) {
			res.Validation = append(res.Validation, pk.Valid)
		}
	}
	res.Validation = append(res.Validation, idle...)
	return nil
}

// measuredLead scores f at the 3 h lead on [lo, hi) with features from
// measured demand (every feature of the lead lies at or before the issue).
func measuredLead(f *GBTForecaster, s *Series, lo, hi int, l Lags) Errors {
	x := func(k int) float64 { return float64(s.Active[k]) }
	var row [NumFeatures]float32
	p, a := make([]float64, 0, hi-lo), make([]float64, 0, hi-lo)
	for j := lo; j < hi; j++ {
		Features(s.Time(j), j, x, l, row[:])
		p = append(p, f.predict(row[:]))
		a = append(a, float64(s.Active[j]))
	}
	return Score(p, a)
}

// alwaysOn is no power saving: every node up.
type alwaysOn struct{ s *Series }

func (*alwaysOn) Name() string              { return "always on" }
func (a *alwaysOn) Reset(s *Series)         { a.s = s }
func (a *alwaysOn) Powered(i, prev int) int { return a.s.Total[i] }

// Dominance checks, for every idle-time row, whether a predictive row has
// at least as many node-hours off and strictly less lack (node-minutes);
// the witness is the one with the most node-hours off.
func Dominance(rows []RuleRow) ([]Verdict, bool) {
	var out []Verdict
	all := true
	for _, idle := range rows {
		if idle.Kind != "idle-time" {
			continue
		}
		v := Verdict{Idle: idle.Rule}
		bestOff := -1.0
		for _, p := range rows {
			if p.Kind != "predictive" {
				continue
			}
			if dominates(p, idle) && p.NodeHoursOff > bestOff {
				bestOff, v.Witness, v.Holds = p.NodeHoursOff, p.Rule, true
			}
		}
		all = all && v.Holds
		out = append(out, v)
	}
	return out, all && len(out) > 0
}

// heldMinutesNote says how much of the per-minute replay rests on minutes
// the sequence has no row for, each holding the minute before: a coarser
// log (a row every 5 or 10 minutes) misses the demand that came and went
// between rows, so its lack and power-ups are not those of a per-minute log.
// A few gaps in a per-minute log are not worth a line.
func heldMinutesNote(filled, minutes int) string {
	if minutes == 0 || filled*100 < minutes {
		return ""
	}
	return fmt.Sprintf("%d of the sequence's %d minutes (%.0f%%) have no row and hold the minute before: rows further apart than a minute hide the demand between them, so lack and power-ups are counted on held values",
		filled, minutes, 100*float64(filled)/float64(minutes))
}

// WriteText writes the result as one table and the dominance verdict.
func (r *EvalResult) WriteText(w io.Writer) error { return r.write(w, false) }

// WriteBrief is WriteText with, of the predictive rows, only the
// artifact's and each idle-time setting's validation pick.
func (r *EvalResult) WriteBrief(w io.Writer) error { return r.write(w, true) }

func (r *EvalResult) write(w io.Writer, brief bool) error {
	fmt.Fprintf(w, "test %s to %s: %d steps of %s (%d training steps, %d empty steps carried forward); GBT %q, %d trees, chosen on %d validation steps before the test (RMSE %.2f at 3h)\n",
		r.TestFrom.Format(time.DateTime), r.TestUntil.Format(time.DateTime), r.TestSteps, shortDuration(r.Step), r.TrainSteps, r.Filled, r.Variant, r.Trees, r.ValidSteps, r.ValidRMSE)
	if note := heldMinutesNote(r.FilledMinutes, r.Minutes); note != "" {
		fmt.Fprintln(w, note)
	}
	fmt.Fprintf(w, "predictive setting chosen on the validation days out of %d: %s (the artifact's: %s)\n", r.Searched, r.Chosen, r.artifactName())
	fmt.Fprintf(w, "rules replayed against the demand of every minute: the trend and envelope rules decide at the end of each %s step, Slurm's idle-time rule acts on each node's idle time, the hybrid every minute on each node's idle time and the latest forecast; a resume takes %s under every rule\n",
		shortDuration(r.Step), shortDuration(r.Resume))
	fmt.Fprintf(w, "the early power-down trusts the anchored forecast where its first lead is within %.1f nodes of the plain one (the most the validation days saw)\n", r.TrustLimit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "row\tforecast\tlead\tRMSE\tSMAPE %\tmean off\tnode-h off\tutil powered\tutil cluster\tchanges/day\tups/day\tlack node-min\tlack events\t")
	for _, f := range r.Forecasts {
		fmt.Fprintf(tw, "forecast\t%s\t%s\t%.2f\t%.2f\t-\t-\t-\t-\t-\t-\t-\t-\t\n", f.Forecaster, f.Lead, f.RMSE, f.SMAPE)
	}
	keep := map[string]bool{}
	for _, v := range r.Verdicts {
		keep[v.Witness], keep[v.ValidWitness] = true, true
	}
	valid, vHidden := front(r.Validation, keep)
	test, tHidden := front(r.Rules, keep)
	if brief {
		picked := map[string]bool{}
		for _, pk := range r.Picks {
			picked[pk.Valid.Rule] = true
		}
		only := func(rows []RuleRow, artifact bool) []RuleRow {
			return slices.DeleteFunc(slices.Clone(rows), func(x RuleRow) bool {
				return x.Kind == "predictive" && !picked[x.Rule] && !(artifact && strings.HasPrefix(x.Rule, "artifact"))
			})
		}
		valid, test = only(valid, false), only(test, true)
		vHidden, tHidden = 0, 0
	}
	rows := make([]RuleRow, 0, len(valid)+len(test))
	for _, x := range valid {
		x.Rule = "validation: " + x.Rule
		rows = append(rows, x)
	}
	for _, x := range append(rows, test...) {
		fc := x.Forecast
		if fc == "" {
			fc = "-"
		}
		name := x.Rule
		if x.Kind == "reference" {
			name = "ref: " + name
		}
		fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%.1f\t%.0f\t%.1f%%\t%.1f%%\t%.1f\t%.1f\t%.0f\t%d\t\n", name, fc, x.MeanOff, x.NodeHoursOff,
			100*x.UtilPowered, 100*x.UtilCluster, x.ChangesPerDay, x.UpsPerDay, x.LackNodeMinutes, x.LackEvents)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if vHidden+tHidden > 0 {
		fmt.Fprintf(w, "hybrid rows left out (%d validation, %d test): those another row of the same setting beats on node-hours off and lack, and not a witness; --json has every row\n", vHidden, tHidden)
	}
	fmt.Fprintf(w, "most node-hours off any rule can keep on the test days without lacking (powered = demand every minute): %.0f\n", r.MaxNodeHoursOff)
	fmt.Fprintln(w, "lack: each minute, the active nodes above the powered nodes done resuming (node-minutes); lack events: runs of consecutive minutes with any lack; same for every rule")
	var parts, fixed []string
	for _, v := range r.Verdicts {
		if v.Holds {
			parts = append(parts, fmt.Sprintf("%s: yes (%s)", v.Idle, v.Witness))
		} else {
			parts = append(parts, fmt.Sprintf("%s: no", v.Idle))
		}
		switch {
		case v.ValidWitness == "":
			fixed = append(fixed, fmt.Sprintf("%s: none on validation", v.Idle))
		case v.Same:
			fixed = append(fixed, fmt.Sprintf("%s: %s holds (the same witness)", v.Idle, v.ValidWitness))
		case v.ValidHolds:
			fixed = append(fixed, fmt.Sprintf("%s: %s holds", v.Idle, v.ValidWitness))
		default:
			fixed = append(fixed, fmt.Sprintf("%s: %s fails", v.Idle, v.ValidWitness))
		}
	}
	fmt.Fprintf(w, "for reference, any row shown on the test days with ≥ node-hours off and less lack (a witness found after the fact, not the verdict): %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "with the buffer also fixed on validation (the chosen setting's validation witness, on the test days): %s\n", strings.Join(fixed, ", "))
	fmt.Fprintln(w, "per idle-time setting, the row that dominated it on the validation days with the most margin (the smaller of the relative node-hours-off gain and lack cut), out of every setting, buffer and idle time searched, on the test days:")
	for _, pk := range r.Picks {
		writePick(w, pk)
	}
	for _, cp := range r.Compared[min(1, len(r.Compared)):] {
		fmt.Fprintf(w, "pick criterion %s (compared, not the verdict): %d of %d hold on the test days\n", cp.Criterion, cp.Holds, len(cp.Picks))
		for _, pk := range cp.Picks {
			writePick(w, pk)
		}
	}
	verdict := "does not dominate"
	if r.Dominates {
		verdict = "dominates"
	}
	fmt.Fprintf(w, "verdict (validation picks on the test days): the predictive rule %s the idle-time rule\n", verdict)
	// serve runs the same nowcast (power.Nowcast) when told: say how, for
	// the picks that have one (none: no line, the table as before).
	var serveNC []string
	for _, pk := range r.Picks {
		if nc := pk.Setting.Nowcast(); nc.On() {
			serveNC = append(serveNC, fmt.Sprintf("%s: --power-nowcast %s", pk.Idle, nc.Spec()))
		}
	}
	if len(serveNC) > 0 {
		fmt.Fprintf(w, "the trend nowcast of the picks, as serve takes it: %s\n", strings.Join(serveNC, "; "))
	}
	return nil
}

// writePick writes one idle-time setting's validation pick and how it did
// on the test days.
func writePick(w io.Writer, pk Pick) {
	if pk.Valid.Rule == "" {
		fmt.Fprintf(w, "  %s: no row dominated it on validation\n", pk.Idle)
		return
	}
	verdict := "fails"
	if pk.Holds {
		verdict = "holds"
	}
	fmt.Fprintf(w, "  %s: %s (validation %+.2f%% node-h off, %+.1f%% lack): test %.0f node-h off, %.0f lack node-min (%+.2f%%, %+.1f%%): %s\n",
		pk.Idle, pk.Valid.Rule, 100*pk.ValidGain, -100*pk.ValidCut, pk.Test.NodeHoursOff, pk.Test.LackNodeMinutes, 100*pk.Gain, -100*pk.Cut, verdict)
}

func (r *EvalResult) artifactName() string {
	for _, x := range r.Validation {
		if x.Kind == "predictive" && strings.HasPrefix(x.Rule, "artifact") {
			return x.Setting
		}
	}
	return "-"
}

// front is rows without the hybrid rows that another hybrid row of the
// same setting matches or beats on both node-hours off and lack (and beats
// on one), unless keep names them; it returns how many it left out. A
// hybrid curve has a row per idle time and buffer, most of them behind
// its front.
func front(rows []RuleRow, keep map[string]bool) ([]RuleRow, int) {
	var out []RuleRow
	for _, x := range rows {
		beaten := false
		for _, y := range rows {
			if x.IdleAfter > 0 && y.IdleAfter > 0 && x.Setting == y.Setting && y.NodeHoursOff >= x.NodeHoursOff && y.LackNodeMinutes <= x.LackNodeMinutes &&
				(y.NodeHoursOff > x.NodeHoursOff || y.LackNodeMinutes < x.LackNodeMinutes) {
				beaten = true
				break
			}
		}
		if !beaten || keep[x.Rule] {
			out = append(out, x)
		}
	}
	return out, len(rows) - len(out)
}
