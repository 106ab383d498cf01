// Package tune fits the learned family's exponents (policy.LearnedParams)
// to a history by black-box search over the simulator: CMA-ES (Hansen,
// "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772; gonum's
// Cholesky variant, Krause et al., NeurIPS 2016) on a training window,
// then the best points re-judged on a later validation window, never the
// same jobs. It does no I/O; time enters only as the budget.
package tune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/optimize"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// Objective is what the search minimises.
type Objective string

// The objectives.
const (
	// Fair: the lowest average bounded slowdown subject to the Reference's
	// three constraints (sim.Meets: avg wait ≤ fairshare's, Jain ≥
	// fairshare's − 0.01, max ρ ≤ fairshare's), on the same window.
	Fair Objective = "fair"
	// BSLD: the lowest average bounded slowdown, no constraint, over
	// RLScheduler's sequences (as RLScheduler optimises).
	BSLD Objective = "bsld"
	// Wait: the lowest average wait, no constraint.
	Wait Objective = "wait"
)

// Objectives lists the objectives, the default first.
var Objectives = []Objective{Fair, BSLD, Wait}

// ParseObjective reads an objective's name.
func ParseObjective(s string) (Objective, error) {
	for _, o := range Objectives {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("objective %q: want fair, bsld or wait", s)
}

// Describe says what o minimises, for the policy file.
func (o Objective) Describe() string {
	switch o {
	case Fair:
		return fmt.Sprintf("fair: lowest avg bounded slowdown subject to avg wait ≤ %[1]s's, Jain ≥ %[1]s's − %[2]g, max ρ ≤ %[1]s's (time split)", sim.Reference, sim.JainSlack)
	case BSLD:
		return "bsld: lowest avg bounded slowdown, no fairness constraint (RLScheduler's sequences)"
	case Wait:
		return "wait: lowest avg wait, no fairness constraint (time split)"
	}
	return string(o)
}

// Penalty weighs a constraint's relative violation against the relative
// objective in the value CMA-ES ranks: large enough that any violation
// costs more than the slowdown an infeasible point could gain, small
// enough that less violation still ranks lower, so that the search moves
// towards feasibility rather than seeing a plateau.
const Penalty = 100

// Score is a point's result on a window: how far it is from meeting the
// objective's constraints (0: it meets them) and the value minimised.
type Score struct {
	Violation float64 `json:"violation"`
	Value     float64 `json:"value"`
}

// Feasible reports whether the constraints are met.
func (s Score) Feasible() bool { return s.Violation == 0 }

// Compare orders scores: less violation first, then the lower value. It
// is how every choice of the tuner is made.
func (s Score) Compare(o Score) int {
	if c := cmp.Compare(s.Violation, o.Violation); c != 0 {
		return c
	}
	return cmp.Compare(s.Value, o.Value)
}

// Judge scores ev under o. ref is the Reference's evaluation on the same
// window (Fair only; the constraints are sim.Meets, and a point whose
// schedule is the Reference's meets them, as a table counts a row where
// every order gives the same schedule).
func Judge(o Objective, ev, ref sim.Evaluation) Score {
	switch o {
	case Wait:
		return Score{Value: ev.AvgWait}
	case BSLD:
		return Score{Value: ev.AvgBSLD}
	}
	s := Score{Value: ev.AvgBSLD}
	if ev.Schedule == ref.Schedule {
		return s
	}
	c := sim.Meets(ev.Metrics, ref.Metrics)
	if !c.Wait {
		s.Violation += excess(ev.AvgWait, ref.AvgWait)
	}
	if !c.Jain {
		s.Violation += ref.Jain - sim.JainSlack - ev.Jain // Jain is in [0, 1] already
	}
	if !c.Rho {
		s.Violation += excess(ev.MaxRho, ref.MaxRho)
	}
	return s
}

// excess is how far a exceeds b relative to b (a when b is 0), > 0 when a > b.
func excess(a, b float64) float64 {
	if b > 0 {
		return max(a/b-1, math.SmallestNonzeroFloat64)
	}
	return max(a, math.SmallestNonzeroFloat64)
}

// Config is one tuning run.
type Config struct {
	Objective Objective
	// Train are the windows the search scores points on (a point's
	// training score sums their violations and averages their values,
	// weighted by jobs: a point must meet the constraints on each);
	// Validate is the later window its best points are re-judged on. They
	// must not share an evaluated job (NewWindows builds them so).
	Train    []*sim.Evaluator
	Validate *sim.Evaluator
	// ValidateLoads are more windows the validation judges a point on
	// beside Validate, as one (JudgeAll): the validation window at heavier
	// loads (Setup.Loads). None by default.
	ValidateLoads []*sim.Evaluator
	// TrainCounts and ValidateLoadsCounts say what each window of Train
	// and of ValidateLoads counts towards (Windows' of the same names);
	// nil: every window counts towards both the constraints and the
	// value. Validate counts towards both.
	TrainCounts, ValidateLoadsCounts []Counts
	// Start is where the search starts, and what is kept unless a point
	// does better on the validation window: fair-sjf's point by default
	// (policy.DefaultLearnedParams).
	Start policy.LearnedParams
	// Seed seeds CMA-ES's samples: the same Seed, Population and
	// Generations on the same windows give the same result.
	Seed uint64
	// Parallel bounds the evaluations run at once (at least 1).
	Parallel int
	// Population is CMA-ES's samples per generation (0: the larger of its
	// default, 4 + ⌊3 ln 6⌋ = 9, and Parallel); 1 is refused, as CMA-ES
	// recombines the better half of a generation.
	Population int
	// Generations stops the search after this many generations (0: until
	// the budget ends or CMA-ES converges).
	Generations int
	// Budget is the wall time for the whole run, validation included, and
	// After the evaluations on the validation window the caller will run
	// once Run returns (its table): the search stops early enough to leave
	// time for both, at the pace the start's validation took. 0: no limit
	// but ctx's.
	Budget time.Duration
	After  int
	// Candidates is how many of the best distinct training points the
	// search drew are re-judged on the validation window (0: 8).
	Candidates int
	// SearchEffective also searches the effective feature's exponent;
	// without it the search keeps the start's (0, fair-sjf's point) and
	// searches the other six.
	SearchEffective bool
	// Anchors are points of the family evaluated beside the start and
	// always re-judged on validation (Anchors() gives the heuristics the
	// family contains). CMA-ES starts from the best of the start and the
	// anchors on the training windows; the start stays the fallback.
	Anchors []Anchor
	// Progress, when set, is told of each evaluation, from the evaluating
	// goroutine, one call at a time.
	Progress func(Progress)
}

// Anchor is a named point of the family.
type Anchor struct {
	Name   string
	Params policy.LearnedParams
}

// Anchors are the heuristics the learned family holds, each with the
// box's least aging (a = 0.25, so that no job starves): SJF on predicted
// run times, QSSF's predicted service (run × size, Hu et al., SC'21), SJF
// on time limits (RLScheduler's SJF), fair share alone, and fair share
// with SJF.
func Anchors() []Anchor {
	a := policy.LearnedFeatures[5].Min
	return []Anchor{
		{"sjf", policy.LearnedParams{Run: 1, Age: a}},
		{"qssf", policy.LearnedParams{Run: 1, Size: 1, Age: a}},
		{"sjf-limit", policy.LearnedParams{Limit: 1, Age: a}},
		{"fairshare", policy.LearnedParams{Usage: policy.DefaultShareExponent, Age: a}},
		{"fair-qssf", policy.LearnedParams{Run: 1, Size: 1, Usage: policy.DefaultShareExponent, Age: a}},
	}
}

// EffectiveAnchors are the anchors of a search that moves the effective
// feature too (Config.SearchEffective): SJF on effective run times
// (Smith's rule for bounded slowdown over the runs the user's same job
// has had, policy.EffectiveRun) with the box's least aging, and fair-sjf's
// own point with the effective run time for the predicted one.
func EffectiveAnchors() []Anchor {
	a := policy.LearnedFeatures[5].Min
	return []Anchor{
		{"sjf-effective", policy.LearnedParams{Run: 1, Age: a, Effective: 1}},
		{"fair-sjf-effective", policy.LearnedParams{Run: 1, Usage: policy.DefaultShareExponent, Age: policy.DefaultAgeExponent, Effective: 1}},
	}
}

// AnchorsFor are the anchors of objective o: Anchors, and with BSLD
// (RLScheduler's sequences, where F1, WFP3, UNICEP and SJF by limit are the
// comparators) the family's points nearest those heuristics' common
// ingredient, the requested area by time limit (limit × size), alone and
// with fair share, each with the box's least aging.
func AnchorsFor(o Objective) []Anchor {
	out := Anchors()
	if o != BSLD {
		return out
	}
	a := policy.LearnedFeatures[5].Min
	return append(out,
		Anchor{"area-limit", policy.LearnedParams{Limit: 1, Size: 1, Age: a}},
		Anchor{"fair-area-limit", policy.LearnedParams{Limit: 1, Size: 1, Usage: policy.DefaultShareExponent, Age: a}},
	)
}

// Progress is the state of a run after an evaluation.
type Progress struct {
	Evaluations int
	Generation  int
	Best        Score // the best training score so far
	Start       Score // the start's training score
	Elapsed     time.Duration
	Deadline    time.Duration // when the search stops at the latest (0: none)
}

// Point is one evaluated point.
type Point struct {
	// Name is "start", an anchor's name, or empty for a point the search
	// drew.
	Name   string               `json:"name,omitempty"`
	Params policy.LearnedParams `json:"params"`
	Train  Score                `json:"train"`
	// Validation is set for the points re-judged on the validation window.
	Validation *Score `json:"validation,omitempty"`
}

// Selection is how the re-judged points are compared: the violations on
// the training windows and the validation window together, then the
// value on the validation window. A point that meets the constraints on
// validation only, by luck of that window, does not beat one that meets
// them everywhere.
func (p Point) Selection() Score {
	return Score{Violation: p.Train.Violation + p.Validation.Violation, Value: p.Validation.Value}
}

// JudgeAll scores evaluations on several windows, each against the
// reference's on the same window (refs may be nil without constraints):
// the violations summed, the values averaged weighted by the windows'
// jobs.
func JudgeAll(o Objective, evs, refs []sim.Evaluation) Score {
	return JudgeCounted(o, evs, refs, nil)
}

// Counts says what a window's evaluation counts towards in a point's
// score: the constraints (its violation is added) and the value (it is
// one of those averaged).
type Counts struct{ Constraints, Value bool }

// JudgeCounted is JudgeAll with each window counted as counts says (nil:
// every window towards both): the violations of the windows counted
// towards the constraints summed, the values of those counted towards the
// value averaged weighted by their jobs.
func JudgeCounted(o Objective, evs, refs []sim.Evaluation, counts []Counts) Score {
	var out Score
	jobs := 0
	for i, ev := range evs {
		var ref sim.Evaluation
		if refs != nil {
			ref = refs[i]
		}
		n := Counts{true, true}
		if counts != nil {
			n = counts[i]
		}
		s := Judge(o, ev, ref)
		if n.Constraints {
			out.Violation += s.Violation
		}
		if n.Value {
			out.Value += s.Value * float64(ev.Jobs)
			jobs += ev.Jobs
		}
	}
	if jobs > 0 {
		out.Value /= float64(jobs)
	}
	return out
}

// Result is a tuning run's outcome.
type Result struct {
	// Params are the chosen exponents: the candidate (or the start) with
	// the best Selection, the start on a tie.
	Params policy.LearnedParams
	// KeptStart is set when no candidate beat the start on validation.
	KeptStart bool
	// Start and Chosen are the start's and the chosen point's scores.
	Start, Chosen Point
	// Candidates are the points re-judged on validation: the anchors, then
	// the points the search drew, best training score first.
	Candidates []Point
	// ReferenceTrain and ReferenceValidation are the Reference's
	// evaluations on the training and validation windows (Fair and Wait;
	// Validate's, not ValidateLoads').
	ReferenceTrain      []sim.Evaluation
	ReferenceValidation *sim.Evaluation
	// SearchFrom names the point CMA-ES started from: "start" or an
	// anchor's name.
	SearchFrom                           string
	Evaluations, Generations, Population int
	// Stopped says why the search ended: "budget", "generations" or
	// "converged".
	Stopped string
	Elapsed time.Duration
}

// Run searches the learned family's box for cfg.Objective's best point.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	started := time.Now()
	if len(cfg.Train) == 0 || slices.Contains(cfg.Train, nil) || cfg.Validate == nil || slices.Contains(cfg.ValidateLoads, nil) {
		return nil, errors.New("tune: no training or validation window")
	}
	if cfg.TrainCounts != nil && len(cfg.TrainCounts) != len(cfg.Train) ||
		cfg.ValidateLoadsCounts != nil && len(cfg.ValidateLoadsCounts) != len(cfg.ValidateLoads) {
		return nil, fmt.Errorf("tune: %d training and %d loaded validation windows, but %d and %d counts",
			len(cfg.Train), len(cfg.ValidateLoads), len(cfg.TrainCounts), len(cfg.ValidateLoadsCounts))
	}
	if _, err := ParseObjective(string(cfg.Objective)); err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	if err := cfg.Start.Validate(); err != nil {
		return nil, fmt.Errorf("tune: start: %w", err)
	}
	if cfg.Population == 1 {
		return nil, fmt.Errorf("tune: population 1: want 0 (the default) or at least 2, as CMA-ES keeps the better half of each generation")
	}
	par := max(cfg.Parallel, 1)
	pop := cfg.Population
	if pop <= 0 {
		pop = max(4+int(3*math.Log(float64(len(policy.LearnedFeatures)))), par)
	}
	dims := searched(cfg.SearchEffective)
	k := cfg.Candidates
	if k <= 0 {
		k = 8
	}
	mk := func(p policy.LearnedParams) sim.PolicyFactory {
		return func() (policy.Policy, error) { return policy.NewLearned(p) }
	}
	refMk := func() (policy.Policy, error) { return policy.New(sim.Reference, nil) }
	res := &Result{Population: pop}

	// The references and the start on both windows first: every score
	// needs them, and the validation's pace sets the reserve.
	nt := len(cfg.Train)
	var refVal, startVal sim.Evaluation
	var refTr []sim.Evaluation
	startTr := make([]sim.Evaluation, nt)
	nv := len(cfg.ValidateLoads)
	startVals, refVals := make([]sim.Evaluation, nv), make([]sim.Evaluation, nv)
	var valTook time.Duration
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(par)
	type job struct {
		e   *sim.Evaluator
		mk  sim.PolicyFactory
		out *sim.Evaluation
	}
	jobs := []job{{cfg.Validate, mk(cfg.Start), &startVal}}
	for i, e := range cfg.Train {
		jobs = append(jobs, job{e, mk(cfg.Start), &startTr[i]})
	}
	if cfg.Objective != BSLD {
		refTr = make([]sim.Evaluation, nt)
		jobs = append(jobs, job{cfg.Validate, refMk, &refVal})
		for i, e := range cfg.Train {
			jobs = append(jobs, job{e, refMk, &refTr[i]})
		}
	}
	for i, e := range cfg.ValidateLoads {
		jobs = append(jobs, job{e, mk(cfg.Start), &startVals[i]})
		if cfg.Objective != BSLD {
			jobs = append(jobs, job{e, refMk, &refVals[i]})
		}
	}
	// judgeVal scores a point's evaluations on Validate and ValidateLoads.
	judgeVal := func(ev sim.Evaluation, evs []sim.Evaluation) Score {
		if nv == 0 {
			return Judge(cfg.Objective, ev, refVal)
		}
		var refs []sim.Evaluation
		if cfg.Objective != BSLD {
			refs = append([]sim.Evaluation{refVal}, refVals...)
		}
		var counts []Counts
		if cfg.ValidateLoadsCounts != nil {
			counts = append([]Counts{{true, true}}, cfg.ValidateLoadsCounts...)
		}
		return JudgeCounted(cfg.Objective, append([]sim.Evaluation{ev}, evs...), refs, counts)
	}
	for i, j := range jobs {
		g.Go(func() error {
			t0 := time.Now()
			ev, err := j.e.Evaluate(gctx, j.mk)
			if err != nil {
				return fmt.Errorf("tune: evaluate the start and %s: %w", sim.Reference, err)
			}
			*j.out = ev
			if i == 0 {
				valTook = time.Since(t0)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if cfg.Objective != BSLD {
		res.ReferenceTrain, res.ReferenceValidation = refTr, &refVal
	}
	res.Start = Point{Name: "start", Params: cfg.Start, Train: JudgeCounted(cfg.Objective, startTr, refTr, cfg.TrainCounts)}
	sv := judgeVal(startVal, startVals)
	res.Start.Validation = &sv
	// Scale the value CMA-ES ranks by the start's, so that Penalty means
	// the same on every trace.
	norm := res.Start.Train.Value
	if !(norm > 0) {
		norm = 1
	}

	// The anchors on the training windows; the search starts from the
	// best of them and the start.
	anchors := make([]Point, len(cfg.Anchors))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(par)
	for i, a := range cfg.Anchors {
		if err := a.Params.Validate(); err != nil {
			return nil, fmt.Errorf("tune: anchor %s: %w", a.Name, err)
		}
		g.Go(func() error {
			evs := make([]sim.Evaluation, nt)
			for w, e := range cfg.Train {
				ev, err := e.Evaluate(gctx, mk(a.Params))
				if err != nil {
					return fmt.Errorf("tune: anchor %s: %w", a.Name, err)
				}
				evs[w] = ev
			}
			anchors[i] = Point{Name: a.Name, Params: a.Params, Train: JudgeCounted(cfg.Objective, evs, refTr, cfg.TrainCounts)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	from := res.Start
	for _, a := range anchors {
		if a.Train.Compare(from.Train) < 0 {
			from = a
		}
	}
	res.SearchFrom = from.Name

	// The search, stopped early enough for the validation and the
	// caller's table.
	sctx, cancel := ctx, context.CancelFunc(func() {})
	var deadline time.Duration
	if cfg.Budget > 0 {
		rounds := ((k+len(cfg.Anchors))*(1+nv) + cfg.After + par - 1) / par
		reserve := time.Duration(float64(valTook) * float64(rounds) * 1.25)
		deadline = cfg.Budget - reserve
		sctx, cancel = context.WithDeadline(ctx, started.Add(deadline))
	}
	defer cancel()
	var (
		mu      sync.Mutex
		points  []Point
		evalErr error
		best    = res.Start.Train
		evals   int
		gens    int
	)
	objective := func(z []float64) float64 {
		p := fromUnbounded(z, dims, cfg.Start)
		evs := make([]sim.Evaluation, nt)
		for i, e := range cfg.Train {
			ev, err := e.Evaluate(sctx, mk(p))
			if err != nil {
				mu.Lock()
				if sctx.Err() == nil && evalErr == nil {
					evalErr = err
				}
				mu.Unlock()
				return math.Inf(1)
			}
			evs[i] = ev
		}
		s := JudgeCounted(cfg.Objective, evs, refTr, cfg.TrainCounts)
		mu.Lock()
		defer mu.Unlock()
		points = append(points, Point{Params: p, Train: s})
		evals++
		if s.Compare(best) < 0 {
			best = s
		}
		if cfg.Progress != nil {
			cfg.Progress(Progress{Evaluations: evals, Generation: gens + 1, Best: best, Start: res.Start.Train,
				Elapsed: time.Since(started), Deadline: deadline})
		}
		return s.Value/norm + Penalty*s.Violation
	}
	settings := &optimize.Settings{
		Concurrent:      par,
		MajorIterations: cfg.Generations,
		Converger:       &optimize.FunctionConverge{Absolute: 1e-9, Relative: 1e-9, Iterations: 25},
		Recorder: recorder(func(op optimize.Operation) error {
			if op == optimize.MajorIteration {
				mu.Lock()
				gens++
				mu.Unlock()
			}
			return sctx.Err()
		}),
	}
	method := &optimize.CmaEsChol{InitStepSize: 0.6, Population: pop, Src: rand.NewPCG(cfg.Seed, 0x7e57ab1e)}
	out, err := optimize.Minimize(optimize.Problem{Func: objective}, toUnbounded(from.Params, dims), settings, method)
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("tune: %w", ctx.Err())
	case evalErr != nil:
		return nil, fmt.Errorf("tune: evaluate: %w", evalErr)
	case err != nil && sctx.Err() != nil:
		res.Stopped = "budget"
	case err != nil:
		return nil, fmt.Errorf("tune: search: %w", err)
	case out.Status == optimize.IterationLimit:
		res.Stopped = "generations"
	default:
		res.Stopped = "converged"
	}
	// Generations are counted from the evaluations: the search's last
	// major iteration reaches no recorder.
	res.Evaluations, res.Generations = evals, (evals+pop-1)/pop

	// The best distinct training points, in a deterministic order
	// (whatever order the concurrent evaluations finished in), re-judged
	// on validation.
	slices.SortFunc(points, func(a, b Point) int {
		if c := a.Train.Compare(b.Train); c != 0 {
			return c
		}
		return slices.Compare(a.Params.Vector(), b.Params.Vector())
	})
	points = slices.CompactFunc(points, func(a, b Point) bool { return a.Params == b.Params })
	var cands []Point
	seen := map[policy.LearnedParams]bool{cfg.Start: true}
	for _, a := range anchors {
		if !seen[a.Params] {
			seen[a.Params] = true
			cands = append(cands, a)
		}
	}
	drawn := 0
	for _, p := range points {
		if drawn == k {
			break
		}
		if !seen[p.Params] {
			seen[p.Params] = true
			cands = append(cands, p)
			drawn++
		}
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(par)
	for i := range cands {
		g.Go(func() error {
			ev, err := cfg.Validate.Evaluate(gctx, mk(cands[i].Params))
			if err != nil {
				return fmt.Errorf("tune: validate: %w", err)
			}
			evs := make([]sim.Evaluation, nv)
			for w, e := range cfg.ValidateLoads {
				if evs[w], err = e.Evaluate(gctx, mk(cands[i].Params)); err != nil {
					return fmt.Errorf("tune: validate: %w", err)
				}
			}
			s := judgeVal(ev, evs)
			cands[i].Validation = &s
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res.Candidates = cands
	res.Chosen, res.KeptStart = res.Start, true
	for _, c := range cands {
		if c.Selection().Compare(res.Chosen.Selection()) < 0 {
			res.Chosen, res.KeptStart = c, false
		}
	}
	res.Params = res.Chosen.Params
	res.Elapsed = time.Since(started)
	return res, nil
}

// recorder is an optimize.Recorder from a function told of each operation;
// an error it returns stops the search.
type recorder func(optimize.Operation) error

func (recorder) Init() error { return nil }
func (r recorder) Record(_ *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	return r(op)
}

// The search runs in an unbounded space, mapped smoothly into the box
// (policy.LearnedFeatures' bounds) by x = lo + (hi − lo)·(1 − cos z)/2: every
// z is a point of the box, both bounds are reached (fair-sjf's point has
// exponents on the bounds: limit and counter 0), and the map is periodic,
// so CMA-ES's samples need no rejection or repair (Hansen's tutorial, §B.3,
// discusses such transformations). Exponents are rounded to 4 decimals, so
// that what a policy file says is exactly what was evaluated.
//
// dims are the features searched, indexes into policy.LearnedFeatures, one
// per coordinate of z; the others keep base's exponents.
func fromUnbounded(z []float64, dims []int, base policy.LearnedParams) policy.LearnedParams {
	x := base.Vector()
	for k, i := range dims {
		f := policy.LearnedFeatures[i]
		v := f.Min + (f.Max-f.Min)*(1-math.Cos(z[k]))/2
		x[i] = min(max(math.Round(v*1e4)/1e4, f.Min), f.Max)
	}
	p, err := policy.LearnedParamsOf(x)
	if err != nil {
		panic(err) // z has one coordinate per feature: the search's dimension
	}
	return p
}

// toUnbounded is fromUnbounded's inverse on [0, π]: the z of p (clamped
// into the box).
func toUnbounded(p policy.LearnedParams, dims []int) []float64 {
	v := p.Vector()
	z := make([]float64, len(dims))
	for k, i := range dims {
		f := policy.LearnedFeatures[i]
		u := (min(max(v[i], f.Min), f.Max) - f.Min) / (f.Max - f.Min)
		z[k] = math.Acos(1 - 2*u)
	}
	return z
}

// searched are the indexes in policy.LearnedFeatures of the features the
// search moves: all, or all but effective.
func searched(effective bool) []int {
	var out []int
	for i, f := range policy.LearnedFeatures {
		if f.Name != "effective" || effective {
			out = append(out, i)
		}
	}
	return out
}
