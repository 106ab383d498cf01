package policy

import (
	"fmt"
	"math"
	"time"
)

// FairQSSFParams configures fair-qssf. The zero value gives the defaults.
type FairQSSFParams struct {
	// MaxWait is the starvation guard: a job eligible for longer than this
	// ranks ahead of every job that is not, longest overdue first. 0 means
	// 24 hours; a negative value turns the guard off.
	MaxWait time.Duration
	// IgnoreRunning is vtc's: leave running jobs' predicted remaining
	// service out of the counters.
	IgnoreRunning bool
}

// fairQSSF, Fairway's default, combines the two ideas above it: fairness
// between accounts and users by VTC (Sheng et al., OSDI'24, §4; see vtc for
// the batch adaptation, committed service and zero shares included), and
// within one user, Helios' Quasi-Shortest-Service-First (Hu et al., SC'21):
// a user's jobs are charged to VTC in ascending predicted GPU time, so each
// user's shortest job carries the user's turn. Across users the VTC bound
// holds — a heavy user's many short jobs do not jump the light user's —
// while mean completion time benefits from SSF wherever it cannot hurt
// another user.
//
// A starvation guard bounds how long a job can be passed over: once a job
// has been eligible longer than MaxWait, its tag is set below every other
// job's by its overdue time, so it ranks ahead of all jobs that are not
// overdue, the most overdue first, and Slurm's backfill reserves
// resources for it. Value = −tag + starvation_boost, where the boost is 0
// for a job not overdue. Parts: vtc_tag, starvation_boost, user_counter,
// predicted_gpu_s, zero_share (see vtc).
type fairQSSF struct {
	maxWait       float64 // seconds; 0 means no guard
	ignoreRunning bool
	sc            scorer
}

// NewFairQSSF returns the "fair-qssf" policy.
func NewFairQSSF(p FairQSSFParams) (Policy, error) {
	if p.MaxWait == 0 {
		p.MaxWait = 24 * time.Hour
	}
	q := &fairQSSF{ignoreRunning: p.IgnoreRunning, sc: scorer{
		names:   []string{"vtc_tag", "starvation_boost", "user_counter", "predicted_gpu_s", "zero_share"},
		weights: []float64{-1, 1, 0, 0, 0},
	}}
	if p.MaxWait > 0 {
		q.maxWait = p.MaxWait.Seconds()
	}
	return q, nil
}

func (*fairQSSF) Name() string { return "fair-qssf" }

func (p *fairQSSF) Rank(s *Snapshot) ([]Score, error) {
	n := len(s.Pending)
	cost, sub, wait := make([]float64, n), make([]int64, n), make([]float64, n)
	for i := range s.Pending {
		j := &s.Pending[i]
		cost[i] = predictedService(s, j)
		sub[i] = unixNanoOrMin(j.Submit)
		wait[i] = s.Now.Sub(waitingSince(j)).Seconds()
	}
	// Within a user, shortest predicted service first.
	t := computeVTC(s, cost, sub, cost, !p.ignoreRunning)

	minTag := math.Inf(1)
	for _, v := range t.tag {
		minTag = min(minTag, v)
	}
	const k = 5
	parts := make([]float64, k*n)
	for i := range s.Pending {
		x := t.g.of[i]
		boost := 0.0
		if p.maxWait > 0 && wait[i] > p.maxWait {
			// The tag becomes minTag − overdue: below every tag.
			boost = t.tag[i] - minTag + (wait[i] - p.maxWait)
		}
		row := parts[k*i : k*i+k]
		row[0], row[1], row[2], row[3] = t.tag[i], boost, t.userC[x], cost[i]
		if t.zero[x] {
			row[4] = 1
		}
	}
	scores, err := p.sc.rank(s, parts, sub)
	if err != nil {
		return nil, fmt.Errorf("fair-qssf: %w", err)
	}
	return scores, nil
}
