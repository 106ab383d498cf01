package power

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Setting is one point of the predictive family, every parameter but the
// buffer (and, for the hybrid, its idle time): the artifact's trend rule
// (Predictive) with its conditions switchable, the forecast envelope
// (Envelope), or the hybrid of Slurm's idle time and the forecast
// (Hybrid). Evaluate replays each at every buffer (and idle time) on the
// validation days and keeps the one whose curve best dominates the
// idle-time rule there.
type Setting struct {
	Envelope bool
	Hybrid   bool
	// The trend rule's (Predictive).
	History, Future, Keep             int
	AnyHistory, AnyForecast, AnyTrend bool
	// The envelope's: Horizon steps ahead, each lead's forecast plus K
	// times that lead's validation RMSE, and the demand of the last Hold
	// steps. The hybrid's K is the same margin.
	Horizon, Hold int
	K             float64
	// The hybrid's: the look-ahead in minutes over which the forecast
	// holds idle nodes powered, and whether it resumes ahead of a rise.
	Lookahead int
	NoAhead   bool
	// The hybrid's early power-down (Hybrid.EarlyAfter): a node idle
	// EarlyFrac of the idle time powers down when the forecast plus EarlyK
	// times each lead's RMSE leaves it surplus; 0 is off.
	EarlyFrac, EarlyK float64
	// The hybrid's trend nowcast (Hybrid.RampWindow), in minutes and
	// nodes per node of rise; RampWindow 0 is off.
	RampWindow, RampAfter, RampExpire int
	RampGain                          float64
	// Anchored drives the rule with the GBT forecast shifted by its error
	// at the issue step (Anchored) rather than the plain GBT forecast.
	Anchored bool
	// Queue, for the hybrid, reads the sequence's pending column
	// (Hybrid.Queue): Evaluate adds a Queue copy of each hybrid setting
	// when the sequence has one.
	Queue bool
}

// ArtifactSetting is the artifact's own rule.
func ArtifactSetting(history, future, keep int) Setting {
	return Setting{History: history, Future: future, Keep: keep}
}

// String names the setting in tables.
func (st Setting) String() string {
	if st.Queue {
		plain := st
		plain.Queue = false
		return plain.String() + ", queue"
	}
	if st.Anchored {
		plain := st
		plain.Anchored = false
		return plain.String() + ", anchored"
	}
	if st.Hybrid {
		s := fmt.Sprintf("hybrid look %dm %+gσ", st.Lookahead, st.K)
		if st.NoAhead {
			s += " no resume ahead"
		}
		if st.EarlyFrac > 0 {
			s += fmt.Sprintf(", early at %.2g×idle if surplus %+gσ", st.EarlyFrac, st.EarlyK)
		}
		if st.RampWindow > 0 {
			s += fmt.Sprintf(", ramp %g×rise over %dm after %dm lacking, expire %dm", st.RampGain, st.RampWindow, st.RampAfter, st.RampExpire)
		}
		return s
	}
	if st.Envelope {
		if st.Horizon == 0 {
			return fmt.Sprintf("envelope hold %d", st.Hold)
		}
		return fmt.Sprintf("envelope %d steps +%gσ hold %d", st.Horizon, st.K, st.Hold)
	}
	var off []string
	for _, x := range []struct {
		on   bool
		name string
	}{{st.AnyHistory, "falling"}, {st.AnyForecast, "below"}, {st.AnyTrend, "not rising"}} {
		if x.on {
			off = append(off, x.name)
		}
	}
	s := fmt.Sprintf("trend h%d f%d keep %d", st.History, st.Future, st.Keep)
	if len(off) > 0 {
		s += " without " + strings.Join(off, ", ")
	}
	return s
}

// ReadsForecast says whether the setting's decisions depend on the
// forecast: an envelope with no horizon, or the trend rule without both
// the "below" and the "not rising" conditions, reads none.
func (st Setting) ReadsForecast() bool {
	if st.Hybrid {
		return st.Lookahead > 0 || !st.NoAhead || st.EarlyFrac > 0
	}
	if st.Envelope {
		return st.Horizon > 0
	}
	return !st.AnyForecast || !st.AnyTrend
}

// reach is how far ahead the setting reads the forecast, in decision
// steps of step, with a resume time of resume and idle times up to
// maxIdle (the hybrid decides every minute from the latest forecast).
func (st Setting) reach(step, resume, maxIdle time.Duration) int {
	if st.Hybrid {
		res := max(int((resume+time.Minute-1)/time.Minute), 1)
		look := st.Lookahead
		if st.EarlyFrac > 0 { // until the idle clock would run out, and a resume
			look = max(look, int((maxIdle+time.Minute-1)/time.Minute)+res)
		}
		return hybridReach(look, res, int(step/time.Minute))
	}
	if st.Envelope {
		return st.Horizon
	}
	return 2 * st.Future
}

