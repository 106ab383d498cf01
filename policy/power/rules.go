package power

import (
	"fmt"
	"math"
	"time"
)

// Rule decides, step by step, how many nodes are powered. ReplayRule
// (and the simulator) drive it and do all the accounting, so every rule's
// lack and savings are counted the same way.
type Rule interface {
	Name() string
	// Reset prepares a replay of s.
	Reset(s *Series)
	// Powered is called at the end of step i, once the step's demand
	// s.Active[i] (its maximum) is known, and returns the nodes to keep
	// powered from then until the next call; prev is what the previous
	// call returned (for i = 0, every node). The caller caps the result
	// at the cluster and raises it to at least s.Active[i].
	Powered(i, prev int) int
}

// Predictive is the Helios artifact's power rule (CES_Philly.py, the
// simulation loop and hyperparameters()), every step:
//
//   - the first WarmUp steps keep active + Buffer nodes powered;
//   - if fewer nodes were planned than the step's demand, power up to
//     active + Buffer and hold that for Keep steps;
//   - power down to active + Buffer only when demand fell over the last
//     History steps (their mean minus now ≥ 0.1 node), the forecast mean over
//     the next Future steps is at most now, the forecast is not rising (its
//     mean over Future steps is at least its mean over 2·Future), no Keep
//     hold is on, and at least one node is freed.
//
// The forecast is Forecast(i): the forecast issued at step i, index h−1
// for step i+h, at least 2·Future−1 long; the artifact's window starts at
// step i itself, which here is the measured demand. Forecasts are floored
// to whole nodes as in the artifact. The artifact applies the decision to
// step i itself, knowing its maximum before it happens; here it holds
// from the end of step i (Rule.Powered), so the rule reads nothing it
// could not have measured.
//
// The zero value of the Any* switches is the artifact's rule; each one
// drops one of its three power-down conditions, so the artifact's rule is
// one point of a family Evaluate searches on the validation days.
type Predictive struct {
	Buffer, History, Future, Keep, WarmUp int
	Forecast                              func(i int) []float64
	// AnyHistory drops "demand fell over the last History steps";
	// AnyForecast drops "the forecast mean is at most the demand now";
	// AnyTrend drops "the forecast is not rising".
	AnyHistory, AnyForecast, AnyTrend bool
	// Label names the rule in tables; "predictive buffer N" when empty.
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
	if i < p.History && !p.AnyHistory {
		return on
	}
	hist := 1.0 // passes the falling test when it is switched off
	if !p.AnyHistory {
		hist = 0
		for k := i - p.History; k < i; k++ {
			hist += float64(p.s.Active[k])
		}
		hist = hist/float64(p.History) - float64(a)
	}
	fc := p.Forecast(i)
	window := func(n int) float64 { // mean of step i's demand and the next n−1 forecasts
		sum := float64(a)
		for h := 1; h < n; h++ {
			sum += math.Floor(fc[h-1])
		}
		return sum / float64(n)
	}
	near := window(p.Future)
	if hist < 0.1 || (!p.AnyForecast && float64(a)-near < 0) {
		return on
	}
	if i < p.stableTill {
		return on
	}
	p.stableTill = i
	if !p.AnyTrend && near < window(2*p.Future) {
		return on
	}
	if target := min(on, a+p.Buffer); on-target >= 1 {
		on = target
	}
	return on
}

// Envelope keeps powered, every step, the most nodes the forecast says
// the next Horizon steps need (each lead's forecast plus its Margin, an
// upper quantile rather than the mean), the demand of the last Hold steps
// and now, plus Buffer. It powers down as soon as that is below what is
// powered and up as soon as it is above: no trend test, no hold after a
// power-up. With Horizon 0 it looks only back, and Hold s−1 with Buffer 0
// is Slurm's idle-time rule at SuspendTime s steps (TestEnvelope_HoldIsIdleTime).
type Envelope struct {
	Buffer, Horizon, Hold int
	// Margin[h−1] is added to the forecast for h steps ahead; shorter or
	// nil means 0 beyond its end.
	Margin []float64
	// Forecast(i) is the forecast issued at step i, index h−1 for step
	// i+h, at least Horizon long.
	Forecast func(i int) []float64
	// Label names the rule in tables; "envelope buffer N" when empty.
	Label string

	s *Series
}

// Name implements Rule.
func (e *Envelope) Name() string {
	if e.Label != "" {
		return e.Label
	}
	return fmt.Sprintf("envelope buffer %d", e.Buffer)
}

// Reset implements Rule.
func (e *Envelope) Reset(s *Series) { e.s = s }

// Powered implements Rule.
func (e *Envelope) Powered(i, prev int) int {
	need := 0
	for k := max(i-e.Hold, 0); k <= i; k++ {
		need = max(need, e.s.Active[k])
	}
	if e.Horizon > 0 {
		fc := e.Forecast(i)
		for h := 1; h <= e.Horizon; h++ {
			v := fc[h-1]
			if h <= len(e.Margin) {
				v += e.Margin[h-1]
			}
			// A forecast of 290.3 nodes needs 291; the slack keeps float
			// noise on a whole number from adding a node.
			need = max(need, int(math.Ceil(v-1e-9)))
		}
	}
	return min(need+e.Buffer, e.s.Total[i])
}

