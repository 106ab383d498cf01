package policy

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// EngineParams configures an Engine. Policy is required; the rest may be
// left zero.
type EngineParams struct {
	// Policy ranks the pending jobs.
	Policy Policy
	// Predictor fills Snapshot.Predicted and learns from every job that
	// finishes. nil leaves Predicted empty, so policies cost jobs by their
	// time limits.
	Predictor Predictor
	// Ledger configures the fairness state the engine owns.
	Ledger LedgerParams
	// Shares, Service and GPUs are copied into every Snapshot. The Engine
	// keeps sums of Shares from cycle to cycle: the tree must not change
	// while the Engine uses it.
	Shares  *Shares
	Service Service
	GPUs    float64
	// ChargeEvery is how often running jobs are charged to the Ledger while
	// they run: Slurm's PriorityCalcPeriod, 0 meaning its default, 5
	// minutes; a negative value charges them at every cycle. A job is always
	// charged up to the instant it stops, and charging is exact whatever the
	// cadence (see Ledger), so this only bounds how stale usage and VTC
	// counters may be while a job runs.
	ChargeEvery time.Duration
	// PredictOnce keeps a pending job's first prediction while it waits,
	// instead of predicting it again once its user has had a job finish:
	// the Helios artifact's QSSF estimates a job once and ranks it by that
	// estimate until it starts.
	PredictOnce bool
	// LedgerUnread is the caller's promise that nothing but the Policy
	// reads the Engine's Ledger (Ledger, Snapshot.Ledger) nor the
	// running jobs' committed service: the simulator without a recorder
	// or a forecast. With a policy that reads neither (ledgerFree:
	// themis), the Engine then keeps no Ledger, whose charges and
	// Backlog cost about a third of a big machine's cycle: it charges,
	// finishes and backlogs nothing, and of the running jobs it keeps
	// only their users; the Snapshot's Ledger stays empty. Predictions and rankings
	// are the ones a full Engine gives.
	LedgerUnread bool
}

// DefaultChargeEvery is the charging period when EngineParams.ChargeEvery
// is 0: Slurm's default PriorityCalcPeriod.
const DefaultChargeEvery = 5 * time.Minute

// Observation is what a cycle's Source saw at one scheduling point: the
// live Slurm queue in serve, the replayed cluster in simulate.
type Observation struct {
	Now     time.Time
	Pending []Job
	Running []Job
	// Stopped holds the jobs that stopped running since the previous
	// cycle, with Start and End the span they last ran. A job whose State is
	// finished (State.Finished: completed, failed, cancelled, timed out,
	// preempted for good, ...) left the system for good; a job whose State
	// is PENDING was requeued and keeps its attained service. A job that
	// never ran is never in Stopped: it just stops appearing in Pending.
	Stopped []Job
	// Left are the jobs that ran, were requeued (Stopped, PENDING) and
	// then left without running again (cancelled while pending): they
	// never reach Stopped again, and the attained service they keep is
	// forgotten as a finished job's.
	Left []int64
	// TrueRun is copied into the Snapshot; only the simulator knows it.
	TrueRun map[int64]time.Duration
	// RunningAppended is the caller's promise that Running is the previous
	// Observation's Running less the jobs in Stopped (in the same order or
	// another), followed by the jobs that started since in the order they
	// started, and that a running job's fields do not change while it runs. The Engine charges
	// the running jobs in the order it first saw them, so that the order
	// of the first part changes nothing it computes. The Engine then visits only the
	// jobs that started or stopped, where it otherwise matches every
	// running job at every cycle: thousands of jobs on a big machine. The
	// simulator keeps its lists so; serve, which reads them from Slurm,
	// cannot promise it.
	RunningAppended bool
}

// ErrClockBackwards is returned by Cycle when an observation is older than
// the previous one.
var ErrClockBackwards = errors.New("observation older than the previous cycle")

