package tune

import (
	"context"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestRun_SearchFromStart checks where CMA-ES starts on a loaded history
// whose training windows favour an anchor over fair-sjf's point: from that
// anchor by default, from the start when told.
func TestRun_SearchFromStart(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 3, Load: 2})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWindows(jobs, sim.Cluster{Nodes: 8, PerNode: 8, Unit: sim.GPUs}, Setup{Objective: Fair, Seen: 0.7, Validate: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fromStart bool
		want      func(string) bool
		says      string
	}{
		{false, func(s string) bool { return s != "start" }, "an anchor"},
		{true, func(s string) bool { return s == "start" }, "the start"},
	} {
		res, err := Run(context.Background(), Config{Objective: Fair, Train: w.Train, Validate: w.Validate,
			Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Generations: 1, Candidates: 1,
			Anchors: Anchors(), SearchFromStart: tc.fromStart})
		if err != nil {
			t.Fatal(err)
		}
		if !tc.want(res.SearchFrom) {
			t.Errorf("SearchFromStart %v: searched from %q, want %s", tc.fromStart, res.SearchFrom, tc.says)
		}
		if len(res.Candidates) != len(Anchors())+1 {
			t.Errorf("SearchFromStart %v: %d candidates, want every anchor and one drawn point", tc.fromStart, len(res.Candidates))
		}
	}
}

func TestBetterTrial(t *testing.T) {
	met := func(v float64, bsld float64) Trial {
		return Trial{Verdict: sim.Verdict{Met: true}, Score: Score{Violation: v, Value: bsld}}
	}
	not := func(v float64, bsld float64) Trial { return Trial{Score: Score{Violation: v, Value: bsld}} }
	for _, tc := range []struct {
		name string
		a, b Trial
		want bool
	}{
		{"met beats not met, whatever the scores", met(0, 9), not(0, 1), true},
		{"not met loses to met", not(0, 1), met(0, 9), false},
		{"both met: lower bsld", met(0, 2), met(0, 3), true},
		{"neither met: less violation first", not(0.1, 9), not(0.2, 1), true},
		{"neither met: then lower bsld", not(0, 2), not(0, 3), true},
		{"a tie keeps the earlier", not(0, 2), not(0, 2), false},
	} {
		if got := betterTrial(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: betterTrial = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNest runs the nested selection on a small history: each rule is
// judged on the seen part's validation window, exactly the part the outer
// tuner validates on, the choice follows betterTrial, and the same seed
// gives the same choice.
func TestNest(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 3, Load: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := sim.Cluster{Nodes: 8, PerNode: 8, Unit: sim.GPUs}
	s := Setup{Objective: Fair, Seen: 0.7, Validate: 0.3}
	w, err := NewWindows(jobs, c, s)
	if err != nil {
		t.Fatal(err)
	}
	cfg := NestConfig{Setup: s, Rules: Rules(), Policies: []string{"fifo", sim.Reference, "fair-sjf"},
		Base: Config{Objective: Fair, Start: policy.DefaultLearnedParams(), Seed: 1, Parallel: 2, Generations: 1,
			Candidates: 1, Anchors: Anchors()}}
	run := func() *Nested {
		n, err := Nest(context.Background(), w, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := run()
	lo, hi := w.Validate.Window()
	if n.Table.Window != [2]int{lo, hi} || n.Table.Predictions != sim.PredictOnline {
		t.Errorf("judged on jobs %v (%s predictions), want the validation window [%d, %d), online", n.Table.Window, n.Table.Predictions, lo, hi)
	}
	if len(n.Trials) != 2 || len(n.Table.Rows) != 5 {
		t.Fatalf("%d trials, %d rows: want 2 rules beside 3 policies", len(n.Trials), len(n.Table.Rows))
	}
	for i, tr := range n.Trials {
		if tr.Rule.SearchFromStart && tr.Result.SearchFrom != "start" {
			t.Errorf("rule %s searched from %q", tr.Rule.Name, tr.Result.SearchFrom)
		}
		if i != n.Chosen && betterTrial(tr, n.Trials[n.Chosen]) {
			t.Errorf("chose %s, but %s is better", n.Trials[n.Chosen].Rule.Name, tr.Rule.Name)
		}
	}
	if m := run(); m.Chosen != n.Chosen || m.Trials[0].Result.Params != n.Trials[0].Result.Params || m.Trials[1].Result.Params != n.Trials[1].Result.Params {
		t.Error("the same seed chose otherwise")
	}
}

func TestNest_Refused(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 3, Load: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	c := sim.Cluster{Nodes: 8, PerNode: 8, Unit: sim.GPUs}
	s := Setup{Objective: Fair, Seen: 0.7, Validate: 0.3}
	w, err := NewWindows(jobs, c, s)
	if err != nil {
		t.Fatal(err)
	}
	bsld := s
	bsld.Objective = BSLD
	for _, tc := range []struct {
		name string
		cfg  NestConfig
		want string
	}{
		{"bsld", NestConfig{Setup: bsld, Rules: Rules(), Policies: []string{sim.Reference}}, "only fair"},
		{"no rule", NestConfig{Setup: s, Policies: []string{sim.Reference}}, "no rule"},
		{"no reference", NestConfig{Setup: s, Rules: Rules(), Policies: []string{"fifo"}}, "needs fairshare"},
		{"rule named as a policy", NestConfig{Setup: s, Rules: []Rule{{Name: "fifo"}}, Policies: []string{sim.Reference}}, `rule "fifo"`},
	} {
		_, err := Nest(context.Background(), w, c, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
