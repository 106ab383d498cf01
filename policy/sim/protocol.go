package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// ProtocolKind names an evaluation protocol.
type ProtocolKind string

// The protocols.
const (
	// Split replays the last part of a trace's submits (the part after
	// Protocol.Split) with EASY backfilling, once: the time-split
	// evaluation of a policy tuned on the earlier part.
	Split ProtocolKind = "split"
	// Sequences replays Protocol.Sequences windows of Protocol.Length
	// consecutive jobs, each from a start drawn at random (seeded) within
	// the window [From, To) of the trace, each on an empty cluster, and
	// averages their metrics: RLScheduler's protocol (Zhang et al.,
	// "RLScheduler: an automated HPC batch job scheduler using
	// reinforcement learning", SC'20, §5: average bounded slowdown over 10
	// sequences of 1024 jobs).
	//
	// Their code (DIR-LAB/deep-batch-scheduler, HPCSimPickJobs.py) differs
	// from this replay in ways that move the numbers, not the protocol:
	// it draws starts in [L, jobs − L − 1) of the whole trace, not within
	// a window; its backfilling takes jobs in FCFS order and only those
	// that end, by their requested time, before the blocked job's earliest
	// start (Slurm's EASY here: in priority order, and also jobs that fit
	// beside the reservation); it drops jobs that ran 0 s, lets a job run
	// past its requested time and sizes a job by the larger of its
	// requested and allocated processors (Run keeps 0 s jobs, cuts runs at
	// the limit, and internal/trace takes the requested processors). Its
	// bounded slowdown is Measure's: max((wait + run)/max(run, 10 s), 1),
	// averaged over the sequence's jobs, then over the sequences.
	Sequences ProtocolKind = "sequences"
)

// PredictionMode is how a protocol's replays predict run times.
type PredictionMode string

// The prediction modes.
const (
	// PredictOnline gives each replay a fresh predictor, warmed with the
	// history (Protocol doc) and learning from the jobs as they finish in
	// simulated time: what serve would do, and `fairway simulate`'s way.
	// Each replay pays for the warm-up and the predictor's training.
	PredictOnline PredictionMode = "online"
	// PredictAtSubmit predicts every evaluated job once, when the
	// Evaluator is built, from the jobs that ended (as the trace recorded
	// them) before it was submitted (predeval's online protocol); every
	// replay looks the predictions up. Replays are cheaper and every
	// policy sees the same estimates, which suits a tuner trying
	// thousands of parameters; the estimates are not refreshed while a job
	// waits, as serve's are.
	PredictAtSubmit PredictionMode = "at-submit"
)

// Protocol is how a policy is evaluated on a trace.
//
// The trace's replayable jobs (those Run admits) are put in submit order;
// fractions of the trace (Split, From, To) are fractions of that order,
// boundary index ⌊fraction × jobs⌋, so the part before a boundary and the
// part from it never share a job.
//
// History: unless Cold, each replay starts with its engine warmed on the
// jobs that ended (as the trace recorded them, in end order) before the
// first replayed submit: the predictor (PredictOnline) learns from them
// and the fair-share ledger (usage, VTC counters) is charged for them, as
// serve warms up from the accounting database. Jobs submitted before that
// instant but still pending or running then are neither history nor
// replayed: every replay starts on an empty cluster, and the metrics
// count only the replayed jobs.
type Protocol struct {
	Kind ProtocolKind
	// Split is the fraction of submits before the evaluated part (Split
	// only), in (0, 1): 0.7 replays the last 30%.
	Split float64
	// Sequences, Length, Seed, From and To: the number of windows, their
	// length in jobs, the random seed of their starts, and the part of the
	// trace they are drawn from, as fractions in [0, 1] with From < To (0
	// and 1 for the whole trace; Sequences only).
	Sequences, Length int
	Seed              uint64
	From, To          float64
	// Backfill is EASY ("") or NoBackfill. Every policy is replayed
	// without preemption.
	Backfill Backfill
	// NewPredictor makes the run-time predictor (nil: none, policies cost
	// jobs by their time limits).
	NewPredictor func() (policy.Predictor, error)
	// Predictions is PredictOnline ("") or PredictAtSubmit.
	Predictions PredictionMode
	// Cold replays without the history: no warm-up, as RLScheduler's own
	// environment starts every sequence without memory.
	Cold bool
	// Metrics configures Measure (τ = 10 s by default).
	Metrics MetricsParams
}

// PolicyFactory makes a fresh policy for one replay.
type PolicyFactory func() (policy.Policy, error)

