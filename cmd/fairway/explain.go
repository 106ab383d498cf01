package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"
)

// explainCommand answers "why is my job where it is?": it ranks the live
// queue once, exactly as serve does (same engine, warmed from the same
// history, nothing written or recorded), and prints the job's place, the
// parts of its score, its prediction and its association's fair-share
// state, what separates it from the job just ahead, and the last decision
// serve logged for it.
func explainCommand() *cli.Command {
	flags := append(serveFlags(), &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"})
	return &cli.Command{
		Name:      "explain",
		Usage:     "explain where a pending job stands in Fairway's order and what would move it",
		ArgsUsage: "JOBID",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			id, err := strconv.ParseInt(c.Args().First(), 10, 64)
			if c.NArg() != 1 || err != nil || id <= 0 {
				return errors.New("usage: fairway explain JOBID (one numeric Slurm job id)")
			}
			log, err := logger(c)
			if err != nil {
				return err
			}
			if err := applyConfigFile(c); err != nil {
				return err
			}
			cfg, err := serveSettings(c)
			if err != nil {
				return err
			}
			cfg.runner.DryRun, cfg.HA = true, false
			s, err := buildServe(c.Context, cfg, c.String("database-url"), log)
			if err != nil {
				return err
			}
			defer s.close()
			s.runner.store = discardRecorder{}
			res, err := s.runner.runCycle(c.Context)
			if err != nil {
				return err
			}
			ex, err := explainJob(res, id)
			if err != nil {
				return err
			}
			ex.Last, err = lastDecision(c.Context, c.String("database-url"), cfg.runner.Cluster, id)
			if err != nil {
				return err
			}
			ex.Policy = cfg.runner.Policy
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			return printExplanation(c.App.Writer, ex)
		},
	}
}

// explanation is what explain prints.
type explanation struct {
	Policy       string             `json:"policy"`
	JobID        int64              `json:"job_id"`
	User         string             `json:"user"`
	Account      string             `json:"account"`
	Rank         int                `json:"rank"`
	Of           int                `json:"of"`
	Score        float64            `json:"score"`
	Parts        map[string]float64 `json:"parts"`
	PredictedS   float64            `json:"predicted_run_s,omitempty"`
	LimitS       float64            `json:"time_limit_s,omitempty"`
	WaitingS     float64            `json:"waiting_s"`
	UserUsage    float64            `json:"association_usage_gpu_s"`
	UserCounter  float64            `json:"association_vtc_counter_gpu_s"`
	AcctUsage    float64            `json:"account_usage_gpu_s"`
	AcctShare    float64            `json:"account_share"`
	TotalUsage   float64            `json:"cluster_usage_gpu_s"`
	Ahead        *neighbour         `json:"ahead,omitempty"`
	AheadByParts map[string]float64 `json:"ahead_by_parts,omitempty"`
	Last         *lastLogged        `json:"last_decision,omitempty"`
}

type neighbour struct {
	JobID   int64   `json:"job_id"`
	User    string  `json:"user"`
	Account string  `json:"account"`
	Score   float64 `json:"score"`
}

type lastLogged struct {
	At     time.Time `json:"at"`
	Rank   int       `json:"rank"`
	Field  string    `json:"field"`
	Value  int64     `json:"value"`
	DryRun bool      `json:"dry_run"`
}

// explainJob finds id in a cycle's ranking and gathers its explanation.
func explainJob(res *cycleResult, id int64) (*explanation, error) {
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
	ex := &explanation{
		JobID: id, User: j.User, Account: j.Account, Rank: idx + 1, Of: len(res.Ranked), Score: sc.Value, Parts: sc.Parts.Map(),
		LimitS: j.TimeLimit.Seconds(), WaitingS: s.Now.Sub(j.Submit).Seconds(), AcctShare: s.Shares.Account(j.Account),
	}
	if d, ok := s.Predicted[id]; ok {
		ex.PredictedS = d.Seconds()
	}
	if s.Ledger != nil {
		ex.UserUsage, ex.UserCounter = s.Ledger.Usage(a, s.Now), s.Ledger.Counter(a)
		ex.AcctUsage, ex.TotalUsage = s.Ledger.AccountUsage(j.Account, s.Now), s.Ledger.TotalUsage(s.Now)
	}
	if idx > 0 {
		prev := res.Ranked[idx-1]
		pj := jobs[prev.JobID]
		ex.Ahead = &neighbour{JobID: prev.JobID, User: pj.User, Account: pj.Account, Score: prev.Value}
		ex.AheadByParts = map[string]float64{}
		prevParts := prev.Parts.Map()
		for k, v := range prevParts {
			if d := v - ex.Parts[k]; d != 0 {
				ex.AheadByParts[k] = d
			}
		}
		for k, v := range ex.Parts {
			if _, ok := prevParts[k]; !ok && v != 0 {
				ex.AheadByParts[k] = -v
			}
		}
	}
	return ex, nil
}

