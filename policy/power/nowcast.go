package power

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Nowcast is the hybrid rule's trend nowcast, one rule for every place
// that powers nodes: the sequence replay (Hybrid.RampWindow), the
// simulator (sim.Power.Nowcast) and serve (Settings.Nowcast). A forecast
// of 10-minute maxima issued every 10 minutes is blind to a rise inside a
// step, and Slurm's resume for a rise covers only the nodes lacking now,
// so a rise that goes on for longer than a resume lacks again every
// minute. When demand has found no usable node for After (consecutive
// steps, at least one) and is still rising, the nowcast resumes
// ceil(Gain × the rise over the last Window) nodes beyond the demand,
// expecting the rise to go on while they resume; one still idle Expire
// after it became usable goes back down (the rise stopped: Slurm's clock
// would keep it up the whole idle time). Waiting for a second lacking
// minute leaves out the single jumps, a job or two arriving at once,
// that stop where they lacked. The zero value is off.
type Nowcast struct {
	Window, After, Expire time.Duration
	Gain                  float64
}

// On says whether the nowcast ever resumes a node.
func (n Nowcast) On() bool { return n.Window > 0 && n.Gain > 0 }

// Validate rejects negative (or not finite) settings.
func (n Nowcast) Validate() error {
	if n.Window < 0 || n.After < 0 || n.Expire < 0 || n.Gain < 0 || math.IsNaN(n.Gain) || math.IsInf(n.Gain, 0) {
		return fmt.Errorf("trend nowcast window %v, after %v, expire %v, gain %g: want 0 or more each (window 0 or gain 0: off)", n.Window, n.After, n.Expire, n.Gain)
	}
	return nil
}

// String describes the setting as `fairway power eval` names it.
func (n Nowcast) String() string {
	if !n.On() {
		return "off"
	}
	return fmt.Sprintf("ramp %g×rise over %s after %s lacking, expire %s", n.Gain, shortDuration(n.Window), shortDuration(n.After), shortDuration(n.Expire))
}

// Spec writes the setting as ParseNowcast reads it.
func (n Nowcast) Spec() string {
	d := func(d time.Duration) string {
		if d == 0 {
			return "0s"
		}
		return shortDuration(d)
	}
	return fmt.Sprintf("gain=%g,window=%s,after=%s,expire=%s", n.Gain, d(n.Window), d(n.After), d(n.Expire))
}

// NowcastState is a nowcast following demand one step at a time: the last
// Window steps' demand and how long it has lacked. Pure: the caller
// reads demand and lack, Observe says how many nodes the nowcast wants
// powered, the caller resumes them and powers the unused ones down after
// ExpireSteps.
type NowcastState struct {
	window, after, expire int
	gain                  float64
	lacking               int
	recent                []int // demand of the last window+1 steps, oldest first
	last                  int64 // the last step observed
	lastLack              int
	// shift is added to the caller's step indices: the steps its clock
	// went back by (Observe).
	shift int64
}

// Start returns the nowcast's state for steps of step; nil when the
// nowcast is off. Its durations are rounded up to whole steps (Window and
// After at least one).
func (n Nowcast) Start(step time.Duration) *NowcastState {
	if !n.On() || step <= 0 {
		return nil
	}
	up := func(d time.Duration) int { return int((d + step - 1) / step) }
	return &NowcastState{window: max(up(n.Window), 1), after: max(up(n.After), 1), expire: up(n.Expire), gain: n.Gain, last: math.MinInt64}
}

// ExpireSteps is Expire in steps: how long a node the nowcast resumed may
// stay idle once usable before it goes back down.
func (s *NowcastState) ExpireSteps() int { return s.expire }

// Ramp is what the nowcast read when it fired: demand now, its lowest
// over the window before, the steps it has lacked, and the nodes it
// wants powered (Demand + ceil(gain × (Demand − Low))).
type Ramp struct {
	Want, Demand, Low, Lacking int
	Gain                       float64
}

// Reason says why the nowcast wants Want nodes powered.
func (r Ramp) Reason(window int) string {
	return fmt.Sprintf("trend nowcast: demand rose %d → %d over the last %d steps and has lacked nodes for %d; keep %d powered = %d + ceil(%g × %d)",
		r.Low, r.Demand, window, r.Lacking, r.Want, r.Demand, r.Gain, r.Demand-r.Low)
}

// Window is the nowcast's window in steps.
func (s *NowcastState) Window() int { return s.window }

