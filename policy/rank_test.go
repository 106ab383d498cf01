package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// rkT0 is the epoch of the hand-made snapshots: times are minutes after it.
var rkT0 = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

func rkAt(min float64) time.Time { return rkT0.Add(time.Duration(min * float64(time.Minute))) }

// rkJob is a pending one-GPU job of user in account, submitted at minute
// submit, whose predicted run (in Snapshot.Predicted via rkSnap) is run.
type rkJob struct {
	id      int64
	acct    string
	user    string
	submit  float64
	gpus    int
	run     time.Duration // 0: no prediction
	limit   time.Duration
	trueRun time.Duration
}

func (r rkJob) job() Job {
	g := r.gpus
	if g == 0 {
		g = 1
	}
	return Job{ID: r.id, Account: r.acct, User: r.user, Submit: rkAt(r.submit), GPUs: g,
		TimeLimit: r.limit, State: StatePending, ArrayTask: -1}
}

// rkSnap builds a snapshot at minute now from hand-made jobs.
func rkSnap(now float64, jobs ...rkJob) *Snapshot {
	s := &Snapshot{Now: rkAt(now), Predicted: map[int64]time.Duration{}, TrueRun: map[int64]time.Duration{}}
	for _, r := range jobs {
		s.Pending = append(s.Pending, r.job())
		if r.run > 0 {
			s.Predicted[r.id] = r.run
		}
		if r.trueRun > 0 {
			s.TrueRun[r.id] = r.trueRun
		}
	}
	return s
}

// rkRank ranks s with the registered policy name and returns the job ids
// best first and the values by id.
func rkRank(t *testing.T, name string, p any, s *Snapshot) ([]int64, map[int64]Score) {
	t.Helper()
	pol, err := New(name, p)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	scores, err := pol.Rank(s)
	if err != nil {
		t.Fatalf("%s.Rank: %v", name, err)
	}
	ids := make([]int64, len(scores))
	by := map[int64]Score{}
	for i, sc := range scores {
		ids[i] = sc.JobID
		by[sc.JobID] = sc
	}
	return ids, by
}

func TestFIFO_Rank(t *testing.T) {
	tests := []struct {
		name string
		jobs []rkJob
		want []int64
	}{
		{"submit order", []rkJob{{id: 1, submit: 30}, {id: 2, submit: 10}, {id: 3, submit: 20}}, []int64{2, 3, 1}},
		{"equal submit falls to id", []rkJob{{id: 9, submit: 10}, {id: 4, submit: 10}, {id: 7, submit: 5}}, []int64{7, 4, 9}},
		{"empty queue", nil, []int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, by := rkRank(t, "fifo", nil, rkSnap(60, tc.jobs...))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for _, j := range tc.jobs {
				if want := 60 - j.submit; by[j.id].Value != want*60 || by[j.id].Parts.Get("age_s") != want*60 {
					t.Errorf("job %d: value %v parts %v, want age %v s", j.id, by[j.id].Value, by[j.id].Parts, want*60)
				}
			}
		})
	}
}

func TestRegistry_NamesUniqueDefaultRegistered(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range registry {
		if seen[e.Name] {
			t.Errorf("%q is registered twice", e.Name)
		}
		seen[e.Name] = true
		if e.Doc == "" {
			t.Errorf("%q has no Doc", e.Name)
		}
	}
	if _, ok := Lookup(Default); !ok {
		t.Errorf("default policy %q is not registered", Default)
	}
	if _, err := New("fair-sjf", TiresiasParams{}); err == nil || !strings.Contains(err.Error(), "want policy.FairSJFParams") {
		t.Errorf("New(fair-sjf, TiresiasParams) = %v, want an error naming the parameter type", err)
	}
	if _, err := New("lottery", nil); err == nil {
		t.Error(`New("lottery") succeeded, want an error`)
	}
	for _, n := range Names() {
		p, err := New(n, nil)
		if err != nil {
			t.Fatalf("New(%q) with defaults: %v", n, err)
		}
		if p.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, p.Name())
		}
	}
}

func TestPolicies_RejectBadParams(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		p      any
	}{
		{"negative fairshare weight", "fairshare", FairshareParams{AgeWeight: -1}},
		{"descending tiresias thresholds", "tiresias", TiresiasParams{Thresholds: []float64{100, 50}}},
		{"negative promote knob", "tiresias", TiresiasParams{PromoteKnob: -1}},
		{"negative themis min run", "themis", ThemisParams{MinRun: -time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.policy, tc.p); err == nil {
				t.Errorf("New(%q, %+v) succeeded, want an error", tc.policy, tc.p)
			}
		})
	}
}

