package policy

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// LearnedParams are the exponents of the learned family's key (see
// learned). Each multiplies one feature's logarithm; 0 leaves the feature
// out. The zero value ranks every job alike (FIFO by the tie-break):
// DefaultLearnedParams is fair-sjf's point, what the registry builds when
// given no parameters. LearnedFeatures documents each and gives the box
// `fairway tune` searches.
type LearnedParams struct {
	Run     float64 `json:"run"`     // exponent of max(r̂, τ), the predicted run time
	Limit   float64 `json:"limit"`   // exponent of r, the time limit
	Size    float64 `json:"size"`    // exponent of n, the requested size
	Usage   float64 `json:"usage"`   // exponent of 1 + UE/S, the fair-share usage ratio
	Counter float64 `json:"counter"` // exponent of 1 + c/c̄, the VTC counter over the mean
	Age     float64 `json:"age"`     // a in the divisor (1 + w/max(r̂, τ))^a
	// Effective is the exponent of e/max(r̂, τ), the effective run time
	// (policy.EffectiveRun) over the predicted one.
	Effective float64 `json:"effective"`
}

// DefaultLearnedParams is fair-sjf as a point of the learned family:
// key = max(r̂, τ) · (1 + UE/S)² / (1 + w/max(r̂, τ)).
func DefaultLearnedParams() LearnedParams {
	return LearnedParams{Run: 1, Usage: DefaultShareExponent, Age: DefaultAgeExponent}
}

// Feature is one of the learned family's features: its name (the key in a
// policy file), what it measures, and the bounds `fairway tune` searches
// its exponent within.
type Feature struct {
	Name     string
	Doc      string
	Min, Max float64
}

// LearnedFeatures lists the learned family's features in LearnedParams'
// order (Vector's). The bounds are the tuner's box; every point of it
// ranks without starvation (TestLearned_StarvationBound), because Age's
// lower bound is positive and every other feature is bounded for a given
// cluster. Parameters outside the box are accepted where Validate allows:
// fairshare (Usage alone) and SJF (Run alone) are the family's limits as
// Age goes to 0, and can be written down exactly, but the tuner does not
// go there.
var LearnedFeatures = []Feature{
	{"run", "predicted run time max(r̂, τ) in seconds (Snapshot.Predicted, else the time limit, else UnknownRun)", 0, 3},
	{"limit", "time limit r in seconds (UnknownRun when none): what the user asked", 0, 3},
	{"size", "requested size n: GPUs where the job has GPUs or shards, else CPUs, at least 1", -1, 2},
	{"usage", "1 + UE/S: the association's classic fair-share effective usage over its normalised shares, as fair-sjf", 0, 8},
	{"counter", "1 + c/c̄: the association's VTC counter over the mean counter of the associations with pending jobs", 0, 4},
	{"age", "(1 + w/max(r̂, τ)): the job's slowdown were it to start now; its exponent divides the key", 0.25, 4},
	{"effective", "e/max(r̂, τ): the effective run time (Snapshot.Effective, from the user's runs of the same job) over the predicted one; 1 when the predictor gives none", 0, 2},
}

// learnedMaxExponent bounds every exponent's magnitude, and
// learnedMaxTotal the sum of their magnitudes: a bound on each alone lets
// the product overflow (run, limit, size and usage at 16 make a week-long
// 1024-CPU job's key +Inf) or fall below the normal floats, and jobs whose
// log keys differ then tie. Every factor but the effective one is at least
// 1 and below e²³ (a time.Duration in seconds, a Slurm CPU count, the 10⁶
// usage cap, 1 plus the waiting seconds over τ), and the effective one, a
// run time of at least τ over another, lies within e^±23; so |ln key| ≤
// 23 · 30 = 690, within the normal floats' ±708. The tuner's box sums to
// 26.
const (
	learnedMaxExponent = 16
	learnedMaxTotal    = 30
)

// Vector returns the exponents in LearnedFeatures' order.
func (p LearnedParams) Vector() []float64 {
	return []float64{p.Run, p.Limit, p.Size, p.Usage, p.Counter, p.Age, p.Effective}
}