// margins is k times each lead's RMSE, up to n leads.
func margins(k float64, n int, sigma []float64) []float64 {
	m := make([]float64, min(n, len(sigma)))
	for h := range m {
		m[h] = k * sigma[h]
	}
	return m
}

// Nowcast is the setting's trend nowcast (off unless a hybrid with
// RampWindow): what `serve --power-nowcast` takes to run the same rule.
func (st Setting) Nowcast() Nowcast {
	if !st.Hybrid || st.RampWindow <= 0 {
		return Nowcast{}
	}
	return Nowcast{Window: time.Duration(st.RampWindow) * time.Minute, After: time.Duration(st.RampAfter) * time.Minute,
		Expire: time.Duration(st.RampExpire) * time.Minute, Gain: st.RampGain}
}

// HybridRule builds a hybrid setting at one idle time and buffer.
func (st Setting) HybridRule(idle time.Duration, buffer int, forecast func(int) []float64, sigma []float64) *Hybrid {
	nc := st.Nowcast()
	h := &Hybrid{IdleAfter: idle, Lookahead: time.Duration(st.Lookahead) * time.Minute, Buffer: buffer,
		Margin: margins(st.K, len(sigma), sigma), Forecast: forecast, NoAhead: st.NoAhead,
		Label: st.hybridLabel(idle, buffer), Queue: st.Queue,
		RampWindow: nc.Window, RampAfter: nc.After, RampExpire: nc.Expire, RampGain: nc.Gain}
	if st.EarlyFrac > 0 {
		h.EarlyAfter = time.Duration(st.EarlyFrac * float64(idle)).Round(time.Minute)
		h.EarlyMargin = margins(st.EarlyK, len(sigma), sigma)
	}
	return h
}

// hybridLabel names a hybrid row: its idle time, then the setting.
func (st Setting) hybridLabel(idle time.Duration, buffer int) string {
	name := strings.Replace(st.String(), "hybrid ", fmt.Sprintf("hybrid idle %s, ", shortDuration(idle)), 1)
	return fmt.Sprintf("%s, buffer %d", name, buffer)
}

// Rule builds the setting at one buffer; not for the hybrid (HybridRule). sigma[h−1] is the forecaster's
// RMSE h steps ahead on the validation days; warmUp the trend rule's first
// steps at demand + buffer.
func (st Setting) Rule(buffer, warmUp int, forecast func(int) []float64, sigma []float64) Rule {
	if st.Envelope {
		return &Envelope{Buffer: buffer, Horizon: st.Horizon, Hold: st.Hold, Margin: margins(st.K, st.Horizon, sigma), Forecast: forecast,
			Label: fmt.Sprintf("%s, buffer %d", st, buffer)}
	}
	return &Predictive{Buffer: buffer, History: st.History, Future: st.Future, Keep: st.Keep, WarmUp: warmUp, Forecast: forecast,
		AnyHistory: st.AnyHistory, AnyForecast: st.AnyForecast, AnyTrend: st.AnyTrend,
		Label: fmt.Sprintf("%s, buffer %d", st, buffer)}
}

// withQueue is family with, after it, a Queue copy of each hybrid
// setting: on a sequence with a pending column, the hybrid both as serve
// runs it (powering up for the queue at once) and without the queue,
// the validation days choosing. A queue that always asks for more nodes
// than are idle (a saturated cluster's) keeps every node up, and those
// rows then dominate nothing.
func withQueue(family []Setting) []Setting {
	out := slices.Clone(family)
	for _, st := range family {
		if st.Hybrid && !st.Queue {
			st.Queue = true
			out = append(out, st)
		}
	}
	return out
}

