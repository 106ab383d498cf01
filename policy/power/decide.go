package power

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The per-cycle power decision of `fairway serve`: the replayed rules above
// decide a count of powered nodes on a demand sequence; a live cluster needs
// to know which nodes, and must never take one a job holds or is about to
// get. Decide is that step, pure: the caller reads Slurm, Decide says what
// to change and why, the caller acts (or, in a dry run, only records).

// Power is a node's power state as Slurm reports it.
type Power int

// Power states.
const (
	On           Power = iota // powered and answering
	Off                       // POWERED_DOWN (sinfo "~")
	PoweringDown              // POWER_DOWN or POWERING_DOWN ("!", "%")
	PoweringUp                // POWERING_UP ("#"): capacity on its way
)

var powerNames = [...]string{On: "on", Off: "off", PoweringDown: "powering-down", PoweringUp: "powering-up"}

func (p Power) String() string {
	if int(p) >= 0 && int(p) < len(powerNames) {
		return powerNames[p]
	}
	return fmt.Sprintf("Power(%d)", int(p))
}

// Node is one compute node as a cycle sees it.
type Node struct {
	Name  string
	Power Power
	// Busy: Slurm says a job holds part of it (allocated, mixed,
	// completing), whether or not a job record names it.
	Busy bool
	// Usable: Slurm may start jobs on it once powered (not down, drained,
	// draining, failing, reserved for maintenance). Unusable nodes are
	// never touched: what they need is an administrator, not power.
	Usable bool
	// Partitions are the partitions the node is in; none: any job may
	// use it.
	Partitions []string
}

// Job is one job as the decision needs it.
type Job struct {
	ID      int64
	Pending bool // pending (not held); false: running
	// Nodes is the node count the job asks for (pending) or holds.
	Nodes int
	// NodeList names the nodes the job runs on (running) or the backfill
	// plan holds for it (pending: slurmrestd's scheduled_nodes, squeue
	// %Y); empty when Slurm names none.
	NodeList []string
	// WaitsForNodes: a pending job that waits for nodes to free up
	// (reason Resources, Priority, None, ReqNodeNotAvail, ...), not for a
	// limit, a dependency or a begin time; only those count as demand.
	WaitsForNodes bool
	// Partitions are the partitions a pending job may run in (several when
	// it was submitted to several); none: any node. Its demand is met only
	// by nodes of those partitions: idle CPU nodes do not serve a job
	// waiting in a GPU partition.
	Partitions []string
}

// Settings are the operator's bounds on the decision.
type Settings struct {
	// Buffer is how many idle powered nodes are kept above demand: never
	// powered down below it, powered up to it.
	Buffer int
	// MaxChangesPerHour bounds power-downs and forecast power-ups: none is
	// made once the last hour holds that many changes. Power-ups for jobs
	// that wait now are never held back by it.
	MaxChangesPerHour int
	// Exclude names nodes never touched (slurm.conf SuspendExcNodes'
	// role for Fairway).
	Exclude []string
	// Horizon is how far ahead the forecast is read: nodes are kept for
	// the highest demand forecast within it.
	Horizon time.Duration
}

// Inputs is everything one decision reads.
type Inputs struct {
	Now   time.Time
	Nodes []Node
	Jobs  []Job
	// Forecast is the node demand (nodes in use) forecast for the coming
	// steps, one value per Step from Now; nil when there is none, and the
	// decision then keeps demand now plus the buffer.
	Forecast []float64
	// ForecastBy says which forecaster made Forecast and why (the GBT, or
	// the seasonal-naive fallback and what it lacks), for explain.
	ForecastBy string
	Step       time.Duration
	// Changes are the times of the power changes made in the last hour
	// (older ones are ignored; later ones than Now count, up to an hour
	// ahead), for the hourly cap.
	Changes  []time.Time
	Settings Settings
	// Nowcast, when set, is the trend nowcast's state (Settings.Nowcast
	// started at NowcastStep): Decide feeds it this cycle's demand (busy
	// nodes + the node demand of jobs waiting for nodes) and lack, the one
	// state it advances, and powers up what it wants within the hourly
	// cap. RampHeld names the nodes it resumed that are not yet its
	// expiry past usable (RampHold): never powered down.
	Nowcast  *NowcastState
	RampHeld []string
}

