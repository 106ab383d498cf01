package power

import (
	"fmt"
	"math"
	"time"
)

// Step is what a replay did at one step of the demand it accounts.
type Step struct {
	Active, Total, Powered int
	// Lack is the demand that found no usable powered node in the step:
	// the active nodes above those powered and done resuming. The same
	// definition holds for every rule.
	Lack int
}

// Metrics summarise a replay; every rule's are computed here, alike.
type Metrics struct {
	Rule  string
	Steps int
	Days  float64
	// MeanOff is the mean of total − powered over the steps (a resuming
	// node counts as powered); NodeHoursOff its sum times the step length,
	// in hours.
	MeanOff      float64
	NodeHoursOff float64
	// UtilPowered is the mean of active/powered; UtilCluster the mean of
	// active/total (a step with nothing powered and nothing active counts
	// as fully used).
	UtilPowered, UtilCluster float64
	// ChangesPerDay counts steps where the powered count changed, UpsPerDay
	// those where it rose, NodesUpPerDay the nodes powered up.
	ChangesPerDay, UpsPerDay, NodesUpPerDay float64
	// LackNodeMinutes is Σ Lack × the step length in minutes. LackEvents
	// counts the runs of consecutive steps with any lack: each run is
	// demand waiting for at least one resume.
	LackNodeMinutes float64
	LackEvents      int
}

// parts collects the node-steps off and lack of each consecutive run of
// every steps of a replay (a day on the validation days): what a pick's
// stability across the validation days is judged on.
type parts struct {
	every int
	sums  []partSum
}

// partSum is one part's node-steps off and lack node-steps.
type partSum struct{ off, lack int }

// Summarise computes the metrics of a replay's steps.
func Summarise(name string, steps []Step, step time.Duration) Metrics {
	var acc summary
	for _, x := range steps {
		acc.add(x)
	}
	return acc.metrics(name, step)
}

// summary accumulates Metrics step by step, so that a replay of many
// steps keeps no trace unless asked.
type summary struct {
	n, off, up, ch, ups, lack, events int
	uP, uC                            float64
	prev                              Step
}

func (a *summary) add(x Step) {
	a.off += x.Total - x.Powered
	a.uP += ratio(x.Active, x.Powered)
	a.uC += ratio(x.Active, x.Total)
	if a.n > 0 {
		d := x.Powered - a.prev.Powered
		if d != 0 {
			a.ch++
		}
		if d > 0 {
			a.ups++
			a.up += d
		}
	}
	if x.Lack > 0 {
		if a.n == 0 || a.prev.Lack == 0 {
			a.events++
		}
		a.lack += x.Lack
	}
	a.n++
	a.prev = x
}

func (a *summary) metrics(name string, step time.Duration) Metrics {
	m := Metrics{Rule: name, Steps: a.n}
	if a.n == 0 {
		return m
	}
	n := float64(a.n)
	m.Days = n * step.Hours() / 24
	m.MeanOff = float64(a.off) / n
	m.NodeHoursOff = float64(a.off) * step.Hours()
	m.UtilPowered, m.UtilCluster = a.uP/n, a.uC/n
	m.ChangesPerDay, m.UpsPerDay, m.NodesUpPerDay = float64(a.ch)/m.Days, float64(a.ups)/m.Days, float64(a.up)/m.Days
	m.LackNodeMinutes = float64(a.lack) * step.Minutes()
	m.LackEvents = a.events
	return m
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return min(float64(a)/float64(b), 1)
}

// fleet is the nodes of a cluster in a replay of a demand sequence, by
// count: busy (serving demand), idle (powered, usable, no demand),
// resuming (powered, not yet usable) and off. Both rules move nodes
// through the same fleet, so lack and node-hours off are counted alike.
//
// A sequence gives counts, not node names, so which idle node a rise in
// demand takes is a modelling choice: the most recently idled one (last
// in, first out). That keeps long-idle nodes idle, the order that lets
// Slurm's SuspendTime power down the most, so the comparison is at the
// idle-time rule's best.
type fleet struct {
	total, busy, idleN, bootN int
	idle                      []idleRun // oldest first; since = the first idle step
	boots                     []idleRun // since = the first step the nodes are usable
	resume                    int       // steps from a resume to a usable node, at least 1
	acc                       summary
	trace                     *[]Step
	parts                     *parts // nil: not asked for
}