// Engine is the pure part of one scheduling cycle, the step that `serve`
// and `simulate` share:
//
//	Observation ──► Engine.Cycle ──► Snapshot + ranking ──► Decision
//
// Each Cycle, in the order the Ledger's contract prescribes, it charges the
// jobs that ran since the last charge, finishes the jobs that left, shows
// the finished jobs to the Predictor (which so learns online, in the
// cycle's own time), marks the backlogged users, predicts the run time of
// every pending job and ranks the Snapshot with the Policy. The caller turns
// the ranking into a Decision: serve writes it to Slurm, the simulator
// starts jobs the way Slurm's scheduler would.
//
// Predictions are cached per job. A pending job is predicted when first
// seen and again once a job of the same user has finished since, since
// every registered predictor learns first from the user's own history, but
// not more often than every ChargeEvery, the cadence at which Slurm
// recomputes priorities (PriorityCalcPeriod): a user with a thousand queued
// jobs costs a thousand predictions per period, not per finished job. A
// predictor's answer with Source "none" (nothing to go on) is left out of
// Predicted so that policies fall back to the time limit.
//
// What some policies read besides the Snapshot, sums over the running
// jobs, the Ledger and the share tree, the Engine keeps up to date from
// cycle to cycle and passes to the policy (rankIndex): a cycle costs what
// changed, not a pass over every running job and association. The same
// policy given a Snapshot alone (Rank) builds those sums from it with the
// same code, and ranks the same.
//
// An Engine is not safe for concurrent use. The Snapshot a Cycle returns is
// valid until the next Cycle.
type Engine struct {
	p      EngineParams
	ledger *Ledger

	predicted map[int64]time.Duration
	// effective holds the pending jobs' effective run times where not 0
	// (EffectivePredictor), while the policy reads them.
	effective map[int64]time.Duration
	cache     map[int64]*enginePred
	// pendSlot[i] is the cache entry due found for the job at
	// Observation.Pending[i] in an earlier cycle, used when it is that
	// job's and still cached (not gone): a queue changes little from one
	// cycle to the next, and looking every pending job up in cache at
	// every cycle was a good part of a big queue's cycle. cacheLookups
	// counts the lookups made, which tests bound.
	pendSlot     []*enginePred
	cacheLookups int
	// userGen counts each user's finished jobs (while there is a
	// predictor): a pending job is predicted again when its user's count
	// moved. The counters are cells that cache entries keep, so that due
	// reads a job's without hashing its user at every cycle.
	userGen map[string]*uint64
	// charged holds when each running job was last charged up to. The
	// cells are written in place: a runRec keeps its job's (see
	// sweepAppended).
	charged   map[int64]*time.Time
	running   *runningIndex // committed service of the running jobs
	shareSums shareSumCache // fair share's sums of shares
	index     rankIndex     // the two above, as the cycle's policy reads them
	out       rankOut       // CycleReusing's rankings

	// batch and preds are the cycle's jobs due a prediction and their
	// predictions, reused from cycle to cycle.
	batch []*Job
	// batchC is the cache entry of each job of batch.
	batchC []*enginePred
	preds  []Prediction
	// repredicted lists the jobs whose entry in predicted the last cycle
	// changed (added, moved or dropped), for Repredicted.
	repredicted []int64

	now       time.Time
	started   bool
	lastSweep time.Time
	swept     bool
	sweptNow  bool // the last Update charged every running job
	cycle     uint64
	snap      Snapshot
	// lean is set when the Engine keeps no Ledger (LedgerUnread with a
	// ledgerFree policy).
	lean bool
}

// enginePred is the cached prediction state of one job.
type enginePred struct {
	id  int64  // the job's
	gen uint64 // the user's generation when predicted
	// user and userGen are the job's user when last seen and that
	// user's cell of Engine.userGen.
	user    string
	userGen *uint64
	// until is when it was predicted plus ChargeEvery: a pending job is
	// not predicted again before it. now.Before(until) is now.Sub(at) <
	// ChargeEvery (monotonic readings or not), a comparison rather than a
	// subtraction per pending job and cycle.
	until time.Time
	seen  uint64 // the last cycle the job was pending or running
	gone  bool   // deleted from the cache
	// run and has are the job's entry in Engine.predicted (has: there is
	// one), kept with it while the entry is not gone: every write of the
	// map goes through the batch (predictedAt reads them).
	run time.Duration
	has bool
	// effDone: the job's effective run time was computed (its entry in
	// Engine.effective, none for 0) since it was last predicted.
	effDone bool
}

