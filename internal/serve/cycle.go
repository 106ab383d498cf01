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
	now     func() time.Time

	cycle     int64
	wasLeader bool
	observed  bool                 // a cycle has read Slurm (running and finished are known)
	running   map[int64]policy.Job // running at the previous cycle
	finished  map[int64]bool       // finished jobs already handed to the engine
	assigned  map[int64]int64      // values decided at the previous cycle
	predicted map[int64]time.Duration
	pendPrev  map[int64]policy.Job // pending at the previous cycle
	buffer    recordBuffer
	rewrite   *Rewriter    // resource rewriting (rewrite.go); nil when off
	power     *PowerSaver  // power saving (power.go); nil when off
	pf        *policyWatch // the policy file (policyfile.go); nil without one
	fc        forecastState
	// toHandBack are admin priorities an earlier rest-priority serve left
	// that this site-factor serve has not handed back yet (handOver).
	toHandBack map[int64]slurmctl.Frozen
}

// New returns a Runner that reads slurm, ranks with engine, and hands
// every effect to sink while leader says this process may write. rw is the
// resource rewriter, nil when rewriting is off.
func New(cfg Config, log *slog.Logger, slurm Source, sink Sink, leader Leadership, engine *policy.Engine, rw *Rewriter, m *Metrics) *Runner {
	if cfg.BufferLimit <= 0 {
		cfg.BufferLimit = DefaultBufferLimit
	}
	if m == nil {
		m = NewMetrics()
	}
	return &Runner{
		cfg: cfg, log: log, slurm: slurm, sink: sink, leader: leader, engine: engine, rewrite: rw,
		metrics: m, now: time.Now,
		running: map[int64]policy.Job{}, finished: map[int64]bool{}, assigned: map[int64]int64{},
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
	// DryRun when nothing was written to Slurm or the table.
	Record   accounting.Cycle
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

// SetPowerSaver turns power saving on for the following cycles (nil: off).
func (r *Runner) SetPowerSaver(p *PowerSaver) { r.power = p }

// Cycles is the number of cycles run so far.
func (r *Runner) Cycles() int64 { return r.cycle }

// WasLeader reports whether the last cycle held the lease.
func (r *Runner) WasLeader() bool { return r.wasLeader }

// Metrics returns the runner's metrics.
func (r *Runner) Metrics() *Metrics { return r.metrics }

// RunCycle runs one cycle, in numbered steps:
//
//  0. reload the policy file when it changed;
//  1. read the cluster (Source);
//  2. observe: pending jobs Fairway may rank, running jobs, and the jobs
//     that stopped since the previous cycle;
//  3. rank them (policy.Engine);
//  4. decide values that keep Fairway's order in Slurm, capped;
//  5. hand the values, and the rewriting, to the Sink (a Planner when this
//     process is not the leader);
//  6. record decisions, finished jobs and the cycle (buffered through a
//     database outage).
func (r *Runner) RunCycle(ctx context.Context) (*CycleResult, error) {
	start := r.now()
	r.cycle++
	log := r.log.With("cycle", r.cycle)
	r.checkPolicyFile(log)
	rec := accounting.Cycle{Cluster: r.cfg.Cluster, Cycle: r.cycle, Started: start, Policy: r.cfg.Policy}
	res := &CycleResult{}

	// 1. Read.

	cl, err := r.slurm.Read(ctx)
	rec.Read = r.now().Sub(start)
	if err != nil {
		r.metrics.slurmUp.Set(0)
		return nil, r.failCycle(ctx, log, rec, "read_error", fmt.Errorf("%w: %w", ErrSlurmRead, err))
	}
	r.metrics.slurmUp.Set(1)
	r.metrics.skippedRecords.Add(float64(len(cl.Skipped)))
	res.Read = cl

	// 2. Observe.
	pendingRecs := r.rankable(cl)
	pending := make([]policy.Job, len(pendingRecs))
	for i := range pendingRecs {
		pending[i] = pendingRecs[i].Job
	}
	running := cl.Running()
	stopped, newlyFinished := r.stopped(cl, running, start)
	obs := &policy.Observation{Now: start, Pending: pending, Running: running, Stopped: stopped}

	// 3. Rank.
	t := r.now()
	snap, scores, err := r.engine.Cycle(obs)
	rec.Rank = r.now().Sub(t)
	if err != nil {
		return nil, r.failCycle(ctx, log, rec, "rank_error", fmt.Errorf("rank: %w", err))
	}
	r.observePredictionErrors(stopped)
	r.recordStartedPredictions(running, start)
	if r.cfg.Forecast {
		res.Forecast = r.forecastCycle(log, cl, snap, scores)
	}
	r.pendPrev = make(map[int64]policy.Job, len(pending))
	for _, j := range pending {
		r.pendPrev[j.ID] = j
	}
	r.predicted = make(map[int64]time.Duration, len(snap.Predicted))
	for id, d := range snap.Predicted {
		r.predicted[id] = d
	}
	rec.Pending, rec.Running = len(pending), len(running)
	res.Pending, res.Ranked, res.Snapshot, res.Policy = len(pending), scores, snap, r.engine.Policy()
	if r.pf != nil {
		res.PolicyFile = r.pf.info()
	}

	// 4. Decide: values that keep Fairway's order in Slurm, as few changes
	// as possible, capped.
	values, err := policy.Assign(scores, r.assigned, r.cfg.Range)
	if err != nil {
		return nil, r.failCycle(ctx, log, rec, "rank_error", fmt.Errorf("assign values: %w", err))
	}
	want := make(map[int64]int64, len(scores))
	for i, s := range scores {
		want[s.JobID] = values[i]
	}
	want = r.capWrites(scores, want)
	res.Values = want

	// 5. Hand to the sink; a follower only plans, from what this process
	// last decided.
	t = r.now()
	leader := r.leader.Leader(ctx)
	sink := r.sink
	if !leader {
		sink = NewPlanner(r.sink, r.assigned)
	}
	if leader && !r.wasLeader {
		if n, err := sink.Prime(ctx); err != nil {
			log.Warn("prime writer", "err", err)
		} else {
			log.Info("became leader", "values_known", n)
		}
		r.takeOver(ctx, log, sink, pendingRecs)
	}
	if leader && len(r.toHandBack) > 0 {
		res.HandBack = r.handOver(ctx, log, sink, cl.Jobs, want)
	}
	if !leader && r.wasLeader {
		log.Warn("lost leadership: writing nothing until it is confirmed again")
	}
	r.wasLeader, rec.Leader, res.Leader = leader, leader, leader
	r.metrics.leader.Set(b2f(leader))

	report, err := sink.WriteValues(ctx, pendingRecs, want)
	for id := range r.toHandBack {
		if _, ranked := r.pendPrev[id]; ranked {
			report.Skipped = append(report.Skipped, slurmctl.Skip{JobID: id, Reason: "admin priority of an earlier rest-priority serve not handed back yet"})
		}
	}
	if err != nil {
		// The writer reports what it did even on error.
		log.Error("write to slurm", "err", err, "applied", len(report.Applied), "failed", len(report.Failed))
		rec.Error = "write: " + err.Error()
		if errors.Is(err, slurmctl.ErrReadBack) {
			r.metrics.writerStopped.Set(1)
		}
	}
	rec.Write = r.now().Sub(t)
	rec.Written, rec.WriteErrors = len(report.Applied), len(report.Failed)
	res.Report, res.Changed = report, report.Planned
	if r.rewrite != nil {
		res.Rewrite = r.rewrite.Cycle(ctx, r.cycle, cl, snap.Predicted, scores, sink)
	}
	if r.power != nil {
		res.Power = r.power.Cycle(ctx, r.cycle, start, cl, sink)
	}
	// Remember what Slurm holds now: the writes applied (a Planner
	// reports every planned one applied, so a dry run converges too).
	next := make(map[int64]int64, len(want))
	for id, v := range r.assigned {
		if _, still := want[id]; still {
			next[id] = v
		}
	}
	for _, c := range report.Applied {
		next[c.JobID] = c.To
	}
	r.assigned = next

	// 6. Record: decisions for every job whose value changed, the jobs that
	// finished, the cycle.
	rank := make(map[int64]int, len(scores))
	for i, s := range scores {
		rank[s.JobID] = i
	}
	var decisions []accounting.Decision
	for _, c := range report.Planned {
		i, ok := rank[c.JobID]
		if !ok {
			continue
		}
		s := scores[i]
		d := accounting.Decision{
			Cluster: r.cfg.Cluster, At: start, Cycle: r.cycle, JobID: c.JobID, Policy: r.cfg.Policy,
			Rank: i + 1, Score: s.Value, Parts: s.Parts.Map(), Predicted: snap.Predicted[c.JobID], Predictor: r.cfg.Predictor,
			Field: r.cfg.Field, Value: c.To,
		}
		if c.FromKnown {
			from := c.From
			d.Previous = &from
		}
		if r.cfg.Field == "priority" {
			nice := c.Nice
			d.Nice = &nice
		}
		decisions = append(decisions, d)
	}
	rec.Total = r.now().Sub(start)
	sink.Stamp(&rec, decisions)
	for _, d := range decisions {
		log.Debug("decision", "job_id", d.JobID, "rank", d.Rank, "score", d.Score, "value", d.Value, "dry_run", d.DryRun)
	}
	r.buffer.mem.Decisions = append(r.buffer.mem.Decisions, decisions...)
	r.buffer.mem.Finished = append(r.buffer.mem.Finished, newlyFinished...)
	r.buffer.addCycle(rec)
	t = r.now()
	res.Recorded = r.flush(ctx, log)
	rec.Record = r.now().Sub(t)

	res.Record = rec
	r.metrics.cycle(rec, "ok")
	r.metrics.ranked(snap, scores, report, rec)
	if n := len(report.Planned); n > 0 || len(report.Failed) > 0 {
		log.Info("cycle", "pending", len(pending), "running", len(running), "changed", n,
			"written", rec.Written, "failed", len(report.Failed), "leader", leader, "dry_run", rec.DryRun,
			"duration_seconds", rec.Total.Seconds())
	}
	return res, nil
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
func (r *Runner) failCycle(ctx context.Context, log *slog.Logger, rec accounting.Cycle, result string, err error) error {
	rec.Error = err.Error()
	rec.Total = r.now().Sub(rec.Started)
	r.sink.Stamp(&rec, nil)
	r.buffer.addCycle(rec)
	r.flush(ctx, log)
	r.metrics.cycle(rec, result)
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
// returns the finished jobs to record in the history.
func (r *Runner) stopped(cl *slurmctl.Cluster, running []policy.Job, now time.Time) (stopped, finished []policy.Job) {
	listed := make(map[int64]*policy.Job, len(cl.Jobs))
	for i := range cl.Jobs {
		listed[cl.Jobs[i].ID] = &cl.Jobs[i].Job
	}
	for id, prev := range r.running {
		j, ok := listed[id]
		switch {
		case !ok:
			p := prev
			p.End, p.State = now, policy.StateCompleted
			stopped = append(stopped, p)
			r.finished[id] = true
		case j.State == policy.StateRunning:
			// still running
		case j.State == policy.StatePending:
			p := *j // requeued: keeps its attained service
			p.Start, p.End = prev.Start, now
			stopped = append(stopped, p)
		case j.State.Finished():
			p := *j
			if p.Start.IsZero() {
				p.Start = prev.Start
			}
			if p.End.IsZero() {
				p.End = now
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
	return stopped, finished
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
