package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

func TestJudge_Constraints(t *testing.T) {
	ref := sim.Evaluation{Metrics: sim.Metrics{AvgWait: 100, AvgBSLD: 10, Jain: 0.5, MaxRho: 20}, Schedule: 1}
	ev := func(wait, bsld, jain, rho float64, schedule uint64) sim.Evaluation {
		return sim.Evaluation{Metrics: sim.Metrics{AvgWait: wait, AvgBSLD: bsld, Jain: jain, MaxRho: rho}, Schedule: schedule}
	}
	for _, tc := range []struct {
		name string
		o    Objective
		ev   sim.Evaluation
		want Score
	}{
		{"meets all three", Fair, ev(90, 8, 0.495, 20, 2), Score{Value: 8}},
		{"waits 10% longer", Fair, ev(110, 8, 0.5, 20, 2), Score{Violation: 0.1, Value: 8}},
		{"Jain 0.02 below the slack", Fair, ev(90, 8, 0.47, 20, 2), Score{Violation: 0.02, Value: 8}},
		{"max ρ 50% higher", Fair, ev(90, 8, 0.5, 30, 2), Score{Violation: 0.5, Value: 8}},
		{"the reference's own schedule meets them", Fair, ev(100, 10, 0.5, 20, 1), Score{Value: 10}},
		{"bsld ignores fairness", BSLD, ev(500, 7, 0.1, 99, 2), Score{Value: 7}},
		{"wait ignores fairness", Wait, ev(50, 7, 0.1, 99, 2), Score{Value: 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.o, tc.ev, ref)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Feasible() != (tc.want.Violation == 0) {
				t.Errorf("Feasible() = %v with violation %g", got.Feasible(), got.Violation)
			}
		})
	}
}

func TestScore_Compare(t *testing.T) {
	feasible, slow, infeasible := Score{Value: 5}, Score{Value: 6}, Score{Violation: 0.001, Value: 1}
	if feasible.Compare(slow) >= 0 || feasible.Compare(infeasible) >= 0 || infeasible.Compare(slow) <= 0 {
		t.Errorf("want feasible < slow < infeasible: %d %d %d", feasible.Compare(slow), feasible.Compare(infeasible), infeasible.Compare(slow))
	}
}

// TestUnbounded_Box checks that every point of the search space maps into
// the tuner's box, that the start maps back to itself, and that without
// the effective feature the search leaves its exponent at the base's.
func TestUnbounded_Box(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	start := policy.DefaultLearnedParams()
	for _, effective := range []bool{false, true} {
		dims := searched(effective)
		if want := len(policy.LearnedFeatures) - 1; effective {
			if len(dims) != want+1 {
				t.Fatalf("searched(true) = %v: want every feature", dims)
			}
		} else if len(dims) != want {
			t.Fatalf("searched(false) = %v: want every feature but effective", dims)
		}
		for range 2000 {
			z := make([]float64, len(dims))
			for i := range z {
				z[i] = r.NormFloat64() * 10
			}
			p := fromUnbounded(z, dims, start)
			if !p.InBounds() || p.Validate() != nil {
				t.Fatalf("z %v maps to %+v, outside the box or invalid", z, p)
			}
			if !effective && p.Effective != start.Effective {
				t.Fatalf("z %v maps to effective %v without searching it, want the base's %v", z, p.Effective, start.Effective)
			}
		}
		if got := fromUnbounded(toUnbounded(start, dims), dims, start); got != start {
			t.Errorf("the start maps back to %+v, want %+v", got, start)
		}
	}
}