// effectiveReader is a Policy that may read Snapshot.Effective.
type effectiveReader interface{ readsEffective() bool }

// ReadsEffective reports whether p's ranking reads Snapshot.Effective (the
// learned family with an effective exponent): a caller that ranks a
// Snapshot of its own (the simulator's forecasts between cycles) fills it
// as the Engine does only then.
func ReadsEffective(p Policy) bool {
	r, ok := p.(effectiveReader)
	return ok && r.readsEffective()
}

// sourceNone is the Prediction.Source of a predictor with nothing to go on.
const sourceNone = "none"

// NewEngine returns an Engine with an empty Ledger.
func NewEngine(p EngineParams) (*Engine, error) {
	if p.Policy == nil {
		return nil, fmt.Errorf("engine: no policy")
	}
	if p.GPUs < 0 {
		return nil, fmt.Errorf("engine: capacity %g GPUs: want >= 0", p.GPUs)
	}
	if p.ChargeEvery == 0 {
		p.ChargeEvery = DefaultChargeEvery
	}
	l, err := NewLedger(p.Ledger)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{
		p:         p,
		ledger:    l,
		predicted: map[int64]time.Duration{},
		effective: map[int64]time.Duration{},
		cache:     map[int64]*enginePred{},
		userGen:   map[string]*uint64{},
		charged:   map[int64]*time.Time{},
		running:   newRunningIndex(),
		lean:      p.LedgerUnread && isLedgerFree(p.Policy),
	}
	e.running.usersOnly = e.lean
	return e, nil
}

// Policy returns the engine's policy.
func (e *Engine) Policy() Policy { return e.p.Policy }

// SetPolicy makes p rank from the next Cycle on: serve swaps in the policy
// of a policy file that changed. Everything else the Engine keeps (Ledger,
// predictions, sums over running jobs and shares) is the cluster's state,
// not the policy's, so it carries over unchanged.
func (e *Engine) SetPolicy(p Policy) error {
	if p == nil {
		return fmt.Errorf("engine: no policy")
	}
	if e.lean && !isLedgerFree(p) {
		return fmt.Errorf("engine: policy %s reads the Ledger, which this Engine does not keep (LedgerUnread)", p.Name())
	}
	e.p.Policy = p
	return nil
}

// Ledger returns the fairness state the engine keeps. Callers only read it
// (or Clone it for what-if work).
func (e *Engine) Ledger() *Ledger { return e.ledger }

// Cycle runs one cycle on o and returns the Snapshot it ranked and the
// ranking, best first (Policy.Rank's contract). o's slices are read, never
// modified, and referenced by the Snapshot.
func (e *Engine) Cycle(o *Observation) (*Snapshot, []Score, error) {
	return e.rankCycle(o, nil)
}

// CycleReusing is Cycle for a caller that is done with each ranking before
// it asks for the next (the simulator): the ranking and its Parts live in
// buffers of e that the next CycleReusing overwrites, so ranking the queue
// again and again allocates no Scores or parts. The ranking is Cycle's.
func (e *Engine) CycleReusing(o *Observation) (*Snapshot, []Score, error) {
	return e.rankCycle(o, &e.out)
}

// rankCycle is Cycle with the ranking made into out when not nil.
func (e *Engine) rankCycle(o *Observation, out *rankOut) (*Snapshot, []Score, error) {
	if _, err := e.Update(o); err != nil {
		return nil, nil, err
	}
	e.snap.out = out
	defer func() { e.snap.out = nil }()
	var scores []Score
	var err error
	if p, ok := e.p.Policy.(indexedPolicy); ok {
		e.index = rankIndex{running: e.running}
		if p.readsShares() {
			e.index.shares = e.shareSums.of(&e.snap, e.running)
		}
		scores, err = p.rankIndexed(&e.snap, &e.index)
	} else {
		scores, err = e.p.Policy.Rank(&e.snap)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %w", err)
	}
	return &e.snap, scores, nil
}

