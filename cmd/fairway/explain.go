package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/fairway-hpc/fairway/slurmctl/sidecar"
	"github.com/urfave/cli/v2"
)

// explainCommand answers "why is my job where it is?": it ranks the live
// queue once, exactly as serve does (same engine, warmed from the same
// history, nothing written or recorded), and prints the job's place, the
// parts of its score, its prediction and its association's fair-share
// state, what separates it from the job just ahead, and the last decision
// serve logged for it.
func explainCommand() *cli.Command {
	flags := append(readOnlyFlags(), &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"})
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
			cfg, s, log, err := openReadOnly(c)
			if err != nil {
				return err
			}
			defer s.Close()
			ex, err := explain(c.Context, cfg, s.Deps, id, log)
			if err != nil {
				return err
			}
			ex.Last, err = s.Store.LastDecision(c.Context, cfg.Runner.Cluster, id)
			if err != nil {
				return err
			}
			ex.Policy = cfg.Runner.Policy
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			return printExplanation(c.App.Writer, ex)
		},
	}
}

// explain ranks the queue once with every effect going to a Planner that
// keeps records in memory: nothing reaches Slurm, the table file or the
// database, whatever the settings say.
func explain(ctx context.Context, cfg serveConfig, d sidecar.Deps, id int64, log *slog.Logger) (*sidecar.Explanation, error) {
	res, err := planCycle(ctx, cfg, d, log)
	if err != nil {
		return nil, err
	}
	return sidecar.Explain(res, id)
}

// openReadOnly opens what explain and queue read with serve's settings,
// never taking the lease from a running serve.
func openReadOnly(c *cli.Context) (serveConfig, *sidecar.Opened, *slog.Logger, error) {
	log, err := logger(c)
	if err != nil {
		return serveConfig{}, nil, nil, err
	}
	cfg, err := serveSettings(c)
	if err != nil {
		return cfg, nil, nil, err
	}
	cfg.HA = false
	s, err := sidecar.Open(c.Context, cfg, log)
	return cfg, s, log, err
}

// planCycle runs one cycle, forecasts included, with every effect going
// to a Planner that keeps records in memory: nothing reaches Slurm, the
// table file or the database, whatever the settings say.
func planCycle(ctx context.Context, cfg serveConfig, d sidecar.Deps, log *slog.Logger) (*sidecar.CycleResult, error) {
	cfg.Runner.BufferDir = "" // serve's spilled records are serve's to ship
	cfg.Runner.Forecast, cfg.Runner.ForecastAsync = true, false
	r, err := sidecar.NewServeRunner(ctx, cfg, d, sidecar.NewPlanner(nil, nil), log)
	if err != nil {
		return nil, err
	}
	return r.RunCycle(ctx)
}

func printExplanation(w io.Writer, ex *sidecar.Explanation) error {
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
		fmt.Fprintln(w, "  what moves it: "+whatMovesIt(ex.Policy))
	}
	if st := ex.Start; st != nil {
		printStart(w, st)
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

// printStart prints a job's start-time forecast and what must happen
// before it, the nearest first (at most 10 of each).
func printStart(w io.Writer, st *sidecar.StartForecast) {
	if st.Expected == nil {
		fmt.Fprintln(w, "  expected start: never: it asks for more than the ranked partitions have")
		return
	}
	fmt.Fprintf(w, "  expected start: %s (in %s), from predicted run times; with time limits, as squeue --start plans: %s\n",
		st.Expected.Format(time.RFC3339), time.Until(*st.Expected).Round(time.Second), st.LimitBound.Format(time.RFC3339))
	list := func(what string, evs []sidecar.Event) {
		if len(evs) == 0 {
			return
		}
		fmt.Fprintf(w, "  %d jobs must %s first:", len(evs), what)
		for i, e := range evs {
			if i == 10 {
				fmt.Fprintf(w, " and %d more", len(evs)-10)
				break
			}
			fmt.Fprintf(w, " %d (%s)", e.JobID, e.At.Format("15:04"))
		}
		fmt.Fprintln(w)
	}
	list("end", st.MustEnd)
	list("start", st.MustStart)
}

// serveOnly are serve's settings that do not change one ranking of the
// queue: explain and queue accept them (they read serve's environment and
// config file) but do not list them in their help.
var serveOnly = map[string]bool{
	"write-mode": true, "interval": true, "max-backoff": true, "dry-run": true, "max-writes": true, "gap": true,
	"listen": true, "http-addr": true, "http-user-header": true, "no-ha": true, "sync-history-every": true,
	"charge-every": true, "buffer-limit": true, "buffer-dir": true, "retention-job-months": true,
	"retention-decision-days": true, "once": true, "rewrite-partitions": true, "rewrite-rules": true,
	"rewrite-table": true, "rewrite-table-max-rules-per-user": true, "rewrite-table-max-bytes": true,
	"rewrite-table-max-age": true, "rewrite-history-days": true, "rewrite-refresh-every": true,
	"rewrite-cpus-per-gpu": true, "rewrite-mem-per-gpu": true, "rewrite-share-max-util": true,
	"rewrite-min-history": true, "rewrite-sacct": true,
}

// readOnlyFlags are serve's flags with the serve-only ones hidden.
func readOnlyFlags() []cli.Flag {
	flags := serveFlags()
	for _, f := range flags {
		if !serveOnly[f.Names()[0]] {
			continue
		}
		// every urfave/cli flag type has a Hidden field
		if h := reflect.ValueOf(f).Elem().FieldByName("Hidden"); h.IsValid() && h.CanSet() {
			h.SetBool(true)
		}
	}
	return flags
}

// whatMovesIt says, in the terms of the policy that ranked the job, what
// would move it forward; the levers differ between policies, and naming
// another policy's guards would send a user after the wrong thing.
func whatMovesIt(policy string) string {
	switch policy {
	case "fair-sjf":
		return "its user's fair-share usage decaying, and its own wait: every second it waits shrinks its key\n" +
			"  relative to its predicted run time, so it overtakes fresher jobs; a shorter time limit lowers its prediction."
	case "fair-qssf":
		return "its account's usage decaying or other users' counters growing as they run; a shorter time limit\n" +
			"  or a smaller request lowers its predicted service; an estimated finish-time fairness (estimated_rho)\n" +
			"  past 5 puts it ahead of the jobs within that bound, and waiting past the starvation guard (24 h)\n" +
			"  ahead of every job that has not."
	default:
		return "the score parts above: the job ahead leads by the differences listed."
	}
}