// tuneJobs is the synthetic history the tests tune on: 1,500 jobs of
// seed 3 at load 1.1 on tuneCluster.
func tuneJobs(t *testing.T) []policy.Job {
	t.Helper()
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 3, Load: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// tuneCluster is the machine of tuneJobs: 8 nodes of 8 GPUs.
var tuneCluster = sim.Cluster{Nodes: 8, PerNode: 8, Unit: sim.GPUs}

// windowsOf is tuneJobs cut into windows by setup.
func windowsOf(t *testing.T, setup Setup) *Windows {
	t.Helper()
	w, err := NewWindows(tuneJobs(t), tuneCluster, setup)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// workload is a small synthetic history, cut into windows as tune does.
func workload(t *testing.T, o Objective) *Windows {
	t.Helper()
	return windowsOf(t, Setup{Objective: o, Seen: 0.7, Validate: 0.3, Sequences: 3, Length: 100, Seed: 1})
}

// TestNewWindows_Disjoint checks that the training and validation windows
// replay no common job, and neither replays a held-out one.
func TestNewWindows_Disjoint(t *testing.T) {
	w := workload(t, Fair)
	if w.Seen != 1050 || w.Total != 1500 {
		t.Fatalf("looked at %d of %d jobs, want the first 1050 of 1500", w.Seen, w.Total)
	}
	vaLo, vaHi := w.Validate.Window()
	trained := map[int64]bool{}
	next := 0
	for k, e := range w.Train {
		lo, hi := e.Window()
		if k > 0 && lo != next || hi <= lo {
			t.Errorf("training window %d is [%d, %d), want it to start at %d and hold a job", k+1, lo, hi, next)
		}
		next = hi
		for i := lo; i < hi; i++ {
			trained[e.Job(i).ID] = true
		}
	}
	if len(w.Train) != 3 || next != 735 {
		t.Errorf("%d training windows ending at %d, want 3 ending at 735", len(w.Train), next)
	}
	for i := vaLo; i < vaHi; i++ {
		if j := w.Validate.Job(i); trained[j.ID] {
			t.Fatalf("job %d is both trained and validated on", j.ID)
		}
	}
	if vaHi-vaLo != 1050-735 || w.Validate.Job(vaHi-1).Submit.After(w.To) {
		t.Errorf("validation [%d, %d) ending %v, seen up to %v", vaLo, vaHi, w.Validate.Job(vaHi-1).Submit, w.To)
	}

	b := workload(t, BSLD)
	vaLo, _ = b.Validate.Window()
	_, trHi := b.Train[0].Window()
	for _, s := range b.Train[0].Starts() {
		if s+100 > trHi || s+100 > vaLo {
			t.Errorf("training sequence from %d runs into the validation part from %d", s, vaLo)
		}
	}
}

// TestRun_Reproducible runs the same short search twice: the same seed
// gives the same points, chosen by the validation, never worse there
// than the start.
func TestRun_Reproducible(t *testing.T) {
	w := workload(t, Fair)
	run := func() *Result {
		res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
			Start: policy.DefaultLearnedParams(), Seed: 7, Parallel: 2, Generations: 2, Candidates: 3})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(), run()
	if a.Evaluations != 2*a.Population || a.Stopped != "generations" {
		t.Errorf("%d evaluations of population %d, stopped by %q: want 2 generations", a.Evaluations, a.Population, a.Stopped)
	}
	if diff := cmp.Diff(a.Candidates, b.Candidates); diff != "" || a.Params != b.Params {
		t.Errorf("same seed, other result (-first +second):\n%s", diff)
	}
	if len(a.Candidates) != 3 {
		t.Errorf("%d candidates validated, want 3", len(a.Candidates))
	}
	if a.Chosen.Selection().Compare(a.Start.Selection()) > 0 {
		t.Errorf("chose %+v, worse than the start %+v", a.Chosen.Selection(), a.Start.Selection())
	}
	if !a.KeptStart && a.Params == a.Start.Params {
		t.Errorf("KeptStart false but the start's parameters")
	}
}

// TestRun_BudgetKeepsStart gives the search no time: it stops at once and
// keeps the start, without an error.
func TestRun_BudgetKeepsStart(t *testing.T) {
	w := workload(t, Fair)
	res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
		Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "budget" || !res.KeptStart || res.Params != policy.DefaultLearnedParams() {
		t.Errorf("stopped by %q, kept start %v, params %+v: want the start kept at the budget", res.Stopped, res.KeptStart, res.Params)
	}
}

// TestRun_Population: CMA-ES recombines the better half of each
// generation, so one point a generation has no half to keep and its
// samples come out NaN (the search then ends on an error, or on no
// point drawn at all); it is refused by name before any replay.
func TestRun_Population(t *testing.T) {
	w := workload(t, Fair)
	for _, tc := range []struct {
		pop  int
		want string
	}{
		{1, "tune: population 1: want 0 (the default) or at least 2, as CMA-ES keeps the better half of each generation"},
	} {
		_, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
			Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 1, Population: tc.pop, Generations: 1})
		if err == nil || err.Error() != tc.want {
			t.Errorf("population %d: error %v, want %q", tc.pop, err, tc.want)
		}
	}
}

func TestRun_Cancelled(t *testing.T) {
	w := workload(t, Fair)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Objective: Fair, Train: w.Train, Validate: w.Validate, Start: policy.DefaultLearnedParams()}); err == nil {
		t.Error("a cancelled run returned no error")
	}
}

