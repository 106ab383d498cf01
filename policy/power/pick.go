package power

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// PickCriterion is how, for one idle-time setting, one row is chosen out
// of every row searched on the validation days (setting × buffer × idle
// time). Every criterion reads the validation days only; the validation
// replay is also summed per day, so that a criterion can ask whether a row
// dominates on most of the validation days rather than on their total,
// which a few bursty days of lack can decide. PickMargin is the verdict's:
// none of the others held more verdicts on the test spans of
// docs/POWER.md; they stay so that the comparison can be rerun on other
// sequences (power eval --pick).
type PickCriterion string

const (
	// PickMargin: the row that dominates on the whole validation span with
	// the most margin, the smaller of its relative node-hours-off gain and
	// lack cut.
	PickMargin PickCriterion = "margin"
	// PickHalves: as PickMargin, among the rows that also dominate on each
	// half of the validation days (at least as many node-hours off and no
	// more lack in each, less lack in all).
	PickHalves PickCriterion = "halves"
	// PickThirds: as PickHalves, with thirds.
	PickThirds PickCriterion = "thirds"
	// PickWorstHalf: among the rows PickHalves admits, the one whose
	// smaller margin over the two halves is the largest.
	PickWorstHalf PickCriterion = "worst-half"
	// PickNoise: as PickMargin, among the rows whose lack cut is at least
	// one standard error of the day-by-day lack differences (the
	// validation noise) above zero.
	PickNoise PickCriterion = "noise"
	// PickNoiseMax: the dominating row whose lack cut is the most
	// standard errors above zero.
	PickNoiseMax PickCriterion = "noise-max"
	// PickNearest: among the rows PickHalves admits, the smallest change
	// from Slurm's rule: no early power-down if any such row has none,
	// then the idle time nearest SuspendTime, then the smallest buffer,
	// then the most margin.
	PickNearest PickCriterion = "nearest"
	// PickHalvesNoEarly: among the rows PickHalves admits, one without
	// the early power-down if any, then the most margin.
	PickHalvesNoEarly PickCriterion = "halves-no-early"
	// PickNoiseBoth: as PickNoise, with the node-hours-off gain too at
	// least one standard error of the day-by-day differences above zero.
	PickNoiseBoth PickCriterion = "noise-both"
	// PickBootstrap: the dominating row that dominates on the most of
	// bootstrapSamples resamples of the validation days (drawn with
	// replacement, the same draws for every row), then the most margin.
	PickBootstrap PickCriterion = "bootstrap"
	// PickNoiseMin: the dominating row whose smaller of the lack cut and
	// node-hours-off gain, each in standard errors of its day-by-day
	// differences, is the largest: the margin in units of the validation
	// noise.
	PickNoiseMin PickCriterion = "noise-min"
	// PickNoise2: as PickNoise, at two standard errors.
	PickNoise2 PickCriterion = "noise2"
	// PickRecent: the row that dominates on the whole validation span and
	// on its later half (the days nearest the test), with the most margin
	// on that later half.
	PickRecent PickCriterion = "recent"
	// PickEarlyHalves: as PickMargin, but a row with the early power-down
	// must also dominate on each half of the validation days: the early
	// power-down only where it wins steadily.
	PickEarlyHalves PickCriterion = "early-halves"
	// PickMaxCut: the dominating row with the largest relative lack cut.
	PickMaxCut PickCriterion = "max-cut"
	// PickRobust: among the rows that dominate on the whole validation
	// span with slack (node-hours-off gain at least robustSlackOff and
	// lack cut at least robustSlackLack, both relative), the one whose
	// margin in its worse half of the validation days is the largest:
	// a half it loses counts with its negative margin rather than
	// excluding it, so a row that wins by much overall and loses a half
	// by a little can still be picked, and one that wins both halves by a
	// hair is not preferred for it.
	PickRobust PickCriterion = "robust"
	// PickRobust3: as PickRobust, with the worst of three thirds.
	PickRobust3 PickCriterion = "robust3"
	// PickRobustDays: as PickRobust, with the worst single validation
	// day, each day's gain and cut in units of the idle-time rule's mean
	// day (a day with no lack under either rule has a cut of 0, not a
	// ratio of zeros).
	PickRobustDays PickCriterion = "robust-days"
	// PickDaysOrMargin: PickRobustDays' row where its slack admits one,
	// else PickMargin's: the robust pick where the validation days give
	// one, the verdict's pick where none wins by the slack.
	PickDaysOrMargin PickCriterion = "days-or-margin"
)