// Evaluation is one policy under a protocol.
type Evaluation struct {
	// Metrics are the evaluated jobs' (Split), or each metric's mean over
	// the sequences (Sequences; Jobs and Cycles are totals).
	Metrics
	// Sequences are the metrics of each sequence, in Evaluator.Starts
	// order (Sequences only).
	Sequences []Metrics `json:"sequences,omitempty"`
	// BSLDStd, BSLDMin and BSLDMax spread the sequences' average bounded
	// slowdowns (sample standard deviation; Sequences only).
	BSLDStd float64 `json:"bsld_std,omitempty"`
	BSLDMin float64 `json:"bsld_min,omitempty"`
	BSLDMax float64 `json:"bsld_max,omitempty"`
	// Schedule fingerprints the schedule: every replayed job's id and
	// first start. Two policies with equal Schedules started every job at
	// the same instant.
	Schedule uint64 `json:"schedule"`
}

// Evaluator evaluates policies on one trace under one protocol. Building
// it sorts the jobs, draws the sequences, orders the history and, with
// PredictAtSubmit, predicts the evaluated jobs; each Evaluate then only
// replays. Evaluate may be called from several goroutines at once: the
// Evaluator's state is read-only and each call builds its own simulation,
// engine, policy and predictor.
type Evaluator struct {
	cluster Cluster
	proto   Protocol

	// jobs are the replayable jobs in submit order (stable), with their
	// replay state (admit's), shared read-only by every replay.
	jobs []policy.Job
	// skipped counts the jobs admit left out, by reason.
	skipped map[string]int
	// history is jobs in end order (then submit, then id) as recorded,
	// and histEnd their ends: the history of a replay starting at t is
	// history[:k] with k the number of ends before t.
	history []policy.Job
	histEnd []time.Time
	// lo and hi bound the evaluated part: [split, n) for Split, the
	// window for Sequences.
	lo, hi int
	starts []int // Sequences: each sequence's first job
	// predicted holds PredictAtSubmit's predictions by job id, read-only.
	predicted map[int64]policy.Prediction
	// effective holds the effective run times PredictAtSubmit's predictor
	// gave (policy.EffectivePredictor) beside those predictions, nil when
	// it gives none.
	effective map[int64]time.Duration
	predName  string
}

// ErrShortWindow is returned when a protocol's window holds fewer jobs
// than a sequence needs, or the split leaves no job on one side.
var ErrShortWindow = errors.New("too few jobs")