// NowcastStep is the step serve's trend nowcast reads demand at: the
// minute the replay reads it at.
const NowcastStep = time.Minute

// Op is what an action does.
type Op string

// Operations.
const (
	PowerDown Op = "power-down"
	PowerUp   Op = "power-up"
)

// Action is one node to power down or up, and why. Parts are the numbers
// the reason was computed from, shown by `fairway explain --node`.
type Action struct {
	Node   string
	Op     Op
	Reason string
	Parts  map[string]float64
}

// Decision is what one cycle decided.
type Decision struct {
	Actions []Action
	// Counts at decision time (before the actions).
	Busy, IdleOn, Off, PoweringUp, Reserved, Excluded, Unusable int
	// PendingNodes is the node demand of the jobs waiting for nodes;
	// Lack is the part of it that found no powered, idle node.
	PendingNodes, Lack int
	// ForecastPeak is the highest forecast demand within the horizon (0
	// when there is no forecast); Target the nodes wanted powered.
	ForecastPeak float64
	Target       int
	// HeldByCap counts the changes the hourly cap kept back this cycle.
	HeldByCap int
	// Ramp is what the trend nowcast read when it fired this cycle (nil:
	// it did not, or is off); RampHeld the idle nodes it holds up.
	Ramp     *Ramp
	RampHeld int
}

