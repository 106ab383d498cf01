package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// The serve cycle: Source → Snapshot → Policy.Rank → Decision → Sink, the
// same policy.Engine the simulator drives. The runner owns everything that
// is not pure: reading Slurm, deciding what to write, writing it, and
// recording what happened, with the outage rules of a production daemon:
//
//   - Slurm unreadable (slurmrestd down, errors, bad token): the cycle ends
//     before ranking; nothing is written; engine state is kept; the loop
//     backs off.
//   - PostgreSQL down: ranking goes on from in-memory state; what must be
//     recorded (finished jobs, decisions, cycle timings) is buffered in
//     memory up to Config.BufferLimit records, spilled to Config.BufferDir
//     past it, and shipped, oldest first, when the database is back. Leadership cannot be confirmed
//     without the database, so nothing is written to Slurm meanwhile (the
//     values already written stay in Slurm).

// Source is what a cycle reads: the live cluster (slurmctl.Client).
type Source interface {
	Read(ctx context.Context) (*slurmctl.Cluster, error)
}

// Recorder is what the cycle keeps in the accounting database
// (accounting.Store).
type Recorder interface {
	RecordFinished(ctx context.Context, source string, jobs []policy.Job) (accounting.Summary, error)
	RecordDecisions(ctx context.Context, ds []accounting.Decision) (int, error)
	RecordCycle(ctx context.Context, c accounting.Cycle) error
	RecordPredictions(ctx context.Context, ps []accounting.Prediction) error
}

// Leadership says whether this process may write to Slurm.
type Leadership interface {
	// Leader reports whether this process holds the lease now. It may
	// block briefly to confirm or acquire it; false on any doubt.
	Leader(ctx context.Context) bool
	// Hold is called once Leader said true, before the cycle's writes,
	// which run under the context it returns: a context derived from ctx
	// that ends as soon as the lease can no longer be counted on (its
	// session found dead, or not confirmed for longer than the other
	// serve needs to take the lease over), so that a write in flight
	// stops before another process may write. release ends the watch.
	Hold(ctx context.Context) (held context.Context, release context.CancelFunc)
}

// Config is the part of serve's settings the cycle reads.
type Config struct {
	Cluster string
	// Policy names the registered policy that ranks, with its defaults;
	// with PolicyFile, the file's family (Validate sets it).
	Policy string
	// PolicyFile is a policy file (policy.File) whose policy ranks
	// instead; serve reloads it when it changes (policyWatch). "": none.
	PolicyFile        string
	Predictor         string
	MaxWrites         int      // changed values written per cycle, at most; 0 = no cap
	Partitions        []string // only these partitions (empty: all)
	ExcludePartitions []string
	ExemptQOS         []string
	Range             policy.SlurmRange
	Field             string // "site_factor" or "priority", for the decision log
	// BufferLimit is the most records (finished jobs, predictions,
	// decisions, cycle rows) kept in memory while the database is down;
	// past it they are spilled to files in BufferDir. 0: DefaultBufferLimit.
	BufferLimit int
	// BufferDir holds spilled records until the database is back (and
	// across a restart). "": records stay in memory, unbounded.
	BufferDir string
	// Forecast plays every cycle's ranking forward (NewQueueForecast) for
	// explain, queue and the HTTP API; ForecastAsync does it beside the
	// cycle rather than in it (see Runner.LastForecast).
	Forecast      bool
	ForecastAsync bool
}

// DefaultBufferLimit bounds the records kept in memory through a database
// outage: two cycles of a 100,000-job queue whose every value changes (one
// decision row per change), before the oldest go to disk.
const DefaultBufferLimit = 200_000

