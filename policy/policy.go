package policy

import "time"

// Snapshot is everything a policy may look at in one cycle. It is built by
// the cycle's Source (live Slurm + accounting in serve, the trace replay in
// simulate) and never mutated by a policy. Now is the only clock a policy
// may read.
type Snapshot struct {
	Now     time.Time
	Pending []Job
	Running []Job

	// Predicted holds each pending job's predicted run time, by Job.ID,
	// filled by the cycle from a Predictor before ranking. Policies that
	// need a prediction for a job missing here fall back to its TimeLimit.
	Predicted map[int64]time.Duration
}

// Score is one pending job's place in a ranking. Higher Value runs first.
// Parts explain the value (fair-share term, predicted service, age boost,
// ...) for the decision log and `fairway explain`.
type Score struct {
	JobID int64
	Value float64
	Parts map[string]float64
}

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