func printExplanation(w io.Writer, ex *explanation) error {
	fmt.Fprintf(w, "job %d (user %s, account %s): rank %d of %d pending under %s\n", ex.JobID, ex.User, ex.Account, ex.Rank, ex.Of, ex.Policy)
	fmt.Fprintf(w, "  waiting %s", time.Duration(ex.WaitingS*float64(time.Second)).Round(time.Second))
	if ex.PredictedS > 0 {
		fmt.Fprintf(w, ", predicted run %s", time.Duration(ex.PredictedS*float64(time.Second)).Round(time.Second))
	}
	if ex.LimitS > 0 {
		fmt.Fprintf(w, " (time limit %s)", time.Duration(ex.LimitS*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  score %.6g, made of:\n", ex.Score)
	for _, k := range sortedKeys(ex.Parts) {
		fmt.Fprintf(w, "    %-18s %.6g\n", k, ex.Parts[k])
	}
	share := 0.0
	if ex.TotalUsage > 0 {
		share = ex.AcctUsage / ex.TotalUsage
	}
	fmt.Fprintf(w, "  fair-share state: account %s has %.0f decayed GPU-s (%.1f%% of the cluster's), raw share %g; %s/%s VTC counter %.0f GPU-s\n",
		ex.Account, ex.AcctUsage, 100*share, ex.AcctShare, ex.Account, ex.User, ex.UserCounter)
	if ex.Ahead == nil {
		fmt.Fprintln(w, "  nothing is ahead of it: it is next when resources allow")
	} else {
		fmt.Fprintf(w, "  just ahead: job %d (user %s, account %s), score %.6g; it leads by:\n", ex.Ahead.JobID, ex.Ahead.User, ex.Ahead.Account, ex.Ahead.Score)
		for _, k := range sortedKeys(ex.AheadByParts) {
			fmt.Fprintf(w, "    %-18s %+.6g\n", k, ex.AheadByParts[k])
		}
		fmt.Fprintln(w, "  what moves it: its account's usage decaying or other users' counters growing as they run;")
		fmt.Fprintln(w, "  a shorter time limit or a smaller request lowers its predicted service; under fair-qssf, an")
		fmt.Fprintln(w, "  estimated finish-time fairness (estimated_rho) past 5 puts it ahead of the jobs within that")
		fmt.Fprintln(w, "  bound, and waiting past the starvation guard (24 h) ahead of every job that has not.")
	}
	if ex.Last != nil {
		mode := "written"
		if ex.Last.DryRun {
			mode = "dry run"
		}
		fmt.Fprintf(w, "  last logged decision: %s, rank %d, %s=%d (%s)\n", ex.Last.At.Format(time.RFC3339), ex.Last.Rank, ex.Last.Field, ex.Last.Value, mode)
	}
	return nil
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// lastDecision reads the newest decision-log row of a job.
func lastDecision(ctx context.Context, url, cluster string, id int64) (*lastLogged, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("read the decision log: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var l lastLogged
	err = conn.QueryRow(ctx, `SELECT decided_at, rank, field, value, dry_run FROM decision
		WHERE cluster = $1 AND job_id = $2 ORDER BY decided_at DESC, cycle DESC LIMIT 1`, cluster, id).
		Scan(&l.At, &l.Rank, &l.Field, &l.Value, &l.DryRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the decision log: %w", err)
	}
	return &l, nil
}

// discardRecorder records nothing: explain must not touch the history.
type discardRecorder struct{}

func (discardRecorder) RecordFinished(context.Context, string, []policy.Job) (accounting.Summary, error) {
	return accounting.Summary{}, nil
}
func (discardRecorder) RecordDecisions(context.Context, []accounting.Decision) (int, error) {
	return 0, nil
}
func (discardRecorder) RecordCycle(context.Context, accounting.Cycle) error { return nil }
func (discardRecorder) RecordPredictions(context.Context, []accounting.Prediction) error {
	return nil
}