// rkRandomSnapshot builds a busy, messy snapshot: ties in submit times,
// missing predictions and limits, shard and CPU-only jobs, zero shares,
// requeued jobs with attained service, running jobs, and a ledger with
// history and a backlog.
func rkRandomSnapshot(seed int64, jobs, users int) *Snapshot {
	rng := rand.New(rand.NewSource(seed))
	accounts := max(1, users/20)
	now := rkAt(100000)
	s := &Snapshot{
		Now:       now,
		Predicted: map[int64]time.Duration{},
		TrueRun:   map[int64]time.Duration{},
		Shares:    &Shares{Accounts: map[string]float64{}, Users: map[Assoc]float64{}},
		Service:   Service{TypeWeight: map[string]float64{"h100": 1.7}, ShardsPerGPU: 3},
		GPUs:      float64(jobs / 4),
	}
	assocOf := func(u int) Assoc {
		return Assoc{Account: fmt.Sprintf("acct%03d", u%accounts), User: fmt.Sprintf("user%04d", u)}
	}
	for a := range accounts {
		s.Shares.Accounts[fmt.Sprintf("acct%03d", a)] = float64(1+rng.Intn(5)) / 7
	}
	for u := range users {
		switch rng.Intn(20) {
		case 0:
			s.Shares.Users[assocOf(u)] = 0
		case 1, 2, 3:
			s.Shares.Users[assocOf(u)] = float64(2+rng.Intn(8)) / 3
		}
	}
	mk := func(id int64) Job {
		// A few heavy users submit most jobs.
		u := rng.Intn(users)
		if rng.Intn(3) == 0 {
			u = rng.Intn(max(1, users/50))
		}
		a := assocOf(u)
		if rng.Intn(15) == 0 {
			// The same user charging a second account.
			a.Account = fmt.Sprintf("acct%03d", (u+1)%accounts)
		}
		j := Job{ID: id, Account: a.Account, User: a.User, ArrayTask: -1,
			Submit: now.Add(-time.Duration(rng.Intn(20000)) * time.Minute / 4)}
		switch rng.Intn(10) {
		case 0:
			j.CPUs = 4 // CPU-only
		case 1:
			j.Shards = 1 + rng.Intn(4)
		default:
			j.GPUs = 1 << rng.Intn(4)
			if rng.Intn(4) == 0 {
				j.GPUType = "h100"
			}
		}
		if rng.Intn(4) != 0 {
			j.TimeLimit = time.Duration(1+rng.Intn(48)) * time.Hour
		}
		if rng.Intn(5) != 0 {
			s.Predicted[id] = time.Duration(rng.Int63n(int64(10 * time.Hour)))
		}
		s.TrueRun[id] = time.Duration(rng.Intn(36000)) * time.Second
		return j
	}
	for i := range jobs {
		j := mk(int64(1000 + i))
		j.State = StatePending
		s.Pending = append(s.Pending, j)
	}
	for i := range jobs / 10 {
		j := mk(int64(1000 + jobs + i))
		j.State = StateRunning
		j.Start = now.Add(-time.Duration(rng.Int63n(int64(2 * time.Hour))))
		s.Running = append(s.Running, j)
	}

	l, err := NewLedger(LedgerParams{HalfLife: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	// History: finished jobs of every user over the last days.
	for i := range users * 3 {
		j := mk(int64(-1 - i))
		from := now.Add(-time.Duration(rng.Intn(5*24*60)) * time.Minute)
		to := from.Add(time.Duration(1+rng.Intn(600)) * time.Minute)
		if to.After(now) {
			to = now
		}
		l.Charge(&j, from, to, s.Service)
		l.Finish(&j)
	}
	// Some pending jobs are requeued, with attained service.
	for i := range s.Pending {
		if rng.Intn(10) == 0 {
			j := &s.Pending[i]
			from := now.Add(-time.Duration(60+rng.Intn(600)) * time.Minute)
			l.Charge(j, from, from.Add(time.Duration(1+rng.Intn(59))*time.Minute), s.Service)
		}
	}
	for i := range s.Running {
		l.Charge(&s.Running[i], s.Running[i].Start, now, s.Service)
	}
	l.Backlog(s.Pending[:len(s.Pending)/2], s.Shares)
	l.Backlog(s.Pending, s.Shares)
	s.Ledger = l
	// Effective run times for a third of the predicted pending jobs, some
	// below their prediction (a user whose same job often ends early),
	// some above, some under τ; drawn from the ids, not rng, so that the
	// rest of the snapshot is as before.
	s.Effective = map[int64]time.Duration{}
	for _, j := range s.Pending {
		if d, ok := s.Predicted[j.ID]; ok && j.ID%3 == 0 {
			s.Effective[j.ID] = d * time.Duration(1+j.ID%4) / 3
		}
	}
	return s
}

// TestPolicies_InputOrderIndependent checks every policy gives the same
// ranking, values and parts whatever the order of Pending and Running, and
// the same result twice on the same snapshot.
func TestPolicies_InputOrderIndependent(t *testing.T) {
	for _, name := range Names() {
		for seed := int64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
				s := rkRandomSnapshot(seed, 400, 40)
				pol, err := New(name, rkParams[name])
				if err != nil {
					t.Fatal(err)
				}
				want, err := pol.Rank(s)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(s.Pending) {
					t.Fatalf("%d scores for %d pending jobs", len(want), len(s.Pending))
				}
				again, err := pol.Rank(s)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, again); diff != "" {
					t.Fatalf("same snapshot, different ranking (-first +second):\n%s", diff)
				}
				seen := map[int64]bool{}
				for i, sc := range want {
					if seen[sc.JobID] {
						t.Fatalf("job %d ranked twice", sc.JobID)
					}
					seen[sc.JobID] = true
					if i > 0 && sc.Value > want[i-1].Value {
						t.Fatalf("rank %d: value %v above rank %d's %v", i, sc.Value, i-1, want[i-1].Value)
					}
				}
				rng := rand.New(rand.NewSource(seed))
				for range 3 {
					shuffled := *s
					shuffled.Pending = slices.Clone(s.Pending)
					shuffled.Running = slices.Clone(s.Running)
					rng.Shuffle(len(shuffled.Pending), func(a, b int) {
						shuffled.Pending[a], shuffled.Pending[b] = shuffled.Pending[b], shuffled.Pending[a]
					})
					rng.Shuffle(len(shuffled.Running), func(a, b int) {
						shuffled.Running[a], shuffled.Running[b] = shuffled.Running[b], shuffled.Running[a]
					})
					got, err := pol.Rank(&shuffled)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("shuffled input, different ranking (-want +got):\n%s", diff)
					}
				}
			})
		}
	}
}