// The slack PickRobust asks of the whole validation span, set before any
// test span was read: a node-hours-off gain of a tenth of a percent (the
// validation margins of the picks are 0.02–0.5 %) and a lack cut of 2 %
// (the lack of two 14-day spans differs by more than that).
const (
	robustSlackOff  = 0.001
	robustSlackLack = 0.02
)

// bootstrapSamples is how many resamples of the validation days
// PickBootstrap draws; bootstrapSeed makes them the same on every run.
const (
	bootstrapSamples = 1000
	bootstrapSeed    = 30
)

// PickCriteria are the criteria `power eval --pick` knows.
func PickCriteria() []PickCriterion {
	return []PickCriterion{PickMargin, PickHalves, PickThirds, PickWorstHalf, PickNoise, PickNoiseMax, PickNearest, PickHalvesNoEarly, PickNoiseBoth, PickBootstrap, PickNoiseMin, PickNoise2, PickRecent, PickEarlyHalves, PickMaxCut, PickRobust, PickRobust3, PickRobustDays, PickDaysOrMargin}
}

// ParsePickCriterion reads a criterion by name.
func ParsePickCriterion(v string) (PickCriterion, error) {
	for _, c := range PickCriteria() {
		if string(c) == strings.TrimSpace(v) {
			return c, nil
		}
	}
	names := make([]string, 0, len(PickCriteria()))
	for _, c := range PickCriteria() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("pick criterion %q: want one of %s", v, strings.Join(names, ", "))
}

// candidate is one validation row with the setting that made it.
type candidate struct {
	st  Setting
	row RuleRow
}

// foldSums sums a row's day parts into k consecutive folds.
func foldSums(p []partSum, k int) []partSum {
	out := make([]partSum, k)
	for i, x := range p {
		f := i * k / len(p)
		out[f].off += x.off
		out[f].lack += x.lack
	}
	return out
}

// foldsDominate says whether p keeps at least as many node-steps off and
// lacks no more than idle in each of k consecutive folds of the days.
// A fold where neither lacks cannot be won on lack, so "no more" is what
// each fold asks; the whole span asks for less.
func foldsDominate(p, idle RuleRow, k int) bool {
	if len(p.parts) < k || len(p.parts) != len(idle.parts) {
		return false
	}
	a, b := foldSums(p.parts, k), foldSums(idle.parts, k)
	for f := range a {
		if a[f].off < b[f].off || a[f].lack > b[f].lack {
			return false
		}
	}
	return true
}

// worstFoldMargin is the smallest over k folds of the fold's margin (the
// smaller of the relative node-steps-off gain and lack cut).
func worstFoldMargin(p, idle RuleRow, k int) float64 {
	a, b := foldSums(p.parts, k), foldSums(idle.parts, k)
	worst := math.Inf(1)
	for f := range a {
		gain := float64(a[f].off-b[f].off) / math.Max(float64(b[f].off), 1)
		cut := float64(b[f].lack-a[f].lack) / math.Max(float64(b[f].lack), 1)
		worst = min(worst, gain, cut)
	}
	return worst
}

// worstFoldSignedMargin is the smallest over k folds of the fold's
// margin, the smaller of its relative node-steps-off gain and lack cut,
// where a fold with no lack under either rule counts only its gain.
func worstFoldSignedMargin(p, idle RuleRow, k int) float64 {
	if len(p.parts) < k || len(p.parts) != len(idle.parts) {
		return math.Inf(-1)
	}
	a, b := foldSums(p.parts, k), foldSums(idle.parts, k)
	worst := math.Inf(1)
	for f := range a {
		m := float64(a[f].off-b[f].off) / math.Max(float64(b[f].off), 1)
		if a[f].lack > 0 || b[f].lack > 0 {
			m = min(m, float64(b[f].lack-a[f].lack)/math.Max(float64(b[f].lack), 1))
		}
		worst = min(worst, m)
	}
	return worst
}