type idleRun struct{ since, n int }

// newFleet starts with every node powered and idle, as a cluster is
// before any power saving acts.
func newFleet(total int, resume time.Duration, step time.Duration, trace *[]Step, pt *parts) *fleet {
	f := &fleet{total: total, resume: max(int((resume+step-1)/step), 1), trace: trace, parts: pt}
	f.pushIdle(0, total)
	return f
}

func (f *fleet) powered() int { return f.busy + f.idleN + f.bootN }

// serve meets step m's demand a with the usable nodes and resumes those
// it lacks; it returns the lack.
func (f *fleet) serve(m, a, total int) int {
	f.resize(m, total)
	for len(f.boots) > 0 && f.boots[0].since <= m {
		f.bootN -= f.boots[0].n
		f.pushIdle(m, f.boots[0].n)
		f.boots = f.boots[1:]
	}
	served := min(a, f.busy+f.idleN)
	switch {
	case served > f.busy:
		f.takeIdle(served - f.busy)
	case served < f.busy:
		f.pushIdle(m, f.busy-served)
	}
	f.busy = served
	lack := a - served
	if lack > f.bootN { // resume what the nodes already resuming do not cover
		f.boot(m, lack-f.bootN)
	}
	return lack
}

// record accounts step m once it is served, before the rule acts on it.
func (f *fleet) record(a, lack int) {
	x := Step{Active: a, Total: f.total, Powered: f.powered(), Lack: lack}
	if f.parts != nil {
		if f.acc.n%f.parts.every == 0 {
			f.parts.sums = append(f.parts.sums, partSum{})
		}
		p := &f.parts.sums[len(f.parts.sums)-1]
		p.off += x.Total - x.Powered
		p.lack += x.Lack
	}
	f.acc.add(x)
	if f.trace != nil {
		*f.trace = append(*f.trace, x)
	}
}

func (f *fleet) metrics(name string, step time.Duration) Metrics { return f.acc.metrics(name, step) }

// boot resumes up to n off nodes, counted powered from step from and
// usable resume steps later.
func (f *fleet) boot(from, n int) {
	n = min(n, f.total-f.powered())
	if n <= 0 {
		return
	}
	f.bootN += n
	if k := len(f.boots); k > 0 && f.boots[k-1].since == from+f.resume {
		f.boots[k-1].n += n
		return
	}
	f.boots = append(f.boots, idleRun{since: from + f.resume, n: n})
}

func (f *fleet) pushIdle(m, n int) {
	if n <= 0 {
		return
	}
	f.idleN += n
	if k := len(f.idle); k > 0 && f.idle[k-1].since == m {
		f.idle[k-1].n += n
		return
	}
	f.idle = append(f.idle, idleRun{since: m, n: n})
}

// takeIdle removes n nodes from the newest end of the idle pool.
func (f *fleet) takeIdle(n int) {
	f.idleN -= n
	for n > 0 {
		last := &f.idle[len(f.idle)-1]
		d := min(n, last.n)
		last.n -= d
		n -= d
		if last.n == 0 {
			f.idle = f.idle[:len(f.idle)-1]
		}
	}
}

// powerDown powers off up to n idle nodes, those idle longest first.
func (f *fleet) powerDown(n int) {
	n = min(n, f.idleN)
	if n <= 0 {
		return
	}
	f.idleN -= n
	for n > 0 {
		first := &f.idle[0]
		d := min(n, first.n)
		first.n -= d
		n -= d
		if first.n == 0 {
			f.idle = f.idle[1:]
		}
	}
}

// powerDownSince powers off up to n of the nodes idle since step since.
func (f *fleet) powerDownSince(since, n int) {
	for k := range f.idle {
		if f.idle[k].since != since {
			continue
		}
		d := min(n, f.idle[k].n)
		f.idle[k].n -= d
		f.idleN -= d
		if f.idle[k].n == 0 {
			f.idle = append(f.idle[:k], f.idle[k+1:]...)
		}
		return
	}
}