// Decide picks the nodes to power down or up this cycle (Helios CES §5.2's
// rule applied to named nodes):
//
//   - never touches an excluded, unusable, busy node, or one a pending
//     job's backfill plan holds;
//   - powers up at once, cap or not, an off node a pending job is
//     scheduled on, and as many off nodes as the jobs waiting for nodes
//     lack (their node demand minus the idle powered nodes and those
//     powering up);
//   - with the trend nowcast (Inputs.Nowcast) firing on a rise that has
//     lacked nodes, powers off nodes up to its Want within the hourly cap,
//     and keeps the nodes it resumed (RampHeld) until they expire;
//   - otherwise keeps Target = max(busy + pending demand, forecast peak)
//   - Buffer nodes powered: powers idle nodes down above it and off
//     nodes up below it, within the hourly cap.
//
// Nodes are taken in name order for power-ups and in reverse name order
// for power-downs, so one cluster's decisions are stable cycle to cycle.
func Decide(in Inputs) (Decision, error) {
	st := in.Settings
	if st.Buffer < 0 || st.MaxChangesPerHour < 0 {
		return Decision{}, fmt.Errorf("power decision: buffer %d, max changes per hour %d: want both at least 0", st.Buffer, st.MaxChangesPerHour)
	}
	if len(in.Forecast) > 0 && in.Step <= 0 {
		return Decision{}, fmt.Errorf("power decision: a forecast of %d steps needs a positive step, got %v", len(in.Forecast), in.Step)
	}
	var d Decision
	excluded := make(map[string]bool, len(st.Exclude))
	for _, n := range st.Exclude {
		excluded[n] = true
	}
	held := make(map[string]bool, len(in.RampHeld))
	for _, n := range in.RampHeld {
		held[n] = true
	}
	running := map[string]bool{}
	reservedBy := map[string]int64{}
	for _, j := range in.Jobs {
		for _, n := range j.NodeList {
			if j.Pending {
				if _, ok := reservedBy[n]; !ok {
					reservedBy[n] = j.ID
				}
			} else {
				running[n] = true
			}
		}
		if j.Pending && j.WaitsForNodes {
			d.PendingNodes += max(j.Nodes, 1)
		}
	}

	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	var idleOn, off, reservedOff []Node // power-down candidates, power-up candidates, off nodes a job is scheduled on
	var supply []Node                   // capacity for waiting jobs: idle powered nodes (excluded and held ones too), nodes powering up
	for _, n := range nodes {
		if !n.Usable {
			d.Unusable++
			continue
		}
		busy := n.Busy || running[n.Name]
		_, reserved := reservedBy[n.Name]
		ex := excluded[n.Name]
		if ex {
			d.Excluded++
		}
		if busy {
			d.Busy++
			continue
		}
		if reserved {
			d.Reserved++
		}
		switch n.Power {
		case On:
			d.IdleOn++
			supply = append(supply, n)
			switch {
			case held[n.Name]:
				d.RampHeld++
			case !reserved && !ex:
				idleOn = append(idleOn, n)
			}
		case Off:
			d.Off++
			switch {
			case ex:
			case reserved:
				reservedOff = append(reservedOff, n)
			default:
				off = append(off, n)
			}
		case PoweringUp:
			d.PoweringUp++
			supply = append(supply, n)
		case PoweringDown:
			// on its way off: neither capacity nor a candidate
		}
	}

	// Jobs that wait now come first, whatever the cap. Each waiting job
	// takes the capacity of its own partitions (idle powered nodes, those
	// powering up), in queue order; what it lacks is the cycle's lack. Off
	// nodes a job is scheduled on come up for it, and off nodes of its
	// partitions for the rest of what it lacks. Where nodes and jobs name
	// no partitions (or all share them) this is the whole cluster's count:
	// the pending node demand beyond the idle and resuming nodes.
	available := d.IdleOn + d.PoweringUp
	waiting := slices.DeleteFunc(slices.Clone(in.Jobs), func(j Job) bool { return !j.Pending || !j.WaitsForNodes })
	d.Lack = shortOf(waiting, supply)
	for _, n := range reservedOff {
		d.Actions = append(d.Actions, Action{Node: n.Name, Op: PowerUp,
			Reason: fmt.Sprintf("pending job %d is scheduled on it", reservedBy[n.Name]),
			Parts:  map[string]float64{"job_id": float64(reservedBy[n.Name])}})
	}
	free := slices.Concat(supply, reservedOff)
	for _, j := range waiting {
		for short := claim(j, &free); short > 0; short-- {
			i := slices.IndexFunc(off, func(n Node) bool { return eligible(j, n) })
			if i < 0 {
				break
			}
			d.Actions = append(d.Actions, Action{Node: off[i].Name, Op: PowerUp,
				Reason: fmt.Sprintf("jobs waiting for nodes need %d, %d idle powered", d.PendingNodes, available)})
			off = slices.Delete(off, i, i+1)
		}
	}
	urgent := len(d.Actions)
	room := math.MaxInt
	if st.MaxChangesPerHour > 0 {
		recent := 0
		for _, t := range in.Changes {
			// One stamped after now was made all the same: by a clock
			// ahead of this one's (an earlier serve's, read back from
			// the database), or before this clock stepped back. Only
			// within the hour: a stamp further ahead is a clock gone
			// wrong, and counting it would freeze the cap until then.
			if d := in.Now.Sub(t); d < time.Hour && d > -time.Hour {
				recent++
			}
		}
		room = max(0, st.MaxChangesPerHour-recent-urgent)
	}

	// Then the trend nowcast, within the cap: the same rule as the
	// replay's, on the demand of this cycle.
	ahead := 0
	if in.Nowcast != nil {
		if rp, ok := in.Nowcast.Observe(in.Now.Unix()/int64(NowcastStep.Seconds()), d.Busy+d.PendingNodes, d.Lack); ok {
			d.Ramp = &rp
			powered := d.Busy + d.IdleOn + d.PoweringUp + urgent
			why := rp.Reason(in.Nowcast.Window()) + fmt.Sprintf("; %d powered", powered)
			for n := rp.Want - powered; len(off) > 0 && n > 0; n-- {
				if room == 0 {
					d.HeldByCap += min(n, len(off))
					break
				}
				d.Actions = append(d.Actions, Action{Node: off[0].Name, Op: PowerUp, Reason: why,
					Parts: map[string]float64{"nowcast_want": float64(rp.Want), "nowcast_demand": float64(rp.Demand),
						"nowcast_low": float64(rp.Low), "nowcast_lacking": float64(rp.Lacking), "nowcast_gain": rp.Gain}})
				off, room, ahead = off[1:], room-1, ahead+1
			}
		}
	}

	// Then the forecast and the buffer, within the cap.
	if len(in.Forecast) > 0 {
		steps := len(in.Forecast)
		if st.Horizon > 0 {
			steps = min(steps, max(1, int(math.Ceil(float64(st.Horizon)/float64(in.Step)))))
		}
		for _, v := range in.Forecast[:steps] {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				d.ForecastPeak = max(d.ForecastPeak, v)
			}
		}
	}
	demand := max(d.Busy+d.PendingNodes, int(math.Ceil(d.ForecastPeak)))
	d.Target = min(demand+st.Buffer, d.Busy+d.IdleOn+d.Off+d.PoweringUp)
	powered := d.Busy + d.IdleOn + d.PoweringUp + urgent + ahead
	why := fmt.Sprintf("keep %d powered = demand %d (busy %d + pending %d, forecast peak %.1f) + buffer %d; %d powered",
		d.Target, demand, d.Busy, d.PendingNodes, d.ForecastPeak, st.Buffer, powered)
	if in.ForecastBy != "" {
		why += "; forecast: " + in.ForecastBy
	}
	switch {
	case powered < d.Target:
		for n := d.Target - powered; len(off) > 0 && n > 0; n-- {
			if room == 0 {
				d.HeldByCap += min(n, len(off))
				break
			}
			d.Actions = append(d.Actions, Action{Node: off[0].Name, Op: PowerUp, Reason: "below need: " + why})
			off, room = off[1:], room-1
		}
	case powered > d.Target && urgent == 0 && ahead == 0:
		for n, i := powered-d.Target, len(idleOn)-1; i >= 0 && n > 0; n, i = n-1, i-1 {
			if room == 0 {
				d.HeldByCap += min(n, i+1)
				break
			}
			d.Actions = append(d.Actions, Action{Node: idleOn[i].Name, Op: PowerDown, Reason: "idle above need: " + why})
			room--
		}
	}
	for i := range d.Actions {
		p := map[string]float64{
			"busy": float64(d.Busy), "idle_on": float64(d.IdleOn), "off": float64(d.Off),
			"powering_up": float64(d.PoweringUp), "pending_nodes": float64(d.PendingNodes),
			"buffer": float64(st.Buffer), "target": float64(d.Target), "forecast_peak": d.ForecastPeak,
			"lack": float64(d.Lack),
		}
		for k, v := range d.Actions[i].Parts {
			p[k] = v
		}
		d.Actions[i].Parts = p
	}
	return d, nil
}

