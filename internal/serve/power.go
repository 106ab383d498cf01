package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/prometheus/client_golang/prometheus"
)

// Power saving in serve: each cycle, power.Decide picks nodes to power
// down or up from the cycle's read, and the actions go to a PowerSink:
// scontrol (PowerLive) or nothing (PowerPlanner). Which one is the
// wiring's choice, and the cycle's Sink may swap it for its planner
// (Sink.PowerTo: serve --dry-run or a follower), the way values go to
// Slurm or to a Planner: the saver itself never asks which it has.
// Every action, and every cycle in which waiting jobs lacked nodes, is a
// record in power_action.

// PowerConfig is serve's power-saving settings.
type PowerConfig struct {
	Buffer            int
	MaxChangesPerHour int
	IdleWatts         float64 // per powered-down node, for the report's energy estimate
	Exclude           []string
	// Horizon is how far ahead the demand forecast is read; Step the
	// forecast's resolution (the artifact's 10 minutes).
	Horizon, Step time.Duration
	// Nowcast is the trend nowcast (power.Nowcast, the replay's and the
	// simulator's rule), read every minute on busy nodes plus the node
	// demand of jobs waiting for nodes; off (the zero value) by default.
	Nowcast power.Nowcast
}

// Validate checks the settings; a bad one is a *FieldError naming it as
// "PowerConfig.<field>".
func (c PowerConfig) Validate() error {
	switch {
	case c.Buffer < 0:
		return &FieldError{Field: "PowerConfig.Buffer", Value: fmt.Sprint(c.Buffer), Err: errors.New("want 0 or more idle nodes kept powered")}
	case c.MaxChangesPerHour < 1:
		return &FieldError{Field: "PowerConfig.MaxChangesPerHour", Value: fmt.Sprint(c.MaxChangesPerHour), Err: errors.New("want at least 1")}
	case c.IdleWatts < 0:
		return &FieldError{Field: "PowerConfig.IdleWatts", Value: fmt.Sprint(c.IdleWatts), Err: errors.New("want 0 or more")}
	case c.Nowcast.Validate() != nil:
		return &FieldError{Field: "PowerConfig.Nowcast", Value: c.Nowcast.Spec(), Err: c.Nowcast.Validate()}
	case c.Step <= 0 || c.Horizon < 0:
		return fmt.Errorf("power forecast step %v, horizon %v: want a positive step and a horizon of 0 or more", c.Step, c.Horizon)
	}
	for _, n := range c.Exclude {
		if n == "" || strings.ContainsAny(n, " \t[],") {
			return &FieldError{Field: "PowerConfig.Exclude", Err: fmt.Errorf("%q is not one node name (give a host list like gpu[1-4],gpu9)", n)}
		}
	}
	return nil
}

// PowerWriter reaches Slurm's node power (slurmctl.PowerWriter).
type PowerWriter interface {
	// SetPower powers node up (up true) or down.
	SetPower(ctx context.Context, node string, up bool) error
	// ScheduledNodes returns the nodes the backfill plan holds for each
	// pending job, where the REST answer has none (Slurm 22.05).
	ScheduledNodes(ctx context.Context) (map[int64][]string, error)
}

// PowerSink is where power actions go: Slurm (PowerLive) or a plan
// (PowerPlanner).
type PowerSink interface {
	PowerWriter
	// Project turns the nodes as Slurm reports them into the nodes as
	// they are after the actions this sink took, so that the next
	// decision starts from there.
	Project(nodes []power.Node)
	// Stamp marks a cycle's report and records with what became of their
	// actions before they are kept: the one place a power record's dry_run
	// is set.
	Stamp(rep *PowerReport, recs []accounting.PowerAction)
	// Planner is the sink that plans what this one would do; a cycle
	// whose Sink plans sends its power actions there (Sink.PowerTo).
	Planner() PowerSink
}

// PowerLive is the PowerSink that reaches Slurm.
type PowerLive struct {
	PowerWriter
	planner *PowerPlanner // its Planner, kept so a plan carries across cycles
}

// Project implements PowerSink: Slurm's view is the nodes as they are.
func (l *PowerLive) Project([]power.Node) {}