func TestGroupByAssoc_UserInSeveralAccounts(t *testing.T) {
	jobs := []Job{
		{ID: 1, Account: "a", User: "u"}, {ID: 2, Account: "b", User: "u"}, {ID: 3, Account: "a", User: "v"},
		{ID: 4, Account: "c", User: "u"}, {ID: 5, Account: "b", User: "u"}, {ID: 6, Account: "a", User: "u"},
	}
	g := groupByAssoc(jobs)
	got := map[Assoc][]int64{}
	for x, key := range g.keys {
		for _, m := range g.group(x) {
			got[key] = append(got[key], jobs[m].ID)
		}
		if g.accounts[g.acct[x]] != key.Account {
			t.Errorf("group %v: account index names %q", key, g.accounts[g.acct[x]])
		}
	}
	want := map[Assoc][]int64{{"a", "u"}: {1, 6}, {"b", "u"}: {2, 5}, {"a", "v"}: {3}, {"c", "u"}: {4}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if _, ok := g.lookup("d", "u"); ok {
		t.Error("lookup found u in an account it has no job in")
	}
}

func TestRank_NaNIsAnError(t *testing.T) {
	sc := scorer{names: []string{"x"}, weights: []float64{1}}
	s := rkSnap(0, rkJob{id: 1})
	nan := 0.0
	nan /= nan
	if _, err := sc.rank(s, []float64{nan}, nil); !errors.Is(err, ErrBadScore) {
		t.Errorf("rank with a NaN part: err %v, want ErrBadScore", err)
	}
}

// TestSortRank_MatchesSortFunc checks both of sortRank's sorts (the
// quicksort of short rankings, the radix sort of long ones) against
// slices.SortFunc, on values with many ties and on already ordered input.
func TestSortRank_MatchesSortFunc(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 3, 13, 40, 100, 511, 512, 3000} {
		for _, shape := range []string{"random", "ties", "sorted", "reversed"} {
			t.Run(fmt.Sprintf("n=%d/%s", n, shape), func(t *testing.T) {
				es := make([]rankEntry, n)
				for i := range es {
					es[i] = rankEntry{value: rng.NormFloat64(), submit: rng.Int63n(5), id: int64(i), i: int32(i)}
					switch shape {
					case "ties":
						es[i].value = float64(rng.Intn(3))
					case "sorted":
						es[i].value = float64(-i)
					case "reversed":
						es[i].value = float64(i)
					}
				}
				if shape == "random" || shape == "ties" {
					rng.Shuffle(n, func(a, b int) { es[a], es[b] = es[b], es[a] })
				}
				want := slices.Clone(es)
				slices.SortFunc(want, compareRank)
				sortRank(es, nil)
				if diff := cmp.Diff(want, es, cmp.AllowUnexported(rankEntry{})); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			})
		}
	}
}

