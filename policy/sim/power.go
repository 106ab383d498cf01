package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// Power is power saving in a simulation. Every Step the simulator appends
// the step's node demand (the most nodes with a running job at any instant
// of it) to a power.Series of its own usage and asks Rule how many nodes
// to keep powered; idle nodes beyond that are powered down (the highest
// numbered first), and nodes short of it are powered up (the lowest
// first), ready Resume later.
//
// With IdleAfter set, each node instead powers down once it has been idle
// that long on its own clock, at that instant (Slurm's SuspendTime), not
// at a step's end; Rule, when set, only keeps nodes powered: the idle
// clock does not power down below its count, and nodes short of it are
// powered up at the step's end (the hybrid rule). The scheduler does not see power states, as
// Slurm's does not: a job placed on a powered-down node resumes it and
// starts when the last of its nodes is ready, so a node resumed for a job
// is charged Resume once, and a job on a node still booting waits only
// what is left of its boot.
type Power struct {
	// Rule decides the powered nodes; NewRule builds it on the series the
	// simulator grows (a rule's forecast reads that series up to the step
	// it is asked about).
	NewRule func(s *power.Series) power.Rule
	Step    time.Duration // 0: 10 minutes
	Resume  time.Duration // Slurm's ResumeTimeout analogue
	// IdleAfter > 0 is a per-node idle clock: SuspendTime.
	IdleAfter time.Duration
	// NoAhead, with IdleAfter, only holds nodes at Rule's count: nodes
	// short of it are not powered up.
	NoAhead bool
	// Nowcast, with IdleAfter, is the hybrid's trend nowcast
	// (power.Nowcast), read every minute: the most nodes with a running job
	// in the minute is its demand, and the minute lacked when a job held
	// a node not yet up in it. Nodes it resumes (the lowest numbered off
	// ones) power down when still unused its Expire after they came up.
	Nowcast power.Nowcast
}

// nowcastStep is the step the simulator's nowcast reads demand at: the
// minute `fairway power eval` replays it at.
const nowcastStep = time.Minute

// PowerResult is what power saving did in a simulation: the power table's
// steps (Lack is the nodes jobs resumed on demand in the step) and their
// summary.
type PowerResult struct {
	Steps   []power.Step
	Metrics power.Metrics
	// Resumes counts nodes resumed for jobs, DelayedJobs the jobs that
	// waited for a boot, Delay the total time they waited for it.
	Resumes, DelayedJobs int
	Delay                time.Duration
	// AheadResumes counts the nodes the trend nowcast resumed ahead of
	// demand, AheadExpired those of them that went back down unused.
	AheadResumes, AheadExpired int
}

// Node power states.
const (
	nodeOn int8 = iota
	nodeOff
	nodeBooting
)

// powerModel is the simulator's power state.
type powerModel struct {
	cfg     *Power
	rule    power.Rule
	series  *power.Series
	state   []int8
	ready   []int64 // booting: when the node is up, ns
	used    []int32 // units in use per node
	active  int     // nodes with a unit in use
	stepMax int
	lack    int   // nodes resumed on demand in the current step
	next    int64 // end of the current step, ns
	prev    int   // nodes powered during the previous step
	res     PowerResult

	// The idle clock (cfg.IdleAfter > 0): idleSince is when each node last
	// became idle and up; due is no later than the next instant a node's
	// clock runs out (MaxInt64: none); floor is the rule's count, below
	// which the clock powers nothing down.
	idleSince []int64
	due       int64
	floor     int
	// off is the nodes powered down; offNs their time off, summed up to
	// last (node-nanoseconds), for the node-hours off of every rule.
	off   int
	offNs float64
	last  int64

	// The trend nowcast (cfg.Nowcast): nc the rule, ncNext the end of the
	// minute it reads next (MaxInt64: off), ncMax and ncLack that minute's
	// demand and whether a job found a node not yet up in it; ahead the
	// nodes it resumed, by when they come up, fresh whether each is still
	// unused since.
	nc     *power.NowcastState
	ncNext int64
	ncMax  int
	ncLack bool
	ahead  []int
	fresh  []bool
}

