package power

import (
	"fmt"
	"math"
	"time"
)

// Rule decides, step by step, how many nodes are powered. Replay drives
// it and does all the accounting, so every rule's lack and savings are
// counted the same way.
type Rule interface {
	Name() string
	// Reset prepares a replay of s.
	Reset(s *Series)
	// Powered returns the nodes powered during step i, once the step's
	// demand s.Active[i] is known; prev is the nodes powered during step
	// i−1 (for i = 0, the rule's own start). The result is at least the
	// demand: demand above prev is lack, and the nodes it needs are
	// powered up at once (Replay enforces both bounds).
	Powered(i, prev int) int
	// Start is the nodes powered before step 0.
	Start() int
}

// Predictive is the Helios artifact's power rule (CES_Philly.py, the
// simulation loop and hyperparameters()), every step:
//
//   - the first WarmUp steps keep active + Buffer nodes powered;
//   - if fewer nodes are powered than the demand, power up to
//     active + Buffer at once and hold that for Keep steps;
//   - power down to active + Buffer only when demand fell over the last
//     History steps (their mean minus now ≥ 0.1 node), the forecast mean over
//     the next Future steps is at most now, the forecast is not rising (its
//     mean over Future steps is at least its mean over 2·Future), no Keep
//     hold is on, and at least one node is freed.
//
// The forecast is Forecast(i): the forecast issued at step i, index h−1
// for step i+h, at least 2·Future−1 long; the artifact's window starts at
// step i itself, which here is the measured demand. Forecasts are floored
// to whole nodes as in the artifact.
type Predictive struct {
	Buffer, History, Future, Keep, WarmUp int
	Forecast                              func(i int) []float64
	// Label names the rule in tables; "predictive" when empty.
	Label string

	s          *Series
	stableTill int
}

// ArtifactPredictive is the artifact's settings: history 2, future 30,
// buffer 20, keep 10, warm-up 6 steps (one hour).
func ArtifactPredictive(forecast func(int) []float64) *Predictive {
	return &Predictive{Buffer: 20, History: 2, Future: 30, Keep: 10, WarmUp: 6, Forecast: forecast}
}

// Name implements Rule.
func (p *Predictive) Name() string {
	if p.Label != "" {
		return p.Label
	}
	return fmt.Sprintf("predictive buffer %d", p.Buffer)
}

// Reset implements Rule.
func (p *Predictive) Reset(s *Series) { p.s, p.stableTill = s, 0 }

// Start implements Rule.
func (p *Predictive) Start() int { return min(p.s.Active[0]+p.Buffer, p.s.Total[0]) }

// Powered implements Rule.
func (p *Predictive) Powered(i, prev int) int {
	a, total := p.s.Active[i], p.s.Total[i]
	if i < p.WarmUp {
		return min(a+p.Buffer, total)
	}
	on := prev
	if on < a {
		on = a + p.Buffer
		p.stableTill = i + p.Keep
	}
	on = min(on, total)
	if i < p.History {
		return on
	}
	var hist float64
	for k := i - p.History; k < i; k++ {
		hist += float64(p.s.Active[k])
	}
	hist = hist/float64(p.History) - float64(a)
	fc := p.Forecast(i)
	window := func(n int) float64 { // mean of step i's demand and the next n−1 forecasts
		sum := float64(a)
		for h := 1; h < n; h++ {
			sum += math.Floor(fc[h-1])
		}
		return sum / float64(n)
	}
	near := window(p.Future)
	if hist < 0.1 || float64(a)-near < 0 {
		return on
	}
	if i < p.stableTill {
		return on
	}
	p.stableTill = i
	if near < window(2*p.Future) {
		return on
	}
	if target := min(on, a+p.Buffer); on-target >= 1 {
		on = target
	}
	return on
}

// IdleTime is Slurm's own power saving (slurm.conf SuspendTime): a node
// that has been idle for SuspendTime is powered down; demand above the
// powered nodes resumes exactly the nodes it needs (ResumeProgram). It
// never looks ahead and keeps no buffer.
//
// A sequence gives counts, not node names, so which idle node a rise in
// demand takes is a modelling choice: the most recently idled one (last
// in, first out). That keeps long-idle nodes idle, the order that lets
// SuspendTime power down the most, so the comparison is at the idle-time
// rule's best.
type IdleTime struct {
	SuspendTime time.Duration

	s     *Series
	busy  int
	idle  []idleRun // oldest first
	steps int       // SuspendTime in steps, rounded up
}

type idleRun struct{ since, n int }

// Name implements Rule.
func (r *IdleTime) Name() string { return "idle-time " + shortDuration(r.SuspendTime) }

// Reset implements Rule.
func (r *IdleTime) Reset(s *Series) {
	r.s, r.busy = s, 0
	r.steps = max(int((r.SuspendTime+s.Step-1)/s.Step), 1)
	r.idle = []idleRun{{since: 0, n: s.Total[0]}} // step 0 takes its demand from here
}

// Start implements Rule: every node is up before the first step.
func (r *IdleTime) Start() int { return r.s.Total[0] }

// Powered implements Rule.
func (r *IdleTime) Powered(i, prev int) int {
	a, total := r.s.Active[i], r.s.Total[i]
	on := min(prev, total)
	r.trim(on - r.busy)                  // nodes removed from the cluster leave the idle pool
	if i > 0 && total > r.s.Total[i-1] { // nodes added to the cluster come up idle
		grow := total - r.s.Total[i-1]
		r.idle = append(r.idle, idleRun{since: i, n: grow})
		on += grow
	}
	switch {
	case a > on: // resume exactly the shortfall; every idle node is taken
		on = a
		r.idle = r.idle[:0]
	case a > r.busy: // take the most recently idled nodes
		r.take(a - r.busy)
	case a < r.busy:
		r.idle = append(r.idle, idleRun{since: i, n: r.busy - a})
	}
	r.busy = a
	// Power down every node idle for SuspendTime by the end of step i.
	k := 0
	for ; k < len(r.idle) && i-r.idle[k].since+1 >= r.steps; k++ {
		on -= r.idle[k].n
	}
	r.idle = r.idle[:copy(r.idle, r.idle[k:])]
	return on
}

// take removes n nodes from the newest end of the idle pool.
func (r *IdleTime) take(n int) {
	for n > 0 && len(r.idle) > 0 {
		last := &r.idle[len(r.idle)-1]
		d := min(n, last.n)
		last.n -= d
		n -= d
		if last.n == 0 {
			r.idle = r.idle[:len(r.idle)-1]
		}
	}
}

// trim keeps at most n idle nodes, dropping the newest.
func (r *IdleTime) trim(n int) {
	have := 0
	for _, x := range r.idle {
		have += x.n
	}
	if have > n {
		r.take(have - max(n, 0))
	}
}

func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
