package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// Explanation is why a pending job stands where it does in one cycle's
// ranking: its score and the parts of it, its prediction, its
// association's fair-share state, and what separates it from the job just
// ahead.
type Explanation struct {
	Policy string `json:"policy"`
	// PolicyFile is the policy file the policy came from; nil without.
	PolicyFile *PolicyFileInfo `json:"policy_file,omitempty"`
	// Contributions is each feature's term in the job's key, for a policy
	// whose key is a product of powers (policy.Decomposer): the learned
	// family.
	Contributions []policy.Contribution `json:"contributions,omitempty"`
	JobID         int64                 `json:"job_id"`
	User          string                `json:"user"`
	Account       string                `json:"account"`
	Rank          int                   `json:"rank"`
	Of            int                   `json:"of"`
	Score         float64               `json:"score"`
	Parts         map[string]float64    `json:"parts"`
	// PredictedS is the predicted run time; nil when there is none (the
	// job is then ranked by its time limit). 0 is a prediction: jobs that
	// end at once.
	PredictedS   *float64                   `json:"predicted_run_s,omitempty"`
	LimitS       float64                    `json:"time_limit_s,omitempty"`
	WaitingS     float64                    `json:"waiting_s"`
	UserUsage    float64                    `json:"association_usage_gpu_s"`
	UserCounter  float64                    `json:"association_vtc_counter_gpu_s"`
	AcctUsage    float64                    `json:"account_usage_gpu_s"`
	AcctShare    float64                    `json:"account_share"`
	TotalUsage   float64                    `json:"cluster_usage_gpu_s"`
	Ahead        *Neighbour                 `json:"ahead,omitempty"`
	AheadByParts map[string]float64         `json:"ahead_by_parts,omitempty"`
	Last         *accounting.LoggedDecision `json:"last_decision,omitempty"`
	// Start is the job's start-time forecast, when the cycle made one.
	Start *StartForecast `json:"start_forecast,omitempty"`

	// ranker is the policy that ranked, with its parameters (a policy
	// file's are not its family's defaults): WhatMovesIt asks it.
	ranker policy.Policy
}

// Neighbour is the job ranked just ahead.
type Neighbour struct {
	JobID   int64   `json:"job_id"`
	User    string  `json:"user"`
	Account string  `json:"account"`
	Score   float64 `json:"score"`
}