// Update runs every step of a Cycle on o but the ranking, and returns the
// Snapshot the policy would rank: a caller that keeps the queue in a
// static-key policy's order (StaticOrder) ranks only what changed, the
// jobs new to the queue and those Repredicted. The Engine's state after
// it is the state after Cycle.
func (e *Engine) Update(o *Observation) (*Snapshot, error) {
	if e.started && o.Now.Before(e.now) {
		return nil, fmt.Errorf("cycle at %s after %s: %w", o.Now.Format(time.RFC3339), e.now.Format(time.RFC3339), ErrClockBackwards)
	}
	e.started, e.now = true, o.Now
	e.cycle++
	svc := e.p.Service

	// 1. Charge what ran: stopped jobs up to their end, running jobs up
	// to now once a charging period has passed (nothing, when lean).
	sweep := false
	e.running.fused = false
	if !e.lean {
		e.charge(o, svc)
		sweep = !e.swept || e.p.ChargeEvery < 0 || o.Now.Sub(e.lastSweep) >= e.p.ChargeEvery
		if sweep {
			// Every sweep, appended or not, makes the attained service
			// sweepAppended notes on the records (swept) older than the
			// Ledger's.
			e.running.sweeps++
			if o.RunningAppended && e.running.appended {
				e.sweepAppended(o)
			} else {
				for i := range o.Running {
					e.chargeRunning(&o.Running[i], o.Now)
				}
			}
			e.lastSweep, e.swept = o.Now, true
		}
	}
	e.sweptNow = sweep

	// 2. Finish the jobs that left, and learn from them.
	for i := range o.Stopped {
		j := &o.Stopped[i]
		if !j.State.Finished() {
			continue
		}
		if !e.lean {
			e.ledger.Finish(j)
		}
		if e.p.Predictor != nil {
			e.p.Predictor.Observe(j)
			*e.userGenCell(j.User)++
		}
		e.forget(j.ID)
		delete(e.predicted, j.ID)
		delete(e.effective, j.ID)
	}

	if !e.lean {
		for _, id := range o.Left {
			e.ledger.Finish(&Job{ID: id})
		}
	}

	// 3. Backlog, which lifts the VTC counters of returning users.
	if !e.lean {
		e.ledger.Backlog(o.Pending, e.p.Shares)
	}

	// 4. Predict. A running job is due a prediction only when it has
	// none, so only the jobs new to the runningIndex are looked at: the
	// others had one when they were first seen running, and keep it.
	e.running.match(o, e.ledger, e.p.Shares)
	if e.p.Predictor != nil {
		e.batch, e.batchC = e.batch[:0], e.batchC[:0]
		if cap(e.pendSlot) < len(o.Pending) {
			e.pendSlot = slices.Grow(e.pendSlot[:0], len(o.Pending))
		}
		slots := e.pendSlot[:len(o.Pending)]
		for i := range o.Pending {
			e.due(&o.Pending[i], true, &slots[i])
		}
		for _, i := range e.running.newRun {
			e.due(&o.Running[i], false, nil)
		}
		e.preds = resize(e.preds, len(e.batch))
		predictAll(e.p.Predictor, e.batch, e.preds)
		e.repredicted = e.repredicted[:0]
		for i, j := range e.batch {
			old, had := e.predicted[j.ID]
			c := e.batchC[i]
			if e.preds[i].Source == sourceNone {
				delete(e.predicted, j.ID)
				delete(e.effective, j.ID)
				c.run, c.has = 0, false
				if had {
					e.repredicted = append(e.repredicted, j.ID)
				}
			} else {
				e.predicted[j.ID] = e.preds[i].Run
				delete(e.effective, j.ID)
				c.run, c.has, c.effDone = e.preds[i].Run, true, false
				if !had || old != e.preds[i].Run {
					e.repredicted = append(e.repredicted, j.ID)
				}
			}
		}
		clear(e.batch) // keep no pointer into the observation
		clear(e.batchC)
		if ep, ok := e.p.Predictor.(EffectivePredictor); ok && ReadsEffective(e.p.Policy) {
			// Each pending job predicted since its last effective run
			// time gets one, in the cycle of its prediction (so from the
			// history the prediction saw), or, for a job predicted before
			// the policy started reading them, in that policy's first
			// cycle.
			for i := range o.Pending {
				c := slots[i]
				if c == nil || !c.has || c.effDone {
					continue
				}
				c.effDone = true
				if d := ep.Effective(&o.Pending[i], c.run); d > 0 {
					e.effective[c.id] = d
				}
			}
		}
		e.sweepCache(len(o.Pending) + len(o.Running))
	}

	// 5. Rank, with the running jobs' committed service brought up to
	// date (their attained service changed if the sweep charged them) and
	// passed, with the sums of shares, to a policy that reads them.
	e.running.settle(sweep, e.predicted, e.ledger, svc)
	e.snap = Snapshot{
		Now:       o.Now,
		Pending:   o.Pending,
		Running:   o.Running,
		Predicted: e.predicted,
		Effective: e.effective,
		TrueRun:   o.TrueRun,
		Shares:    e.p.Shares,
		Ledger:    e.ledger,
		Service:   svc,
		GPUs:      e.p.GPUs,
	}
	if e.p.Predictor != nil && o.RunningAppended {
		// due set every slot to its job's entry. Only for the caller
		// that appends its running jobs, the simulator, which ranks on
		// one goroutine: a copy of the Snapshot handed to another
		// while the next cycle moves the entries would race.
		e.snap.pendPred, e.snap.predOf, e.snap.predCycle = e.pendSlot[:len(o.Pending)], e, e.cycle
	}
	return &e.snap, nil
}