// TestJudgeAll_EachWindow checks that a point must meet the constraints on
// every training window: violations add up, values are averaged weighted
// by each window's jobs.
func TestJudgeAll_EachWindow(t *testing.T) {
	ref := sim.Evaluation{Metrics: sim.Metrics{Jobs: 100, AvgWait: 100, AvgBSLD: 10, Jain: 0.5, MaxRho: 20}, Schedule: 1}
	ok := sim.Evaluation{Metrics: sim.Metrics{Jobs: 100, AvgWait: 90, AvgBSLD: 4, Jain: 0.5, MaxRho: 10}, Schedule: 2}
	rho := sim.Evaluation{Metrics: sim.Metrics{Jobs: 300, AvgWait: 90, AvgBSLD: 8, Jain: 0.5, MaxRho: 30}, Schedule: 3}
	got := JudgeAll(Fair, []sim.Evaluation{ok, rho}, []sim.Evaluation{ref, ref})
	if want := (Score{Violation: 0.5, Value: 7}); math.Abs(got.Violation-want.Violation) > 1e-9 || math.Abs(got.Value-want.Value) > 1e-9 {
		t.Errorf("got %+v, want %+v: the second window's max ρ is 50%% over, bsld (4·100 + 8·300)/400", got, want)
	}
	if got := JudgeAll(BSLD, []sim.Evaluation{ok}, nil); got != (Score{Value: 4}) {
		t.Errorf("bsld without references: %+v, want value 4", got)
	}
}

// TestRun_Anchors checks that every anchor is judged on validation and
// that the choice is no worse than any of them.
func TestRun_Anchors(t *testing.T) {
	w := workload(t, Fair)
	res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
		Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Generations: 1, Candidates: 2, Anchors: Anchors()})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, c := range res.Candidates {
		if c.Validation == nil {
			t.Fatalf("candidate %q not validated", c.Name)
		}
		if c.Name != "" {
			named[c.Name] = true
		}
		if res.Chosen.Selection().Compare(c.Selection()) > 0 {
			t.Errorf("chose %+v, worse than candidate %q %+v", res.Chosen.Selection(), c.Name, c.Selection())
		}
	}
	if len(named) != len(Anchors()) || len(res.Candidates) != len(Anchors())+2 {
		t.Errorf("anchors validated %v, %d candidates: want all %d anchors and 2 drawn points", named, len(res.Candidates), len(Anchors()))
	}
	if res.SearchFrom == "" {
		t.Error("SearchFrom not set")
	}
	for _, a := range Anchors() {
		if !a.Params.InBounds() {
			t.Errorf("anchor %s %+v is outside the tuner's box", a.Name, a.Params)
		}
	}
}

// TestRun_SearchEffective checks that the effective feature is searched
// only when asked: without SearchEffective every point drawn keeps the
// start's exponent 0, with it the search moves it and the effective
// anchors are judged.
func TestRun_SearchEffective(t *testing.T) {
	w := workload(t, Fair)
	for _, on := range []bool{false, true} {
		anchors := Anchors()
		if on {
			anchors = append(anchors, EffectiveAnchors()...)
		}
		res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
			Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Generations: 1, Candidates: 3, Anchors: anchors, SearchEffective: on})
		if err != nil {
			t.Fatal(err)
		}
		moved, named := false, 0
		for _, c := range res.Candidates {
			if c.Name == "" && c.Params.Effective != 0 {
				moved = true
			}
			if c.Name == "sjf-effective" || c.Name == "fair-sjf-effective" {
				named++
			}
		}
		if moved != on || named != map[bool]int{false: 0, true: 2}[on] {
			t.Errorf("SearchEffective %v: drawn points moved effective: %v, effective anchors judged: %d", on, moved, named)
		}
	}
	for _, a := range EffectiveAnchors() {
		if !a.Params.InBounds() || a.Params.Effective != 1 {
			t.Errorf("anchor %s %+v: want inside the box, effective 1", a.Name, a.Params)
		}
	}
}

// TestNewWindows_ValidationSequences checks that BSLD validates on three
// times as many sequences as it trains on, unless told.
func TestNewWindows_ValidationSequences(t *testing.T) {
	b := workload(t, BSLD)
	if tr, va := len(b.Train[0].Starts()), len(b.Validate.Starts()); tr != 3 || va != 9 {
		t.Errorf("%d training and %d validation sequences, want 3 and 9", tr, va)
	}
}