// LearnedParamsOf is Vector's inverse: v in LearnedFeatures' order.
func LearnedParamsOf(v []float64) (LearnedParams, error) {
	if len(v) != len(LearnedFeatures) {
		return LearnedParams{}, fmt.Errorf("learned: %d parameters, want %d (%s)", len(v), len(LearnedFeatures), strings.Join(learnedNames(), ", "))
	}
	return LearnedParams{Run: v[0], Limit: v[1], Size: v[2], Usage: v[3], Counter: v[4], Age: v[5], Effective: v[6]}, nil
}

func learnedNames() []string {
	out := make([]string, len(LearnedFeatures))
	for i, f := range LearnedFeatures {
		out[i] = f.Name
	}
	return out
}

// ErrBadParams is returned by Validate, naming the parameter.
var ErrBadParams = errors.New("bad parameter")

// Validate refuses what no ranking should run with: a non-finite exponent,
// one whose magnitude exceeds 16 or magnitudes that add up to more than 30
// (keys would overflow or underflow), and a negative
// age, usage or counter exponent (waiting would push a job back, or using
// more would move a user forward).
func (p LearnedParams) Validate() error {
	total := 0.0
	for i, v := range p.Vector() {
		name := LearnedFeatures[i].Name
		total += math.Abs(v)
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("learned: %s = %g: want a finite number: %w", name, v, ErrBadParams)
		case math.Abs(v) > learnedMaxExponent:
			return fmt.Errorf("learned: %s = %g: want at most %d in magnitude: %w", name, v, learnedMaxExponent, ErrBadParams)
		case v < 0 && (name == "age" || name == "usage" || name == "counter"):
			return fmt.Errorf("learned: %s = %g: want >= 0: %w", name, v, ErrBadParams)
		}
	}
	if total > learnedMaxTotal {
		return fmt.Errorf("learned: exponents' magnitudes add up to %g: want at most %d, or keys overflow: %w", total, learnedMaxTotal, ErrBadParams)
	}
	return nil
}

// InBounds reports whether every exponent lies within LearnedFeatures'
// box, the points the tuner may choose.
func (p LearnedParams) InBounds() bool {
	for i, v := range p.Vector() {
		if v < LearnedFeatures[i].Min || v > LearnedFeatures[i].Max {
			return false
		}
	}
	return true
}

// learned is Fairway's parameterised ranking family, whose exponents
// `fairway tune` fits to a site's own history. Each pending job j of
// association u gets the key
//
//	key = max(r̂,τ)^θrun · r^θlimit · n^θsize · (1 + UE_u/S_u)^θusage
//	      · (1 + c_u/c̄)^θcounter / (1 + w/max(r̂,τ))^a · (e/max(r̂,τ))^θeffective
//
// and the smallest key ranks first: a product of powers, linear in log
// space (log key = Σ θ_i · log f_i), the form Carastan-Santos and de
// Camargo fitted by regression (SC'17) and RLScheduler's heuristics take
// (SC'20). r̂ is the predicted run time, r the time limit, n the requested
// size, w the time since eligibility, UE_u/S_u fair-sjf's usage ratio
// (fairshare's effective usage over normalised shares, capped at 10⁶), c_u
// the association's VTC counter (Ledger.Counter) and c̄ the mean counter
// of the associations with pending jobs (c/c̄ = 0 when c̄ = 0), e the
// job's effective run time (Snapshot.Effective; EffectiveRun says what it
// is), which is max(r̂,τ) where the predictor gives none. θrun = 1 with
// θeffective = 1 ranks by e: Smith's rule for bounded slowdown over the
// run times the user's same job has had, where SJF ranks by their
// prediction alone.
//
// Points and limits of the family:
//
//   - fair-sjf is θrun = 1, θusage = k, a = a_fair-sjf, others 0
//     (DefaultLearnedParams); the keys are computed in the same order, so
//     the rankings are identical, ties included.
//   - fairshare (classic, no age weight) is θusage > 0 alone: 1 + UE/S
//     orders the associations as 2^(−UE/S) does, but for ratios within
//     rounding of each other, which one form ties and the other not.
//   - SJF on predictions is θrun = 1 alone, sjf-limit θlimit = 1 alone.
//
// The age divisor grows without bound as a job waits, so with a > 0 every
// job's key eventually falls below that of every newcomer, whose key is
// bounded below for a given cluster (every feature is): no starvation.
//
// Value = −key. Parts: key, and each feature's contribution to log key,
// θ_i · log f_i (log_run, log_limit, log_size, log_usage, log_counter,
// log_age, the last ≤ 0), with the features themselves (predicted_run_s,
// limit_s, size, usage_ratio, counter_ratio, age_factor), then
// log_effective and effective_ratio (e/max(r̂,τ)).
type learned struct {
	p  LearnedParams
	sc scorer
}