// Runner runs serve cycles. Not safe for concurrent use: one goroutine runs
// the loop.
type Runner struct {
	cfg     Config
	log     *slog.Logger
	slurm   Source
	sink    Sink // every effect; a *Planner in a dry run or explain
	leader  Leadership
	engine  *policy.Engine
	metrics *Metrics
	// now is the clock, read once per cycle: every step of a cycle sees
	// the same time, so the engine, the rewriter's table and power saving
	// never disagree about it.
	now func() time.Time

	// What carries from one cycle to the next. Only RunCycle (one
	// goroutine) touches it; each is here because a single read of Slurm
	// cannot tell it.

	cycle int64 // cycles run: numbers the log, the records and the rewriter's refreshes
	// wasLeader is the previous cycle's leadership: becoming the leader
	// primes the writer and takes over an earlier serve's priorities.
	wasLeader bool
	// observed says running and finished below come from a read of
	// Slurm, so a finished job absent from them finished between two
	// cycles rather than before this process started.
	observed bool
	// running is what ran at the previous cycle: a job missing from this
	// read (Slurm forgot it) or no longer running has stopped.
	running map[int64]policy.Job
	// finished are the finished jobs already handed to the engine and
	// recorded, so a job Slurm still lists is charged once.
	finished map[int64]bool
	// requeued are the jobs that ran and were requeued, pending again:
	// the engine keeps their attained service until they run again or
	// leave (policy.Observation.Left).
	requeued map[int64]bool
	// assigned is what Slurm is taken to hold, from the writes the sink
	// reported applied: the base of the next Assign (fewest changes) and
	// of a follower's plan.
	assigned map[int64]int64
	// predicted and pendPrev are the previous cycle's predictions and
	// pending jobs: a job that started since is scored against what was
	// predicted for it (metrics, prediction records).
	predicted map[int64]time.Duration
	pendPrev  map[int64]policy.Job
	// buffer holds records the database has not taken yet (an outage).
	buffer  recordBuffer
	rewrite *Rewriter    // resource rewriting (rewrite.go); nil when off
	power   *PowerSaver  // power saving (power.go); nil when off
	pf      *policyWatch // the policy file (policyfile.go); nil without one
	fc      forecastState
	// toHandBack are admin priorities an earlier rest-priority serve left
	// that this site-factor serve has not handed back yet (handOver): kept
	// until Slurm takes them, since a site factor cannot move them.
	toHandBack map[int64]slurmctl.Frozen
}

// Parts are what a Runner is built from, the way Kueue's scheduler.New
// takes its queues, cache and client: every input and every effect of a
// cycle is one of them, so serve, a dry run, explain and tests differ only
// in the parts they hand in (cmd/fairway wires them).
type Parts struct {
	Source   Source         // the cluster (slurmctl.Client)
	Sink     Sink           // every effect: Live, or a Planner (dry run, explain)
	Leader   Leadership     // whether this process may write now
	Engine   *policy.Engine // ranks; warmed from history (NewEngine)
	Rewriter *Rewriter      // resource rewriting; nil when off
	Power    *PowerSaver    // power saving; nil when off
	Metrics  *Metrics       // nil: a registry of its own
	Now      func() time.Time
}

