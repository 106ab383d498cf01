package policy

import (
	"fmt"
	"math"
	"time"
)

// FairQSSFParams configures fair-qssf. The zero value gives the defaults.
type FairQSSFParams struct {
	// MaxWait is the starvation guard: a job eligible for longer than this
	// ranks ahead of every job that is not. 0 means 24 hours; a negative
	// value turns the guard off.
	MaxWait time.Duration
	// RhoMax is the finish-time fairness guard: a job whose estimated ρ
	// (Themis' finish-time fairness, as the themis policy computes it)
	// exceeds RhoMax ranks ahead of the jobs within it. 0 means 5; a
	// negative value turns the guard off.
	RhoMax float64
	// IgnoreRunning is vtc's: leave running jobs' predicted remaining
	// service out of the counters.
	IgnoreRunning bool
}

// DefaultRhoMax is fair-qssf's finish-time fairness bound when
// FairQSSFParams.RhoMax is 0. It was chosen, with MaxWait, on the three
// shared traces together (CTC, KTH, Philly-MIX; 5, 10, 20, 50, 200 and 1000
// tried), the same for all.
const DefaultRhoMax = 5

// fairQSSF combines two ideas: fairness
// between accounts and users by VTC (Sheng et al., OSDI'24, §4; see vtc for
// the batch adaptation, committed service and zero shares included), and
// within one user, Helios' Quasi-Shortest-Service-First (Hu et al., SC'21):
// a user's jobs are charged to VTC in ascending predicted GPU time, so each
// user's shortest job carries the user's turn. Across users VTC's order
// holds — a heavy user's many short jobs do not jump the light user's —
// except where a guard below lifts a job out of it, and then VTC's bound
// no longer holds either.
//
// VTC alone lets a heavy user's short job wait as long as the user's whole
// backlog takes at the user's fair rate, and finish-time fairness (ρ, the
// job's completion time over its run time on a 1/N share of the cluster)
// is at its worst for short jobs. Two guards bound it, in three tiers:
//
//  1. Starvation: a job eligible for longer than MaxWait ranks ahead of
//     every other job. Among such jobs the order is by the ρ each would
//     have were it the shortest job possible (τ = 10 s), wait / max(1,
//     G·N/C): predictions for the jobs that wait longest are often wrong,
//     a job predicted to run to its limit may end in a second, and it is
//     such a job that would end with the worst ρ. So the oldest first,
//     except that a job larger than its owner's 1/N share, which a fair
//     cluster would run slowed down anyway, waits in proportion.
//  2. Finish-time fairness: a job whose estimated ρ, were it to start now
//     ((Now − Submit + run) / max(run · max(1, G·N/C), τ), run its
//     predicted run time), exceeds RhoMax ranks ahead of the jobs within
//     the bound, the largest ρ first.
//  3. Every other job, by VTC tag.
//
// Value = −tag + starvation_boost, the boost lifting a job of tier 1 or 2
// above every tag, by its tier's key (0 in tier 3). Parts: vtc_tag,
// starvation_boost, estimated_rho, user_counter, predicted_gpu_s,
// zero_share (see vtc).
type fairQSSF struct {
	maxWait       float64 // seconds; 0 means no starvation guard
	rhoMax        float64 // 0 means no ρ guard
	ignoreRunning bool
	sc            scorer
	memo          vtcMemo
}

// fairQSSFMinRun is τ: the shortest run ρ is measured against, as in
// bounded slowdown and the themis policy's default.
const fairQSSFMinRun = 10.0

// NewFairQSSF returns the "fair-qssf" policy.
func NewFairQSSF(p FairQSSFParams) (Policy, error) {
	if math.IsNaN(p.RhoMax) || math.IsInf(p.RhoMax, 0) {
		return nil, fmt.Errorf("fair-qssf: rho max %g: want a finite number", p.RhoMax)
	}
	if p.MaxWait == 0 {
		p.MaxWait = 24 * time.Hour
	}
	if p.RhoMax == 0 {
		p.RhoMax = DefaultRhoMax
	}
	q := &fairQSSF{ignoreRunning: p.IgnoreRunning, sc: scorer{
		names:   []string{"vtc_tag", "starvation_boost", "estimated_rho", "user_counter", "predicted_gpu_s", "zero_share"},
		weights: []float64{-1, 1, 0, 0, 0, 0},
	}}
	if p.MaxWait > 0 {
		q.maxWait = p.MaxWait.Seconds()
	}
	if p.RhoMax > 0 {
		q.rhoMax = p.RhoMax
	}
	return q, nil
}

func (*fairQSSF) Name() string { return "fair-qssf" }