// The parts of a learned ranking: the key, the contributions to log key
// in LearnedFeatures' order, then the features.
var learnedParts = []string{
	"key",
	"log_run", "log_limit", "log_size", "log_usage", "log_counter", "log_age",
	"predicted_run_s", "limit_s", "size", "usage_ratio", "counter_ratio", "age_factor",
	"log_effective", "effective_ratio",
}

// NewLearned returns the "learned" policy with exponents p.
func NewLearned(p LearnedParams) (Policy, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := make([]float64, len(learnedParts))
	w[0] = -1
	return &learned{p: p, sc: scorer{names: learnedParts, weights: w}}, nil
}

func (*learned) Name() string { return "learned" }

// Params returns the policy's exponents.
func (p *learned) Params() LearnedParams { return p.p }

func (p *learned) Rank(s *Snapshot) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	var sums shareTotals
	if p.p.Usage != 0 {
		sums = shareSums(s, g.keys)
	}
	return p.rank(s, g, sums)
}

func (p *learned) readsShares() bool { return p.p.Usage != 0 }

func (p *learned) readsEffective() bool { return p.p.Effective != 0 }

func (p *learned) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	return p.rank(s, g, x.shares)
}

// rank ranks s, whose pending jobs g groups and whose sums of shares are
// sums (read only when Usage is not 0).
func (p *learned) rank(s *Snapshot, g *assocGroups, sums shareTotals) ([]Score, error) {
	n := len(s.Pending)
	var factors []fsFactor
	if p.p.Usage != 0 {
		factors = fairshareFactors(s, g, sums, 1)
	}
	var counter []float64 // per group: c_u / c̄
	if p.p.Counter != 0 {
		counter = make([]float64, len(g.keys))
		sum := 0.0
		for x, a := range g.keys {
			counter[x] = s.Ledger.Counter(a)
			sum += counter[x]
		}
		mean := sum / float64(len(g.keys))
		for x := range counter {
			if mean > 0 {
				counter[x] /= mean
			} else {
				counter[x] = 0
			}
		}
	}
	k := len(learnedParts)
	parts := s.partsBuf(k * n)
	// mul multiplies key by f^θ and records θ·log f, skipping θ = 0, so
	// that a point of the family computes its key exactly as the policy
	// it stands for (fair-sjf multiplies and divides in this order).
	for i := range s.Pending {
		j := &s.Pending[i]
		row := parts[k*i : k*i+k]
		run := predictedAt(s, i).Seconds()
		base := max(run, fairSJFMinRun)
		limit := requestedRun(j)
		size := requestedSize(s, j)
		ratio := 0.0
		if factors != nil {
			ff := factors[g.of[i]]
			ratio = fairSJFMaxRatio
			if ff.sNorm > 0 {
				ratio = min(ff.ue/ff.sNorm, fairSJFMaxRatio)
			}
		}
		cr := 0.0
		if counter != nil {
			cr = counter[g.of[i]]
		}
		age := 1 + max(0, s.Now.Sub(waitingSince(j)).Seconds())/base
		key := 1.0
		mul := func(f, theta float64, c *float64) {
			if theta != 0 {
				*c = theta * math.Log(f)
				key *= math.Pow(f, theta) // exact for θ = 1: Pow(x, 1) = x
			}
		}
		mul(base, p.p.Run, &row[1])
		mul(limit, p.p.Limit, &row[2])
		mul(size, p.p.Size, &row[3])
		mul(1+ratio, p.p.Usage, &row[4])
		mul(1+cr, p.p.Counter, &row[5])
		ageFactor := 1.0
		if p.p.Age != 0 {
			ageFactor = math.Pow(age, p.p.Age)
			key /= ageFactor
			row[6] = -p.p.Age * math.Log(age)
		}
		if p.p.Effective != 0 {
			f := 1.0
			if e, ok := s.Effective[j.ID]; ok && e > 0 {
				f = e.Seconds() / base
			}
			mul(f, p.p.Effective, &row[13])
			row[14] = f
		}
		row[0] = key
		row[7], row[8], row[9], row[10], row[11], row[12] = run, limit, size, ratio, cr, ageFactor
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("learned: %w", err)
	}
	return scores, nil
}