// worstDayMargin is the smallest over the days of the day's margin, the
// smaller of its node-steps-off gain and lack cut, each over the idle
// rule's mean day of that quantity (at least 1).
func worstDayMargin(p, idle RuleRow) float64 {
	n := len(p.parts)
	if n == 0 || n != len(idle.parts) {
		return math.Inf(-1)
	}
	var off, lack float64
	for _, x := range idle.parts {
		off += float64(x.off)
		lack += float64(x.lack)
	}
	off, lack = math.Max(off/float64(n), 1), math.Max(lack/float64(n), 1)
	worst := math.Inf(1)
	for i, a := range p.parts {
		b := idle.parts[i]
		worst = min(worst, float64(a.off-b.off)/off, float64(b.lack-a.lack)/lack)
	}
	return worst
}

// laterHalf says whether p dominates idle on the later half of the days
// (at least as many node-steps off, no more lack) and its margin there.
func laterHalf(p, idle RuleRow) (bool, float64) {
	if len(p.parts) < 2 || len(p.parts) != len(idle.parts) {
		return false, math.Inf(-1)
	}
	a, b := foldSums(p.parts, 2), foldSums(idle.parts, 2)
	gain := float64(a[1].off-b[1].off) / math.Max(float64(b[1].off), 1)
	cut := float64(b[1].lack-a[1].lack) / math.Max(float64(b[1].lack), 1)
	return a[1].off >= b[1].off && a[1].lack <= b[1].lack, min(gain, cut)
}

// lackCutT is the mean day-by-day lack cut over its standard error: how
// many noise units the cut stands above zero (+Inf when every day cuts
// alike and the cut is positive).
func lackCutT(p, idle RuleRow) float64 {
	return dayT(p, idle, func(a, b partSum) int { return b.lack - a.lack })
}

// offGainT is lackCutT for the node-steps off p keeps above idle.
func offGainT(p, idle RuleRow) float64 {
	return dayT(p, idle, func(a, b partSum) int { return a.off - b.off })
}

// dayT is the mean over the days of diff(p's day, idle's day) over its
// standard error.
func dayT(p, idle RuleRow, diff func(a, b partSum) int) float64 {
	n := len(p.parts)
	if n < 2 || n != len(idle.parts) {
		return math.Inf(-1)
	}
	d := make([]float64, n)
	var mean float64
	for i := range d {
		d[i] = float64(diff(p.parts[i], idle.parts[i]))
		mean += d[i]
	}
	mean /= float64(n)
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	se := math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	if se == 0 {
		if mean > 0 {
			return math.Inf(1)
		}
		return math.Inf(-1)
	}
	return mean / se
}

// resampleDays draws bootstrapSamples resamples of n days with
// replacement, the same on every call.
func resampleDays(n int) [][]int {
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(n)))
	out := make([][]int, bootstrapSamples)
	for b := range out {
		out[b] = make([]int, n)
		for i := range out[b] {
			out[b][i] = rng.IntN(n)
		}
	}
	return out
}

// bootstrapShare is the share of the resampled day sets on which p keeps
// at least as many node-steps off as idle and lacks less.
func bootstrapShare(p, idle RuleRow, draws [][]int) float64 {
	if len(draws) == 0 || len(p.parts) != len(idle.parts) {
		return 0
	}
	won := 0
	for _, d := range draws {
		var off, lack int
		for _, i := range d {
			off += p.parts[i].off - idle.parts[i].off
			lack += p.parts[i].lack - idle.parts[i].lack
		}
		if off >= 0 && lack < 0 {
			won++
		}
	}
	return float64(won) / float64(len(draws))
}

// pickKey is how a criterion ranks an admitted row: larger is better,
// compared element by element.
type pickKey []float64

