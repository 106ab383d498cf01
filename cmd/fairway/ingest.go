package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// ingestConfig is `fairway ingest`'s validated settings.
type ingestConfig struct {
	accounting.IngestConfig
	JSON     bool
	Progress bool
	Sacct    string // slurmdbd: the sacct binary
	Slurm    slurmctl.ConnectConfig
}

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "import finished jobs into the accounting database (idempotent)",
		ArgsUsage: "[FILE]",
		Description: "Imports job history from slurmdbd (incrementally from the stored watermark; through slurmrestd's\n" +
			"/slurmdb/<version>/jobs when --slurm-url is set, else with `sacct --json` on this host), from a\n" +
			"`sacct --json` file, or from a workload trace (SWF, Helios cluster_log.csv, Philly-MIX CSV;\n" +
			"gzip or plain; FILE - reads standard input). Re-importing never duplicates: jobs are keyed by\n" +
			"cluster, job id, array task and submit time. A malformed record fails the whole import with\n" +
			"its file:line and nothing is written, unless --skip-bad.",
		Flags: append([]cli.Flag{
			databaseFlag(),
			&cli.StringFlag{Name: "from", Usage: "source: " + strings.Join(accounting.IngestSources, ", "), EnvVars: []string{"FAIRWAY_INGEST_FROM"}},
			&cli.StringFlag{Name: "cluster", Usage: "cluster name (slurmdbd: required; traces: default the file name)", EnvVars: []string{"FAIRWAY_CLUSTER"}},
			&cli.BoolFlag{Name: "skip-bad", Usage: "import the good records and count the malformed ones instead of failing", EnvVars: []string{"FAIRWAY_INGEST_SKIP_BAD"}},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON", EnvVars: []string{"FAIRWAY_INGEST_JSON"}},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress bar on stderr: auto (when stderr is a terminal), always or never", EnvVars: []string{"FAIRWAY_INGEST_PROGRESS"}},
			&cli.StringFlag{Name: "sacct", Value: "sacct", Usage: "slurmdbd: sacct binary used to read slurmdbd", EnvVars: []string{"FAIRWAY_SACCT"}},
			&cli.DurationFlag{Name: "overlap", Value: time.Hour, Usage: "slurmdbd: how far before the watermark each window starts", EnvVars: []string{"FAIRWAY_INGEST_OVERLAP"}},
			&cli.StringFlag{Name: "since", Usage: "slurmdbd: start of the window when there is no watermark yet (default 30 days ago), or when earlier than the watermark less --overlap, to re-read older history (RFC 3339, or YYYY-MM-DD for 00:00 UTC)", EnvVars: []string{"FAIRWAY_INGEST_SINCE"}},
		}, slurmFlags("slurmdbd: ", "slurmdbd: read it through this slurmrestd (base URL) instead of sacct; --slurm-url '' forces sacct")...),
		Action: func(c *cli.Context) error {
			cfg, err := ingestSettings(c)
			if err != nil {
				return err
			}
			log, err := logger(c)
			if err != nil {
				return err
			}
			var hist *accounting.NamedHistory
			if cfg.From == accounting.FromSlurmdbd {
				if hist, err = openHistory(c.Context, cfg.Slurm, cfg.Sacct, cfg.Cluster, log); err != nil {
					return err
				}
			}
			store, closeStore, err := openStore(c.Context, c.String("database-url"), log)
			if err != nil {
				return err
			}
			defer closeStore()
			var bar *progress.Bar
			var prog accounting.IngestProgress
			if cfg.Progress {
				bar = progress.New(os.Stderr, "ingest "+cfg.From)
				defer bar.Stop()
				prog = bar
			}
			res, err := store.Ingest(c.Context, cfg.IngestConfig, hist, os.Stdin, prog)
			if bar != nil {
				bar.Stop()
			}
			if err != nil {
				return err
			}
			return printIngest(c.App.Writer, res, cfg.JSON)
		},
	}
}

// ingestSettings validates the flags once, naming the bad one.
func ingestSettings(c *cli.Context) (ingestConfig, error) {
	cfg := ingestConfig{JSON: c.Bool("json"), Sacct: c.String("sacct"), Slurm: slurmConnect(c)}
	cfg.IngestConfig = accounting.IngestConfig{From: c.String("from"), File: c.Args().First(), NArgs: c.NArg(),
		Cluster: c.String("cluster"), SkipBad: c.Bool("skip-bad"), Overlap: c.Duration("overlap"),
		SlurmREST: cfg.Slurm.URL != "", HasToken: cfg.Slurm.HasToken()}
	var err error
	if cfg.From == "" {
		if cfg.From, err = accounting.IngestSource(cfg.File); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, ingestFlagError(err)
	}
	if s := c.String("since"); s != "" {
		if cfg.Since, err = accounting.ParseSince(s); err != nil {
			return cfg, usageErr{ingestFlagError(err)}
		}
	}
	cfg.Progress, err = progress.Wanted(c.String("progress"), os.Stderr)
	return cfg, err
}

// openStore opens --database-url (accounting.Open) and returns the store
// with the function that closes it.
func openStore(ctx context.Context, url string, log *slog.Logger) (*accounting.Store, func(), error) {
	pool, store, err := accounting.Open(ctx, url, log)
	if err != nil {
		return nil, nil, err
	}
	return store, pool.Close, nil
}

func printIngest(w io.Writer, r accounting.IngestResult, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	return r.WriteText(w)
}
