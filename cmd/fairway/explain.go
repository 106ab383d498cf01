package main

import (
	"errors"
	"log/slog"
	"reflect"
	"strconv"

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
			ex, err := sidecar.ExplainJob(c.Context, cfg, s.Deps, id, log)
			if err != nil {
				return err
			}
			ex.Last, err = s.Store.LastDecision(c.Context, cfg.Runner.Cluster, id)
			if err != nil {
				return err
			}
			ex.Policy = cfg.Runner.Policy
			if c.Bool("json") {
				return printJSON(c.App.Writer, ex)
			}
			return ex.WriteText(c.App.Writer)
		},
	}
}

// readOnlyLogLevel is explain's and queue's log level when --log-level is
// not set: their answer is the output, and serve's info lines (API version
// negotiated, warmed up, cycle) are noise above it.
const readOnlyLogLevel = "warn"

// openReadOnly opens what explain and queue read with serve's settings,
// never taking the lease from a running serve.
func openReadOnly(c *cli.Context) (serveConfig, *sidecar.Opened, *slog.Logger, error) {
	log, err := loggerDefault(c, readOnlyLogLevel)
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

// serveOnly are serve's settings that do not change one ranking of the
// queue: explain and queue accept them (they read serve's environment and
// config file) but do not list them in their help.
var serveOnly = map[string]bool{
	"write-mode": true, "interval": true, "max-backoff": true, "dry-run": true, "max-writes": true, "gap": true,
	"listen": true, "http-addr": true, "http-user-header": true, "http-all-users": true,
	"http-rate": true, "http-burst": true, "http-max-in-flight": true, "no-ha": true, "sync-history-every": true,
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