func TestRegistry_TraitsAnswerWhatNamesDid(t *testing.T) {
	if diff := cmp.Diff([]string{"tiresias"}, Preemptive()); diff != "" {
		t.Errorf("Preemptive (-want +got):\n%s", diff)
	}
	var oracles []string
	for _, e := range registry {
		if e.Traits.NeedsTrueRunTimes {
			oracles = append(oracles, e.Name)
		}
	}
	if diff := cmp.Diff([]string{"sjf-oracle"}, oracles); diff != "" {
		t.Errorf("NeedsTrueRunTimes (-want +got):\n%s", diff)
	}
}

// TestExplainer_NamesOnlyTheGuardsItHas checks that a policy's answer to
// "what moves it" follows its parameters: a guard turned off is not
// offered as a lever.
func TestExplainer_NamesOnlyTheGuardsItHas(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      string
		params      any
		want, never string
	}{
		{"fair-qssf as shipped", "fair-qssf", nil, "starvation guard (24 h)", "overtakes"},
		{"fair-qssf, guards off", "fair-qssf", FairQSSFParams{MaxWait: -1, RhoMax: -1}, "predicted service.", "guard"},
		{"fair-qssf, 2 h guard", "fair-qssf", FairQSSFParams{MaxWait: 2 * time.Hour}, "starvation guard (2 h)", "24 h"},
		{"fair-sjf as shipped", "fair-sjf", nil, "overtakes fresher jobs", "guard"},
		{"fair-sjf, no aging", "fair-sjf", FairSJFParams{AgeExponent: -1}, "aging is off", "overtakes"},
		{"fair-sjf, no fair share", "fair-sjf", FairSJFParams{ShareExponent: -1}, "its own wait", "fair-share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.policy, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			ex, ok := p.(Explainer)
			if !ok {
				t.Fatalf("%s is not an Explainer", tc.policy)
			}
			got := ex.WhatMovesIt(nil)
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.never) {
				t.Errorf("%q, want it to say %q and never %q", got, tc.want, tc.never)
			}
		})
	}
}

// TestScorer_RankValueAsValue checks that the Values rank gives are, bit
// for bit, what value combines from each row, whether one part or several
// are weighted (rank reads a single weighted part without the pass over
// the weights): -0 parts, which 0 + w·part makes +0, and a NaN part.
func TestScorer_RankValueAsValue(t *testing.T) {
	negZero := math.Copysign(0, -1)
	rows := [][]float64{{negZero, 1}, {0, negZero}, {1.5, -3}, {-2.25, 7}, {math.Inf(1), 0}, {1e-300, 1e300}}
	for _, weights := range [][]float64{{1, 0}, {-1, 0}, {0, 1}, {0, -0.5}, {1, 2}, {0, 0}, {-1, 3}} {
		t.Run(fmt.Sprint(weights), func(t *testing.T) {
			sc := scorer{names: []string{"a", "b"}, weights: weights}
			s := &Snapshot{}
			var parts []float64
			for i, r := range rows {
				s.Pending = append(s.Pending, Job{ID: int64(i + 1)})
				parts = append(parts, r...)
			}
			scores, err := sc.rank(s, slices.Clone(parts), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, sco := range scores {
				i := int(sco.JobID - 1)
				if want := sc.value(parts[2*i : 2*i+2]); math.Float64bits(sco.Value) != math.Float64bits(want) {
					t.Errorf("job %d: Value %v (%x), value %v (%x)", sco.JobID, sco.Value, math.Float64bits(sco.Value), want, math.Float64bits(want))
				}
			}
			nan := slices.Clone(parts)
			nan[2*2] = math.NaN()
			if _, err := sc.rank(s, nan, nil); (weights[0] != 0) != errors.Is(err, ErrBadScore) {
				t.Errorf("a NaN part of weight %v: error %v", weights[0], err)
			}
		})
	}
}