// DefaultFamily is the grid Evaluate searches, each driven by the plain
// and by the anchored GBT forecast: the trend rule with every combination
// of its conditions switched off over short and long windows, and the
// envelope over horizons from 10 minutes to 5 hours, margins of 0 to 2
// RMSE and look-backs of 0 to 5 steps. Every setting reads the forecast
// (ReadsForecast): one that reads none (an envelope with no horizon, the
// trend rule without both forecast conditions) is a reactive rule with a
// buffer, not a prediction, and would not answer whether forecasting
// pays.
func DefaultFamily() []Setting {
	var out []Setting
	for _, anchored := range []bool{false, true} {
		for _, h := range []int{1, 2} {
			for _, f := range []int{6, 30} {
				for _, k := range []int{0, 10} {
					for bits := range 8 {
						st := Setting{History: h, Future: f, Keep: k, Anchored: anchored,
							AnyHistory: bits&1 != 0, AnyForecast: bits&2 != 0, AnyTrend: bits&4 != 0}
						if st.ReadsForecast() {
							out = append(out, st)
						}
					}
				}
			}
		}
		for _, hold := range []int{0, 1, 2, 3, 5} {
			for _, h := range []int{1, 2, 3, 6, 12, 30} {
				for _, k := range []float64{0, 0.5, 1, 2} {
					out = append(out, Setting{Envelope: true, Horizon: h, K: k, Hold: hold, Anchored: anchored})
				}
			}
		}
		for _, look := range []int{5, 10, 20, 30} {
			for _, k := range []float64{-1, -0.5, 0, 0.5} {
				for _, noAhead := range []bool{false, true} {
					out = append(out, Setting{Hybrid: true, Lookahead: look, K: k, NoAhead: noAhead, Anchored: anchored})
				}
			}
		}
	}
	// The hybrid with the early power-down, driven by the anchored
	// forecast (the one whose short leads are nearest the level): a third,
	// half or two thirds of the idle time, when the forecast plus 2 to 4
	// RMSE leaves the node surplus until its clock would run out.
	for _, k := range []float64{-0.5, 0, 0.5} {
		for _, frac := range []float64{1.0 / 3, 1.0 / 2, 2.0 / 3} {
			for _, ek := range []float64{2, 3, 4} {
				out = append(out, Setting{Hybrid: true, Lookahead: 10, K: k, NoAhead: true, Anchored: true, EarlyFrac: frac, EarlyK: ek})
			}
		}
	}
	// Slurm's idle clock with a slightly shorter one where the forecast
	// allows: a node powers down at 0.8 or 0.9 of the idle time only when
	// the forecast plus 2 or 3 RMSE leaves it surplus until its clock
	// would run out (else at the idle time, as Slurm's), and the hold at
	// −0.5 or 0 RMSE keeps up only the nodes the forecast wants. Near any
	// SuspendTime T (the idle times of EvalConfig.IdleAfter include T−1m
	// and T−2m) these stay within a tenth or a fifth of T of Slurm's rule,
	// so every T has rows that differ from it only where the forecast
	// speaks, rather than only rows with the early power-down at a third
	// to two thirds of the idle time, whose lack is the forecast's misses.
	for _, k := range []float64{-0.5, 0} {
		for _, frac := range []float64{0.8, 0.9} {
			for _, ek := range []float64{2, 3} {
				out = append(out, Setting{Hybrid: true, Lookahead: 10, K: k, NoAhead: true, Anchored: true, EarlyFrac: frac, EarlyK: ek})
			}
		}
	}
	// The hybrid with the trend nowcast (Hybrid.RampWindow): the anchored
	// hybrid without and with the early power-down, resuming ahead of a
	// rise that has outrun the powered nodes for 2 minutes and still
	// rises half or all of its rise over the last 2 or 5 minutes, those
	// unused going down 2 or 5 minutes after they became usable.
	for _, base := range []Setting{
		{Hybrid: true, Lookahead: 10, K: -0.5, NoAhead: true, Anchored: true},
		{Hybrid: true, Lookahead: 10, K: 0, NoAhead: true, Anchored: true},
		{Hybrid: true, Lookahead: 10, K: -0.5, NoAhead: true, Anchored: true, EarlyFrac: 1.0 / 3, EarlyK: 4},
		{Hybrid: true, Lookahead: 10, K: 0, NoAhead: true, Anchored: true, EarlyFrac: 1.0 / 3, EarlyK: 3},
	} {
		for _, w := range []int{2, 5} {
			for _, g := range []float64{0.5, 1} {
				for _, e := range []int{2, 5} {
					st := base
					st.RampWindow, st.RampAfter, st.RampGain, st.RampExpire = w, 2, g, e
					out = append(out, st)
				}
			}
		}
	}
	return out
}

// curveScore is how well one setting's curve (its rows at every buffer,
// and for the hybrid every idle time) dominates the idle-time rows: how
// many idle-time settings it dominates, then the sum over them of the
// relative node-hours-off margin of its best row with less lack (−1 where
// no row lacks less). The witness per idle setting is that best row's
// index in the curve, −1 when none.
type curveScore struct {
	dominated int
	margin    float64
	witness   []int
}

func (a curveScore) better(b curveScore) bool {
	if a.dominated != b.dominated {
		return a.dominated > b.dominated
	}
	return a.margin > b.margin
}

func scoreCurve(curve []RuleRow, idle []RuleRow) curveScore {
	var sc curveScore
	for _, r := range idle {
		best, w := -1.0, -1
		for j, p := range curve {
			if p.LackNodeMinutes < r.LackNodeMinutes {
				if m := (p.NodeHoursOff - r.NodeHoursOff) / max(r.NodeHoursOff, 1); w < 0 || m > best {
					best, w = m, j
				}
			}
		}
		if w >= 0 && best >= 0 {
			sc.dominated++
		}
		sc.margin += best
		sc.witness = append(sc.witness, w)
	}
	return sc
}
