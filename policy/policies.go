package policy

import (
	"fmt"
	"strings"
)

// Default is the policy serve and simulate use when none is named.
const Default = "fair-sjf"

// Traits are what the rest of Fairway must know about a policy beyond its
// ranking, so that nothing outside this package switches on a policy's
// name.
type Traits struct {
	// NeedsTrueRunTimes: it ranks by Snapshot.TrueRun, which only the
	// simulator knows; serve, explain and queue refuse it.
	NeedsTrueRunTimes bool
	// Family: a parameterised family whose defaults repeat another
	// policy (learned's are fair-sjf's point). Comparisons that name no
	// policies leave it out (Compared): name it, with its parameters, to
	// compare a point of it.
	Family bool
	// Preemptive: it was designed to preempt (its ranking is meant to be
	// applied to running jobs too); simulate replays it preemptively
	// unless told otherwise.
	Preemptive bool
	// StaticOrder: its key of a job depends only on the job and what is
	// fixed when it is submitted or predicted (time limit, size, submit
	// time, true run time, its prediction), so its order of two waiting
	// jobs never changes and a caller that sees jobs come and go keeps the
	// queue sorted (StaticOrder) instead of re-ranking it at every cycle.
	// f1's default origin moves now and then: every key is computed again
	// then (f1's, with a fixed Origin, never moves). slurm's order is
	// static while PriorityWeightAge and PriorityWeightFairshare are 0, as
	// by default; with either set it is re-ranked at every cycle.
	StaticOrder bool
	// PredictionBlind: it reads no prediction (Snapshot.Predicted, nor
	// the Engine's committed service of running jobs, which is made of
	// them), so a run-time predictor cannot change its ranking and a
	// simulation that shows nobody the predictions need not feed one
	// (ReadsPredictions).
	PredictionBlind bool
}

// Entry is one registered policy.
type Entry struct {
	// Name is the registry name, what Policy.Name returns.
	Name string
	// Doc says in one line what the policy ranks by.
	Doc    string
	Traits Traits
	// New builds the policy from its parameters: nil gives its documented
	// defaults, otherwise a value of its own parameter type (FairSJFParams
	// for fair-sjf, ...). Another type is refused.
	New func(params any) (Policy, error)
}

// Explainer is a Policy that says, in its own terms, what would move a
// pending job forward: explain prints it after what the job ahead leads
// by. A policy that is not one gets a generic answer, the score parts.
type Explainer interface {
	Policy
	// WhatMovesIt says what would move forward the job whose score parts
	// (Parts.Map of its Score in this policy's ranking) are parts: the
	// levers of this policy's formula, with its parameters. parts may be
	// nil (the explanation lost them); the answer must still be true.
	WhatMovesIt(parts map[string]float64) string
}

// Decomposer is a Policy whose key is a product of powers of the job's
// features, so that log key is a sum of one term per feature: explain
// prints each feature's term, and the "learned" family is one.
type Decomposer interface {
	Policy
	// Contributions splits the key of the job whose score parts (Parts.Map
	// of its Score in this policy's ranking) are parts into one term per
	// feature, in the family's feature order, with this policy's
	// exponents.
	Contributions(parts map[string]float64) []Contribution
}

// Contribution is one feature's term in a key that is a product of
// powers: LogKey = Exponent · ln(Value), and the terms add up to ln(key).
type Contribution struct {
	Feature string `json:"feature"`
	// Value is the factor the exponent applies to. nil when the ranking
	// did not compute it: a feature whose exponent is 0 may be skipped,
	// and parts may lack it.
	Value *float64 `json:"value,omitempty"`
	// Exponent is the feature's power in the key; a feature that divides
	// the key (learned's age) has a negative one.
	Exponent float64 `json:"exponent"`
	LogKey   float64 `json:"log_key"`
}

// entry registers a policy whose constructor takes a P: New accepts nil
// (P's zero value, the defaults) or a P.
func entry[P any](name, doc string, traits Traits, mk func(P) (Policy, error)) Entry {
	var zero P
	return entryWith(name, doc, traits, zero, mk)
}

