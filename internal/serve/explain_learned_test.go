package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/texttest"
	"github.com/fairway-hpc/fairway/policy"
)

// TestExplain_WhatMovesItAsksTheLoadedPolicy is the regression test of
// explain's "what moves it" for a point of the learned family that is not
// its defaults (a policy file's): the levers named must be those of the
// exponents that ranked the job, not those of the family's defaults
// (fair-sjf's point: run time, fair-share usage, aging on), which is what
// building the policy again from its name gave.
func TestExplain_WhatMovesItAsksTheLoadedPolicy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		params      policy.LearnedParams
		want, never []string
	}{
		{"limit and large jobs first, aging off", policy.LearnedParams{Limit: 1, Size: -0.5},
			[]string{"a shorter time limit", "a larger request (this policy favours large jobs)", "aging is off"},
			[]string{"fair-share usage decaying", "lowers its predicted run time", "divides its key"}},
		{"usage alone, aging off", policy.LearnedParams{Usage: 1},
			[]string{"its user's fair-share usage decaying", "aging is off"},
			[]string{"a shorter time limit", "divides its key"}},
		{"counter and slow aging", policy.LearnedParams{Run: 1, Counter: 2, Age: 0.5},
			[]string{"other users' VTC counters growing", "divides its key by 1.41"},
			[]string{"fair-share usage decaying", "aging is off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.NewLearned(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, GPUs: 8})
			if err != nil {
				t.Fatal(err)
			}
			g := newRig(t, Config{}, true)
			g.r.engine = eng
			big := job(2, "b", policy.StatePending, time.Second)
			big.GPUs = 4
			res := g.cycle(t, job(1, "a", policy.StatePending, 0), big, job(3, "c", policy.StatePending, 2*time.Second))
			if len(res.Ranked) != 3 {
				t.Fatalf("%d jobs ranked, want 3", len(res.Ranked))
			}
			last := res.Ranked[2].JobID // someone is ahead of it: "what moves it" is said
			ex, err := Explain(res, last)
			if err != nil {
				t.Fatal(err)
			}
			ex.Policy = "learned" // a family's name: only the policy that ranked can answer
			moves := WhatMovesIt(ex.Ranker(), ex.Parts)
			texttest.Check(t, moves, tc.want, tc.never)
		})
	}
}

func TestWhatMovesIt_NamesOnlyThePolicysOwnLevers(t *testing.T) {
	for _, tc := range []struct {
		policy      string
		want, never string
	}{
		{"fair-sjf", "fair-share usage decaying", "starvation guard"},
		{"fair-qssf", "starvation guard (24 h)", "overtakes fresher jobs"},
		{"fifo", "score parts above", "starvation guard"},
	} {
		p, err := policy.New(tc.policy, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := WhatMovesIt(p, nil)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.never) {
			t.Errorf("%s: %q, want it to say %q and never %q", tc.policy, got, tc.want, tc.never)
		}
	}
}