// charge charges the jobs of o.Stopped up to their end, from their start
// or their last charge.
func (e *Engine) charge(o *Observation, svc Service) {
	for i := range o.Stopped {
		j := &o.Stopped[i]
		if !j.Start.IsZero() && !j.End.IsZero() {
			from := j.Start
			if c := e.charged[j.ID]; c != nil && c.After(from) {
				from = *c
			}
			e.ledger.Charge(j, from, j.End, svc)
		}
		delete(e.charged, j.ID)
	}
}

// chargeRunning charges running job j up to now, from its start or its
// last charge.
func (e *Engine) chargeRunning(j *Job, now time.Time) {
	if j.Start.IsZero() {
		return
	}
	from := j.Start
	c := e.charged[j.ID]
	if c != nil && c.After(from) {
		from = *c
	}
	if now.After(from) {
		e.ledger.Charge(j, from, now, e.p.Service)
		if c == nil {
			c = new(time.Time)
			e.charged[j.ID] = c
		}
		*c = now
	}
}

// sweepAppended charges the running jobs of o, under RunningAppended and
// after an appended match, in the order they were first seen running (as
// a sweep of a Running kept in that order would): the jobs the index knows
// and that did not stop, from its records, then the ones after them in
// Running, which started since. So Running's first part, the jobs that
// did not stop, may come in any order: the simulator swaps the last job
// into the place of one that stops rather than moving every job behind
// it, thousands on a big machine.
func (e *Engine) sweepAppended(o *Observation) {
	x := e.running
	old := len(x.jobs)
	for i := range o.Stopped {
		if r := x.jobs[o.Stopped[i].ID]; r != nil && !r.leaving {
			r.leaving = true // match removes it from the index
			x.unlist(r)
			old--
		}
	}
	// A policy that reads the committed sums reads them at every cycle:
	// work each job's out as it is charged (see runningIndex.readSums),
	// unless an earlier sweep's are still to be read.
	x.fused = x.readSums && !x.stale
	for k := range x.byStart {
		en := &x.byStart[k]
		if en.r == nil || en.start.IsZero() {
			continue
		}
		// The entry keeps its job's charged cell and Ledger record, valid
		// while it is listed: a stopped job's cell is deleted and its
		// record finished only once it is unlisted.
		from := en.start
		if en.cell == nil {
			if c := e.charged[en.r.id]; c != nil {
				en.cell, en.at = c, *c
			}
		}
		if en.cell != nil && en.at.After(from) {
			from = en.at
		}
		if !o.Now.After(from) {
			continue
		}
		r, ju := en.r, en.usage
		if !en.known || !e.ledger.chargeListed(en, from, o.Now) {
			if ju == nil || ju.finished {
				ju = e.ledger.usage(r.id)
				r.usage = ju
			}
			e.ledger.chargeUsage(ju, r.user, r.account, en.rate, from, o.Now)
			en.keep(ju, r.user, r.account)
		}
		service := en.service // the record's, without reading it
		if !en.known {
			service = en.usage.service
		}
		if x.fused {
			x.sweptCommitted(en, service)
		} else {
			// What readAttained will find in the record until the job's
			// next charge, which only a later sweep or its stop makes
			// (a stop takes r out of the index; see Update's sweeps).
			r.swept, r.sweptAt = service, x.sweeps
		}
		if en.cell == nil {
			en.cell = new(time.Time)
			e.charged[r.id] = en.cell
		}
		*en.cell, en.at = o.Now, o.Now
	}
	// A job below listed under the id of one charged above shares its
	// charged cell, now at o.Now: it is not charged again, so the
	// records' swept values stand.
	for i := old; i < len(o.Running); i++ {
		e.chargeRunning(&o.Running[i], o.Now)
	}
}