// eligible reports whether node n can serve job j: they share a
// partition, or either names none.
func eligible(j Job, n Node) bool {
	if len(j.Partitions) == 0 || len(n.Partitions) == 0 {
		return true
	}
	return slices.ContainsFunc(j.Partitions, func(p string) bool { return slices.Contains(n.Partitions, p) })
}

// claim takes from free the nodes job j can use, as many as it asks for
// (in order), and returns how many it still lacks.
func claim(j Job, free *[]Node) int {
	need := max(j.Nodes, 1)
	*free = slices.DeleteFunc(*free, func(n Node) bool {
		if need > 0 && eligible(j, n) {
			need--
			return true
		}
		return false
	})
	return need
}

// shortOf gives the waiting jobs, in order, the nodes of their partitions
// (each node to one job) and returns the nodes they lack in all.
func shortOf(jobs []Job, nodes []Node) int {
	free := slices.Clone(nodes)
	short := 0
	for _, j := range jobs {
		short += claim(j, &free)
	}
	return short
}

// pendingShort is how many nodes to power up at once for the jobs
// waiting for nodes: the nodes they ask for (pending) beyond the idle
// powered ones and those already powering up. The hybrid's replay reads
// it from a sequence's pending column; Decide counts the same on the live
// queue, partition by partition (shortOf).
func pendingShort(pending, idle, resuming int) int {
	return max(0, pending-idle-resuming)
}

// WaitsForNodes reports whether a pending job's Slurm reason says it waits
// for nodes to free up (or to power up), rather than for a limit, a
// dependency, a hold or a begin time. Unknown reasons count: a job that
// might need a node must not be left without one.
func WaitsForNodes(reason string) bool {
	switch {
	case reason == "", reason == "None", reason == "Resources", reason == "Priority",
		strings.HasPrefix(reason, "ReqNodeNotAvail"), reason == "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions",
		reason == "NodeDown", reason == "PowerUpNode", reason == "Reservation":
		return true
	case reason == "Dependency", reason == "DependencyNeverSatisfied", reason == "BeginTime", reason == "JobHeldUser",
		reason == "JobHeldAdmin", reason == "PartitionDown", reason == "PartitionInactive", reason == "PartitionTimeLimit",
		reason == "PartitionNodeLimit", reason == "InvalidAccount", reason == "InvalidQOS", reason == "JobArrayTaskLimit",
		strings.HasPrefix(reason, "Assoc"), strings.HasPrefix(reason, "QOS"), strings.HasPrefix(reason, "AssocGrp"):
		return false
	}
	return true
}