// Stamp implements PowerSink: the records say what happened already.
func (l *PowerLive) Stamp(*PowerReport, []accounting.PowerAction) {}

// Planner implements PowerSink: a PowerPlanner reading through l.
func (l *PowerLive) Planner() PowerSink {
	if l.planner == nil {
		l.planner = &PowerPlanner{Reader: l.PowerWriter}
	}
	return l.planner
}

// PowerPlanner is the PowerSink that plans: it keeps what each node
// would be, changes nothing and reports every action taken. It still
// reads the plan's nodes through Reader (nil: none known), because a plan
// must be decided as the real run would decide. It lives as long as serve
// and plans at every cycle, so it keeps nothing per action: the cycle's
// PowerReport says what was planned.
type PowerPlanner struct {
	Reader PowerWriter

	planned map[string]power.Op // what the nodes would be now
}

// SetPower implements PowerSink.
func (p *PowerPlanner) SetPower(_ context.Context, node string, up bool) error {
	op := power.PowerDown
	if up {
		op = power.PowerUp
	}
	if p.planned == nil {
		p.planned = map[string]power.Op{}
	}
	p.planned[node] = op
	return nil
}

// ScheduledNodes implements PowerSink.
func (p *PowerPlanner) ScheduledNodes(ctx context.Context) (map[int64][]string, error) {
	if p.Reader == nil {
		return nil, nil
	}
	return p.Reader.ScheduledNodes(ctx)
}

// Project implements PowerSink: each node as it would be had the planned
// actions been taken, until a job takes it or Slurm agrees.
func (p *PowerPlanner) Project(nodes []power.Node) {
	for i := range nodes {
		pn := &nodes[i]
		switch op, ok := p.planned[pn.Name]; {
		case !ok:
		case pn.Busy || (op == power.PowerUp && pn.Power == power.On) || (op == power.PowerDown && pn.Power == power.Off):
			delete(p.planned, pn.Name) // a job took it, or Slurm agrees now
		case op == power.PowerDown:
			pn.Power = power.Off
		case op == power.PowerUp:
			pn.Power = power.On
		}
	}
}

// Stamp implements PowerSink: the actions were planned, nothing changed.
func (p *PowerPlanner) Stamp(rep *PowerReport, recs []accounting.PowerAction) {
	rep.Planned = true
	for i := range recs {
		recs[i].Planned = true
	}
}

// Planner implements PowerSink: a planner plans already.
func (p *PowerPlanner) Planner() PowerSink { return p }

// PowerRecorder keeps power actions (accounting.Store).
type PowerRecorder interface {
	RecordPowerActions(ctx context.Context, as []accounting.PowerAction) (int, error)
}

// PowerReport is what one cycle's power saving did.
type PowerReport struct {
	Planned  bool // the actions were planned, not taken (stamped by the PowerSink)
	Decision power.Decision
	Applied  []power.Action
	Failed   map[string]string // node → Slurm's refusal
	// Skipped are the power-ups not sent because the node was coming up
	// already when the action was about to go (node → why).
	Skipped map[string]string
}

// PowerSaver runs the power decision every cycle. Not safe for concurrent
// use: only the runner's loop calls it.
type PowerSaver struct {
	cfg     PowerConfig
	cluster string
	log     *slog.Logger
	to      PowerSink // where actions go unless the cycle's Sink plans
	rec     PowerRecorder
	m       *powerMetrics

	changes []time.Time              // actions of the last hour, for the cap
	demand  map[int64]int            // step index (Unix / Step) → most nodes busy in that step
	unsaved []accounting.PowerAction // records the database did not take yet
	last    time.Time                // previous cycle's start
	fc      *powerForecaster
	nc      *power.NowcastState // nil: the trend nowcast is off
	hold    power.RampHold      // the nodes it resumed, until they expire
}

// maxUnsaved bounds the power records kept through a database outage.
const maxUnsaved = 10_000

