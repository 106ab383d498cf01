package report

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/fairway-hpc/fairway/policy/sim"

	"github.com/fairway-hpc/fairway/accounting"
)

// Num is a report figure: a float64 that is NaN when the figure does not
// exist (the median wait of an account whose jobs never started), encoded
// as null in JSON and shown as "–" to people.
type Num float64

// NaN is the missing figure.
func NaN() Num { return Num(math.NaN()) }

// OK reports whether the figure exists.
func (n Num) OK() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// MarshalJSON encodes a missing figure as null.
func (n Num) MarshalJSON() ([]byte, error) {
	if !n.OK() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(n), 'g', 10, 64), nil
}

// UnmarshalJSON reads null as a missing figure.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NaN()
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Report is the monthly fairness report of one cluster: every figure the
// HTML, Markdown, CSV and JSON renderings show. Hours are unit-hours: GPU-hours
// on a GPU cluster, processor-hours on a CPU cluster (Unit says which).
type Report struct {
	Cluster string `json:"cluster"`
	Month   string `json:"month"` // YYYY-MM
	Title   string `json:"title"` // e.g. "October 2026"
	// Unit is what jobs ask for: "GPU" or "processor".
	Unit string `json:"unit"`
	// AsOf is the instant the report counts up to: the month's end, or the
	// generation time for a month not over yet.
	AsOf     time.Time `json:"as_of"`
	Capacity Capacity  `json:"capacity"`
	Summary  Summary   `json:"summary"`
	// Previous is the month before, for comparison; nil when it has no
	// jobs.
	Previous    *Summary        `json:"previous,omitempty"`
	Daily       []Day           `json:"daily"`
	States      []StateRow      `json:"states"`
	Accounts    []Row           `json:"accounts"`
	Users       []Row           `json:"users"`
	Predictions []PredictionRow `json:"predictions"`
	Efficiency  Efficiency      `json:"efficiency"`
	Changes     Changes         `json:"changes"`
	// Power sums up serve's power saving: what Slurm did, then what a dry
	// run planned; empty when power saving was off.
	Power []accounting.PowerSummary `json:"power,omitempty"`
	// Counterfactual is nil when it was not computed.
	Counterfactual *Counterfactual `json:"counterfactual,omitempty"`
	// Notes are caveats a reader must know (an estimated capacity, a month
	// not over yet, ...).
	Notes []string `json:"notes,omitempty"`

	// waits holds per account the waits (seconds) of its jobs that ended
	// this month, accounts with most jobs first: the waits plot.
	waits []accountWaits
}

type accountWaits struct {
	account string
	waits   []float64
}

// Capacity is the cluster's size as the report assumes it.
type Capacity struct {
	Units   float64 `json:"units"`
	Nodes   int     `json:"nodes"`
	PerNode int     `json:"per_node"`
	// Estimated: no size was configured, and Units is the most units in use
	// at once during the month or the month before, a lower bound.
	Estimated bool `json:"estimated"`
}

// Summary is the cluster's month in a few figures.
type Summary struct {
	Month string `json:"month"`
	Jobs  int    `json:"jobs"` // jobs that ended in the month
	// Started counts the jobs of Jobs that had started (those with a
	// wait); the others were cancelled while pending.
	Started  int `json:"jobs_started"`
	Accounts int `json:"accounts"`
	// Users counts people: a user with jobs in two accounts is one user
	// (the Users table has a row per user and account).
	Users int `json:"users"`
	// Hours is unit-hours delivered in the month; Available is capacity ×
	// the month's hours (up to AsOf); Utilization is their ratio.
	Hours       Num `json:"hours"`
	Available   Num `json:"available_hours"`
	Utilization Num `json:"utilization"`
	// Jain is Jain's index over the accounts' used share / entitled share.
	Jain       Num `json:"jain"`
	MedianWait Num `json:"median_wait_s"`
	P95Wait    Num `json:"p95_wait_s"`
	MedianRho  Num `json:"median_rho"`
	// CancelledHours and FailedHours are the unit-hours of jobs that were
	// cancelled, or ended any other way than completed; Lost is their sum
	// over Hours.
	CancelledHours Num `json:"cancelled_hours"`
	FailedHours    Num `json:"failed_hours"`
	Lost           Num `json:"lost_share"`
}

// Day is one UTC day of the month.
type Day struct {
	Date        string `json:"date"` // YYYY-MM-DD
	Hours       Num    `json:"hours"`
	Utilization Num    `json:"utilization"`
}

// StateRow counts the jobs that ended in one state.
type StateRow struct {
	State string `json:"state"`
	Jobs  int    `json:"jobs"`
	Hours Num    `json:"hours"`
	Share Num    `json:"share_of_hours"`
}