// NewEvaluator prepares the evaluation of jobs on cluster c under p.
func NewEvaluator(jobs []policy.Job, c Cluster, p Protocol) (*Evaluator, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	e := &Evaluator{cluster: c, proto: p}
	byID := make(map[int64]int32, len(jobs))
	e.skipped = map[string]int{}
	admitted, err := admit(jobs, Config{Cluster: c, DefaultLimit: policy.UnknownRun}, e.skipped, byID, nil)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	e.jobs = make([]policy.Job, len(admitted))
	for k, a := range admitted {
		j := jobs[a.src]
		// The recorded run, capped at the limit as a replay caps it, is
		// both what the replay runs and what the history remembers.
		j.End, j.State = j.Start.Add(a.run), a.state
		e.jobs[k] = j
	}
	n := len(e.jobs)
	switch p.Kind {
	case Split:
		e.lo, e.hi = int(math.Floor(p.Split*float64(n))), n
		if e.lo == 0 || e.lo == n {
			return nil, fmt.Errorf("evaluate: split %g of %d jobs leaves no job on one side: %w", p.Split, n, ErrShortWindow)
		}
	case Sequences:
		e.lo, e.hi = int(math.Floor(p.From*float64(n))), int(math.Floor(p.To*float64(n)))
		if e.hi-e.lo < p.Length {
			return nil, fmt.Errorf("evaluate: submits [%g, %g) of %d jobs hold %d jobs, a sequence needs %d: %w",
				p.From, p.To, n, e.hi-e.lo, p.Length, ErrShortWindow)
		}
		e.starts = DrawStarts(p.Seed, p.Sequences, e.lo, e.hi-p.Length)
	}
	if !p.Cold {
		e.history = slices.Clone(e.jobs)
		slices.SortStableFunc(e.history, func(a, b policy.Job) int {
			if c := a.End.Compare(b.End); c != 0 {
				return c
			}
			if c := a.Submit.Compare(b.Submit); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		e.histEnd = make([]time.Time, n)
		for i := range e.history {
			e.histEnd[i] = e.history[i].End
		}
	}
	if p.NewPredictor != nil && p.Predictions == PredictAtSubmit {
		if err := e.predictAtSubmit(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (p *Protocol) validate() error {
	switch p.Kind {
	case Split:
		if !(p.Split > 0 && p.Split < 1) {
			return fmt.Errorf("evaluate: split %g: want a fraction in (0, 1)", p.Split)
		}
	case Sequences:
		if p.Sequences < 1 || p.Length < 1 {
			return fmt.Errorf("evaluate: %d sequences of %d jobs: want both >= 1", p.Sequences, p.Length)
		}
		if !(p.From >= 0 && p.From < p.To && p.To <= 1) {
			return fmt.Errorf("evaluate: window [%g, %g): want 0 <= from < to <= 1", p.From, p.To)
		}
	default:
		return fmt.Errorf("evaluate: unknown protocol %q: want %s or %s", p.Kind, Split, Sequences)
	}
	switch p.Predictions {
	case "":
		p.Predictions = PredictOnline
	case PredictOnline, PredictAtSubmit:
	default:
		return fmt.Errorf("evaluate: unknown prediction mode %q: want %s or %s", p.Predictions, PredictOnline, PredictAtSubmit)
	}
	if _, err := ParseBackfill(string(p.Backfill)); p.Backfill != "" && err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	return nil
}

// DrawStarts draws n sequence starts uniformly from [lo, hi] with a PCG
// generator seeded by seed: the same arguments always give the same
// starts. Sequences may overlap, as RLScheduler's independent draws do.
func DrawStarts(seed uint64, n, lo, hi int) []int {
	r := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	out := make([]int, n)
	for i := range out {
		out[i] = lo + r.IntN(hi-lo+1)
	}
	return out
}

// Jobs is the number of replayable jobs of the trace.
func (e *Evaluator) Jobs() int { return len(e.jobs) }

// Skipped counts the jobs of the trace that are not replayable, by reason
// (a simulation's Result.Skipped); nil when every job is.
func (e *Evaluator) Skipped() map[string]int {
	if len(e.skipped) == 0 {
		return nil
	}
	return maps.Clone(e.skipped)
}

// Window is the evaluated part of the trace, as indices [lo, hi) of the
// jobs in submit order: the jobs after the split, or the window the
// sequences are drawn from.
func (e *Evaluator) Window() (lo, hi int) { return e.lo, e.hi }

// Starts are the first jobs of the sequences (Sequences only).
func (e *Evaluator) Starts() []int { return slices.Clone(e.starts) }

// Job is the i-th replayable job in submit order.
func (e *Evaluator) Job(i int) policy.Job { return e.jobs[i] }

// History is how many jobs warm a replay that starts with job i: those
// that ended before it was submitted (0 when Cold).
func (e *Evaluator) History(i int) int {
	if e.proto.Cold {
		return 0
	}
	k, _ := slices.BinarySearchFunc(e.histEnd, e.jobs[i].Submit, func(a, t time.Time) int {
		if a.Before(t) {
			return -1
		}
		return 1
	})
	return k
}

// Evaluate replays the protocol under the policies mk makes (one per
// replay) and measures them.
func (e *Evaluator) Evaluate(ctx context.Context, mk PolicyFactory) (Evaluation, error) {
	if e.proto.Kind == Split {
		res, err := e.replay(ctx, mk, e.lo, e.hi)
		if err != nil {
			return Evaluation{}, err
		}
		return Evaluation{Metrics: Measure(res, e.proto.Metrics), Schedule: fingerprint(0, res)}, nil
	}
	ev := Evaluation{Sequences: make([]Metrics, len(e.starts))}
	for i, s := range e.starts {
		res, err := e.replay(ctx, mk, s, s+e.proto.Length)
		if err != nil {
			return Evaluation{}, fmt.Errorf("sequence %d (jobs %d–%d): %w", i+1, s, s+e.proto.Length-1, err)
		}
		ev.Sequences[i] = Measure(res, e.proto.Metrics)
		ev.Schedule = fingerprint(ev.Schedule, res)
	}
	ev.Metrics = meanMetrics(ev.Sequences)
	ev.BSLDStd, ev.BSLDMin, ev.BSLDMax = spread(ev.Sequences)
	return ev, nil
}

// replay simulates jobs [from, to) on an empty cluster, warmed with the
// history before job from.
func (e *Evaluator) replay(ctx context.Context, mk PolicyFactory, from, to int) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pol, err := mk()
	if err != nil {
		return nil, fmt.Errorf("evaluate: make policy: %w", err)
	}
	cfg := Config{Cluster: e.cluster, Policy: pol, Backfill: e.proto.Backfill,
		Progress: func(int, int) error { return ctx.Err() }}
	switch {
	case e.predicted != nil:
		if e.effective != nil {
			cfg.Predictor = effectiveTable{tablePredictor{name: e.predName, runs: e.predicted}, e.effective}
		} else {
			cfg.Predictor = tablePredictor{name: e.predName, runs: e.predicted}
		}
	case e.proto.NewPredictor != nil:
		if cfg.Predictor, err = e.proto.NewPredictor(); err != nil {
			return nil, fmt.Errorf("evaluate: make predictor: %w", err)
		}
	}
	if !e.proto.Cold {
		cfg.History = e.history[:e.History(from)]
	}
	return Run(e.jobs[from:to], cfg)
}

// predictAtSubmit fills predicted for the evaluated jobs: one predictor
// sees the jobs in submit order, each after every job that ended before
// it was submitted.
func (e *Evaluator) predictAtSubmit() error {
	p, err := e.proto.NewPredictor()
	if err != nil {
		return fmt.Errorf("evaluate: make predictor: %w", err)
	}
	byEnd := e.history
	if byEnd == nil { // Cold: the predictions still learn from the past
		byEnd = slices.Clone(e.jobs)
		slices.SortStableFunc(byEnd, func(a, b policy.Job) int { return a.End.Compare(b.End) })
	}
	e.predName = p.Name()
	e.predicted = make(map[int64]policy.Prediction, e.hi-e.lo)
	ep, withEff := p.(policy.EffectivePredictor)
	if withEff {
		e.effective = make(map[int64]time.Duration)
	}
	next := 0
	for i := e.lo; i < e.hi; i++ {
		j := e.jobs[i]
		for next < len(byEnd) && byEnd[next].End.Before(j.Submit) {
			p.Observe(&byEnd[next])
			next++
		}
		j.Start, j.End, j.State, j.ExitCode = time.Time{}, time.Time{}, policy.StatePending, 0
		pred := p.Predict(&j)
		e.predicted[j.ID] = pred
		// Beside the prediction, from the same history: a policy that
		// reads it (the learned family's effective feature) gets it at
		// submit like the prediction.
		if withEff && pred.Source != "none" {
			if d := ep.Effective(&j, pred.Run); d > 0 {
				e.effective[j.ID] = d
			}
		}
	}
	return nil
}

// tablePredictor answers PredictAtSubmit's predictions and learns
// nothing; it only reads its map, so replays may share it.
type tablePredictor struct {
	name string
	runs map[int64]policy.Prediction
}

func (t tablePredictor) Name() string        { return t.name }
func (t tablePredictor) Observe(*policy.Job) {}
func (t tablePredictor) Predict(j *policy.Job) policy.Prediction {
	if p, ok := t.runs[j.ID]; ok {
		return p
	}
	return policy.Prediction{Source: "none"}
}

// effectiveTable is tablePredictor for a predictor that gave effective
// run times too: it answers those made at submit.
type effectiveTable struct {
	tablePredictor
	eff map[int64]time.Duration
}

func (t effectiveTable) Effective(j *policy.Job, _ time.Duration) time.Duration { return t.eff[j.ID] }

// fingerprint folds res's schedule (each job's id and first start) into h.
func fingerprint(h uint64, res *Result) uint64 {
	f := fnv.New64a()
	var b [16]byte
	put := func(off int, v uint64) {
		for i := range 8 {
			b[off+i] = byte(v >> (8 * i))
		}
	}
	put(0, h)
	f.Write(b[:8])
	for i := range res.Jobs {
		put(0, uint64(res.Jobs[i].ID))
		put(8, uint64(res.Jobs[i].Start.UnixNano()))
		f.Write(b[:])
	}
	return f.Sum64()
}

// meanMetrics averages every metric over ms; Jobs, JainWindows, Cycles and
// Preemptions are summed.
func meanMetrics(ms []Metrics) Metrics {
	var out Metrics
	if len(ms) == 0 {
		return out
	}
	out.Name = ms[0].Name
	for _, m := range ms {
		out.Jobs += m.Jobs
		out.JainWindows += m.JainWindows
		out.Cycles += m.Cycles
		out.Preemptions += m.Preemptions
		for _, f := range []struct{ sum, v *float64 }{
			{&out.AvgJCT, &m.AvgJCT}, {&out.MedianJCT, &m.MedianJCT}, {&out.P95JCT, &m.P95JCT},
			{&out.AvgWait, &m.AvgWait}, {&out.P95Wait, &m.P95Wait}, {&out.AvgBSLD, &m.AvgBSLD},
			{&out.Makespan, &m.Makespan}, {&out.Utilization, &m.Utilization}, {&out.Jain, &m.Jain},
			{&out.MaxRho, &m.MaxRho}, {&out.P95Rho, &m.P95Rho}, {&out.UserP95WaitSpread, &m.UserP95WaitSpread},
		} {
			*f.sum += *f.v / float64(len(ms))
		}
	}
	return out
}

// spread is the sample standard deviation, minimum and maximum of the
// average bounded slowdowns of ms.
func spread(ms []Metrics) (std, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	mean := 0.0
	for _, m := range ms {
		mean += m.AvgBSLD / float64(len(ms))
		lo, hi = min(lo, m.AvgBSLD), max(hi, m.AvgBSLD)
	}
	if len(ms) > 1 {
		ss := 0.0
		for _, m := range ms {
			ss += (m.AvgBSLD - mean) * (m.AvgBSLD - mean)
		}
		std = math.Sqrt(ss / float64(len(ms)-1))
	}
	return std, lo, hi
}
