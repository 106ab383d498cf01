package sim

import (
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
)

// Power is power saving in a simulation. Every Step the simulator appends
// the step's node demand (the most nodes with a running job at any instant
// of it) to a power.Series of its own usage and asks Rule how many nodes
// to keep powered; idle nodes beyond that are powered down (the highest
// numbered first), and nodes short of it are powered up (the lowest
// first), ready Resume later. The scheduler does not see power states, as
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
}

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
}

func newPowerModel(p *Power, c Cluster, origin time.Time) (*powerModel, error) {
	if p.NewRule == nil {
		return nil, fmt.Errorf("simulate: power saving without a rule")
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
		next: int64(step), prev: c.Nodes}
	m.rule = p.NewRule(m.series)
	return m, nil
}

// take records allocation a starting now and returns how long the job
// waits for its nodes to boot.
func (m *powerModel) take(now int64, a []policy.Use) int64 {
	var delay int64
	for _, u := range a {
		n := u.Node
		switch m.state[n] {
		case nodeOff:
			m.state[n], m.ready[n] = nodeBooting, now+int64(m.cfg.Resume)
			m.res.Resumes++
			m.lack++
		}
		if m.state[n] == nodeBooting && m.ready[n] > now {
			delay = max(delay, m.ready[n]-now)
		}
		if m.used[n] == 0 {
			m.active++
		}
		m.used[n] += u.Units
	}
	m.stepMax = max(m.stepMax, m.active)
	if delay > 0 {
		m.res.DelayedJobs++
		m.res.Delay += time.Duration(delay)
	}
	return delay
}

// give records allocation a ending.
func (m *powerModel) give(a []policy.Use) {
	for _, u := range a {
		m.used[u.Node] -= u.Units
		if m.used[u.Node] == 0 {
			m.active--
		}
	}
}

// tick closes every step ending at or before now and applies the rule.
func (m *powerModel) tick(now int64) {
	for m.next <= now {
		m.closeStep(m.next)
		m.next += int64(m.series.Step)
	}
}

func (m *powerModel) closeStep(at int64) {
	total := len(m.state)
	m.series.Active = append(m.series.Active, m.stepMax)
	m.series.Total = append(m.series.Total, total)
	i := len(m.series.Active) - 1
	if i == 0 {
		m.rule.Reset(m.series)
	}
	a := m.stepMax
	target := max(min(m.rule.Powered(i, m.prev), total), a)
	for n := range m.state { // boots that finished
		if m.state[n] == nodeBooting && m.ready[n] <= at {
			m.state[n] = nodeOn
		}
	}
	powered := 0
	for _, st := range m.state {
		if st != nodeOff {
			powered++
		}
	}
	for n := total - 1; n >= 0 && powered > target; n-- {
		if m.state[n] == nodeOn && m.used[n] == 0 {
			m.state[n] = nodeOff
			powered--
		}
	}
	for n := 0; n < total && powered < target; n++ {
		if m.state[n] == nodeOff {
			m.state[n], m.ready[n] = nodeBooting, at+int64(m.cfg.Resume)
			powered++
		}
	}
	m.res.Steps = append(m.res.Steps, power.Step{Active: a, Total: total, Powered: powered, Lack: m.lack})
	m.prev = powered
	m.lack, m.stepMax = 0, m.active
}