// TestNewWindows_ValidationSequencesSet checks that Setup's
// ValidationSequences overrides the default.
func TestNewWindows_ValidationSequencesSet(t *testing.T) {
	w := windowsOf(t, Setup{Objective: BSLD, Seen: 0.7, Validate: 0.3, Sequences: 3, ValidationSequences: 5, Length: 100, Seed: 1})
	if va := len(w.Validate.Starts()); va != 5 {
		t.Errorf("%d validation sequences, want 5", va)
	}
}

// TestNewWindows_Table checks the validation table's window: with BSLD
// the first --sequences of the validation's draws, else the validation
// window itself.
func TestNewWindows_Table(t *testing.T) {
	b := workload(t, BSLD)
	val, tab := b.Validate.Starts(), b.Table.Starts()
	if len(tab) != 3 || !slices.Equal(tab, val[:3]) {
		t.Errorf("table sequences %v, want the first 3 of the validation's %v", tab, val)
	}
	if f := workload(t, Fair); f.Table != f.Validate {
		t.Error("fair: the table is not on the validation window")
	}
}

// TestAnchorsFor checks the anchors each objective judges: with BSLD the
// heuristics' requested area by time limit is added, in the box, after
// Anchors; the time-split objectives judge Anchors alone.
func TestAnchorsFor(t *testing.T) {
	for _, tc := range []struct {
		o     Objective
		extra []string
	}{
		{Fair, nil},
		{Wait, nil},
		{BSLD, []string{"area-limit", "fair-area-limit"}},
	} {
		t.Run(string(tc.o), func(t *testing.T) {
			got := AnchorsFor(tc.o)
			if !cmp.Equal(got[:len(Anchors())], Anchors()) {
				t.Errorf("the first anchors %v, want Anchors() %v", got[:len(Anchors())], Anchors())
			}
			var names []string
			for _, a := range got[len(Anchors()):] {
				names = append(names, a.Name)
				if !a.Params.InBounds() || a.Params.Validate() != nil || a.Params.Limit != 1 || a.Params.Size != 1 {
					t.Errorf("anchor %s %+v: want limit 1, size 1, inside the box", a.Name, a.Params)
				}
			}
			if !cmp.Equal(names, tc.extra, cmpopts.EquateEmpty()) {
				t.Errorf("extra anchors %v, want %v", names, tc.extra)
			}
		})
	}
}

// TestNewWindows_Loads checks the windows at heavier loads: the same jobs
// in the same order and window, with the same sizes and run times, their
// submits compressed about the window's first replayed submit, and the
// history before it as recorded; the windows at load 1 are the default's.
func TestNewWindows_Loads(t *testing.T) {
	jobs := tuneJobs(t)
	c := tuneCluster
	setup := Setup{Objective: Fair, Seen: 0.7, Validate: 0.3}
	plain, err := NewWindows(jobs, c, setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.ValidateLoads) != 0 {
		t.Fatalf("default: %d validation windows at other loads, want none", len(plain.ValidateLoads))
	}
	setup.Loads = []float64{1, 1.5, 2}
	w, err := NewWindows(jobs, c, setup)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Train) != 3*len(plain.Train) || len(w.ValidateLoads) != 2 || w.Table != w.Validate {
		t.Fatalf("%d training windows, %d validation windows at other loads, want %d and 2, the table at load 1",
			len(w.Train), len(w.ValidateLoads), 3*len(plain.Train))
	}
	type pair struct {
		name      string
		base, got *sim.Evaluator
		x         float64
	}
	var pairs []pair
	for k, e := range plain.Train {
		for i, x := range setup.Loads {
			pairs = append(pairs, pair{fmt.Sprintf("training window %d at load %g", k+1, x), e, w.Train[i*len(plain.Train)+k], x})
		}
	}
	pairs = append(pairs, pair{"validation at load 1", plain.Validate, w.Validate, 1},
		pair{"validation at load 1.5", plain.Validate, w.ValidateLoads[0], 1.5}, pair{"validation at load 2", plain.Validate, w.ValidateLoads[1], 2})
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			lo, hi := p.base.Window()
			if glo, ghi := p.got.Window(); glo != lo || ghi != hi || p.got.Jobs() != p.base.Jobs() {
				t.Fatalf("window [%d, %d) of %d jobs, want [%d, %d) of %d", glo, ghi, p.got.Jobs(), lo, hi, p.base.Jobs())
			}
			first := p.base.Job(lo).Submit
			for i := range p.base.Jobs() {
				b, g := p.base.Job(i), p.got.Job(i)
				if g.ID != b.ID || g.GPUs != b.GPUs || g.Nodes != b.Nodes || g.RunTime() != b.RunTime() || g.TimeLimit != b.TimeLimit {
					t.Fatalf("job %d: id %d, %d GPUs, run %v, limit %v; want id %d, %d GPUs, run %v, limit %v",
						i, g.ID, g.GPUs, g.RunTime(), g.TimeLimit, b.ID, b.GPUs, b.RunTime(), b.TimeLimit)
				}
				want := b.Submit
				if i >= lo {
					want = first.Add(time.Duration(float64(b.Submit.Sub(first)) / p.x))
				}
				if d := g.Submit.Sub(want); d < -time.Microsecond || d > time.Microsecond {
					t.Fatalf("job %d (window from %d): submit %v, want %v", i, lo, g.Submit, want)
				}
			}
		})
	}
}