func newPowerModel(p *Power, c Cluster, origin time.Time) (*powerModel, error) {
	if p.NewRule == nil && p.IdleAfter <= 0 {
		return nil, fmt.Errorf("simulate: power saving without a rule or an idle time")
	}
	if p.Resume < 0 {
		return nil, fmt.Errorf("simulate: resume time %v: want ≥ 0", p.Resume)
	}
	step := p.Step
	if step <= 0 {
		step = 10 * time.Minute
	}
	m := &powerModel{cfg: p, series: &power.Series{Start: origin, Step: step},
		state: make([]int8, c.Nodes), ready: make([]int64, c.Nodes), used: make([]int32, c.Nodes),
		next: int64(step), prev: c.Nodes, due: math.MaxInt64, ncNext: math.MaxInt64}
	if p.IdleAfter > 0 {
		m.idleSince, m.due = make([]int64, c.Nodes), int64(p.IdleAfter)
	}
	if err := p.Nowcast.Validate(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if p.Nowcast.On() {
		if p.IdleAfter <= 0 {
			return nil, fmt.Errorf("simulate: the trend nowcast needs the idle clock (an idle time): without it nothing powers its unused nodes down")
		}
		m.nc, m.ncNext, m.fresh = p.Nowcast.Start(nowcastStep), int64(nowcastStep), make([]bool, c.Nodes)
	}
	if p.NewRule != nil {
		m.rule = p.NewRule(m.series)
	}
	return m, nil
}

// clock reports whether nodes power down on their own idle clock.
func (m *powerModel) clock() bool { return m.idleSince != nil }

// wakeAt is the next instant the power model acts on its own.
func (m *powerModel) wakeAt() int64 { return min(m.next, m.due, m.ncNext) }

// account adds the time off up to t.
func (m *powerModel) account(t int64) {
	m.offNs += float64(m.off) * float64(t-m.last)
	m.last = t
}

// setState moves node n to st at time t, keeping the off count.
func (m *powerModel) setState(t int64, n int, st int8) {
	m.account(t)
	if m.state[n] == nodeOff {
		m.off--
	}
	if st == nodeOff {
		m.off++
	}
	m.state[n] = st
}

// take records allocation a starting now and returns how long the job
// waits for its nodes to boot.
func (m *powerModel) take(now int64, a []schedule.Use) int64 {
	var delay int64
	for _, u := range a {
		n := u.Node
		switch m.state[n] {
		case nodeOff:
			m.setState(now, int(n), nodeBooting)
			m.ready[n] = now + int64(m.cfg.Resume)
			m.res.Resumes++
			m.lack++
		}
		if m.state[n] == nodeBooting && m.ready[n] > now {
			delay = max(delay, m.ready[n]-now)
		}
		if m.fresh != nil {
			m.fresh[n] = false
		}
		if m.used[n] == 0 {
			m.active++
		}
		m.used[n] += u.Units
	}
	m.stepMax = max(m.stepMax, m.active)
	m.ncMax = max(m.ncMax, m.active)
	if delay > 0 {
		m.ncLack = true
		m.res.DelayedJobs++
		m.res.Delay += time.Duration(delay)
	}
	return delay
}

// give records allocation a ending now.
func (m *powerModel) give(now int64, a []schedule.Use) {
	for _, u := range a {
		m.used[u.Node] -= u.Units
		if m.used[u.Node] == 0 {
			m.active--
			if m.clock() {
				m.idleSince[u.Node] = max(now, m.ready[u.Node])
				m.due = min(m.due, m.idleSince[u.Node]+int64(m.cfg.IdleAfter))
			}
		}
	}
}

// tick closes every step ending at or before now and applies the rule,
// and runs the idle clock, in time order.
func (m *powerModel) tick(now int64) {
	for {
		switch {
		case m.ncNext <= now && m.ncNext <= m.due && m.ncNext <= m.next:
			m.nowcast(m.ncNext)
			m.ncNext += int64(nowcastStep)
		case m.due <= now && m.due < m.next:
			m.suspendIdle(m.due)
		case m.next <= now:
			m.closeStep(m.next)
			m.next += int64(m.series.Step)
		default:
			return
		}
	}
}

// suspendIdle powers down, at time at, every up and idle node whose idle
// clock has run out, longest idle first, keeping at least floor nodes
// powered, and sets due to the next instant a clock runs out. A node the
// floor holds is looked at again at the next step's end.
func (m *powerModel) suspendIdle(at int64) {
	t := int64(m.cfg.IdleAfter)
	var out []int
	powered := len(m.state) - m.off
	m.due = math.MaxInt64
	for n, st := range m.state {
		if st == nodeBooting && m.ready[n] <= at {
			m.state[n] = nodeOn // a boot that finished
		}
		if m.state[n] != nodeOn || m.used[n] != 0 {
			continue
		}
		if since := max(m.idleSince[n], m.ready[n]); since+t <= at {
			out = append(out, n)
		} else {
			m.due = min(m.due, since+t)
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Or(cmp.Compare(max(m.idleSince[a], m.ready[a]), max(m.idleSince[b], m.ready[b])), cmp.Compare(a, b))
	})
	for _, n := range out {
		if powered <= m.floor {
			break
		}
		m.setState(at, n, nodeOff)
		powered--
	}
}

// nowcast closes the minute ending at at for the trend nowcast: the
// nodes it resumed that have stayed unused its expiry since they came up
// power down, then it reads the minute's demand and lack and resumes, the
// lowest numbered off nodes first, what it wants beyond the powered nodes.
// As in the replay, the minute lacked when demand found no usable node: a
// job placed on a node not yet up, or holding one still booting.
func (m *powerModel) nowcast(at int64) {
	exp := int64(m.nc.ExpireSteps()) * int64(nowcastStep)
	k := 0
	for ; k < len(m.ahead) && m.ready[m.ahead[k]]+exp <= at; k++ {
		n := m.ahead[k]
		if m.state[n] == nodeBooting && m.ready[n] <= at {
			m.state[n] = nodeOn
		}
		if m.fresh[n] && m.state[n] == nodeOn && m.used[n] == 0 {
			m.setState(at, n, nodeOff)
			m.res.AheadExpired++
		}
		m.fresh[n] = false
	}
	m.ahead = m.ahead[:copy(m.ahead, m.ahead[k:])]
	lack := 0
	if m.ncLack {
		lack = 1
	}
	for n, st := range m.state {
		if lack > 0 {
			break
		}
		if st == nodeBooting && m.used[n] > 0 && m.ready[n] > at {
			lack = 1
		}
	}
	rp, ok := m.nc.Observe(at/int64(nowcastStep)-1, m.ncMax, lack)
	m.ncMax, m.ncLack = m.active, false
	if !ok {
		return
	}
	powered := len(m.state) - m.off
	for n := 0; n < len(m.state) && powered < rp.Want; n++ {
		if m.state[n] == nodeOff {
			m.setState(at, n, nodeBooting)
			m.ready[n] = at + int64(m.cfg.Resume)
			m.idleSince[n] = m.ready[n]
			m.due = min(m.due, m.ready[n]+int64(m.cfg.IdleAfter))
			m.fresh[n] = true
			m.ahead = append(m.ahead, n)
			m.res.AheadResumes++
			powered++
		}
	}
}

func (m *powerModel) closeStep(at int64) {
	total := len(m.state)
	m.series.Active = append(m.series.Active, m.stepMax)
	m.series.Total = append(m.series.Total, total)
	i := len(m.series.Active) - 1
	if i == 0 && m.rule != nil {
		m.rule.Reset(m.series)
	}
	a := m.stepMax
	target := 0
	if m.rule != nil {
		target = min(m.rule.Powered(i, m.prev), total)
	}
	if !m.clock() {
		target = max(target, a)
	}
	for n := range m.state { // boots that finished
		if m.state[n] == nodeBooting && m.ready[n] <= at {
			m.state[n] = nodeOn
		}
	}
	powered := total - m.off
	if m.clock() {
		// The idle clock powers down; the rule's count only holds nodes
		// and resumes those short of it.
		m.floor = target
		m.suspendIdle(at)
		powered = total - m.off
	} else {
		for n := total - 1; n >= 0 && powered > target; n-- {
			if m.state[n] == nodeOn && m.used[n] == 0 {
				m.setState(at, n, nodeOff)
				powered--
			}
		}
	}
	for n := 0; n < total && powered < target && !(m.clock() && m.cfg.NoAhead); n++ {
		if m.state[n] == nodeOff {
			m.setState(at, n, nodeBooting)
			m.ready[n] = at + int64(m.cfg.Resume)
			powered++
			if m.clock() {
				m.idleSince[n] = m.ready[n]
				m.due = min(m.due, m.ready[n]+int64(m.cfg.IdleAfter))
			}
		}
	}
	m.res.Steps = append(m.res.Steps, power.Step{Active: a, Total: total, Powered: powered, Lack: m.lack})
	m.prev = powered
	m.lack, m.stepMax = 0, m.active
}

// name is the rule's name in the power table.
func (m *powerModel) name() string {
	switch {
	case m.rule == nil:
		return (&power.IdleTime{SuspendTime: m.cfg.IdleAfter}).Name()
	}
	return m.rule.Name()
}

// ForecastFloor is the hybrid rule's count in the simulator: the most
// nodes Forecast (issued at step i, index h−1 for step i+h) wants over
// the next Lookahead steps, each rounded up, plus Buffer. With
// Power.IdleAfter the idle clock powers down no node below it.
type ForecastFloor struct {
	Lookahead, Buffer int
	Forecast          func(i int) []float64
	Label             string
}

// Name implements power.Rule.
func (f *ForecastFloor) Name() string { return f.Label }

// Reset implements power.Rule.
func (f *ForecastFloor) Reset(*power.Series) {}

// Powered implements power.Rule.
func (f *ForecastFloor) Powered(i, prev int) int {
	need := 0
	for _, v := range f.Forecast(i)[:f.Lookahead] {
		need = max(need, int(math.Ceil(v-1e-9)))
	}
	return need + f.Buffer
}
