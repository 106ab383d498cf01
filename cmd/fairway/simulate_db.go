package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// simulateDBFlags are simulate's flags for replaying the accounting
// database's finished jobs.
func simulateDBFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "from-db", Usage: "replay the finished jobs of --cluster in the accounting database (with their partitions and GPU types) instead of a trace", EnvVars: []string{"FAIRWAY_SIMULATE_FROM_DB"}},
		&cli.StringFlag{Name: "cluster", Usage: "with --from-db: the cluster (Slurm ClusterName); may be left out when the database holds one", EnvVars: []string{"FAIRWAY_CLUSTER"}},
		databaseFlag(),
		&cli.StringFlag{Name: "month", Usage: "with --from-db: the jobs that ended in this month (YYYY-MM, UTC)", EnvVars: []string{"FAIRWAY_SIMULATE_MONTH"}},
		&cli.StringFlag{Name: "since", Usage: "with --from-db: the jobs that ended at or after this instant (RFC 3339 or YYYY-MM-DD; default: all the database holds)", EnvVars: []string{"FAIRWAY_SIMULATE_SINCE"}},
		&cli.StringFlag{Name: "until", Usage: "with --from-db: the jobs that ended before this instant (RFC 3339 or YYYY-MM-DD; default: now)", EnvVars: []string{"FAIRWAY_SIMULATE_UNTIL"}},
		&cli.StringFlag{Name: "unit", Usage: "with --from-db: what jobs are counted in, gpu or cpu (default: gpu when a job of the history asked for GPUs)", EnvVars: []string{"FAIRWAY_SIMULATE_UNIT"}},
	}
}

// finishedHistory reads a cluster's finished jobs (report.FinishedHistory;
// a test puts a fake in its place).
var finishedHistory = report.FinishedHistory

// simulateDBSettings reads the --from-db flags (c.Bool("from-db") set),
// naming the bad one.
func simulateDBSettings(c *cli.Context) (*tuneDB, error) {
	for _, f := range []string{"power", "forecast", "suite"} {
		if c.IsSet(f) {
			return nil, fmt.Errorf("--from-db: not with --%s (the comparison, --split and --sequences replay the database)", f)
		}
	}
	db, err := tuneDBSettings(c, time.Now())
	if err != nil {
		return nil, err
	}
	if s := c.String("month"); s != "" {
		if c.IsSet("since") || c.IsSet("until") {
			return nil, errors.New("--month: not with --since or --until")
		}
		m, err := monthFlag(s)
		if err != nil {
			return nil, err
		}
		db.Since, db.Until = m.Start(), m.End()
	}
	return db, nil
}

// workload reads what cfg replays: the accounting database's history
// with --from-db (loadDB), else the trace.
func (cfg simulateConfig) workload(ctx context.Context) (*sim.Workload, error) {
	if cfg.db != nil {
		return loadDB(ctx, cfg.db, cfg)
	}
	return simWorkload(cfg.LoadWorkload())
}

// loadDB reads the history of db as a workload, on the cluster of
// cfg.Layout, else of --nodes × --per-node, else the smallest the history
// shows (tuneDB.load), and scales its load by cfg.Load.
func loadDB(ctx context.Context, db *tuneDB, cfg simulateConfig) (*sim.Workload, error) {
	w, err := db.load(ctx, cfg.Nodes, cfg.PerNode, cfg.Layout)
	if err != nil {
		return nil, err
	}
	w.Name += ", jobs that ended " + report.PeriodText(db.Since, db.Until)
	w.OwnLoad = sim.OfferedLoad(w.Jobs, w.Cluster)
	if w.Jobs, err = sim.ScaleLoad(w.Jobs, cfg.Load); err != nil {
		return nil, fmt.Errorf("--load: %w", err)
	}
	return w, nil
}