func (a pickKey) better(b pickKey) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// admit says whether criterion c admits row p against idle (the
// idle-time rule at suspend), and its rank.
func (c PickCriterion) admit(p candidate, idle RuleRow, suspend time.Duration, draws [][]int) (bool, pickKey) {
	if !dominates(p.row, idle) {
		return false, nil
	}
	mg, _, _ := pickMargin(p.row, idle)
	noEarly := 0.0
	if p.st.EarlyFrac == 0 {
		noEarly = 1
	}
	switch c {
	case PickMargin:
		return true, pickKey{mg}
	case PickHalves:
		return foldsDominate(p.row, idle, 2), pickKey{mg}
	case PickThirds:
		return foldsDominate(p.row, idle, 3), pickKey{mg}
	case PickWorstHalf:
		return foldsDominate(p.row, idle, 2), pickKey{worstFoldMargin(p.row, idle, 2), mg}
	case PickNoise:
		return lackCutT(p.row, idle) >= 1, pickKey{mg}
	case PickNoiseMax:
		return true, pickKey{lackCutT(p.row, idle), mg}
	case PickNearest:
		dist := suspend.Minutes()
		if p.st.Hybrid {
			dist = math.Abs((suspend - p.row.IdleAfter).Minutes())
		}
		return foldsDominate(p.row, idle, 2), pickKey{noEarly, -dist, -float64(p.row.Buffer), mg}
	case PickHalvesNoEarly:
		return foldsDominate(p.row, idle, 2), pickKey{noEarly, mg}
	case PickNoiseBoth:
		return lackCutT(p.row, idle) >= 1 && offGainT(p.row, idle) >= 1, pickKey{mg}
	case PickBootstrap:
		return true, pickKey{bootstrapShare(p.row, idle, draws), mg}
	case PickRecent:
		ok, late := laterHalf(p.row, idle)
		return ok, pickKey{late, mg}
	case PickEarlyHalves:
		return noEarly == 1 || foldsDominate(p.row, idle, 2), pickKey{mg}
	case PickMaxCut:
		_, _, cut := pickMargin(p.row, idle)
		return true, pickKey{cut, mg}
	case PickNoise2:
		return lackCutT(p.row, idle) >= 2, pickKey{mg}
	case PickRobust, PickRobust3:
		_, gain, cut := pickMargin(p.row, idle)
		k := 2
		if c == PickRobust3 {
			k = 3
		}
		return gain >= robustSlackOff && cut >= robustSlackLack, pickKey{worstFoldSignedMargin(p.row, idle, k), mg}
	case PickRobustDays:
		_, gain, cut := pickMargin(p.row, idle)
		return gain >= robustSlackOff && cut >= robustSlackLack, pickKey{worstDayMargin(p.row, idle), mg}
	case PickDaysOrMargin:
		if _, gain, cut := pickMargin(p.row, idle); gain >= robustSlackOff && cut >= robustSlackLack {
			return true, pickKey{1, worstDayMargin(p.row, idle), mg}
		}
		return true, pickKey{0, 0, mg}
	case PickNoiseMin:
		return true, pickKey{min(lackCutT(p.row, idle), offGainT(p.row, idle)), mg}
	}
	return false, nil
}

// pickRows is, for each idle-time row, the candidate criterion c ranks
// first (the first of equals, in the order searched); a Pick with no
// Valid row where it admits none.
func pickRows(c PickCriterion, all []candidate, idle []RuleRow) []Pick {
	var draws [][]int
	if c == PickBootstrap && len(idle) > 0 {
		draws = resampleDays(len(idle[0].parts))
	}
	out := make([]Pick, len(idle))
	for j, r := range idle {
		out[j] = Pick{Idle: r.Rule, ValidMargin: math.Inf(-1)}
		var best pickKey
		for _, p := range all {
			ok, key := c.admit(p, r, r.Suspend, draws)
			if !ok || (best != nil && !key.better(best)) {
				continue
			}
			best = key
			mg, gain, cut := pickMargin(p.row, r)
			out[j] = Pick{Idle: r.Rule, Setting: p.st, Buffer: p.row.Buffer, IdleAfter: p.row.IdleAfter, Valid: p.row, ValidMargin: mg, ValidGain: gain, ValidCut: cut}
		}
	}
	return out
}

// CriterionPicks is one pick criterion's rows for every idle-time setting
// and how each did on the test days.
type CriterionPicks struct {
	Criterion PickCriterion
	Picks     []Pick
	// Holds counts the idle-time settings whose pick dominates on the
	// test days.
	Holds int
}

func (cp CriterionPicks) holds() int {
	n := 0
	for _, pk := range cp.Picks {
		if pk.Holds {
			n++
		}
	}
	return n
}