// Swept reports whether the last Cycle or Update charged every running job
// up to its Now (a charging period had passed); otherwise it charged only
// the jobs that stopped (or nothing: an Engine that keeps no Ledger, see
// LedgerUnread, never sweeps). A caller that keeps jobs in an order keyed by
// what they were charged (NewServiceOrder) keys those again.
func (e *Engine) Swept() bool { return e.sweptNow }

// Repredicted lists the jobs, pending or newly running, whose entry in the
// last cycle's Snapshot.Predicted changed in that cycle: predicted for the
// first time, predicted again to another value, or dropped (the predictor
// had nothing to go on). Every other job kept the entry it had. A change
// of the job's Snapshot.Effective alone is not listed: what keeps jobs in
// an order keyed by their prediction (static and clock orders) does not
// read it, and its one reader, the learned family, ranks the whole
// Snapshot every cycle. The slice is reused by the next cycle.
func (e *Engine) Repredicted() []int64 { return e.repredicted }

// due adds j to the cycle's batch of predictions when it has none or, for a
// pending job, when its user has had a job finish since. A running job
// keeps the prediction it had when it started, as Slurm keeps its time
// limit.
//
// slot, when not nil, is where the job's entry was found before: it is
// used when it is this job's and still cached, and is set to the entry.
func (e *Engine) due(j *Job, pending bool, slot **enginePred) {
	var c *enginePred
	if slot != nil && *slot != nil && (*slot).id == j.ID && !(*slot).gone {
		c = *slot
	} else {
		c = e.cache[j.ID]
		e.cacheLookups++
	}
	if c != nil {
		if slot != nil {
			*slot = c
		}
		c.seen = e.cycle
		if !pending || e.p.PredictOnce {
			return
		}
		if c.userGen == nil || c.user != j.User {
			c.user, c.userGen = j.User, e.userGenCell(j.User)
		}
		// Due when the user's generation moved and the last prediction
		// is a charging period old.
		gen := *c.userGen
		if c.gen == gen || (e.p.ChargeEvery > 0 && e.now.Before(c.until)) {
			return
		}
		c.gen, c.until = gen, e.now.Add(e.p.ChargeEvery)
	} else {
		cell := e.userGenCell(j.User)
		c = &enginePred{id: j.ID, gen: *cell, user: j.User, userGen: cell, until: e.now.Add(e.p.ChargeEvery), seen: e.cycle}
		e.cache[j.ID] = c
		if slot != nil {
			*slot = c
		}
	}
	e.batch = append(e.batch, j)
	e.batchC = append(e.batchC, c)
}

// userGenCell is user's cell of userGen, made at 0 when it has none.
func (e *Engine) userGenCell(user string) *uint64 {
	c := e.userGen[user]
	if c == nil {
		c = new(uint64)
		e.userGen[user] = c
	}
	return c
}

// sweepCache forgets the jobs that left without running (cancelled while
// pending), once they are a good part of the cache. Running jobs the
// runningIndex knows are not marked seen (due does not visit them) and stay.
func (e *Engine) sweepCache(live int) {
	if len(e.cache) <= 2*live+1024 {
		return
	}
	for id, c := range e.cache {
		if c.seen != e.cycle && e.running.jobs[id] == nil {
			e.forget(id)
			delete(e.predicted, id)
			delete(e.effective, id)
		}
	}
}

// forget deletes the job's cache entry, marking it gone for pendSlot.
func (e *Engine) forget(id int64) {
	if c := e.cache[id]; c != nil {
		c.gone = true
		delete(e.cache, id)
	}
}
