package policy

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func lnOrder(scores []Score) []int64 {
	out := make([]int64, len(scores))
	for i, sc := range scores {
		out[i] = sc.JobID
	}
	return out
}

// TestLearned_PointsRankAsPolicies checks that fair-sjf, fairshare, SJF on
// predictions and sjf-limit are points of the learned family: with their
// exponents it ranks random snapshots (shares, zero shares, usage
// history, missing predictions and limits, GPU, shard and CPU jobs) in
// the same order, directly and through an Engine. fair-sjf's keys are
// computed in the same order, so its values must be equal too.
//
// fairshare ranks by F = 2^(−UE/S), which rounds usage ratios a few ulps
// apart to one F and then orders those jobs by submit time; the family's
// 1 + UE/S keeps them apart. So against fairshare the check is: every
// pair fairshare orders by F (strictly) the family orders the same way,
// and a pair fairshare ties the family separates only by rounding.
func TestLearned_PointsRankAsPolicies(t *testing.T) {
	tests := []struct {
		name       string
		params     LearnedParams
		policy     string
		polParams  any
		sameValues bool // Value = −key in both
		upToF      bool // fairshare: equal up to F's rounding (above)
	}{
		{"fair-sjf", DefaultLearnedParams(), "fair-sjf", nil, true, false},
		{"fair-sjf k=3 a=0.5", LearnedParams{Run: 1, Usage: 3, Age: 0.5}, "fair-sjf", FairSJFParams{ShareExponent: 3, AgeExponent: 0.5}, true, false},
		{"fairshare", LearnedParams{Usage: 1}, "fairshare", nil, false, true},
		{"sjf on predictions", LearnedParams{Run: 1}, "fair-sjf", FairSJFParams{ShareExponent: -1, AgeExponent: -1}, true, false},
		{"sjf-limit", LearnedParams{Limit: 1}, "sjf-limit", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := int64(1); seed <= 8; seed++ {
				s := rkRandomSnapshot(seed, 300, 40)
				want, err := New(tt.policy, tt.polParams)
				if err != nil {
					t.Fatal(err)
				}
				got, err := New("learned", tt.params)
				if err != nil {
					t.Fatal(err)
				}
				ws, err := want.Rank(s)
				if err != nil {
					t.Fatal(err)
				}
				gs, err := got.Rank(s)
				if err != nil {
					t.Fatal(err)
				}
				if tt.upToF {
					lnSameUpToF(t, ws, gs)
					continue
				}
				if diff := cmp.Diff(lnOrder(ws), lnOrder(gs)); diff != "" {
					t.Fatalf("seed %d: order differs from %s (-%s +learned):\n%s", seed, tt.policy, tt.policy, diff)
				}
				if tt.sameValues {
					for i := range ws {
						if ws[i].Value != gs[i].Value {
							t.Fatalf("seed %d: job %d: value %v, %s's %v", seed, gs[i].JobID, gs[i].Value, tt.policy, ws[i].Value)
						}
					}
				}
				_, we := rkEngine(t, want, s)
				_, ge := rkEngine(t, got, s)
				if diff := cmp.Diff(lnOrder(we), lnOrder(ge)); diff != "" {
					t.Fatalf("seed %d: through an Engine, order differs from %s (-%s +learned):\n%s", seed, tt.policy, tt.policy, diff)
				}
			}
		})
	}
}

// lnSameUpToF checks the learned ranking gs against fairshare's ws: a
// pair whose F differ by more than rounding (10⁻¹² relative) ranks the
// same way in both; a pair whose F are within rounding has keys within
// rounding too. Rounding cuts both ways: 2^(−U) merges ratios 1 + U
// keeps apart, and 1 + U merges ratios 2^(−U) keeps apart.
func lnSameUpToF(t *testing.T, ws, gs []Score) {
	t.Helper()
	pos := map[int64]int{}
	key := map[int64]float64{}
	for i, sc := range gs {
		pos[sc.JobID], key[sc.JobID] = i, sc.Parts.Get("key")
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)) }
	ties := 0
	for i := range ws {
		for j := i + 1; j < len(ws); j++ {
			a, b := ws[i], ws[j]
			switch {
			case near(a.Value, b.Value):
				ties++
				if !near(key[a.JobID], key[b.JobID]) {
					t.Fatalf("fairshare ties jobs %d and %d (F %v, %v); learned keys %v and %v differ by more than rounding",
						a.JobID, b.JobID, a.Value, b.Value, key[a.JobID], key[b.JobID])
				}
			case pos[a.JobID] > pos[b.JobID]:
				t.Fatalf("fairshare ranks job %d (F %v) before job %d (F %v); learned the other way", a.JobID, a.Value, b.JobID, b.Value)
			}
		}
	}
	if ties == 0 {
		t.Error("no tie in F: the rounding case was not exercised")
	}
}

// lnRandomParams draws exponents uniformly within LearnedFeatures' box.
func lnRandomParams(rng *rand.Rand) LearnedParams {
	v := make([]float64, len(LearnedFeatures))
	for i, f := range LearnedFeatures {
		v[i] = f.Min + rng.Float64()*(f.Max-f.Min)
	}
	p, err := LearnedParamsOf(v)
	if err != nil {
		panic(err)
	}
	return p
}

