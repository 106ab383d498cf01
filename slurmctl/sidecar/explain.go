package sidecar

import (
	"fmt"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
)

// Explanation is why a pending job stands where it does in one cycle's
// ranking: its score and the parts of it, its prediction, its
// association's fair-share state, and what separates it from the job just
// ahead.
type Explanation struct {
	Policy  string             `json:"policy"`
	JobID   int64              `json:"job_id"`
	User    string             `json:"user"`
	Account string             `json:"account"`
	Rank    int                `json:"rank"`
	Of      int                `json:"of"`
	Score   float64            `json:"score"`
	Parts   map[string]float64 `json:"parts"`
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
		return nil, fmt.Errorf("job %d is not among the %d pending jobs Fairway ranks (finished, running, held, exempt, or in an excluded partition?)", id, len(res.Ranked))
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
		LimitS: j.TimeLimit.Seconds(), WaitingS: s.Now.Sub(j.Submit).Seconds(), AcctShare: s.Shares.Account(j.Account),
	}
	if d, ok := s.Predicted[id]; ok {
		p := d.Seconds()
		ex.PredictedS = &p
	}
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
