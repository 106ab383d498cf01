package policy

import (
	"fmt"
	"math"
)

// FairSJFParams configures fair-sjf. The zero value gives the defaults.
type FairSJFParams struct {
	// ShareExponent is k in the fair-share stretch (1 + UE/S)^k. 0 means
	// DefaultShareExponent; a negative value turns fair share off.
	ShareExponent float64
	// AgeExponent is a in the age term (1 + wait/max(r̂, τ))^a. 0 means
	// DefaultAgeExponent; a negative value turns aging off (and with it the
	// starvation bound).
	AgeExponent float64
}

// The defaults of fair-sjf. They were chosen among k ∈ {1, 2, 3, 4} and
// a ∈ {0, 0.5, 1, 1.5, 2} on the first 6000 jobs of every suite trace at
// 0.8, 1.0 and 1.2 of its load, the same for all (docs/POLICY.md).
const (
	DefaultShareExponent = 2
	DefaultAgeExponent   = 1
)

// fairSJFMinRun is τ, the shortest run a key is measured against, as in
// bounded slowdown: a job predicted to end at once is not infinitely short.
const fairSJFMinRun = 10.0

// fairSJF, Fairway's default, is predicted-shortest-job-first stretched by
// fair share and shrunk by age. Each pending job j of association u gets
//
//	key = max(r̂, τ) · (1 + UE_u/S_u)^k / (1 + w/max(r̂, τ))^a
//
// and the smallest key ranks first. r̂ is the predicted run time
// (Snapshot.Predicted, else the time limit), w the time since eligibility,
// UE_u and S_u the classic fair-share effective usage and normalised shares
// (as fairshare computes them, usage decayed with the Ledger's half-life).
// Three general principles, one factor each:
//
//   - Shortest predicted job first lowers the mean wait and the bounded
//     slowdown, as SJF does with exact run times (sjf-oracle) and EASY with
//     predictions does (Tsafrir et al., IEEE TPDS 2007).
//   - The fair-share stretch makes a user who has had more than their share
//     (UE/S > 1) wait behind other users' jobs of similar length, and one
//     who has had none rank by length alone; usage decays, so nobody is
//     pushed back for long. It is what keeps Jain's index near fairshare's
//     where SJF alone drops it.
//   - The age term is the job's slowdown were it to start now (Brinch
//     Hansen's highest-response-ratio-next): it grows without bound as the
//     job waits, so every job eventually outranks every newcomer (whose key
//     is at least τ) — no starvation, and the worst finish-time fairness ρ
//     stays bounded where SJF and fair share alone leave long or heavy
//     users' jobs waiting.
//
// A zero-share association has an infinite stretch, capped so that its
// jobs rank after everyone else's in the order of their keys.
//
// Value = −key. Parts: key, predicted_run_s, usage_ratio (UE/S), age_factor.
type fairSJF struct {
	k, a float64
	sc   scorer
}

// NewFairSJF returns the "fair-sjf" policy.
func NewFairSJF(p FairSJFParams) (Policy, error) {
	for _, v := range []float64{p.ShareExponent, p.AgeExponent} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("fair-sjf: exponents %g, %g: want finite numbers", p.ShareExponent, p.AgeExponent)
		}
	}
	f := &fairSJF{k: p.ShareExponent, a: p.AgeExponent, sc: scorer{
		names:   []string{"key", "predicted_run_s", "usage_ratio", "age_factor"},
		weights: []float64{-1, 0, 0, 0},
	}}
	switch {
	case f.k == 0:
		f.k = DefaultShareExponent
	case f.k < 0:
		f.k = 0
	}
	switch {
	case f.a == 0:
		f.a = DefaultAgeExponent
	case f.a < 0:
		f.a = 0
	}
	return f, nil
}

func (*fairSJF) Name() string { return "fair-sjf" }

// WhatMovesIt names fair-sjf's levers: the three factors of the key.
func (p *fairSJF) WhatMovesIt(map[string]float64) string {
	share := "its user's fair-share usage decaying, and "
	if p.k == 0 {
		share = ""
	}
	if p.a == 0 {
		return share + "a shorter time limit, which lowers its prediction (aging is off: waiting does not move it)."
	}
	return share + "its own wait: every second it waits shrinks its key\n" +
		"  relative to its predicted run time, so it overtakes fresher jobs; a shorter time limit lowers its prediction."
}

// fairSJFMaxRatio caps UE/S: a zero-share association's stretch is large
// but finite, so that the order among such jobs is still by key.
const fairSJFMaxRatio = 1e6

func (p *fairSJF) Rank(s *Snapshot) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	var sums shareTotals
	if p.k > 0 {
		sums = shareSums(s, g.keys)
	}
	return p.rank(s, g, sums)
}

func (p *fairSJF) readsShares() bool { return p.k > 0 }

func (p *fairSJF) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	return p.rank(s, g, x.shares)
}

// rank ranks s, whose pending jobs g groups and whose sums of shares are
// sums (read only with fair share on).
func (p *fairSJF) rank(s *Snapshot, g *assocGroups, sums shareTotals) ([]Score, error) {
	n := len(s.Pending)
	var factors []fsFactor
	if p.k > 0 {
		factors = fairshareFactors(s, g, sums, 1)
	}
	const k = 4
	parts := s.partsBuf(k * n)
	for i := range s.Pending {
		j := &s.Pending[i]
		run := predictedAt(s, i).Seconds()
		base := max(run, fairSJFMinRun)
		row := parts[k*i : k*i+k]
		key := base
		if p.k > 0 {
			ff := factors[g.of[i]]
			ratio := fairSJFMaxRatio
			if ff.sNorm > 0 {
				ratio = min(ff.ue/ff.sNorm, fairSJFMaxRatio)
			}
			row[2] = ratio
			key *= math.Pow(1+ratio, p.k)
		}
		age := 1.0
		if p.a > 0 {
			age = math.Pow(1+max(0, s.Now.Sub(waitingSince(j)).Seconds())/base, p.a)
			key /= age
		}
		row[0], row[1], row[3] = key, run, age
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("fair-sjf: %w", err)
	}
	return scores, nil
}