// WhatMovesIt names fair-qssf's levers: the VTC counters, the predicted
// service, and the two guards with their bounds.
func (p *fairQSSF) WhatMovesIt(map[string]float64) string {
	s := "its account's usage decaying or other users' counters growing as they run; a shorter time limit\n" +
		"  or a smaller request lowers its predicted service"
	if p.rhoMax > 0 {
		s += fmt.Sprintf("; an estimated finish-time fairness (estimated_rho)\n"+
			"  past %g puts it ahead of the jobs within that bound", p.rhoMax)
	}
	if p.maxWait > 0 {
		s += fmt.Sprintf(", and waiting past the starvation guard (%g h)\n"+
			"  ahead of every job that has not", p.maxWait/3600)
	}
	return s + "."
}

func (p *fairQSSF) Rank(s *Snapshot) ([]Score, error) {
	var x rankIndex
	if !p.ignoreRunning || p.maxWait > 0 || p.rhoMax > 0 {
		x.running = indexRunning(s)
	}
	return p.rankIndexed(s, &x)
}

func (*fairQSSF) readsShares() bool { return false }

func (p *fairQSSF) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	n := len(s.Pending)
	buf := getRankScratch()
	defer buf.put()
	// Every entry is written below.
	buf.run, buf.cost = resize(buf.run, n), resize(buf.cost, n)
	buf.sub, buf.wait = resize(buf.sub, n), resize(buf.wait, n)
	buf.rate, buf.since = resize(buf.rate, n), resize(buf.since, n)
	run, cost, sub, wait := buf.run, buf.cost, buf.sub, buf.wait
	rate, since := buf.rate, buf.since
	clock := newSecondsClock(s.Now)
	for i := range s.Pending {
		j := &s.Pending[i]
		run[i] = predictedAt(s, i).Seconds()
		rate[i] = s.Service.Rate(j)
		cost[i] = rate[i] * run[i]
		sub[i] = unixNanoOrMin(j.Submit)
		// ρ's T_shared counts from the submit time, the wait from
		// waitingSince: the same time unless the job became eligible
		// later.
		wait[i] = clock.since(waitingSince(j))
		if j.Eligible.IsZero() {
			since[i] = wait[i]
		} else {
			since[i] = clock.since(j.Submit)
		}
	}
	// Within a user, shortest predicted service first.
	t := computeVTC(s, cost, sub, cost, committedOf(x, p.ignoreRunning), buf, &p.memo)

	minTag := math.Inf(1)
	for _, v := range t.tag {
		minTag = min(minTag, v)
	}
	users := 0.0
	if p.maxWait > 0 || p.rhoMax > 0 {
		users = t.g.activeUsers(x.running)
	}
	const k = 6
	parts := s.partsBuf(k * n)
	// Tier 2's key is ρ's excess over rhoMax; tier 1's keys start above
	// the largest of them.
	top := 0.0
	for i := range s.Pending {
		row := parts[k*i : k*i+k]
		if p.rhoMax > 0 {
			row[2] = finishTimeFairnessAt(s, rate[i], since[i], run[i], users, fairQSSFMinRun)
			top = max(top, row[2]-p.rhoMax)
		}
	}
	for i := range s.Pending {
		x := t.g.of[i]
		row := parts[k*i : k*i+k]
		switch {
		case p.maxWait > 0 && wait[i] > p.maxWait:
			boost := top + wait[i]/shareSlowdownAt(s, rate[i], users)
			row[1] = t.tag[i] - minTag + boost
		case p.rhoMax > 0 && row[2] > p.rhoMax:
			row[1] = t.tag[i] - minTag + (row[2] - p.rhoMax)
		}
		row[0], row[3], row[4] = t.tag[i], t.userC[x], cost[i]
		if t.zero[x] {
			row[5] = 1
		}
	}
	scores, err := p.sc.rankHinted(s, parts, sub, buf, t.hint)
	if err != nil {
		return nil, fmt.Errorf("fair-qssf: %w", err)
	}
	return scores, nil
}

// activeUsers is Themis' N, the number of distinct users with a pending
// or running job (see themis), for the snapshot whose
// pending jobs g groups and whose running jobs x indexes: the pending users
// plus the running ones that are not pending, probing the larger set with
// the smaller, without a pass over the running jobs.
func (g *assocGroups) activeUsers(x *runningIndex) float64 {
	both := 0
	if len(g.byUser) <= len(x.users) {
		for u := range g.byUser {
			if _, ok := x.users[u]; ok {
				both++
			}
		}
	} else {
		for u := range x.users {
			if _, ok := g.byUser[u]; ok {
				both++
			}
		}
	}
	return float64(len(g.byUser) + len(x.users) - both)
}