// TestLearned_StarvationBound checks, for random exponents anywhere in
// the tuner's box, that the age divisor bounds every job's wait: a job
// whose key, K0 / (1 + w/b)^a, has fallen below L, the smallest key a
// newcomer can have on this cluster (every feature at its most favoured
// end: run τ, the shortest limit, usage and counter ratios 0, the size
// the exponent favours), ranks ahead of every job that has just arrived,
// whatever its size, user and prediction. That wait is finite for every
// point of the box, since a ≥ 0.25 > 0: no job starves.
func TestLearned_StarvationBound(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	const minLimit, maxGPUs = time.Hour, 8
	checked, rounds := 0, 300
	for round := range rounds {
		p := lnRandomParams(rng)
		if !p.InBounds() {
			t.Fatalf("drawn %+v outside the box", p)
		}
		pol, err := NewLearned(p)
		if err != nil {
			t.Fatal(err)
		}
		now := rkT0.Add(time.Duration(round) * time.Hour)
		users := []string{"a", "b", "c", "d"}
		l := randomUsageLedger(t, rng, now, users)
		s := &Snapshot{Now: now, Ledger: l, Predicted: map[int64]time.Duration{}}
		for id := int64(1); id <= 30; id++ {
			waited := time.Duration(0)
			if rng.Intn(3) == 0 {
				waited = time.Duration(rng.Int63n(int64(60 * 24 * time.Hour)))
			}
			limit := minLimit + time.Duration(rng.Intn(48))*time.Hour
			j := Job{ID: id, Account: "lab", User: users[rng.Intn(len(users))], GPUs: 1 + rng.Intn(maxGPUs),
				TimeLimit: limit, Submit: now.Add(-waited), State: StatePending}
			s.Pending = append(s.Pending, j)
			s.Predicted[id] = time.Duration(rng.Int63n(int64(limit)))
		}
		// L: every factor at the end its exponent favours.
		sizeMin := 1.0
		if p.Size < 0 {
			sizeMin = maxGPUs
		}
		lower := math.Pow(fairSJFMinRun, p.Run) * math.Pow(minLimit.Seconds(), p.Limit) * math.Pow(sizeMin, p.Size)
		scores, err := pol.Rank(s)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int64]Job{}
		for _, j := range s.Pending {
			byID[j.ID] = j
		}
		firstFresh := -1
		for pos, sc := range scores {
			if !byID[sc.JobID].Submit.Before(now) {
				firstFresh = pos
				break
			}
		}
		if firstFresh < 0 {
			continue
		}
		for pos, sc := range scores {
			j := byID[sc.JobID]
			w := now.Sub(j.Submit).Seconds()
			b := max(s.Predicted[j.ID].Seconds(), fairSJFMinRun)
			k0 := sc.Parts.Get("key") * sc.Parts.Get("age_factor") // the key before aging
			bound := b * (math.Pow(k0/lower, 1/p.Age) - 1)
			if w > bound {
				checked++
				if pos > firstFresh {
					t.Fatalf("round %d, %+v: job %d waited %.0f s > its bound %.0f s but ranks %d, behind a fresh job at %d",
						round, p, j.ID, w, bound, pos, firstFresh)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no job waited past its bound: the test exercised nothing")
	}
	t.Logf("%d jobs past their bound over %d random points of the box, each ahead of every fresh job", checked, rounds)
}

func TestLearnedParams_Validate(t *testing.T) {
	ok := DefaultLearnedParams()
	tests := []struct {
		name string
		edit func(*LearnedParams)
		want string // "" for valid
	}{
		{"defaults", func(*LearnedParams) {}, ""},
		{"fairshare point (no aging)", func(p *LearnedParams) { *p = LearnedParams{Usage: 1} }, ""},
		{"NaN run", func(p *LearnedParams) { p.Run = math.NaN() }, "run = NaN: want a finite number"},
		{"infinite usage", func(p *LearnedParams) { p.Usage = math.Inf(1) }, "usage = +Inf: want a finite number"},
		{"huge size", func(p *LearnedParams) { p.Size = -40 }, "size = -40: want at most 16 in magnitude"},
		{"negative age", func(p *LearnedParams) { p.Age = -0.5 }, "age = -0.5: want >= 0"},
		{"negative counter", func(p *LearnedParams) { p.Counter = -1 }, "counter = -1: want >= 0"},
		{"each within 16, too many together", func(p *LearnedParams) { *p = LearnedParams{Run: 16, Limit: 16} }, "magnitudes add up to 32: want at most 30"},
		{"the tuner's box corner", func(p *LearnedParams) { *p = LearnedParams{Run: 3, Limit: 3, Size: 2, Usage: 8, Counter: 4, Age: 4} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			tt.edit(&p)
			err := p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrBadParams) {
				t.Fatalf("Validate() = %v, want ErrBadParams saying %q", err, tt.want)
			}
			if _, err := NewLearned(p); err == nil {
				t.Error("NewLearned accepted it")
			}
		})
	}
	if _, err := LearnedParamsOf([]float64{1, 2}); err == nil || !strings.Contains(err.Error(), "2 parameters, want 7") {
		t.Errorf("LearnedParamsOf(2 values) = %v", err)
	}
	if p, err := LearnedParamsOf(ok.Vector()); err != nil || p != ok {
		t.Errorf("LearnedParamsOf(Vector()) = %+v, %v; want %+v", p, err, ok)
	}
	if !ok.InBounds() {
		t.Error("fair-sjf's point is outside the tuner's box")
	}
}

// TestLearned_ExplainsEachFeature checks that the parts explain the key:
// the log_ contributions add up to log key, and WhatMovesIt names the
// levers of the exponents in use, the largest contribution first.
func TestLearned_ExplainsEachFeature(t *testing.T) {
	p := LearnedParams{Run: 1, Limit: 0.5, Size: 0.5, Usage: 2, Counter: 1, Age: 1}
	pol, err := NewLearned(p)
	if err != nil {
		t.Fatal(err)
	}
	s := rkRandomSnapshot(3, 200, 30)
	scores, err := pol.Rank(s)
	if err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, sc := range scores {
		m := sc.Parts.Map()
		sum := 0.0
		for k, v := range m {
			if strings.HasPrefix(k, "log_") {
				sum += v
			}
		}
		if !rkClose(sum, math.Log(m["key"])) {
			t.Fatalf("job %d: log_ parts add up to %v, log key is %v: %v", sc.JobID, sum, math.Log(m["key"]), m)
		}
		if m["log_counter"] != 0 {
			counted++
		}
	}
	if counted == 0 {
		t.Error("no job has a VTC counter contribution: the counter feature was not exercised")
	}
	text := pol.(Explainer).WhatMovesIt(map[string]float64{"log_run": 8, "log_usage": 9.5, "log_limit": 4, "log_size": 1})
	iu, ir := strings.Index(text, "fair-share usage decaying"), strings.Index(text, "lowers its predicted run time")
	if iu < 0 || ir < 0 || iu > ir || !strings.Contains(text, "divides its key by 2") {
		t.Errorf("WhatMovesIt = %q: want usage (the largest contribution) before run, and the age lever", text)
	}
	off, _ := NewLearned(LearnedParams{Run: 1})
	if text := off.(Explainer).WhatMovesIt(nil); strings.Contains(text, "fair-share") || !strings.Contains(text, "aging is off") {
		t.Errorf("SJF point: WhatMovesIt = %q: want no fair-share lever and aging off", text)
	}
}

// TestLearned_Contributions checks explain's table: for each point, every
// feature whose exponent is used has a value with Exponent · ln(Value) =
// its log_ part, the terms add up to ln(key), and a feature the ranking
// skipped (exponent 0) has no value and no term.
func TestLearned_Contributions(t *testing.T) {
	tests := []struct {
		name     string
		p        LearnedParams
		noValues []string // features the ranking does not compute
	}{
		{"fair-sjf's point", DefaultLearnedParams(), []string{"counter", "effective"}},
		{"every feature", LearnedParams{Run: 0.7, Limit: 0.5, Size: -0.5, Usage: 2, Counter: 1.5, Age: 1.3, Effective: 0.8}, nil},
		{"sjf, aging off", LearnedParams{Run: 1}, []string{"usage", "counter", "age", "effective"}},
	}
	s := rkRandomSnapshot(5, 150, 20)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := NewLearned(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			scores, err := pol.Rank(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range scores {
				m := sc.Parts.Map()
				cs := pol.(Decomposer).Contributions(m)
				var names []string
				sum := 0.0
				for i, c := range cs {
					names = append(names, c.Feature)
					sum += c.LogKey
					wantExp := tt.p.Vector()[i]
					if c.Feature == "age" {
						wantExp = -wantExp
					}
					if c.Exponent != wantExp {
						t.Fatalf("job %d %s: exponent %v, want %v", sc.JobID, c.Feature, c.Exponent, wantExp)
					}
					if c.Value == nil {
						if !slices.Contains(tt.noValues, c.Feature) {
							t.Fatalf("job %d %s: no value", sc.JobID, c.Feature)
						}
						if c.LogKey != 0 {
							t.Fatalf("job %d %s: no value but a term %v", sc.JobID, c.Feature, c.LogKey)
						}
						continue
					}
					if slices.Contains(tt.noValues, c.Feature) {
						t.Fatalf("job %d %s: value %v for a feature the ranking skips", sc.JobID, c.Feature, *c.Value)
					}
					if term := c.Exponent * math.Log(*c.Value); !rkClose(term, c.LogKey) {
						t.Fatalf("job %d %s: %v · ln %v = %v, the part says %v", sc.JobID, c.Feature, c.Exponent, *c.Value, term, c.LogKey)
					}
				}
				if diff := cmp.Diff(learnedNames(), names); diff != "" {
					t.Fatalf("features (-want +got):\n%s", diff)
				}
				if !rkClose(sum, math.Log(m["key"])) {
					t.Fatalf("job %d: terms add up to %v, ln key is %v", sc.JobID, sum, math.Log(m["key"]))
				}
			}
		})
	}
}
