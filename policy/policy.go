package policy

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"time"
)

// Snapshot is everything a policy may look at in one cycle. It is built by
// the cycle's Source (live Slurm + accounting in serve, the trace replay in
// simulate) and never mutated by a policy. Now is the only clock a policy
// may read. It is plain data: the cycle owner fills the fields it has and
// leaves the rest zero; every policy documents what it reads and what it
// does when a field is missing.
//
// Job IDs are unique within a snapshot: they key Predicted, TrueRun and the
// Ledger, and they are the last tie-break of every ranking.
type Snapshot struct {
	Now     time.Time
	Pending []Job
	Running []Job

	// Predicted holds predicted run times by Job.ID, filled by the cycle
	// from a Predictor before ranking: every pending job, and every running
	// job for the policies that count the committed remainder of running
	// jobs (vtc, fair-qssf). A job missing here is costed by its TimeLimit,
	// or by UnknownRun when it has none.
	Predicted map[int64]time.Duration

	// Effective holds effective run times (EffectivePredictor) by Job.ID
	// for the pending jobs whose predictor gave one, filled while the
	// policy reads them (the learned family's effective feature); a job
	// missing here has an effective run time equal to its predicted one.
	Effective map[int64]time.Duration

	// TrueRun holds the run time each pending job will really have, by
	// Job.ID. Only the simulator knows it; only sjf-oracle reads it.
	TrueRun map[int64]time.Duration

	// Shares is the account/user share tree (sacctmgr Fairshare=). Nil means
	// every account and every user has one share.
	Shares *Shares

	// Ledger is the fairness state that outlives a cycle: decayed
	// fair-share usage, VTC counters and per-job attained service. The
	// cycle owner updates it before building the snapshot (see Ledger);
	// policies only read it. Nil reads as an empty ledger.
	Ledger *Ledger

	// Service converts a job into GPU-equivalents per second of running:
	// the unit of every fairness counter and of "predicted service".
	Service Service

	// GPUs is the capacity the ranked jobs compete for, in the same
	// GPU-equivalents as Service (total GPUs of the partitions ranked).
	// Zero means unknown; themis then assumes no contention.
	GPUs float64

	// EarliestSubmit, when not zero, is the earliest non-zero Submit
	// among Pending and Running, kept by a caller that sees jobs come and
	// go in submit order (the simulator): f1's default origin is read
	// from it rather than from every job at every cycle. Zero: policies
	// look at the jobs.
	EarliestSubmit time.Time

	// pendPred, when not nil, is the Engine's cache entry of each pending
	// job, in Pending order: its entry in Predicted without a map lookup
	// (predictedAt), while predOf (the Engine) is still at its cycle
	// predCycle. A copy of the Snapshot kept past that cycle, whose
	// entries the Engine has moved on, reads Predicted.
	pendPred  []*enginePred
	predOf    *Engine
	predCycle uint64

	// out, when not nil, is where a ranking of this Snapshot puts its
	// Scores and parts (Engine.CycleReusing): a caller that reads each
	// ranking before it asks for the next spares a queue's worth of
	// allocation per ranking. Nil: every ranking allocates its own.
	out *rankOut
}

// Score is one pending job's place in a ranking. Higher Value runs first.
// Parts explain the value (fair-share term, predicted service, age boost,
// ...) for the decision log and `fairway explain`.
type Score struct {
	JobID int64
	Value float64
	Parts Parts
}

// Parts are the named terms a policy combined into a Score's Value. A part
// a policy does not have, or that is 0, reads as 0. The zero Parts has none.
//
// The Scores of one ranking share one table of parts (a row per job and
// the policy's part names): explaining a ranking costs nothing per job
// until someone asks, and the simulator, which never asks, pays nothing.
// Parts are read-only.
type Parts struct {
	t   *partTable
	row int32
}

// partTable holds the parts of one ranking: row r is vals[r*k:(r+1)*k],
// k = len(names).
type partTable struct {
	names []string
	vals  []float64
}

func (p Parts) values() []float64 {
	if p.t == nil {
		return nil
	}
	k := len(p.t.names)
	return p.t.vals[int(p.row)*k : int(p.row+1)*k]
}

// Get returns the part called name, 0 when there is none.
func (p Parts) Get(name string) float64 {
	if p.t == nil {
		return 0
	}
	for i, n := range p.t.names {
		if n == name {
			return p.values()[i]
		}
	}
	return 0
}

// All yields the parts that are not 0, in the policy's order.
func (p Parts) All() iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		if p.t == nil {
			return
		}
		for i, v := range p.values() {
			if v != 0 && !yield(p.t.names[i], v) {
				return
			}
		}
	}
}