// Observe records step idx's demand and lack (the demand that found no
// usable powered node) and says whether the nowcast fires after it, and
// with what. Steps skipped since the last call repeat the last one's
// demand and lack; the last step observed again is ignored. A step
// before it means the caller's clock stepped back (serve's steps are its
// wall clock's minutes: an NTP step, a VM resumed): time went on all the
// same, so it is taken as the step after the last, and the steps after
// it count on from there.
func (s *NowcastState) Observe(idx int64, demand, lack int) (Ramp, bool) {
	if s.last != math.MinInt64 {
		idx += s.shift
		if idx < s.last {
			s.shift += s.last + 1 - idx
			idx = s.last + 1
		}
		if idx == s.last {
			return Ramp{}, false
		}
		prev := s.recent[len(s.recent)-1]
		for k := s.last + 1; k < idx && k <= s.last+int64(s.window)+int64(s.after); k++ {
			s.push(prev, s.lastLack)
		}
	}
	s.last, s.lastLack = idx, lack
	s.push(demand, lack)
	if lack <= 0 || s.lacking < s.after || len(s.recent) < s.window+1 || demand <= s.recent[len(s.recent)-2] {
		return Ramp{}, false
	}
	low := demand
	for _, v := range s.recent[:s.window] {
		low = min(low, v)
	}
	if low >= demand {
		return Ramp{}, false
	}
	return Ramp{Want: demand + int(math.Ceil(s.gain*float64(demand-low)-1e-9)), Demand: demand, Low: low, Lacking: s.lacking, Gain: s.gain}, true
}

// push appends one step's demand and counts its lack.
func (s *NowcastState) push(demand, lack int) {
	if lack > 0 {
		s.lacking++
	} else {
		s.lacking = 0
	}
	if len(s.recent) == s.window+1 {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:s.window]
	}
	s.recent = append(s.recent, demand)
}

// ParseNowcast reads a nowcast setting as the command line gives it:
// "off" or empty, or comma-separated key=value pairs gain=G, window=D,
// after=D, expire=D (e.g. "gain=0.5,window=2m,after=2m,expire=5m", the
// setting `fairway power eval` picked on Philly). Window and gain are
// required; after defaults to one minute, expire to 0.
func ParseNowcast(v string) (Nowcast, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "off" {
		return Nowcast{}, nil
	}
	n := Nowcast{After: time.Minute}
	seen := map[string]bool{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Nowcast{}, fmt.Errorf("nowcast %q: %q is not key=value (gain, window, after, expire)", v, kv)
		}
		seen[k] = true
		var err error
		switch k {
		case "gain":
			n.Gain, err = strconv.ParseFloat(val, 64)
		case "window":
			n.Window, err = time.ParseDuration(val)
		case "after":
			n.After, err = time.ParseDuration(val)
		case "expire":
			n.Expire, err = time.ParseDuration(val)
		default:
			return Nowcast{}, fmt.Errorf("nowcast %q: unknown key %q (want gain, window, after, expire)", v, k)
		}
		if err != nil {
			return Nowcast{}, fmt.Errorf("nowcast %q: %s: %w", v, k, err)
		}
	}
	if !seen["gain"] || !seen["window"] {
		return Nowcast{}, fmt.Errorf("nowcast %q: want at least gain=G and window=D", v)
	}
	if err := n.Validate(); err != nil {
		return Nowcast{}, err
	}
	if !n.On() {
		return Nowcast{}, fmt.Errorf("nowcast %q: gain and window must be positive (or say off)", v)
	}
	return n, nil
}

// RampHold follows, by name, the nodes serve's nowcast resumed: each is
// held powered until it has been usable Expire (the replay's expiry:
// still idle then, it goes back down like any idle node above need) or a
// job takes it. One that never comes up is let go after an hour.
type RampHold struct {
	Expire time.Duration
	nodes  map[string]rampNode
}

type rampNode struct{ added, usable time.Time }

// Add records nodes the nowcast resumed at now.
func (h *RampHold) Add(now time.Time, names ...string) {
	if h.nodes == nil {
		h.nodes = map[string]rampNode{}
	}
	for _, n := range names {
		h.nodes[n] = rampNode{added: now}
	}
}

// Held updates the hold from the nodes as a cycle at now sees them and
// returns the nodes still held, sorted.
func (h *RampHold) Held(now time.Time, nodes []Node) []string {
	if len(h.nodes) == 0 {
		return nil
	}
	seen := make(map[string]Node, len(h.nodes))
	for _, n := range nodes {
		if _, ok := h.nodes[n.Name]; ok {
			seen[n.Name] = n
		}
	}
	var out []string
	for name, r := range h.nodes {
		n, ok := seen[name]
		switch {
		case !ok || n.Busy:
			delete(h.nodes, name)
			continue
		case n.Power == On:
			if r.usable.IsZero() {
				r.usable = now
				h.nodes[name] = r
			}
			if now.Sub(r.usable) >= h.Expire {
				delete(h.nodes, name)
				continue
			}
		case !r.usable.IsZero() || now.Sub(r.added) >= time.Hour: // went down again, or never came up
			delete(h.nodes, name)
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