// suspendIdle powers off every node idle for at least steps steps by the
// end of step m (Slurm's SuspendTime, each node's own clock).
func (f *fleet) suspendIdle(m, steps int) {
	k := 0
	for ; k < len(f.idle) && m-f.idle[k].since+1 >= steps; k++ {
		f.idleN -= f.idle[k].n
	}
	f.idle = f.idle[k:]
}

// suspendIdleKeep powers off the nodes idle for at least steps steps by
// the end of step m, longest idle first, but keeps at least keep nodes
// powered.
func (f *fleet) suspendIdleKeep(m, steps, keep int) {
	due := 0
	for k := 0; k < len(f.idle) && m-f.idle[k].since+1 >= steps; k++ {
		due += f.idle[k].n
	}
	f.powerDown(min(due, f.powered()-keep))
}

// target powers nodes up or down towards n: idle nodes off (longest idle
// first) or off nodes resumed from step from. Busy nodes are never
// touched and resuming ones finish.
func (f *fleet) target(from, n int) {
	switch on := f.powered(); {
	case on > n:
		f.powerDown(on - n)
	case on < n:
		f.boot(from, n-on)
	}
}

// resize follows a change of the cluster's size: added nodes come up
// idle; removed ones are taken from the off nodes first, then idle,
// resuming and busy ones.
func (f *fleet) resize(m, total int) {
	if total == f.total {
		return
	}
	if total > f.total {
		f.pushIdle(m, total-f.total)
		f.total = total
		return
	}
	d := f.total - total
	f.total = total
	d -= min(d, f.total+d-f.powered()) // off nodes
	if k := min(d, f.idleN); k > 0 {
		f.takeIdle(k)
		d -= k
	}
	for d > 0 && len(f.boots) > 0 {
		last := &f.boots[len(f.boots)-1]
		k := min(d, last.n)
		last.n -= k
		f.bootN -= k
		d -= k
		if last.n == 0 {
			f.boots = f.boots[:len(f.boots)-1]
		}
	}
	f.busy -= min(d, f.busy)
}

// ReplayIdleTime replays Slurm's own power saving (slurm.conf
// SuspendTime) on demand, step by step (a minute in `fairway power
// eval`): a node powers down once it has been idle for SuspendTime
// (rounded up to whole steps), each node on its own clock; demand above
// the usable nodes resumes exactly the nodes it lacks, usable resume
// later (slurm.conf ResumeTimeout; rounded up to whole steps, at least
// one). It never looks ahead and keeps no buffer.
func ReplayIdleTime(suspend time.Duration, demand *Series, resume time.Duration) Metrics {
	return replayIdleTime(suspend, demand, resume, nil, nil)
}

func replayIdleTime(suspend time.Duration, demand *Series, resume time.Duration, trace *[]Step, pt *parts) Metrics {
	name := "idle-time " + shortDuration(suspend)
	if demand.Len() == 0 {
		return Metrics{Rule: name}
	}
	steps := max(int((suspend+demand.Step-1)/demand.Step), 1)
	f := newFleet(demand.Total[0], resume, demand.Step, trace, pt)
	for m := range demand.Active {
		a := demand.Active[m]
		lack := f.serve(m, a, demand.Total[m])
		f.record(a, lack)
		f.suspendIdle(m, steps)
	}
	return f.metrics(name, demand.Step)
}

// ReplayRule replays rule on demand: the rule decides at the end of each
// step of decide (coarser: 10 minutes in `fairway power eval`, each step
// the maximum of demand's steps in it), from what was measured by then,
// how many nodes stay powered until its next decision; the fleet powers
// idle nodes down or resumes off ones to match. Between decisions, demand
// above the usable nodes resumes the nodes it lacks at once, as under the
// idle-time rule, and the same resume delay applies to every resume.
// decide and demand start at the same instant and decide's step is a
// whole number of demand's.
func ReplayRule(rule Rule, decide, demand *Series, resume time.Duration) (Metrics, error) {
	return replayRule(rule, decide, demand, resume, nil, nil)
}

