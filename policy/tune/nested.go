package tune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// Rule is one way of running the search, a choice the nested selection
// makes (Nest).
type Rule struct {
	Name string
	// SearchFromStart as Config's.
	SearchFromStart bool
}

// Rules are the nested selection's menu: CMA-ES from the best of the start
// and the anchors on training (Run's default), and CMA-ES from the start.
// The first is kept on a tie.
func Rules() []Rule {
	return []Rule{{Name: "rule-anchors"}, {Name: "rule-start", SearchFromStart: true}}
}

// Trial is one rule's run inside the seen part.
type Trial struct {
	Rule   Rule
	Result *Result
	// Verdict is the time split's criterion for the rule's point on the
	// inner held-out part, Score its tune.Judge there (Fair).
	Verdict sim.Verdict
	Score   Score
}

// Nested is the outcome of a nested selection.
type Nested struct {
	Trials []Trial
	// Chosen indexes Trials: the rule to run on the whole seen part.
	Chosen int
	// Table is the inner held-out part's table: every policy asked for and
	// each rule's point, as `simulate --split` would print it.
	Table *sim.ProtocolTable
}

// NestConfig is a nested selection.
type NestConfig struct {
	// Setup cut w (NewWindows); its Validate is also the inner held-out
	// fraction.
	Setup Setup
	// Base is the run each rule changes: its Train and Validate are
	// replaced by the inner windows', its Budget split among the rules.
	Base  Config
	Rules []Rule
	// Trace, Policies and Predictor name the inner table's rows as
	// sim.ProtocolConfig's; Policies must hold sim.Reference.
	Trace     string
	Policies  []string
	Predictor string
}

// Nest chooses among cfg.Rules by emulating the outer time split inside
// the seen part of w: each rule tunes on the seen part's first 1 − Validate
// (its own training and validation windows cut from them as NewWindows
// cuts), and its point is replayed on the seen part's last Validate exactly
// as `simulate --split` replays the held-out part (an empty cluster, the
// fair-share ledger and the predictor warmed by the history, predictions
// learned online), beside cfg.Policies, and judged by the time split's
// criterion. The rule whose point meets it is chosen; if both or neither
// do, the one with the better Judge against sim.Reference there (less
// violation, then the lower value); a tie keeps the earlier rule. A rule
// is chosen, not a point: the caller reruns it on the whole seen part.
// Fair objective only.
func Nest(ctx context.Context, w *Windows, c sim.Cluster, cfg NestConfig) (*Nested, error) {
	if cfg.Setup.Objective != Fair {
		return nil, fmt.Errorf("tune: nested selection: objective %s: only %s", cfg.Setup.Objective, Fair)
	}
	if len(cfg.Rules) == 0 {
		return nil, errors.New("tune: nested selection: no rule")
	}
	if !slices.Contains(cfg.Policies, sim.Reference) {
		return nil, fmt.Errorf("tune: nested selection: the table needs %s", sim.Reference)
	}
	s := cfg.Setup
	s.Seen = 1 - s.Validate
	inner, err := NewWindows(w.Jobs, c, s)
	if err != nil {
		return nil, fmt.Errorf("tune: nested selection: inner windows: %w", err)
	}
	test, err := sim.NewEvaluator(w.Jobs, c, sim.Protocol{Kind: sim.Split, Split: 1 - s.Validate, Backfill: s.Backfill,
		NewPredictor: s.NewPredictor, Predictions: sim.PredictOnline})
	if err != nil {
		return nil, fmt.Errorf("tune: nested selection: inner held-out part: %w", err)
	}
	out := &Nested{}
	facts := map[string]sim.PolicyFactory{}
	rows := slices.Clone(cfg.Policies)
	for _, r := range cfg.Rules {
		if _, ok := policy.Lookup(r.Name); ok || slices.Contains(rows, r.Name) {
			return nil, fmt.Errorf("tune: nested selection: rule %q: names a policy or another rule", r.Name)
		}
		rc := cfg.Base
		rc.Train, rc.Validate, rc.SearchFromStart = inner.Train, inner.Validate, r.SearchFromStart
		rc.After = 0
		if rc.Budget > 0 {
			// The rules and the rerun on the whole seen part share it.
			rc.Budget /= time.Duration(len(cfg.Rules) + 1)
		}
		res, err := Run(ctx, rc)
		if err != nil {
			return nil, fmt.Errorf("tune: nested selection: rule %s: %w", r.Name, err)
		}
		p := res.Params
		facts[r.Name] = func() (policy.Policy, error) { return policy.NewLearned(p) }
		rows = append(rows, r.Name)
		out.Trials = append(out.Trials, Trial{Rule: r, Result: res})
	}
	tab, err := test.Table(ctx, sim.ProtocolConfig{Trace: cfg.Trace, Policies: rows, Factories: facts,
		Predictor: cfg.Predictor, Parallel: cfg.Base.Parallel})
	if err != nil {
		return nil, fmt.Errorf("tune: nested selection: inner held-out table: %w", err)
	}
	out.Table = tab
	row := func(name string) sim.ProtocolRow {
		return tab.Rows[slices.IndexFunc(tab.Rows, func(r sim.ProtocolRow) bool { return r.Name == name })]
	}
	ref := row(sim.Reference)
	for i := range out.Trials {
		t := &out.Trials[i]
		if t.Verdict, err = tab.Verdict(t.Rule.Name); err != nil {
			return nil, fmt.Errorf("tune: nested selection: %w", err)
		}
		t.Score = Judge(Fair, row(t.Rule.Name).Evaluation, ref.Evaluation)
		if betterTrial(*t, out.Trials[out.Chosen]) {
			out.Chosen = i
		}
	}
	return out, nil
}

// betterTrial reports whether a beats b: the criterion met first, then the
// better Judge.
func betterTrial(a, b Trial) bool {
	if a.Verdict.Met != b.Verdict.Met {
		return a.Verdict.Met
	}
	return a.Score.Compare(b.Score) < 0
}
