package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/urfave/cli/v2"
)

// predictEvalConfig is `fairway predict eval`'s validated settings.
type predictEvalConfig struct {
	Trace      string
	Format     trace.Format
	Protocol   predeval.Protocol
	JSON       bool
	Predictors []string

	FromDB      bool // replay the database's history instead of a trace
	Cluster     string
	Days        int
	DatabaseURL string
}

func predictCommand() *cli.Command {
	return &cli.Command{
		Name:  "predict",
		Usage: "run-time prediction tools",
		Subcommands: []*cli.Command{{
			Name:  "eval",
			Usage: "replay a trace through the run-time predictors and compare their errors",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "trace", Usage: "trace file (gzip or plain)", EnvVars: []string{"FAIRWAY_PREDICT_TRACE"}},
				&cli.StringFlag{Name: "format", Usage: "trace format: swf, helios or philly-mix (default: told from the file's first line)", EnvVars: []string{"FAIRWAY_PREDICT_FORMAT"}},
				&cli.StringFlag{Name: "protocol", Value: string(predeval.SubmitOrder), Usage: "submit-order (learn from earlier-submitted jobs, the published protocol) or online (learn only from jobs finished before the submit)", EnvVars: []string{"FAIRWAY_PREDICT_PROTOCOL"}},
				&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table", EnvVars: []string{"FAIRWAY_PREDICT_JSON"}},
				&cli.StringFlag{Name: "predictors", Value: strings.Join(predict.Names(), ","), Usage: "comma-separated predictors to compare", EnvVars: []string{"FAIRWAY_PREDICT_PREDICTORS"}},
				&cli.BoolFlag{Name: "from-db", Usage: "replay the finished jobs of --cluster from the accounting database instead of a trace", EnvVars: []string{"FAIRWAY_PREDICT_FROM_DB"}},
				&cli.StringFlag{Name: "cluster", Usage: "with --from-db: the cluster (Slurm ClusterName); may be left out when the database holds one", EnvVars: []string{"FAIRWAY_CLUSTER"}},
				&cli.IntFlag{Name: "days", Value: 90, Usage: "with --from-db: replay the jobs that ended in the last N days", EnvVars: []string{"FAIRWAY_PREDICT_DAYS"}},
				databaseFlag(),
			},
			Action: func(c *cli.Context) error {
				cfg, err := predictEvalSettings(c)
				if err != nil {
					return err
				}
				return predictEval(c.Context, cfg, c.App.Writer, os.Stderr)
			},
		}},
	}
}

// predictEvalSettings validates the flags once, naming the bad one.
func predictEvalSettings(c *cli.Context) (predictEvalConfig, error) {
	var cfg predictEvalConfig
	var err error
	cfg.Trace = c.String("trace")
	if c.Bool("from-db") {
		cfg.FromDB, cfg.Cluster, cfg.Days, cfg.DatabaseURL = true, c.String("cluster"), c.Int("days"), c.String("database-url")
		switch {
		case cfg.Trace != "":
			return cfg, fmt.Errorf("--from-db and --trace: give one source")
		case cfg.Days <= 0:
			return cfg, fmt.Errorf("--days %d: want at least 1", cfg.Days)
		case cfg.DatabaseURL == "":
			return cfg, fmt.Errorf("--from-db: no database: set --database-url or FAIRWAY_DATABASE_URL")
		case c.String("format") != "":
			return cfg, fmt.Errorf("--format: only with --trace")
		}
	} else {
		if c.IsSet("days") {
			return cfg, fmt.Errorf("--days: only with --from-db")
		}
		if cfg.Trace == "" {
			return cfg, fmt.Errorf("--trace: required (a trace file), or --from-db")
		}
		if cfg.Format, err = trace.FileFormat(cfg.Trace, c.String("format")); err != nil {
			return cfg, err
		}
	}
	if cfg.Protocol, err = predeval.ParseProtocol(c.String("protocol")); err != nil {
		return cfg, fmt.Errorf("--protocol: %w", err)
	}
	cfg.JSON = c.Bool("json")
	if cfg.Predictors, err = predeval.ParsePredictors(c.String("predictors")); err != nil {
		return cfg, predevalFlagError(err)
	}
	return cfg, nil
}

func predictEval(ctx context.Context, cfg predictEvalConfig, out io.Writer, errOut *os.File) error {
	jobs, name, leftOut, err := predictJobs(ctx, cfg)
	if err != nil {
		return err
	}
	opt := predeval.Options{Protocol: cfg.Protocol, Trace: name}
	tty := progress.IsTerminal(errOut)
	if tty {
		started := time.Now()
		opt.Progress = func(done, total int) {
			fmt.Fprintf(errOut, "\r\033[Kreplaying %s: %d of %s (%s); %s", opt.Trace, done, plural.N(total, "job", "jobs"), plural.N(len(cfg.Predictors), "predictor", "predictors"), progress.ETA(started, time.Now(), done, total))
		}
	}
	res, err := predeval.RunNamed(jobs, cfg.Predictors, opt)
	if res != nil {
		res.LeftOut = leftOut
	}
	if tty {
		fmt.Fprint(errOut, "\r\033[K")
	}
	if errors.Is(err, predeval.ErrNoJobs) && leftOut != nil {
		return fmt.Errorf("%s: %w (left out: %s)", name, err, trace.FormatLeftOut(leftOut))
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.JSON {
		return printJSON(out, res)
	}
	return res.WriteText(out)
}

// predictJobs loads the jobs to replay: a trace file, or with --from-db the
// cluster's finished jobs from the accounting database. It returns them
// and the name reported.
func predictJobs(ctx context.Context, cfg predictEvalConfig) (jobs []policy.Job, name string, leftOut map[string]int, err error) {
	if !cfg.FromDB {
		return predeval.LoadTrace(cfg.Trace, cfg.Format)
	}
	jobs, name, err = report.RecentJobs(ctx, cfg.DatabaseURL, cfg.Cluster, cfg.Days, time.Now())
	return jobs, name, nil, err
}