func replayRule(rule Rule, decide, demand *Series, resume time.Duration, trace *[]Step, pt *parts) (Metrics, error) {
	k, err := aligned(decide, demand)
	if err != nil {
		return Metrics{}, err
	}
	if decide.Len() == 0 {
		return Metrics{Rule: rule.Name()}, nil
	}
	rule.Reset(decide)
	f := newFleet(demand.Total[0], resume, demand.Step, trace, pt)
	plan := decide.Total[0]
	for i := range decide.Active {
		for m := i * k; m < (i+1)*k; m++ {
			a := demand.Active[m]
			lack := f.serve(m, a, demand.Total[m])
			f.record(a, lack)
		}
		plan = max(min(rule.Powered(i, plan), decide.Total[i]), decide.Active[i])
		f.target((i+1)*k, plan)
	}
	return f.metrics(rule.Name(), demand.Step), nil
}

// aligned checks that decide's steps are whole numbers k of demand's,
// from the same instant, and that demand covers them; it returns k.
func aligned(decide, demand *Series) (int, error) {
	if demand.Step <= 0 || decide.Step < demand.Step || decide.Step%demand.Step != 0 {
		return 0, fmt.Errorf("replay: decision step %v is not a whole number of demand steps %v", decide.Step, demand.Step)
	}
	k := int(decide.Step / demand.Step)
	switch {
	case !decide.Start.Equal(demand.Start):
		return 0, fmt.Errorf("replay: decisions start at %s, demand at %s", decide.Start.Format(time.DateTime), demand.Start.Format(time.DateTime))
	case demand.Len() < decide.Len()*k:
		return 0, fmt.Errorf("replay: %d demand steps, want %d (%d decisions × %d)", demand.Len(), decide.Len()*k, decide.Len(), k)
	}
	return k, nil
}

// ReplayHybrid replays h on demand, deciding after every step of demand
// (a minute in `fairway power eval`) from the forecast issued at the end
// of the last complete step of decide (10 minutes): forecasts are issued
// only from what was measured by then, and a decision between two issues
// reads the older one. Demand above the usable nodes resumes what it
// lacks at once, as under every rule; decide and demand are aligned as
// for ReplayRule.
func ReplayHybrid(h *Hybrid, decide, demand *Series, resume time.Duration) (Metrics, error) {
	return replayHybrid(h, decide, demand, resume, nil, nil)
}