// NewPowerSaver returns the power saving of serve, sending its actions to
// to (PowerLive, or a PowerPlanner to only plan them).
func NewPowerSaver(cfg PowerConfig, cluster string, to PowerSink, rec PowerRecorder, m *Metrics, log *slog.Logger) (*PowerSaver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if to == nil {
		return nil, errors.New("power saving needs a sink for its actions")
	}
	if m == nil {
		m = NewMetrics()
	}
	// The accounting store is the job history the GBT forecast learns
	// from; without one the forecast is the seasonal-naive fallback.
	hist, _ := rec.(JobHistory)
	fc, err := newPowerForecaster(hist, cluster, cfg.Step)
	if err != nil {
		return nil, fmt.Errorf("power forecast: %w", err)
	}
	return &PowerSaver{cfg: cfg, cluster: cluster, log: log, to: to, rec: rec,
		m: m.power, demand: map[int64]int{}, fc: fc,
		nc: cfg.Nowcast.Start(power.NowcastStep), hold: power.RampHold{Expire: cfg.Nowcast.Expire}}, nil
}

// SeedChanges tells the saver of the power changes made before it started
// (from the database), so a restart does not reset the hourly cap.
func (p *PowerSaver) SeedChanges(at []time.Time) { p.changes = append(p.changes, at...) }

// Cycle decides and acts for one cycle; the cycle's sink says where the
// actions go (Sink.PowerTo). Only the leader (lead) records them, applied
// or planned: a follower plans what the leader decides and does, and its
// rows would count every action twice in the report and in explain.
func (p *PowerSaver) Cycle(ctx context.Context, cycle int64, now time.Time, cl *slurmctl.Cluster, to Sink, lead bool) *PowerReport {
	sink := to.PowerTo(p.to)
	rep := &PowerReport{Failed: map[string]string{}}
	in := p.inputs(ctx, now, cl, sink)
	d, err := power.Decide(in)
	if err != nil { // settings were validated: only a bug gets here
		p.log.Error("power decision", "err", err)
		return rep
	}
	rep.Decision = d
	var recs []accounting.PowerAction
	for _, a := range d.Actions {
		r := accounting.PowerAction{Cluster: p.cluster, At: now, Cycle: cycle, Node: a.Node, Action: string(a.Op),
			Reason: a.Reason, Parts: a.Parts}
		err := sink.SetPower(ctx, a.Node, a.Op == power.PowerUp)
		switch {
		case errors.Is(err, slurmctl.ErrPowerUpNotSent):
			// Slurm resumed it for a job between the read and now: the
			// node comes up without this request, so it is no change.
			r.Error = err.Error()
			if rep.Skipped == nil {
				rep.Skipped = map[string]string{}
			}
			rep.Skipped[a.Node] = err.Error()
			p.log.Info("power-up not sent", "node", a.Node, "why", err)
		case err != nil:
			// A refused change takes its place under the hourly cap too:
			// Slurm refuses the next cycle's for the same reason (power
			// saving not set up), and the cap is what keeps serve from
			// sending, logging and recording them at every cycle.
			p.changes = append(p.changes, now)
			r.Error = err.Error()
			rep.Failed[a.Node] = err.Error()
			p.m.errors.Inc()
			p.log.Warn("power action refused", "node", a.Node, "op", a.Op, "err", err)
		default:
			rep.Applied = append(rep.Applied, a)
			p.changes = append(p.changes, now)
			if _, ok := a.Parts["nowcast_want"]; ok {
				p.hold.Add(now, a.Node)
			}
		}
		recs = append(recs, r)
	}
	span := time.Duration(0)
	if !p.last.IsZero() && now.After(p.last) {
		span = min(now.Sub(p.last), time.Hour)
	}
	p.last = now
	if d.Lack > 0 {
		recs = append(recs, accounting.PowerAction{Cluster: p.cluster, At: now, Cycle: cycle, Action: "lack",
			Reason:    fmt.Sprintf("jobs waiting for nodes need %d, %d idle powered", d.PendingNodes, d.IdleOn+d.PoweringUp),
			LackNodes: d.Lack, Span: span,
			Parts: map[string]float64{"pending_nodes": float64(d.PendingNodes), "idle_on": float64(d.IdleOn), "powering_up": float64(d.PoweringUp)}})
		p.m.lackSeconds.Add(float64(d.Lack) * span.Seconds())
	}
	sink.Stamp(rep, recs)
	for _, r := range recs {
		if r.Action != "lack" && r.Error == "" {
			p.m.changes.WithLabelValues(r.Action, fmt.Sprint(r.Planned)).Inc()
			p.log.Info("power action", "node", r.Node, "op", r.Action, "reason", r.Reason, "dry_run", r.Planned)
		}
	}
	p.m.off.Set(float64(d.Off))
	p.m.lack.Set(float64(d.Lack))
	p.m.held.Add(float64(d.HeldByCap))
	if lead {
		p.record(ctx, recs)
	}
	return rep
}