// entryWith is entry for a policy whose defaults are def rather than P's
// zero value.
func entryWith[P any](name, doc string, traits Traits, def P, mk func(P) (Policy, error)) Entry {
	return Entry{Name: name, Doc: doc, Traits: traits, New: func(params any) (Policy, error) {
		p := def
		if params != nil {
			v, ok := params.(P)
			if !ok {
				return nil, fmt.Errorf("%s: parameters of type %T: want %T", name, params, p)
			}
			p = v
		}
		return mk(p)
	}}
}

// registry lists the policies in the order comparisons print them: the
// baselines (fair-share and GPU-cluster policies, then the HPC heuristics
// of RLScheduler's tables), the oracle, fair-qssf, then Fairway's default.
var registry = []Entry{
	entry("fifo", "submit time, oldest first (Slurm's priority/basic)", Traits{StaticOrder: true, PredictionBlind: true}, NewFIFO),
	entry("fairshare", "Slurm's classic fair-share factor on GPU time", Traits{PredictionBlind: true}, NewFairshare),
	entry("slurm", "Slurm's priority/multifactor with the site's weights (scontrol show config)", Traits{Family: true, StaticOrder: true, PredictionBlind: true}, NewMultifactor),
	entry("vtc", "Virtual Token Counter: the least-served user first (Sheng et al., OSDI'24)", Traits{}, NewVTC),
	entry("tiresias", "discretized 2D attained service, preemptive (Gu et al., NSDI'19)", Traits{Preemptive: true, PredictionBlind: true}, NewTiresias),
	entry("themis", "finish-time fairness, the worst-off job first (Mahajan et al., NSDI'20)", Traits{}, NewThemis),
	entry("qssf", "predicted GPU time, shortest first (Hu et al., SC'21)", Traits{StaticOrder: true}, NewQSSF),
	entry("sjf-limit", "time limit, shortest first: RLScheduler's SJF", Traits{StaticOrder: true, PredictionBlind: true}, NewSJFLimit),
	entry("f1", "log10(limit)·size + 870·log10(submit), smallest first (Carastan-Santos & de Camargo, SC'17)", Traits{StaticOrder: true, PredictionBlind: true}, NewF1),
	entry("wfp3", "(wait/limit)³·size, largest first (Tang et al., CLUSTER'09)", Traits{PredictionBlind: true}, NewWFP3),
	entry("unicep", "wait/(log2(size)·limit), largest first (Tang et al., CLUSTER'09)", Traits{PredictionBlind: true}, NewUNICEP),
	entry("sjf-oracle", "true run time, shortest first: the simulator's lower bound", Traits{NeedsTrueRunTimes: true, StaticOrder: true, PredictionBlind: true}, NewSJFOracle),
	entry("fair-qssf", "VTC across users, shortest predicted service within one, with starvation and ρ guards", Traits{}, NewFairQSSF),
	entry("fair-sjf", "predicted shortest job first, stretched by fair share, shrunk by age", Traits{}, NewFairSJF),
	entryWith("learned", "product of powers of run time, limit, size, fair-share usage, VTC counter and age, fitted by fairway tune",
		Traits{Family: true}, DefaultLearnedParams(), NewLearned),
}

// Names lists the registered policies in the registry's order.
func Names() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.Name
	}
	return out
}

// Compared lists the policies a comparison replays when none are named:
// every registered policy but the families, in the registry's order.
func Compared() []string {
	var out []string
	for _, e := range registry {
		if !e.Traits.Family {
			out = append(out, e.Name)
		}
	}
	return out
}

// Lookup returns the registered policy called name.
func Lookup(name string) (Entry, bool) {
	for _, e := range registry {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Preemptive lists the registered policies with the Preemptive trait, in
// the registry's order.
func Preemptive() []string {
	var out []string
	for _, e := range registry {
		if e.Traits.Preemptive {
			out = append(out, e.Name)
		}
	}
	return out
}

// New builds the registered policy called name from params (see
// Entry.New).
func New(name string, params any) (Policy, error) {
	e, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown policy %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return e.New(params)
}