// Row is one account (User "") or one user within an account.
type Row struct {
	Account string `json:"account"`
	User    string `json:"user,omitempty"`
	// Shares is the raw share (sacctmgr Fairshare=); Entitled the fraction
	// of the cluster it entitles to, Used the fraction of the month's
	// unit-hours received.
	Shares     Num `json:"shares"`
	Entitled   Num `json:"entitled_share"`
	Used       Num `json:"used_share"`
	Hours      Num `json:"hours"`
	Jobs       int `json:"jobs"`
	Users      int `json:"users,omitempty"` // account rows: users with jobs
	MedianWait Num `json:"median_wait_s"`
	P95Wait    Num `json:"p95_wait_s"`
	MedianRho  Num `json:"median_rho"`
	Cancelled  Num `json:"cancelled_hours"`
	Failed     Num `json:"failed_hours"`
}

// PredictionRow is the accuracy of one predictor in one partition.
type PredictionRow struct {
	Partition string `json:"partition"`
	Predictor string `json:"predictor"` // "time limit" for users' requests
	Jobs      int    `json:"jobs"`
	MedAE     Num    `json:"medae_s"`
	Within50  Num    `json:"within_50"`
	MedianRun Num    `json:"median_run_s"`
}

// Efficiency compares the GPU time jobs held with the GPU time they used,
// from the epilog's records.
type Efficiency struct {
	Records      int             `json:"records"`       // whole-GPU records used
	ShardRecords int             `json:"shard_records"` // shared-GPU records left out
	Allocated    Num             `json:"allocated_hours"`
	Busy         Num             `json:"busy_hours"`
	Unknown      Num             `json:"unknown_hours"` // records without utilization
	Ratio        Num             `json:"efficiency"`
	Accounts     []EfficiencyRow `json:"accounts"`
	IdleJobs     []IdleJob       `json:"idle_jobs"`
}

// EfficiencyRow is one account's GPU efficiency.
type EfficiencyRow struct {
	Account   string `json:"account"`
	Jobs      int    `json:"jobs"`
	Allocated Num    `json:"allocated_hours"`
	Busy      Num    `json:"busy_hours"`
	Unknown   Num    `json:"unknown_hours"`
	Ratio     Num    `json:"efficiency"`
}

// IdleJob is a job that held GPUs without using them.
type IdleJob struct {
	JobID   int64  `json:"job_id"`
	User    string `json:"user"`
	Account string `json:"account"`
	State   string `json:"state"`
	GPUs    int    `json:"gpus"`
	Hours   Num    `json:"hours"` // GPU-hours held
	AvgUtil Num    `json:"avg_util"`
	Idle    Num    `json:"idle_hours"`
}

// Changes is what Fairway did to the queue, from the decision log.
type Changes struct {
	Policy    string `json:"policy"`
	Predictor string `json:"predictor"`
	Rows      int    `json:"decision_rows"`
	// Jobs had a value written; Reranked had it changed again after that;
	// Planned counts the jobs that only had values logged by dry-run (planned) cycles.
	Jobs     int        `json:"jobs_ranked"`
	Reranked int        `json:"jobs_reranked"`
	Planned  int        `json:"jobs_dry_run_only"`
	Cycles   CycleStats `json:"cycles"`
}

// Counterfactual is the month's jobs replayed by the simulator under
// Slurm's plain fair-share and under Fairway's policy, beside what happened.
type Counterfactual struct {
	Jobs    int            `json:"jobs"`
	Skipped map[string]int `json:"skipped,omitempty"`
	Cluster sim.Cluster    `json:"cluster"`
	// CutAtLimit counts the month's jobs without a time limit that ran
	// longer than the limit a replay gives them (sim.CutAtDefaultLimit).
	CutAtLimit int `json:"cut_at_default_limit,omitempty"`
	// Scenarios: what happened, then the fair-share simulation, then
	// Fairway's.
	Scenarios []Scenario `json:"scenarios"`
	// Accounts holds per account the median wait in each scenario, in
	// Scenarios' order.
	Accounts []ScenarioAccount `json:"accounts"`
}

// Scenario is one way the month could have gone.
type Scenario struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	MedianWait  Num    `json:"median_wait_s"`
	AvgWait     Num    `json:"avg_wait_s"`
	P95Wait     Num    `json:"p95_wait_s"`
	AvgBSLD     Num    `json:"avg_bounded_slowdown"`
	Jain        Num    `json:"jain_backlogged"`
	JainWindows int    `json:"jain_windows"`
	P95Rho      Num    `json:"p95_rho"`
}

// ScenarioAccount is one account's median wait in each scenario.
type ScenarioAccount struct {
	Account    string `json:"account"`
	Jobs       int    `json:"jobs"`
	MedianWait []Num  `json:"median_wait_s"`
}