// Map returns the parts that are not 0 as a new map (empty, not nil, when
// all are 0), nil for the zero Parts: the form of the decision log and
// `fairway explain --json`.
func (p Parts) Map() map[string]float64 {
	if p.t == nil {
		return nil
	}
	m := make(map[string]float64, len(p.t.names))
	for k, v := range p.All() {
		m[k] = v
	}
	return m
}

// Equal reports whether p and q hold the same parts (0 and absent being
// the same); go-cmp uses it.
func (p Parts) Equal(q Parts) bool {
	return maps.Equal(p.Map(), q.Map())
}

// String formats the parts like the map Map returns.
func (p Parts) String() string { return fmt.Sprint(p.Map()) }

// Policy ranks pending jobs.
type Policy interface {
	// Name is the registry name, e.g. "fair-qssf".
	Name() string
	// Rank scores every pending job in s, one Score per job, ordered best
	// first. Deterministic: the same snapshot gives the same result whatever
	// the order of s.Pending. No I/O.
	Rank(s *Snapshot) ([]Score, error)
}

// Prediction is a predictor's answer for one job.
type Prediction struct {
	Run time.Duration // predicted run time, never above the job's TimeLimit when one is set
	// Upper is an upper quantile of the run time where the method gives one
	// (0 otherwise); Quantile says which (e.g. 0.9).
	Upper    time.Duration
	Quantile float64
	// Source names the rule that produced the value (e.g. "user-name-exact",
	// "user-mean", "limit"), for explanations.
	Source string
}

// EffectivePredictor is a Predictor that also gives a job's effective run
// time (EffectiveRun) beside its prediction run: the run time that, known
// for certain, would rank the job as the run times it may have do when
// bounded slowdown is the cost; 0 when it has nothing to go on. It differs
// from the prediction where the user's same job ran for very different
// times: one that often fails within a minute has an effective run time
// well below its prediction. The Engine asks only while its policy reads
// it (the learned family with an effective exponent): it costs a pass
// over the user's history per prediction.
type EffectivePredictor interface {
	Predictor
	Effective(j *Job, run time.Duration) time.Duration
}

// SlowdownTau is τ of bounded slowdown, max(1, (wait+run)/max(run, τ)):
// the shortest run a job's slowdown is measured against (Feitelson et
// al., JSSPP 1997, with RLScheduler's 10 s).
const SlowdownTau = 10 * time.Second

// EffectiveRun is Smith's rule under uncertainty for bounded slowdown.
// Delaying job j by dt costs dt/max(p_j, τ) in the sum of bounded
// slowdowns, and running it first delays the others by p_j; for two jobs
// next to each other, exchanging them changes the expected cost by
// E[p_i]·E[1/max(p_j,τ)] − E[p_j]·E[1/max(p_i,τ)], so the order that no
// exchange improves runs the smallest E[p]/E[1/max(p,τ)] first (Smith,
// Naval Research Logistics Quarterly 1956, for known times; Rothkopf,
// Management Science 1966, for expected ones). EffectiveRun is the square
// root of that ratio, in the units of a run time: for a run time known to
// be p ≥ τ it is p, so ranking by it is SJF; for runs drawn from runs
// (seconds, equally likely) it is lower the likelier a short run is. Runs
// are floored at 0; an empty runs, or a NaN among them, gives 0.
func EffectiveRun(runs []float64) time.Duration {
	if len(runs) == 0 {
		return 0
	}
	tau := SlowdownTau.Seconds()
	var sum, inv float64
	for _, r := range runs {
		r = max(r, 0)
		sum += r
		inv += 1 / max(r, tau)
	}
	// The mean run is floored at τ too: a job sure to end at once ranks
	// as one of τ, as bounded slowdown measures it.
	mean, invMean := max(sum/float64(len(runs)), tau), inv/float64(len(runs))
	e := math.Sqrt(mean/invMean) * float64(time.Second)
	switch {
	case math.IsNaN(e):
		// A NaN run: nothing to go on, as the callers read 0.
		return 0
	case e >= math.MaxInt64:
		// Beyond what a Duration holds (runs of centuries): converted,
		// it would wrap negative.
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(e)
}

// Predictor predicts run times from history, learning online.
type Predictor interface {
	// Name is the registry name, e.g. "alea".
	Name() string
	// Observe learns from one finished job. Jobs are observed in the order
	// the caller chooses (submit order or end order, see predict eval).
	Observe(j *Job)
	// Predict returns the predicted run time of a job that has not run yet.
	// It must not modify the predictor.
	Predict(j *Job) Prediction
}