// Explain finds id in a cycle's ranking and gathers its explanation.
func Explain(res *CycleResult, id int64) (*Explanation, error) {
	s := res.Snapshot
	idx := -1
	for i, sc := range res.Ranked {
		if sc.JobID == id {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, notRanked(res, id)
	}
	jobs := make(map[int64]*policy.Job, len(s.Pending))
	for i := range s.Pending {
		jobs[s.Pending[i].ID] = &s.Pending[i]
	}
	j := jobs[id]
	sc := res.Ranked[idx]
	a := policy.AssocOf(j)
	ex := &Explanation{
		JobID: id, User: j.User, Account: j.Account, Rank: idx + 1, Of: len(res.Ranked), Score: sc.Value, Parts: sc.Parts.Map(),
		LimitS: j.TimeLimit.Seconds(), WaitingS: max(0, s.Now.Sub(j.Submit).Seconds()), AcctShare: s.Shares.Account(j.Account),
	}
	if d, ok := s.Predicted[id]; ok {
		p := d.Seconds()
		ex.PredictedS = &p
	}
	if p := res.Policy; p != nil {
		ex.Policy, ex.ranker = p.Name(), p
		if d, ok := p.(policy.Decomposer); ok {
			ex.Contributions = d.Contributions(ex.Parts)
		}
	}
	ex.PolicyFile = res.PolicyFile
	if s.Ledger != nil {
		ex.UserUsage, ex.UserCounter = s.Ledger.Usage(a, s.Now), s.Ledger.Counter(a)
		ex.AcctUsage, ex.TotalUsage = s.Ledger.AccountUsage(j.Account, s.Now), s.Ledger.TotalUsage(s.Now)
	}
	if res.Forecast != nil {
		ex.Start, _ = res.Forecast.Start(id)
	}
	if idx > 0 {
		prev := res.Ranked[idx-1]
		pj := jobs[prev.JobID]
		ex.Ahead = &Neighbour{JobID: prev.JobID, User: pj.User, Account: pj.Account, Score: prev.Value}
		ex.AheadByParts = PartsLead(prev.Parts.Map(), ex.Parts)
	}
	return ex, nil
}

// PartsLead is by how much each score part of ahead exceeds the same part
// of behind (a part one of them lacks counts as 0); parts that are equal
// are left out.
func PartsLead(ahead, behind map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range ahead {
		if d := v - behind[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range behind {
		if _, ok := ahead[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// ErrNotQueued is the error of explaining a job Fairway does not rank;
// its message says why (NotQueuedError).
var ErrNotQueued = errors.New("not in Fairway's queue")

// NotQueuedError says why job JobID is not in the ranking: what Slurm
// lists of it, or, when Slurm no longer lists it, Fairway's job history.
type NotQueuedError struct {
	JobID int64
	Why   string
	// LeftOutBy names the settings (RunnerConfig's fields) that leave a
	// pending job out of the ranking, for the caller to name them in its
	// own words; nil when something else keeps the job out.
	LeftOutBy []string
}

func (e *NotQueuedError) Error() string {
	if len(e.LeftOutBy) > 0 {
		return e.Why + ": the partitions and QOS serve ranks leave it out (" + strings.Join(e.LeftOutBy, ", ") + ")"
	}
	return e.Why
}

// Unwrap makes errors.Is(err, ErrNotQueued) hold.
func (e *NotQueuedError) Unwrap() error { return ErrNotQueued }

// notRanked says why id is not in res's ranking, from what the cycle
// read. For a job Slurm does not list, ExplainJob then asks the history
// (fromHistory).
func notRanked(res *CycleResult, id int64) *NotQueuedError {
	e := &NotQueuedError{JobID: id}
	var j *slurmctl.Job
	if res.Read != nil {
		for i := range res.Read.Jobs {
			if res.Read.Jobs[i].ID == id {
				j = &res.Read.Jobs[i]
				break
			}
		}
	}
	at := func(t time.Time) string { return t.Local().Format(time.RFC3339) }
	switch {
	case j == nil:
		e.Why = fmt.Sprintf("job %d is not known to Slurm: no job with that id is queued, running or recently finished", id)
	case j.State == policy.StateRunning:
		e.Why = fmt.Sprintf("job %d is not in the queue: it is running, since %s", id, at(j.Start))
	case j.State.Finished() && !j.End.IsZero():
		e.Why = fmt.Sprintf("job %d is not in the queue: it finished at %s (%s)", id, at(j.End), j.State)
	case j.State.Finished():
		e.Why = fmt.Sprintf("job %d is not in the queue: it has finished (%s)", id, j.State)
	case j.Held:
		e.Why = fmt.Sprintf("job %d is held: Fairway ranks it once it is released (scontrol release %d)", id, id)
	case j.HetJob:
		e.Why = fmt.Sprintf("job %d is part of a heterogeneous job, which Fairway leaves to Slurm's own priority", id)
	case j.State == policy.StatePending:
		qos := ""
		if j.QOS != "" {
			qos = " with QOS " + j.QOS
		}
		e.Why = fmt.Sprintf("job %d is pending in partition %s%s, but Fairway does not rank it", id, j.Partition, qos)
		e.LeftOutBy = []string{"Partitions", "ExcludePartitions", "ExemptQOS"}
	default:
		e.Why = fmt.Sprintf("job %d is not in the queue: Slurm lists it as %s", id, j.State)
	}
	return e
}

// ExplainCycle explains job id's place in a planned cycle's ranking
// (Explain); for a job Slurm no longer lists (MinJobAge), hist, Fairway's
// job history of cluster, may say how it ended.
func ExplainCycle(ctx context.Context, res *CycleResult, id int64, hist JobFinder, cluster string) (*Explanation, error) {
	ex, err := Explain(res, id)
	var nq *NotQueuedError
	if errors.As(err, &nq) && res.Read != nil && !slices.ContainsFunc(res.Read.Jobs, func(j slurmctl.Job) bool { return j.ID == id }) {
		j, ferr := hist.FinishedJob(ctx, cluster, id)
		if ferr != nil {
			return nil, fmt.Errorf("%w (and the job history could not be read: %w)", err, ferr)
		}
		fromHistory(nq, j)
	}
	return ex, err
}

// JobFinder finds a finished job in Fairway's job history
// (accounting.Store), for a job Slurm no longer lists.
type JobFinder interface {
	// FinishedJob returns the newest stored record of job id on cluster,
	// nil when there is none.
	FinishedJob(ctx context.Context, cluster string, id int64) (*policy.Job, error)
}

// fromHistory rewrites e for a job Slurm does not list but the history
// holds.
func fromHistory(e *NotQueuedError, j *policy.Job) {
	if j == nil {
		return
	}
	when := "at an unknown time"
	if !j.End.IsZero() {
		when = "at " + j.End.Local().Format(time.RFC3339)
	}
	e.Why = fmt.Sprintf("job %d is not in the queue: it finished %s (%s), per Fairway's job history", e.JobID, when, j.State)
}

// Ranker is the policy that ranked the job: the one the cycle ranked with
// (its parameters included) or, for an explanation that lost it (read
// back from JSON), the registered policy ex.Policy names when its
// defaults are all it can be. A family's point cannot be rebuilt from its
// name: nil.
func (ex *Explanation) Ranker() policy.Policy {
	if ex.ranker != nil {
		return ex.ranker
	}
	e, ok := policy.Lookup(ex.Policy)
	if !ok || e.Traits.Family {
		return nil
	}
	p, err := e.New(nil)
	if err != nil {
		return nil
	}
	return p
}

// WhatMovesIt says, in the terms of p, the policy that ranked the job with
// the parameters it ranked with, what would move it forward, given the
// job's score parts: the policy's own answer when it is a
// policy.Explainer, since the levers differ between policies (and between
// points of a family) and naming another policy's guards would send a
// user after the wrong thing. p may be nil (unknown): the generic answer.
func WhatMovesIt(p policy.Policy, parts map[string]float64) string {
	if ex, ok := p.(policy.Explainer); ok {
		return ex.WhatMovesIt(parts)
	}
	return "the score parts above: the job ahead leads by the differences listed."
}