func TestNewWindows_LoadsRefused(t *testing.T) {
	jobs := tuneJobs(t)
	c := tuneCluster
	for _, tc := range []struct {
		name  string
		o     Objective
		loads []float64
		want  string
	}{
		{"no load 1", Fair, []float64{1.5}, "loads [1.5]: want 1 (the windows as recorded) among them"},
		{"zero", Fair, []float64{1, 0}, "load 0: want a factor > 0 and at most 1000"},
		{"negative", Wait, []float64{1, -1}, "load -1: want a factor > 0 and at most 1000"},
		{"NaN", Fair, []float64{1, math.NaN()}, "load NaN: want a factor > 0 and at most 1000"},
		{"infinite", Fair, []float64{1, math.Inf(1)}, "load +Inf: want a factor > 0 and at most 1000"},
		{"twice", Fair, []float64{1, 1.5, 1.5}, "load 1.5: given twice"},
		{"bsld", BSLD, []float64{1, 1.5}, "only with the objectives fair and wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWindows(jobs, c, Setup{Objective: tc.o, Seen: 0.7, Validate: 0.3, Sequences: 3, Length: 100, Seed: 1, Loads: tc.loads})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseLoads(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		err  string
	}{
		{"1", []float64{1}, ""},
		{"1,1.5", []float64{1, 1.5}, ""},
		{" 1.25 , 1, 1.5", []float64{1.25, 1, 1.5}, ""},
		{"1.5", nil, "want 1 (the windows as recorded) among them"},
		{"1,0", nil, "load 0: want a factor > 0 and at most 1000"},
		{"1,NaN", nil, "load NaN: want a factor > 0 and at most 1000"},
		{"1,+Inf", nil, "load +Inf: want a factor > 0 and at most 1000"},
		{"1,1000", []float64{1, 1000}, ""},
		{"1,1e308", nil, "load 1e+308: want a factor > 0 and at most 1000, as simulate --load"}, // simulate refuses it too
		{"1,,1.5", nil, `load "": want a number like 1.5`},
		{"", nil, `load "": want a number like 1.5`},
		{"1,1", nil, "load 1: given twice"},
	} {
		got, err := ParseLoads(tc.in)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParseLoads(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseLoads(%q): error %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

// TestRun_ValidateLoads checks that a point's validation score judges it
// on the validation window at every load, each against the reference at
// the same load (JudgeAll), and on the recorded window alone (Judge)
// without loads.
func TestRun_ValidateLoads(t *testing.T) {
	w := windowsOf(t, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3, Loads: []float64{1, 1.5}})
	start := policy.DefaultLearnedParams()
	ctx := context.Background()
	eval := func(e *sim.Evaluator, mk sim.PolicyFactory) sim.Evaluation {
		ev, err := e.Evaluate(ctx, mk)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	learned := func() (policy.Policy, error) { return policy.NewLearned(start) }
	ref := func() (policy.Policy, error) { return policy.New(sim.Reference, nil) }
	evs := []sim.Evaluation{eval(w.Validate, learned), eval(w.ValidateLoads[0], learned)}
	refs := []sim.Evaluation{eval(w.Validate, ref), eval(w.ValidateLoads[0], ref)}
	if evs[0].AvgWait == evs[1].AvgWait {
		t.Fatalf("the window at load 1.5 waits as long as at load 1 (%g s): not loaded", evs[0].AvgWait)
	}
	for _, tc := range []struct {
		name  string
		loads []*sim.Evaluator
		want  Score
	}{
		{"recorded only", nil, Judge(Fair, evs[0], refs[0])},
		{"loads 1 and 1.5", w.ValidateLoads, JudgeAll(Fair, evs, refs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(ctx, Config{Objective: Fair, Train: w.Train, Validate: w.Validate, ValidateLoads: tc.loads,
				Start: start, Seed: 1, Parallel: 2, Generations: 1, Candidates: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := *res.Start.Validation; got != tc.want {
				t.Errorf("start's validation %+v, want %+v", got, tc.want)
			}
			for _, c := range res.Candidates {
				if c.Validation == nil {
					t.Errorf("candidate %+v not validated", c.Params)
				}
			}
		})
	}
}

// TestJudgeCounted_ValueLoads builds R4's case by hand: point a meets the
// constraints at load 1 but not at 1.5 and has the lower slowdown over
// both loads; point b meets them at both, and has the lower slowdown at
// load 1 alone. Judged with the constraints at load 1 and the value over
// loads 1 and 1.5, a wins (b wins both with every window counted and at
// load 1 alone), training and validation alike.
func TestJudgeCounted_ValueLoads(t *testing.T) {
	ref := sim.Evaluation{Metrics: sim.Metrics{Jobs: 100, AvgWait: 100, AvgBSLD: 10, Jain: 0.5, MaxRho: 20}, Schedule: 1}
	ev := func(bsld, rho float64, schedule uint64) sim.Evaluation {
		return sim.Evaluation{Metrics: sim.Metrics{Jobs: 100, AvgWait: 90, AvgBSLD: bsld, Jain: 0.5, MaxRho: rho}, Schedule: schedule}
	}
	// Windows: chunk 1 and 2 at load 1, then both at 1.5.
	counts := []Counts{{true, true}, {true, true}, {false, true}, {false, true}}
	refs := []sim.Evaluation{ref, ref, ref, ref}
	a := []sim.Evaluation{ev(4, 10, 2), ev(4, 10, 3), ev(6, 30, 4), ev(6, 40, 5)} // max ρ 50% and 100% over at 1.5
	b := []sim.Evaluation{ev(3, 10, 6), ev(3, 10, 7), ev(9, 10, 8), ev(9, 10, 9)}
	approx := cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })
	for _, tc := range []struct {
		name   string
		evs    []sim.Evaluation
		counts []Counts
		want   Score
	}{
		{"a, constraints at 1, value over 1 and 1.5", a, counts, Score{Value: 5}},
		{"b, constraints at 1, value over 1 and 1.5", b, counts, Score{Value: 6}},
		{"a, every window counted", a, nil, Score{Violation: 1.5, Value: 5}},
		{"a, load 1 alone", a[:2], nil, Score{Value: 4}},
		{"b, load 1 alone", b[:2], nil, Score{Value: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, JudgeCounted(Fair, tc.evs, refs[:len(tc.evs)], tc.counts), approx); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The selection: the chunks train, and a validation window at loads 1
	// and 1.5 (as Run's judgeVal counts it) validates.
	point := func(name string, evs []sim.Evaluation, counts []Counts) Point {
		v := JudgeCounted(Fair, []sim.Evaluation{evs[0], evs[2]}, []sim.Evaluation{ref, ref}, []Counts{{true, true}, counts[2]})
		return Point{Name: name, Train: JudgeCounted(Fair, evs, refs, counts), Validation: &v}
	}
	for _, tc := range []struct {
		name   string
		counts []Counts
		want   string
	}{
		{"constraints at 1, value over 1 and 1.5", counts, "a"},
		{"constraints and value over 1 and 1.5", []Counts{{true, true}, {true, true}, {true, true}, {true, true}}, "b"},
		{"load 1 alone", []Counts{{true, true}, {true, true}, {false, false}, {false, false}}, "b"},
	} {
		t.Run("selection, "+tc.name, func(t *testing.T) {
			pa, pb := point("a", a, tc.counts), point("b", b, tc.counts)
			got := pa
			if pb.Selection().Compare(pa.Selection()) < 0 {
				got = pb
			}
			if got.Name != tc.want {
				t.Errorf("chose %s (a %+v, b %+v), want %s", got.Name, pa.Selection(), pb.Selection(), tc.want)
			}
		})
	}
}

// TestNewWindows_ValueLoads checks what each window counts towards with
// --value-loads: the windows at load 1 towards both, those at a load only
// the value is averaged over towards the value alone.
func TestNewWindows_ValueLoads(t *testing.T) {
	jobs := tuneJobs(t)
	c := tuneCluster
	plain, err := NewWindows(jobs, c, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if plain.TrainCounts != nil || plain.ValidateLoadsCounts != nil || !slices.Equal(plain.Loads, []float64{1}) {
		t.Fatalf("default: counts %v, %v, loads %v; want none, none, [1]", plain.TrainCounts, plain.ValidateLoadsCounts, plain.Loads)
	}
	both, value := Counts{Constraints: true, Value: true}, Counts{Value: true}
	n := len(plain.Train)
	for _, tc := range []struct {
		name              string
		loads, valueLoads []float64
		wantLoads         []float64
		wantTrain         []Counts
		wantVal           []Counts
	}{
		{"constraints at 1, value over 1 and 1.5", nil, []float64{1, 1.5}, []float64{1, 1.5},
			append(slices.Repeat([]Counts{both}, n), slices.Repeat([]Counts{value}, n)...), []Counts{value}},
		{"constraints at 1 and 2, value over 1.5 and 1", []float64{1, 2}, []float64{1.5, 1}, []float64{1, 2, 1.5},
			slices.Concat(slices.Repeat([]Counts{both}, n), slices.Repeat([]Counts{{Constraints: true}}, n), slices.Repeat([]Counts{value}, n)),
			[]Counts{{Constraints: true}, value}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindows(jobs, c, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3, Loads: tc.loads, ValueLoads: tc.valueLoads})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.Loads, tc.wantLoads) || len(w.Train) != len(tc.wantTrain) || len(w.ValidateLoads) != len(tc.wantVal) {
				t.Fatalf("loads %v, %d training and %d loaded validation windows; want %v, %d and %d",
					w.Loads, len(w.Train), len(w.ValidateLoads), tc.wantLoads, len(tc.wantTrain), len(tc.wantVal))
			}
			if !slices.Equal(w.TrainCounts, tc.wantTrain) || !slices.Equal(w.ValidateLoadsCounts, tc.wantVal) {
				t.Errorf("counts %v and %v, want %v and %v", w.TrainCounts, w.ValidateLoadsCounts, tc.wantTrain, tc.wantVal)
			}
			// The windows at 1.5 are R3's windows at 1.5.
			r3, err := NewWindows(jobs, c, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3, Loads: w.Loads})
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range w.Train {
				if e.Job(e.Jobs()-1).Submit != r3.Train[i].Job(e.Jobs()-1).Submit {
					t.Errorf("training window %d: last submit %v, want %v", i, e.Job(e.Jobs()-1).Submit, r3.Train[i].Job(e.Jobs()-1).Submit)
				}
			}
		})
	}
	for _, tc := range []struct {
		name string
		o    Objective
		vl   []float64
		want string
	}{
		{"no load 1", Fair, []float64{1.5}, "value loads: loads [1.5]: want 1 (the windows as recorded) among them"},
		{"zero", Fair, []float64{1, 0}, "value loads: load 0: want a factor > 0 and at most 1000"},
		{"twice", Wait, []float64{1, 1.5, 1.5}, "value loads: load 1.5: given twice"},
		{"bsld", BSLD, []float64{1, 1.5}, "value loads [1 1.5]: only with the objectives fair and wait"},
	} {
		t.Run("refused, "+tc.name, func(t *testing.T) {
			_, err := NewWindows(jobs, c, Setup{Objective: tc.o, Seen: 0.7, Validate: 0.3, Sequences: 3, Length: 100, Seed: 1, ValueLoads: tc.vl})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRun_ValueLoads checks that Run scores the start and every candidate
// with the constraints at load 1 only and the value over loads 1 and 1.5,
// as JudgeCounted does on independent replays, and chooses the best
// Selection.
func TestRun_ValueLoads(t *testing.T) {
	w := windowsOf(t, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3, ValueLoads: []float64{1, 1.5}})
	ctx := context.Background()
	res, err := Run(ctx, Config{Objective: Fair, Train: w.Train, Validate: w.Validate, ValidateLoads: w.ValidateLoads,
		TrainCounts: w.TrainCounts, ValidateLoadsCounts: w.ValidateLoadsCounts,
		Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Generations: 1, Candidates: 1, Anchors: Anchors()[:2]})
	if err != nil {
		t.Fatal(err)
	}
	eval := func(e *sim.Evaluator, mk sim.PolicyFactory) sim.Evaluation {
		ev, err := e.Evaluate(ctx, mk)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ref := func() (policy.Policy, error) { return policy.New(sim.Reference, nil) }
	n := len(w.Train) / 2
	for _, p := range append([]Point{res.Start}, res.Candidates...) {
		mk := func() (policy.Policy, error) { return policy.NewLearned(p.Params) }
		var at1, at15, refs1 []sim.Evaluation
		for i, e := range w.Train {
			if i < n {
				at1, refs1 = append(at1, eval(e, mk)), append(refs1, eval(e, ref))
			} else {
				at15 = append(at15, eval(e, mk))
			}
		}
		jobsOf := func(evs []sim.Evaluation) (n int, sum float64) {
			for _, ev := range evs {
				n, sum = n+ev.Jobs, sum+ev.AvgBSLD*float64(ev.Jobs)
			}
			return n, sum
		}
		n1, s1 := jobsOf(at1)
		n15, s15 := jobsOf(at15)
		want := Score{Violation: JudgeAll(Fair, at1, refs1).Violation, Value: (s1 + s15) / float64(n1+n15)}
		if math.Abs(p.Train.Violation-want.Violation) > 1e-12 || math.Abs(p.Train.Value-want.Value) > 1e-9 {
			t.Errorf("%s %+v: training %+v, want %+v (violation at load 1, value over both)", p.Name, p.Params, p.Train, want)
		}
		v1, v15 := eval(w.Validate, mk), eval(w.ValidateLoads[0], mk)
		wantVal := Score{Violation: Judge(Fair, v1, eval(w.Validate, ref)).Violation,
			Value: (v1.AvgBSLD*float64(v1.Jobs) + v15.AvgBSLD*float64(v15.Jobs)) / float64(v1.Jobs+v15.Jobs)}
		if p.Validation == nil || math.Abs(p.Validation.Violation-wantVal.Violation) > 1e-12 || math.Abs(p.Validation.Value-wantVal.Value) > 1e-9 {
			t.Errorf("%s %+v: validation %+v, want %+v", p.Name, p.Params, p.Validation, wantVal)
		}
		if p.Selection().Compare(res.Chosen.Selection()) < 0 {
			t.Errorf("%s's selection %+v beats the chosen %s's %+v", p.Name, p.Selection(), res.Chosen.Name, res.Chosen.Selection())
		}
	}
	if _, err := Run(ctx, Config{Objective: Fair, Train: w.Train, Validate: w.Validate, TrainCounts: w.TrainCounts[:1],
		Start: policy.DefaultLearnedParams(), Generations: 1}); err == nil || !strings.Contains(err.Error(), "counts") {
		t.Errorf("counts not matching the windows: error %v, want one naming the counts", err)
	}
}

// TestNewWindows_HoldOutText: the held-out fraction an error names is the
// one given, not its float remainder (1 − 0.7 = 0.30000000000000004).
func TestNewWindows_HoldOutText(t *testing.T) {
	big := tuneJobs(t)[:20]
	for i := range big {
		big[i].CPUs, big[i].GPUs = 1000, 1000 // no job fits the cluster
	}
	for _, tc := range []struct {
		seen float64
		want string
	}{
		{0.7, "hold out the last 0.3: "},
		{0.9, "hold out the last 0.1: "},
	} {
		t.Run(fmt.Sprint(tc.seen), func(t *testing.T) {
			_, err := NewWindows(big, tuneCluster, Setup{Objective: Fair, Seen: tc.seen, Validate: 0.3})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
}

// TestJainUntested checks when --loads auto adds a heavier load: where
// users share the validation window but never queue at once (a machine far
// larger than the load), not where they compete for it, and not where one
// user submits everything (fairness between users is then moot).
func TestJainUntested(t *testing.T) {
	oneUser := tuneJobs(t)
	for i := range oneUser {
		oneUser[i].User, oneUser[i].Account = "alice", "physics"
	}
	big := sim.Cluster{Nodes: 1000, PerNode: 8, Unit: sim.GPUs}
	for _, tc := range []struct {
		name     string
		jobs     []policy.Job
		cluster  sim.Cluster
		untested bool
		users    int // at least this many
	}{
		{"users compete", tuneJobs(t), tuneCluster, false, 2},
		{"a machine nobody queues on", tuneJobs(t), big, true, 2},
		{"one user", oneUser, big, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindows(tc.jobs, tc.cluster, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3})
			if err != nil {
				t.Fatal(err)
			}
			untested, users, err := JainUntested(context.Background(), w)
			if err != nil {
				t.Fatal(err)
			}
			if untested != tc.untested || users < tc.users || (tc.users == 1 && users != 1) {
				t.Errorf("JainUntested = %v with %d users, want %v with %d or more", untested, users, tc.untested, tc.users)
			}
		})
	}
}