// inputs builds the decision's inputs from the cycle's read.
func (p *PowerSaver) inputs(ctx context.Context, now time.Time, cl *slurmctl.Cluster, sink PowerSink) power.Inputs {
	in := power.Inputs{Now: now, Step: p.cfg.Step, Settings: power.Settings{Buffer: p.cfg.Buffer,
		MaxChangesPerHour: p.cfg.MaxChangesPerHour, Exclude: p.cfg.Exclude, Horizon: p.cfg.Horizon}}
	var sched map[int64][]string
	needSched := false
	for i := range cl.Jobs {
		if cl.Jobs[i].Pending() && len(cl.Jobs[i].NodeList) == 0 {
			needSched = true
			break
		}
	}
	if needSched && cl.Version == slurmctl.V0038 {
		var err error
		if sched, err = sink.ScheduledNodes(ctx); err != nil {
			// Without the plan's nodes, a node a pending job waits for
			// could be taken: power nothing down this cycle.
			p.log.Warn("read the backfill plan's nodes: powering nothing down this cycle", "err", err)
			in.Settings.MaxChangesPerHour, in.Changes = 1, []time.Time{now}
		}
	}
	for i := range cl.Jobs {
		j := &cl.Jobs[i]
		switch {
		case j.Pending():
			nodes := j.NodeList
			if len(nodes) == 0 {
				nodes = sched[j.ID]
			}
			in.Jobs = append(in.Jobs, power.Job{ID: j.ID, Pending: true, Nodes: max(j.Nodes, 1), NodeList: nodes,
				WaitsForNodes: power.WaitsForNodes(j.Reason), Partitions: jobPartitions(j.Partition)})
		case !j.State.Finished() && j.State != policy.StatePending:
			in.Jobs = append(in.Jobs, power.Job{ID: j.ID, Nodes: j.Nodes, NodeList: j.NodeList})
		}
	}
	busy := 0
	for i := range cl.Nodes {
		n := &cl.Nodes[i]
		pn := power.Node{Name: n.Name, Busy: n.Busy(), Usable: n.UsableWhenPowered(), Partitions: n.Partitions}
		switch n.Power() {
		case slurmctl.NodeOff:
			pn.Power = power.Off
		case slurmctl.NodePoweringDown:
			pn.Power = power.PoweringDown
		case slurmctl.NodePoweringUp:
			pn.Power = power.PoweringUp
		}
		in.Nodes = append(in.Nodes, pn)
	}
	sink.Project(in.Nodes)
	if p.nc != nil {
		in.Nowcast, in.RampHeld = p.nc, p.hold.Held(now, in.Nodes)
	}
	for _, n := range in.Nodes {
		if n.Busy {
			busy++
		}
	}
	p.observeDemand(now, busy)
	in.Forecast, in.ForecastBy = p.forecast(ctx, now)
	cut := now.Add(-time.Hour)
	p.changes = slices.DeleteFunc(p.changes, func(t time.Time) bool { return !t.After(cut) })
	if in.Changes == nil {
		in.Changes = p.changes
	}
	return in
}

// observeDemand keeps the most nodes busy per step, for a week and a day.
func (p *PowerSaver) observeDemand(now time.Time, busy int) {
	step := now.Unix() / int64(p.cfg.Step.Seconds())
	p.demand[step] = max(p.demand[step], busy)
	keep := int64((8 * 24 * time.Hour) / p.cfg.Step)
	for k := range p.demand {
		if k < step-keep {
			delete(p.demand, k)
		}
	}
}