func replayHybrid(h *Hybrid, decide, demand *Series, resume time.Duration, trace *[]Step, pt *parts) (Metrics, error) {
	k, err := aligned(decide, demand)
	if err != nil {
		return Metrics{}, err
	}
	if h.IdleAfter <= 0 || h.Lookahead < 0 || h.Buffer < 0 {
		return Metrics{}, fmt.Errorf("replay %s: idle time %v, look-ahead %v, buffer %d: want a positive idle time and the others at least 0", h.Name(), h.IdleAfter, h.Lookahead, h.Buffer)
	}
	if decide.Len() == 0 {
		return Metrics{Rule: h.Name()}, nil
	}
	f := newFleet(demand.Total[0], resume, demand.Step, trace, pt)
	idle := max(int((h.IdleAfter+demand.Step-1)/demand.Step), 1)
	look := int((h.Lookahead + demand.Step - 1) / demand.Step)
	// need[lead−1] is the nodes the forecast issued at step issued wants
	// lead steps ahead, margin and buffer included.
	// early is the early idle time in demand steps (0: off); earlyLook
	// how far its test reads: until the node's idle clock would have run
	// out, and a resume after that.
	early, earlyLook := 0, 0
	if h.EarlyAfter > 0 && h.EarlyAfter < h.IdleAfter {
		early = max(int((h.EarlyAfter+demand.Step-1)/demand.Step), 1)
		earlyLook = max(idle-early, 0) + f.resume
	}
	var need, needEarly []int
	issued, trusted := -1, true
	var rp *ramp
	if nc := h.Nowcast().Start(demand.Step); nc != nil {
		rp = &ramp{nc: nc}
	}
	reach := hybridReach(max(look, earlyLook), f.resume, k)
	for m := range decide.Len() * k {
		a := demand.Active[m]
		lack := f.serve(m, a, demand.Total[m])
		f.record(a, lack)
		// Jobs queued for nodes at the end of the minute: the nodes they
		// ask for beyond the idle and resuming ones resume now, and none
		// of them powers down (Decide, on the live queue).
		pend := 0
		if h.Queue {
			pend = demand.pendingAt(m)
		}
		if pend > 0 {
			f.boot(m, pendingShort(pend, f.idleN, f.bootN))
		}
		if i := (m+1)/k - 1; i > issued { // step i has just ended: a new forecast
			issued = i
			trusted = h.EarlyTrust == nil || h.EarlyTrust(i)
			fc := h.Forecast(i)
			if len(fc) < reach {
				return Metrics{}, fmt.Errorf("replay %s: forecast of %d steps at step %d, want %d", h.Name(), len(fc), i, reach)
			}
			need, needEarly = need[:0], needEarly[:0]
			for lead := 1; lead <= reach; lead++ {
				need = append(need, nodesWanted(fc[lead-1], lead, h.Margin, h.Buffer))
				if early > 0 {
					needEarly = append(needEarly, nodesWanted(fc[lead-1], lead, h.EarlyMargin, h.Buffer))
				}
			}
		}
		if rp != nil {
			rp.act(f, m, a+pend, lack)
		}
		if issued < 0 { // no forecast yet: Slurm's rule and the queue
			if pend > 0 {
				f.suspendIdleKeep(m, idle, min(f.busy+pend, demand.Total[m]))
			} else {
				f.suspendIdle(m, idle)
			}
			continue
		}
		// The decision holds from minute m+1. Keep what the forecast wants
		// over the next look minutes; resume now what it wants when a node
		// resumed now is usable.
		keep := f.busy + pend
		for j := (m + 1) / k; j <= (m+look)/k; j++ {
			keep = max(keep, need[j-issued-1])
		}
		total := demand.Total[m]
		f.suspendIdleKeep(m, idle, min(keep, total))
		if early > 0 && trusted {
			keepEarly := keep
			for j := (m + 1) / k; j <= (m+earlyLook)/k; j++ {
				keepEarly = max(keepEarly, needEarly[j-issued-1])
			}
			f.suspendIdleKeep(m, early, min(keepEarly, total))
		}
		if !h.NoAhead {
			if want := min(need[(m+1+f.resume)/k-issued-1], total); want > f.powered() {
				f.boot(m+1, want-f.powered())
			}
		}
	}
	return f.metrics(h.Name(), demand.Step), nil
}

// ramp is the hybrid's trend nowcast (Hybrid.RampWindow) on a fleet:
// the rule itself (NowcastState) and the nodes it resumed ahead of a
// rise, by the step they became usable, so that those the rise did not
// reach go back down.
type ramp struct {
	nc    *NowcastState
	ahead []idleRun // since = the first step the nodes are usable
}

// act runs after step m is served with lack: first the nodes resumed
// ahead that have idled the nowcast's expiry since they became usable
// power down (up to as many as were resumed ahead, from those idle since
// then: by count they are the same nodes), then the nowcast reads step m
// and, if it fires, the nodes it wants beyond those powered resume from
// step m, as Slurm does for the lack itself: both answer the same
// demand, the one that found no usable node (in serve, the same cycle).
func (r *ramp) act(f *fleet, m, a, lack int) {
	for len(r.ahead) > 0 && r.ahead[0].since+r.nc.ExpireSteps() <= m {
		f.powerDownSince(r.ahead[0].since, r.ahead[0].n)
		r.ahead = r.ahead[1:]
	}
	rp, ok := r.nc.Observe(int64(m), a, lack)
	on := f.powered()
	if !ok || rp.Want <= on {
		return
	}
	n := min(rp.Want-on, f.total-on)
	f.boot(m, n)
	if n > 0 {
		r.ahead = append(r.ahead, idleRun{since: m + f.resume, n: n})
	}
}

// nodesWanted is a forecast v for lead steps ahead plus that lead's
// margin (none beyond margin's end) and the buffer, in whole nodes.
func nodesWanted(v float64, lead int, margin []float64, buffer int) int {
	if lead <= len(margin) {
		v += margin[lead-1]
	}
	// A forecast of 290.3 nodes needs 291; the slack keeps float noise on
	// a whole number from adding a node.
	return int(math.Ceil(v-1e-9)) + buffer
}