// New returns a Runner that reads p.Source, ranks with p.Engine, and hands
// every effect to p.Sink while p.Leader says this process may write.
func New(cfg Config, p Parts, log *slog.Logger) *Runner {
	if cfg.BufferLimit <= 0 {
		cfg.BufferLimit = DefaultBufferLimit
	}
	if p.Metrics == nil {
		p.Metrics = NewMetrics()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return &Runner{
		cfg: cfg, log: log, slurm: p.Source, sink: p.Sink, leader: p.Leader, engine: p.Engine, rewrite: p.Rewriter,
		power: p.Power, metrics: p.Metrics, now: p.Now,
		running: map[int64]policy.Job{}, finished: map[int64]bool{}, requeued: map[int64]bool{}, assigned: map[int64]int64{},
		predicted: map[int64]time.Duration{}, pendPrev: map[int64]policy.Job{},
		buffer: recordBuffer{limit: cfg.BufferLimit, dir: cfg.BufferDir},
	}
}

// ErrSlurmRead marks a cycle that could not read Slurm: the loop backs off.
var ErrSlurmRead = errors.New("read slurm")

// CycleResult is what one cycle decided, for tests and `serve --once`.
type CycleResult struct {
	Leader   bool
	Pending  int
	Ranked   []policy.Score
	Snapshot *policy.Snapshot
	Values   map[int64]int64 // job → value decided (written or, in dry run, would be)
	Changed  []slurmctl.Change
	Report   slurmctl.Report
	Recorded bool           // everything this cycle produced reached the database
	Rewrite  *RewriteReport // resource rewriting; nil when off
	// Record is the cycle's row as recorded, stamped by the cycle's sink:
	// Planned when nothing was written to Slurm or the table.
	Record accounting.Cycle
	// Steps is how long each step took.
	Steps    Steps
	Forecast *QueueForecast // start-time forecasts; nil when Config.Forecast is off
	Power    *PowerReport   // power saving; nil when off
	// Read is the cluster as the cycle read it: explain says from it why a
	// job is not ranked.
	Read *slurmctl.Cluster
	// Policy is the policy that ranked, with its parameters: explain asks
	// it what moves a job.
	Policy policy.Policy
	// PolicyFile is the policy file Policy came from; nil without one.
	PolicyFile *PolicyFileInfo
	// HandBack is what handing an earlier rest-priority serve's admin
	// priorities back to multifactor did this cycle; nil when there were
	// none to hand back.
	HandBack *slurmctl.HandBackReport
}

// Metrics returns the runner's metrics.
func (r *Runner) Metrics() *Metrics { return r.metrics }

// Steps is how long each step of a cycle took, measured on the monotonic
// clock (they time the cycle; the cycle's own time is its one reading of
// Runner.now).
type Steps struct {
	Observe time.Duration // read Slurm, find what started and stopped
	Rank    time.Duration // the engine: predict and score
	Decide  time.Duration // values that keep the order, capped
	Apply   time.Duration // the sink: values, hand-backs, rewriting, power
	Record  time.Duration // buffer and ship the records
}

// cycle is one cycle's working state, handed from step to step and
// dropped with the cycle; the Runner keeps only what the next cycle needs.
type cycle struct {
	log     *slog.Logger
	now     time.Time // the cycle's one reading of the clock: every step's "now"
	started time.Time // monotonic, for the steps' durations
	rec     accounting.Cycle
	res     *CycleResult

	cl       *slurmctl.Cluster
	writable []slurmctl.Job // the pending records Fairway ranks and may write
	obs      *policy.Observation
	finished []policy.Job // jobs to record as finished
	snap     *policy.Snapshot
	scores   []policy.Score
	want     map[int64]int64 // job → value decided
	sink     Sink            // the runner's, or a Planner while not the leader
	report   slurmctl.Report
}

// timed runs step and sets *d to how long it took.
func timed(d *time.Duration, step func() error) error {
	t := time.Now()
	err := step()
	*d = time.Since(t)
	return err
}

// RunCycle runs one cycle: it reloads the policy file when it changed,
// then runs the steps in order, each timed (CycleResult.Steps):
//
//  1. observe: read the cluster (Source); pending jobs Fairway may rank,
//     running jobs, and the jobs that stopped since the previous cycle;
//  2. rank them (policy.Engine);
//  3. decide values that keep Fairway's order in Slurm, capped;
//  4. apply: hand the values, the rewriting and power saving to the Sink
//     (a Planner when this process is not the leader);
//  5. record decisions, finished jobs and the cycle (buffered through a
//     database outage).
//
// A cycle that cannot read Slurm or rank ends early, recorded with its
// error.
func (r *Runner) RunCycle(ctx context.Context) (*CycleResult, error) {
	return r.runCycle(ctx, ctx)
}

// errStopped ends a cycle whose stop came before its writes.
var errStopped = errors.New("stopped: signal received before the writes")

// untilDone is ctx, ended too as soon as stop ends.
func untilDone(ctx, stop context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(stop, cancel)
	return sctx, func() { unhook(); cancel() }
}

// runCycle is RunCycle, whose reads end, and which writes nothing, once
// stop ends (a signal), while what it already writes and records goes on
// under ctx.
func (r *Runner) runCycle(ctx, stop context.Context) (*CycleResult, error) {
	r.cycle++
	c := &cycle{log: r.log.With("cycle", r.cycle), now: r.now(), started: time.Now(), res: &CycleResult{}}
	c.rec = accounting.Cycle{Cluster: r.cfg.Cluster, Cycle: r.cycle, Started: c.now, Policy: r.cfg.Policy}
	r.checkPolicyFile(c.log)
	st := &c.res.Steps

	if err := timed(&st.Observe, func() error {
		rctx, cancel := untilDone(ctx, stop)
		defer cancel()
		return r.observe(rctx, c)
	}); err != nil {
		c.rec.Read = st.Observe
		if stop.Err() != nil {
			return nil, r.failCycle(ctx, c, "stopped", err)
		}
		return nil, r.failCycle(ctx, c, "read_error", err)
	}
	c.rec.Read = st.Observe
	if err := timed(&st.Rank, func() error { return r.rank(c) }); err != nil {
		c.rec.Rank = st.Rank
		return nil, r.failCycle(ctx, c, "rank_error", err)
	}
	c.rec.Rank = st.Rank
	if err := timed(&st.Decide, func() error { return r.decide(c) }); err != nil {
		return nil, r.failCycle(ctx, c, "rank_error", err)
	}
	if stop.Err() != nil {
		// Nothing decided is written; the jobs read finished are recorded.
		r.buffer.mem.Finished = append(r.buffer.mem.Finished, c.finished...)
		return nil, r.failCycle(ctx, c, "stopped", errStopped)
	}
	_ = timed(&st.Apply, func() error { r.apply(ctx, stop, c); return nil })
	c.rec.Write = st.Apply
	c.rec.Total = time.Since(c.started)
	_ = timed(&st.Record, func() error { r.record(ctx, c); return nil })
	c.rec.Record = st.Record

	c.res.Record = c.rec
	r.metrics.cycle(c.rec, st, "ok")
	r.metrics.ranked(c.snap, c.scores, c.report, c.rec)
	if n := len(c.report.Planned); n > 0 || len(c.report.Failed) > 0 {
		c.log.Info("cycle", "pending", len(c.obs.Pending), "running", len(c.obs.Running), "changed", n,
			"written", c.rec.Written, "failed", len(c.report.Failed), "leader", c.res.Leader, "dry_run", c.rec.Planned,
			"duration_seconds", c.rec.Total.Seconds(), "observe_seconds", st.Observe.Seconds(), "rank_seconds", st.Rank.Seconds(),
			"decide_seconds", st.Decide.Seconds(), "apply_seconds", st.Apply.Seconds(), "record_seconds", st.Record.Seconds())
	}
	return c.res, nil
}

// observe reads the cluster and diffs it against the previous cycle: the
// pending jobs Fairway ranks, the running ones, and those that stopped.
func (r *Runner) observe(ctx context.Context, c *cycle) error {
	cl, err := r.slurm.Read(ctx)
	if err != nil {
		r.metrics.slurmUp.Set(0)
		return fmt.Errorf("%w: %w", ErrSlurmRead, err)
	}
	r.metrics.slurmUp.Set(1)
	r.metrics.skippedRecords.Add(float64(len(cl.Skipped)))
	c.cl, c.res.Read = cl, cl
	c.writable = r.rankable(cl)
	pending := make([]policy.Job, len(c.writable))
	for i := range c.writable {
		pending[i] = c.writable[i].Job
	}
	running := cl.Running()
	stopped, finished, left := r.stopped(cl, running, c.now)
	c.obs = &policy.Observation{Now: c.now, Pending: pending, Running: running, Stopped: stopped, Left: left}
	c.finished = finished
	c.rec.Pending, c.rec.Running = len(pending), len(running)
	return nil
}

// rank runs the engine on the observation and keeps what the next cycle
// compares with: who was pending, and what was predicted for them.
func (r *Runner) rank(c *cycle) error {
	snap, scores, err := r.engine.Cycle(c.obs)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	c.snap, c.scores = snap, scores
	r.observePredictionErrors(c.obs.Stopped)
	r.recordStartedPredictions(c.obs.Running, c.now)
	if r.cfg.Forecast {
		c.res.Forecast = r.forecastCycle(c.log, c.cl, snap, scores)
	}
	r.pendPrev = make(map[int64]policy.Job, len(c.obs.Pending))
	for _, j := range c.obs.Pending {
		r.pendPrev[j.ID] = j
	}
	r.predicted = make(map[int64]time.Duration, len(snap.Predicted))
	for id, d := range snap.Predicted {
		r.predicted[id] = d
	}
	c.res.Pending, c.res.Ranked, c.res.Snapshot, c.res.Policy = len(c.obs.Pending), scores, snap, r.engine.Policy()
	if r.pf != nil {
		c.res.PolicyFile = r.pf.info()
	}
	return nil
}

// decide turns the ranking into values that keep Fairway's order in Slurm,
// as few changes as possible, capped.
func (r *Runner) decide(c *cycle) error {
	values, err := policy.Assign(c.scores, r.assigned, r.cfg.Range)
	if err != nil {
		return fmt.Errorf("assign values: %w", err)
	}
	want := make(map[int64]int64, len(c.scores))
	for i, s := range c.scores {
		want[s.JobID] = values[i]
	}
	c.want = r.capWrites(c.scores, want)
	c.res.Values = c.want
	return nil
}

// apply hands the cycle's effects to the sink: a follower only plans, from
// what this process last decided. What the sink reports applied is what
// the next cycle takes Slurm to hold. Once stop ends (a signal), no new
// batch of effects starts: the hand-back, the values, the rewriting and
// power saving each begin only before it, and the one going on finishes
// under ctx.
func (r *Runner) apply(ctx, stop context.Context, c *cycle) {
	log := c.log
	cycleCtx := ctx
	leader := r.leader.Leader(ctx)
	sink := r.sink
	if leader {
		// Every write of the cycle runs under the lease: once it is lost,
		// the other serve may write, so this one stops mid-batch.
		held, release := r.leader.Hold(ctx)
		defer release()
		ctx = held
	} else {
		sink = NewPlanner(r.sink, r.assigned)
	}
	c.sink = sink
	if leader && !r.wasLeader {
		if n, err := sink.Prime(ctx); err != nil {
			log.Warn("prime writer", "err", err)
		} else {
			log.Info("became leader", "values_known", n)
		}
		r.takeOver(ctx, log, sink, c.writable)
	}
	if leader && len(r.toHandBack) > 0 && stop.Err() == nil {
		c.res.HandBack = r.handOver(ctx, log, sink, c.cl.Jobs, c.want)
	}
	if !leader && r.wasLeader {
		log.Warn("lost leadership: writing nothing until it is confirmed again")
	}
	r.wasLeader, c.rec.Leader, c.res.Leader = leader, leader, leader
	r.metrics.leader.Set(b2f(leader))

	var report slurmctl.Report
	var err error
	if stop.Err() == nil {
		report, err = sink.WriteValues(ctx, c.writable, c.want)
	}
	for id := range r.toHandBack {
		if _, ranked := r.pendPrev[id]; ranked {
			report.Skipped = append(report.Skipped, slurmctl.Skip{JobID: id, Reason: "admin priority of an earlier rest-priority serve not handed back yet"})
		}
	}
	if err != nil {
		// The writer reports what it did even on error.
		log.Error("write to slurm", "err", err, "applied", len(report.Applied), "failed", len(report.Failed))
		c.rec.Error = "write: " + err.Error()
		if errors.Is(err, slurmctl.ErrReadBack) {
			r.metrics.writerStopped.Set(1)
		}
	}
	c.report = report
	c.rec.Written, c.rec.WriteErrors = len(report.Applied), len(report.Failed)
	c.res.Report, c.res.Changed = report, report.Planned
	if leader && ctx.Err() != nil && cycleCtx.Err() == nil {
		// The lease ended during the writes: what is left of the cycle
		// only plans, and the next cycle primes again if it leads.
		log.Warn("lost leadership during the cycle: stopped writing", "err", context.Cause(ctx),
			"applied", len(report.Applied), "not_written", len(report.Failed))
		ctx, sink, leader = cycleCtx, NewPlanner(r.sink, r.assigned), false
		r.wasLeader = false
		r.metrics.leader.Set(0)
	}
	if r.rewrite != nil && stop.Err() == nil {
		c.res.Rewrite = r.rewrite.Cycle(ctx, r.cycle, c.now, c.cl, c.snap.Predicted, c.scores, sink)
	}
	if r.power != nil && stop.Err() == nil {
		c.res.Power = r.power.Cycle(ctx, r.cycle, c.now, c.cl, sink, leader)
	}
	next := make(map[int64]int64, len(c.want))
	for id, v := range r.assigned {
		if _, still := c.want[id]; still {
			next[id] = v
		}
	}
	for _, ch := range report.Applied {
		next[ch.JobID] = ch.To
	}
	r.assigned = next
}

// record logs a decision for every job whose value changed, with the jobs
// that finished and the cycle's row, stamped by the cycle's sink, and
// ships what the database takes. A follower logs no decision: it plans
// what the leader decides and writes, and its dry-run rows beside the
// leader's would show as a job's newest decision in explain and count
// twice in the report; its cycle row (leader false) still says it ran.
// A write Slurm refused or that was not attempted changed nothing, so it
// logs no decision either: a job's newest row is the value Slurm holds,
// which explain shows and a new leader's takeOver matches against Slurm.
// A write whose outcome is unknown (sent, then a timeout) is logged: Slurm
// may hold it, and an admin priority it may hold must be on record for a
// later takeOver to hand back (which checks what Slurm holds first).
func (r *Runner) record(ctx context.Context, c *cycle) {
	rank := make(map[int64]int, len(c.scores))
	for i, s := range c.scores {
		rank[s.JobID] = i
	}
	var changed []slurmctl.Change
	if c.rec.Leader {
		changed = slices.Clip(c.report.Applied)
		for _, f := range c.report.Failed {
			if f.Unknown {
				changed = append(changed, f.Change)
			}
		}
	}
	var decisions []accounting.Decision
	for _, ch := range changed {
		i, ok := rank[ch.JobID]
		if !ok {
			continue
		}
		s := c.scores[i]
		d := accounting.Decision{
			Cluster: r.cfg.Cluster, At: c.now, Cycle: r.cycle, JobID: ch.JobID, Policy: r.cfg.Policy,
			Rank: i + 1, Score: s.Value, Parts: s.Parts.Map(), Predicted: c.snap.Predicted[ch.JobID], Predictor: r.cfg.Predictor,
			Field: r.cfg.Field, Value: ch.To,
		}
		if ch.FromKnown {
			from := ch.From
			d.Previous = &from
		}
		if r.cfg.Field == "priority" {
			nice := ch.Nice
			d.Nice = &nice
		}
		decisions = append(decisions, d)
	}
	c.sink.Stamp(&c.rec, decisions)
	for _, d := range decisions {
		c.log.Debug("decision", "job_id", d.JobID, "rank", d.Rank, "score", d.Score, "value", d.Value, "dry_run", d.Planned)
	}
	r.buffer.mem.Decisions = append(r.buffer.mem.Decisions, decisions...)
	r.buffer.mem.Finished = append(r.buffer.mem.Finished, c.finished...)
	r.buffer.addCycle(c.rec)
	c.res.Recorded = r.flush(ctx, c.log)
}

// takeOver runs when this process becomes the leader: it reads from the
// decision log which pending jobs still hold an admin priority a
// rest-priority serve wrote (the value logged is the one Slurm holds).
// A rest-priority serve adopts them, so each job's nice from before is
// carried on (Slurm now reports it as 0). A site-factor serve must hand
// them back first: a site factor does not move a frozen priority, so
// writing one there would report as applied a value that changes nothing.
func (r *Runner) takeOver(ctx context.Context, log *slog.Logger, sink Sink, pending []slurmctl.Job) {
	logged, err := sink.FrozenPriorities(ctx, r.cfg.Cluster, pending)
	if err != nil {
		log.Warn("read the admin priorities earlier serves wrote; none adopted or handed back", "err", err)
		return
	}
	frozen := map[int64]slurmctl.Frozen{}
	for _, j := range pending {
		if f, ok := logged[j.ID]; ok && f.Priority == j.Priority {
			frozen[j.ID] = f
		}
	}
	if len(frozen) == 0 {
		return
	}
	if r.cfg.Field == "priority" {
		sink.Adopt(frozen)
		log.Info("adopted the admin priorities an earlier rest-priority serve wrote", "jobs", len(frozen))
		return
	}
	r.toHandBack = frozen
	log.Warn("pending jobs hold admin priorities an earlier rest-priority serve wrote: handing them back to multifactor before writing site factors",
		"jobs", len(frozen))
}

// handOver hands r.toHandBack back to multifactor. What Slurm refused or
// did not take stays to be tried next cycle, and gets no site factor
// meanwhile (it would not move a frozen priority); what is no longer
// Fairway's (started, held, given another priority) is forgotten.
func (r *Runner) handOver(ctx context.Context, log *slog.Logger, sink Sink, jobs []slurmctl.Job, want map[int64]int64) *slurmctl.HandBackReport {
	rep, err := sink.HandBack(ctx, jobs, r.toHandBack)
	next := map[int64]slurmctl.Frozen{}
	for _, f := range rep.Failed {
		next[f.JobID] = f.Frozen
	}
	if err != nil {
		log.Error("hand admin priorities back to multifactor; those jobs get no site factor until it succeeds", "err", err,
			"handed_back", len(rep.Applied), "failed", len(rep.Failed))
	} else if len(rep.Applied) > 0 {
		log.Info("handed admin priorities back to multifactor, nice restored", "jobs", len(rep.Applied), "skipped", len(rep.Skipped))
	}
	r.toHandBack = next
	for id := range next {
		delete(want, id)
	}
	return &rep
}

// failCycle records a cycle that ended early with err and returns err.
func (r *Runner) failCycle(ctx context.Context, c *cycle, result string, err error) error {
	c.rec.Error = err.Error()
	c.rec.Total = time.Since(c.started)
	r.sink.Stamp(&c.rec, nil)
	r.buffer.addCycle(c.rec)
	r.flush(ctx, c.log)
	r.metrics.cycle(c.rec, &c.res.Steps, result)
	return err
}

// rankable returns the pending job records Fairway ranks: in an included
// partition, not exempt by QOS, not held, not part of a heterogeneous job.
func (r *Runner) rankable(cl *slurmctl.Cluster) []slurmctl.Job {
	n := 0
	for i := range cl.Jobs {
		if cl.Jobs[i].Pending() {
			n++
		}
	}
	out := make([]slurmctl.Job, 0, n)
	for _, j := range cl.Jobs {
		if !j.Pending() || j.Held || j.HetJob {
			continue
		}
		if len(r.cfg.Partitions) > 0 && !anyPartition(j.Partition, r.cfg.Partitions) {
			continue
		}
		if anyPartition(j.Partition, r.cfg.ExcludePartitions) || slices.Contains(r.cfg.ExemptQOS, j.QOS) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// anyPartition reports whether a job's partition list ("a,b" for a job
// submitted to several) names one of set.
func anyPartition(jobParts string, set []string) bool {
	for p := range splitComma(jobParts) {
		if slices.Contains(set, p) {
			return true
		}
	}
	return false
}

func splitComma(s string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == ',' {
				if i > start && !yield(s[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}

// stopped diffs this read against the previous cycle: jobs that ran and
// are no longer running. A job Slurm still lists carries its own end and
// state; one Slurm already forgot (MinJobAge passed) is taken as finished
// now, and slurmdbd's history corrects its record later. Jobs that started
// and finished between two cycles are included too (they ran). It also
// returns the finished jobs to record in the history, and the requeued
// jobs that left without running again (Slurm gives them no start, as
// any job cancelled while pending, or forgot them).
func (r *Runner) stopped(cl *slurmctl.Cluster, running []policy.Job, now time.Time) (stopped, finished []policy.Job, left []int64) {
	// endNow is the end serve gives a job whose end Slurm does not say:
	// now, but never before the job's start, which slurmctld stamped by
	// its own clock (serve's may run behind it, or have stepped back).
	endNow := func(start time.Time) time.Time {
		if now.Before(start) {
			return start
		}
		return now
	}
	listed := make(map[int64]*policy.Job, len(cl.Jobs))
	for i := range cl.Jobs {
		listed[cl.Jobs[i].ID] = &cl.Jobs[i].Job
	}
	for id, prev := range r.running {
		j, ok := listed[id]
		switch {
		case !ok:
			p := prev
			p.End, p.State = endNow(p.Start), policy.StateCompleted
			stopped = append(stopped, p)
			r.finished[id] = true
		case j.State == policy.StateRunning:
			// still running
		case j.State == policy.StatePending:
			p := *j // requeued: keeps its attained service
			p.Start, p.End = prev.Start, endNow(prev.Start)
			stopped = append(stopped, p)
			r.requeued[id] = true
		case j.State.Finished():
			p := *j
			if p.Start.IsZero() {
				p.Start = prev.Start
			}
			if p.End.IsZero() {
				p.End = endNow(p.Start)
			}
			stopped = append(stopped, p)
			finished = append(finished, p)
			r.finished[id] = true
		}
	}
	seen := make(map[int64]bool, len(r.finished))
	for i := range cl.Jobs {
		j := &cl.Jobs[i].Job
		if !j.State.Finished() {
			continue
		}
		seen[j.ID] = true
		if r.finished[j.ID] || j.Start.IsZero() {
			continue
		}
		// Finished between two cycles: record it and hand it to the
		// engine. Finished before this process's first cycle: record it
		// only, because the engine was warmed from the database's history,
		// which has it (or will, from slurmdbd); charging it again would
		// count its usage twice.
		r.finished[j.ID] = true
		finished = append(finished, *j)
		if _, wasRunning := r.running[j.ID]; r.observed && !wasRunning && !j.End.IsZero() {
			stopped = append(stopped, *j)
		}
	}
	for id := range r.finished { // forget what Slurm forgot
		if !seen[id] {
			delete(r.finished, id)
		}
	}
	for id := range r.requeued {
		j, ok := listed[id]
		switch {
		case !ok || j.State.Finished() && j.Start.IsZero():
			left = append(left, id)
			delete(r.requeued, id)
		case j.State != policy.StatePending:
			delete(r.requeued, id) // running again: it stops as any job
		}
	}
	slices.Sort(left)
	r.running = make(map[int64]policy.Job, len(running))
	for _, j := range running {
		r.running[j.ID] = j
	}
	r.observed = true
	// Stable order: the predictor learns in end order.
	slices.SortFunc(stopped, func(a, b policy.Job) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return stopped, finished, left
}

// capWrites keeps at most MaxWrites changed values, the best-ranked first;
// the other jobs keep what Slurm holds this cycle.
func (r *Runner) capWrites(scores []policy.Score, want map[int64]int64) map[int64]int64 {
	if r.cfg.MaxWrites <= 0 {
		return want
	}
	n := 0
	for _, s := range scores {
		v := want[s.JobID]
		if old, ok := r.assigned[s.JobID]; ok && old == v {
			continue
		}
		if n >= r.cfg.MaxWrites {
			if old, ok := r.assigned[s.JobID]; ok {
				want[s.JobID] = old
			} else {
				delete(want, s.JobID)
			}
			continue
		}
		n++
	}
	return want
}

// observePredictionErrors feeds the prediction-error metric with the jobs
// that finished this cycle and had a prediction while they ran.
func (r *Runner) observePredictionErrors(stopped []policy.Job) {
	for i := range stopped {
		j := &stopped[i]
		p, ok := r.predicted[j.ID]
		if !ok || !j.State.Finished() {
			continue
		}
		if run := j.RunTime(); run > 0 {
			r.metrics.predictionError.Observe((p - run).Abs().Seconds())
		}
	}
}

// recordStartedPredictions logs, for every job that was pending at the
// previous cycle and runs now, the last run time predicted for it: the
// prediction outcome the report compares with the actual run time.
func (r *Runner) recordStartedPredictions(running []policy.Job, at time.Time) {
	for i := range running {
		j := &running[i]
		if _, was := r.pendPrev[j.ID]; !was {
			continue
		}
		if j.Submit.IsZero() {
			// Slurm's answer left the submit time unset: it is part of
			// the prediction's key, and a record the database refuses
			// at every retry would hold up every record after it.
			continue
		}
		if p, ok := r.predicted[j.ID]; ok {
			r.buffer.mem.Predictions = append(r.buffer.mem.Predictions, accounting.Prediction{
				Cluster: r.cfg.Cluster, JobID: j.ID, ArrayTask: j.ArrayTask, Submit: j.Submit, Predictor: r.cfg.Predictor,
				At: at, Run: p, Rule: "engine", Partition: j.Partition,
			})
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