// forecast is the node-demand forecast over the horizon (powerForecaster:
// the GBT on the accounting history, or the same step a day earlier) and
// which forecaster made it.
func (p *PowerSaver) forecast(ctx context.Context, now time.Time) ([]float64, string) {
	if p.cfg.Horizon <= 0 {
		return nil, ""
	}
	return p.fc.forecast(ctx, now, int((p.cfg.Horizon+p.cfg.Step-1)/p.cfg.Step), p.demand)
}

// record stores recs, keeping what the database refuses for the next cycle.
func (p *PowerSaver) record(ctx context.Context, recs []accounting.PowerAction) {
	p.unsaved = append(p.unsaved, recs...)
	if len(p.unsaved) == 0 || p.rec == nil {
		return
	}
	if _, err := p.rec.RecordPowerActions(ctx, p.unsaved); err != nil {
		if over := len(p.unsaved) - maxUnsaved; over > 0 {
			p.unsaved = slices.Delete(p.unsaved, 0, over)
		}
		p.log.Warn("record power actions: kept for the next cycle", "records", len(p.unsaved), "err", err)
		return
	}
	p.unsaved = p.unsaved[:0]
}

// powerMetrics are power saving's Prometheus metrics.
type powerMetrics struct {
	off         prometheus.Gauge
	lack        prometheus.Gauge
	lackSeconds prometheus.Counter
	changes     *prometheus.CounterVec
	errors      prometheus.Counter
	held        prometheus.Counter
}

func newPowerMetrics(reg *prometheus.Registry) *powerMetrics {
	m := &powerMetrics{
		off:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_power_nodes_off", Help: "Nodes powered down (POWERED_DOWN) at the last cycle, as Slurm reports them (in a dry run: as they would be)."}),
		lack:        prometheus.NewGauge(prometheus.GaugeOpts{Name: "fairway_power_lack_nodes", Help: "Nodes that jobs waiting for nodes lacked at the last cycle: pending demand above the idle powered nodes."}),
		lackSeconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_power_lack_node_seconds_total", Help: "Lacking nodes times the time they were lacking (node-seconds)."}),
		changes:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fairway_power_changes_total", Help: "Power changes made (or, dry_run=\"true\", planned), by operation."}, []string{"op", "dry_run"}),
		errors:      prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_power_errors_total", Help: "Power changes Slurm refused."}),
		held:        prometheus.NewCounter(prometheus.CounterOpts{Name: "fairway_power_held_by_cap_total", Help: "Power changes the hourly cap kept back."}),
	}
	reg.MustRegister(m.off, m.lack, m.lackSeconds, m.changes, m.errors, m.held)
	return m
}

// WriteText writes a cycle's power saving for people: the counts it
// decided from and each action with its reason. A nil report (power saving
// off) writes nothing.
func (rep *PowerReport) WriteText(w io.Writer) error {
	if rep == nil {
		return nil
	}
	d := rep.Decision
	mode := "applied"
	if rep.Planned {
		mode = "dry run: nothing changed"
	}
	fmt.Fprintf(w, "\npower: %d busy, %d idle powered, %d off, %d powering up, %d pending node demand, lack %d, keep %d powered; %d actions (%s), %d held by the hourly cap\n",
		d.Busy, d.IdleOn, d.Off, d.PoweringUp, d.PendingNodes, d.Lack, d.Target, len(d.Actions), mode, d.HeldByCap)
	if len(d.Actions) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tACTION\tRESULT\tREASON")
	for _, a := range d.Actions {
		res := "done"
		switch {
		case rep.Failed[a.Node] != "":
			res = "refused: " + rep.Failed[a.Node]
		case rep.Skipped[a.Node] != "":
			res = "not sent: " + rep.Skipped[a.Node]
		case rep.Planned:
			res = "planned"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Node, a.Op, res, a.Reason)
	}
	return tw.Flush()
}

// jobPartitions splits a pending job's partition field: a job submitted to
// several partitions (sbatch -p a,b) waits in all of them until it starts.
func jobPartitions(field string) []string {
	var out []string
	for p := range strings.SplitSeq(field, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