// IdleTime is Slurm's own power saving (slurm.conf SuspendTime) as a Rule
// on a series of step maxima, for the simulator, which hands its rules
// one count per step: a node whose step demand left it idle for
// SuspendTime (rounded up to whole steps) is powered down; demand above
// the powered nodes resumes exactly the nodes it needs (ResumeProgram).
// It never looks ahead and keeps no buffer. Nodes are taken last idled,
// first taken, as in the fleet of ReplayIdleTime.
//
// On a sequence, `fairway power eval` replays the rule per minute with
// ReplayIdleTime instead: on 10-minute maxima, SuspendTime 10m powers
// exactly each step's busiest minute, the most any rule can keep off, and
// no rule could compare with it.
type IdleTime struct {
	SuspendTime time.Duration

	s     *Series
	busy  int
	idle  []idleRun // oldest first
	steps int       // SuspendTime in steps, rounded up
}

// Name implements Rule.
func (r *IdleTime) Name() string { return "idle-time " + shortDuration(r.SuspendTime) }

// Reset implements Rule.
func (r *IdleTime) Reset(s *Series) {
	r.s, r.busy = s, 0
	r.steps = max(int((r.SuspendTime+s.Step-1)/s.Step), 1)
	r.idle = []idleRun{{since: 0, n: s.Total[0]}} // step 0 takes its demand from here
}

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

// Hybrid is Slurm's idle-time rule that reads the forecast where Slurm is
// blind, replayed by ReplayHybrid a minute at a time:
//
//   - a node powers down once it has been idle IdleAfter on its own clock
//     (Slurm's SuspendTime, which may here be shorter than a site would
//     dare without a forecast), unless the forecast needs it: the powered
//     nodes never go below the most the forecast wants over the next
//     Lookahead (each lead's forecast plus its Margin, plus Buffer);
//   - nodes are resumed ahead of a forecast rise: when the forecast for
//     the step a node resumed now would be usable in (plus margin and
//     buffer) exceeds the powered nodes, the difference is resumed now,
//     unless NoAhead;
//   - with EarlyAfter set (shorter than IdleAfter), a node idle EarlyAfter
//     powers down before its idle clock runs out when the forecast says
//     it will not be wanted: the powered nodes never go below the most
//     the forecast plus EarlyMargin (and Buffer) wants from now until the
//     node's idle clock would have run out and a resume after it. Under
//     Slurm's rule such a node would have stayed idle until IdleAfter and
//     then gone down anyway, so each one the forecast gets right is
//     IdleAfter − EarlyAfter of idle power saved; one it gets wrong is a
//     resume a job waits for.
//
// Forecast(i) is the forecast issued at the end of decision step i
// (10 minutes), index h−1 for step i+h; between issues the rule reads the
// latest one, so it never reads a step after the minute it decides in.
// The forecast is of step maxima, so it errs towards powering too much
// within a step.
type Hybrid struct {
	IdleAfter, Lookahead time.Duration
	Buffer               int
	// Margin[h−1] is added to the forecast for h steps ahead; shorter or
	// nil means 0 beyond its end.
	Margin   []float64
	Forecast func(i int) []float64
	NoAhead  bool
	// EarlyAfter, when positive and below IdleAfter, is the idle time
	// after which a node powers down early if the forecast plus
	// EarlyMargin[h−1] leaves it surplus.
	EarlyAfter  time.Duration
	EarlyMargin []float64
	// EarlyTrust, when set, says whether the forecast issued at decision
	// step i may drive the early power-down: where it is outside the
	// regime it was validated in, the early power-down waits for Slurm's
	// clock.
	EarlyTrust func(i int) bool
	// RampWindow, RampAfter, RampExpire and RampGain are the trend
	// nowcast (Nowcast: Window, After, Expire, Gain); RampWindow 0 is off.
	RampWindow, RampAfter, RampExpire time.Duration
	RampGain                          float64
	// Label names the rule in tables; "hybrid idle T buffer N" when empty.
	Label string
	// Queue reads the demand's pending column (Series.Pending): the nodes
	// queued jobs ask for beyond the idle and resuming ones resume at
	// once, and idle nodes are kept for busy + pending, as Decide does
	// with the live queue. Without it the column is not read.
	Queue bool
}

// Nowcast is the hybrid's trend nowcast setting.
func (h *Hybrid) Nowcast() Nowcast {
	return Nowcast{Window: h.RampWindow, After: h.RampAfter, Expire: h.RampExpire, Gain: h.RampGain}
}

// Name names the rule.
func (h *Hybrid) Name() string {
	if h.Label != "" {
		return h.Label
	}
	return fmt.Sprintf("hybrid idle %s buffer %d", shortDuration(h.IdleAfter), h.Buffer)
}

// hybridReach is the forecast leads a hybrid reads, in decision steps of
// k demand steps, with a look-ahead of look and a resume of resume demand
// steps: both counted from the last demand step of a decision step, whose
// forecast is the oldest in use.
func hybridReach(look, resume, k int) int {
	return 1 + max((k-2+look)/k, (k-1+resume)/k)
}