// Contributions splits the key whose parts are parts into one term per
// feature of LearnedFeatures, with the factor each exponent applies to:
// max(r̂,τ), r, n, 1 + UE/S, 1 + c/c̄, 1 + w/max(r̂,τ), whose exponent
// is −a since it divides the key, and e/max(r̂,τ). The last four are
// computed only when their exponent is not 0; their Value is nil
// otherwise, and every Value is nil when parts is.
func (p *learned) Contributions(parts map[string]float64) []Contribution {
	// Parts that are 0 are left out of parts (Parts.Map); nil parts are
	// an explanation that lost them.
	val := func(part string, f func(float64) float64) *float64 {
		if parts == nil {
			return nil
		}
		x := f(parts[part])
		return &x
	}
	same := func(v float64) float64 { return v }
	onePlus := func(v float64) float64 { return 1 + v }
	var usage, counter, age, effective *float64
	if p.p.Usage != 0 {
		usage = val("usage_ratio", onePlus)
	}
	if p.p.Counter != 0 {
		counter = val("counter_ratio", onePlus)
	}
	if p.p.Effective != 0 {
		effective = val("effective_ratio", same)
	}
	if p.p.Age != 0 {
		// age_factor is (1 + w/max(r̂,τ))^a.
		age = val("age_factor", func(v float64) float64 { return math.Pow(v, 1/p.p.Age) })
	}
	values := []*float64{
		val("predicted_run_s", func(v float64) float64 { return max(v, fairSJFMinRun) }),
		val("limit_s", same), val("size", same), usage, counter, age, effective,
	}
	out := make([]Contribution, len(LearnedFeatures))
	for i, theta := range p.p.Vector() {
		name := LearnedFeatures[i].Name
		if name == "age" && theta != 0 {
			theta = -theta
		}
		out[i] = Contribution{Feature: name, Value: values[i], Exponent: theta, LogKey: parts["log_"+name]}
	}
	return out
}

// WhatMovesIt names the levers of the family's key that this policy's
// exponents use, the largest contribution to the job's log key first
// when parts has them.
func (p *learned) WhatMovesIt(parts map[string]float64) string {
	type lever struct {
		part, text string
	}
	var ls []lever
	if p.p.Run > 0 {
		ls = append(ls, lever{"log_run", "a shorter time limit, which lowers its predicted run time"})
	}
	if p.p.Limit > 0 {
		ls = append(ls, lever{"log_limit", "a shorter time limit"})
	}
	switch {
	case p.p.Size > 0:
		ls = append(ls, lever{"log_size", "a smaller request"})
	case p.p.Size < 0:
		ls = append(ls, lever{"log_size", "a larger request (this policy favours large jobs)"})
	}
	if p.p.Usage > 0 {
		ls = append(ls, lever{"log_usage", "its user's fair-share usage decaying"})
	}
	if p.p.Effective > 0 {
		ls = append(ls, lever{"log_effective", "shorter runs of the same job by its user (the likelier a short run, the sooner it ranks)"})
	}
	if p.p.Counter > 0 {
		ls = append(ls, lever{"log_counter", "other users' VTC counters growing as their jobs run"})
	}
	// The largest contributions first: those are what hold it back most.
	sort.SliceStable(ls, func(a, b int) bool { return parts[ls[a].part] > parts[ls[b].part] })
	var texts []string
	for _, l := range ls {
		t := l.text
		if c, ok := parts[l.part]; ok {
			t += fmt.Sprintf(" (%s %+.3g)", l.part, c)
		}
		texts = append(texts, t)
	}
	s := "its key is the product of its features' powers; log key is the sum of their contributions above (the log_ parts)"
	if len(texts) > 0 {
		s += ".\n  Levers, the largest contribution first: " + strings.Join(texts, "; ")
	}
	if p.p.Age > 0 {
		s += fmt.Sprintf(";\n  and its own wait: every doubling of 1 + wait/run divides its key by %.3g", math.Pow(2, p.p.Age))
	} else {
		s += ";\n  aging is off: waiting does not move it"
	}
	return s + "."
}
