package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// reportConfig is `fairway report`'s validated settings.
type reportConfig struct {
	report.GenerateConfig
	DatabaseURL string
	Progress    bool
}

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write the monthly fairness report of a cluster from the accounting database",
		Description: "Writes, into --out, report.html (one self-contained page with its plots), report.md with\n" +
			"the plots as SVG files, one CSV file per table, or report.json. The report covers usage against\n" +
			"shares, waits, finish-time fairness, cancelled and failed work, prediction quality, GPU\n" +
			"efficiency from the epilog, and what Fairway changed, with the month replayed by the simulator\n" +
			"under Slurm's plain fair-share. Give the cluster's size with --nodes and --per-node, or its\n" +
			"partitions, nodes and GPU types with --partitions (the counterfactual then replays each job in\n" +
			"its recorded partition, as simulate --from-db does): without either, capacity is estimated as the\n" +
			"most units in use at once. Names (accounts, users) are written as text in every format: a CSV\n" +
			"cell that would start a spreadsheet formula (= + - @) gets a leading apostrophe.",
		Flags: append([]cli.Flag{
			databaseFlag(),
			&cli.StringFlag{Name: "month", Usage: "month to report on, YYYY-MM (UTC); default the last month in which a job of the cluster ended", EnvVars: []string{"FAIRWAY_REPORT_MONTH"}},
			&cli.StringFlag{Name: "cluster", Usage: "cluster name; may be left out when the database holds one cluster", EnvVars: []string{"FAIRWAY_CLUSTER"}},
			&cli.StringFlag{Name: "format", Value: "html", Usage: "comma-separated: " + strings.Join(report.Formats, ", "), EnvVars: []string{"FAIRWAY_REPORT_FORMAT"}},
			&cli.StringFlag{Name: "out", Value: ".", Usage: "directory the report is written to (created if missing)", EnvVars: []string{"FAIRWAY_REPORT_OUT"}},
			&cli.IntFlag{Name: "nodes", Usage: "nodes of the cluster (0: estimate the capacity from the month's peak use)", EnvVars: []string{"FAIRWAY_REPORT_NODES"}},
			&cli.IntFlag{Name: "per-node", Usage: "GPUs (or processors, with --unit cpu) per node", EnvVars: []string{"FAIRWAY_REPORT_PER_NODE"}},
			&cli.StringFlag{Name: "unit", Value: "gpu", Usage: "what jobs are counted in: gpu, or cpu for a CPU cluster (processor-hours)", EnvVars: []string{"FAIRWAY_REPORT_UNIT"}},
			&cli.IntFlag{Name: "shards-per-gpu", Usage: "GPU shards per GPU, to count a shard-only job as a fraction of a GPU (0: one GPU); else serve's FAIRWAY_SHARDS_PER_GPU", EnvVars: []string{"FAIRWAY_REPORT_SHARDS_PER_GPU", "FAIRWAY_SHARDS_PER_GPU"}},
			&cli.Float64Flag{Name: "power-idle-watts", Usage: "power one idle node draws, for the power section's energy estimate (0: none); serve's setting of the same name", EnvVars: []string{"FAIRWAY_POWER_IDLE_WATTS"}},
			&cli.BoolFlag{Name: "counterfactual", Value: true, Usage: "replay the month in the simulator under plain fair-share and Fairway's policy", EnvVars: []string{"FAIRWAY_REPORT_COUNTERFACTUAL"}},
			&cli.StringFlag{Name: "sim-policy", Usage: "Fairway's policy in the counterfactual (default: the one the decision log used most)", EnvVars: []string{"FAIRWAY_REPORT_SIM_POLICY"}},
			&cli.StringFlag{Name: "sim-predictor", Usage: "predictor in the counterfactual, or none (default: the one the decision log used most)", EnvVars: []string{"FAIRWAY_REPORT_SIM_PREDICTOR"}},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress on stderr: auto (when stderr is a terminal), always or never", EnvVars: []string{"FAIRWAY_REPORT_PROGRESS"}},
		}, partitionsFlags("capacity and counterfactual", "FAIRWAY_REPORT_PARTITIONS")...),
		Action: func(c *cli.Context) error {
			cfg, err := reportSettings(c, time.Now())
			if err != nil {
				return err
			}
			log, err := logger(c)
			if err != nil {
				return err
			}
			return runReport(c.Context, cfg, log, c.App.Writer, os.Stderr)
		},
	}
}

// monthFlag reads a --month value; one that does not parse is the command
// line's fault (exit 2), like a duration that does not.
func monthFlag(s string) (report.Month, error) {
	m, err := report.ParseMonth(s)
	if err != nil {
		return m, usagef("--month %q: want YYYY-MM, e.g. 2026-10", s)
	}
	return m, nil
}

// reportSettings validates the flags once, naming the bad one.
func reportSettings(c *cli.Context, now time.Time) (reportConfig, error) {
	cfg := reportConfig{DatabaseURL: c.String("database-url"),
		GenerateConfig: report.GenerateConfig{Cluster: c.String("cluster"), Out: c.String("out")}}
	if cfg.DatabaseURL == "" {
		return cfg, errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL")
	}
	if s := c.String("month"); s != "" {
		m, err := monthFlag(s)
		if err != nil {
			return cfg, err
		}
		cfg.Month = m
	} // else the zero Month: the last month with jobs (report.Generate)
	var err error
	if cfg.Formats, err = report.ParseFormats(c.String("format")); err != nil {
		return cfg, reportFlagError(err)
	}
	if cfg.Out == "" {
		return cfg, errors.New("--out: empty")
	}
	cfg.Options = report.Options{Now: now, Counterfactual: c.Bool("counterfactual"), ShardsPerGPU: c.Int("shards-per-gpu"),
		Cluster: sim.Cluster{Nodes: c.Int("nodes"), PerNode: c.Int("per-node")}, SimPolicy: c.String("sim-policy"), SimPredictor: c.String("sim-predictor"),
		IdleWatts: c.Float64("power-idle-watts")}
	if !cfg.Options.Counterfactual {
		for _, f := range []string{"sim-policy", "sim-predictor"} {
			if c.IsSet(f) {
				return cfg, fmt.Errorf("--%s: only with the counterfactual (--counterfactual=false leaves it out)", f)
			}
		}
	}
	if cfg.Options.IdleWatts < 0 || math.IsNaN(cfg.Options.IdleWatts) || math.IsInf(cfg.Options.IdleWatts, 0) {
		return cfg, fmt.Errorf("--power-idle-watts %g: want 0 or more watts", cfg.Options.IdleWatts)
	}
	if cfg.Options.Cluster.Unit, err = report.ParseUnit(c.String("unit")); err != nil {
		return cfg, reportFlagError(err)
	}
	if cfg.Options.Layout, err = layoutSettings(c); err != nil {
		return cfg, err
	}
	if err := cfg.Options.Validate(); err != nil {
		return cfg, reportFlagError(err)
	}
	cfg.Progress, err = progress.Wanted(c.String("progress"), os.Stderr)
	return cfg, err
}

// runReport writes the report (report.Run) and prints the files written,
// with progress on stderr when asked.
func runReport(ctx context.Context, cfg reportConfig, log *slog.Logger, stdout, stderr io.Writer) error {
	var show io.Writer
	if cfg.Progress {
		show = stderr
	}
	g, err := report.Run(ctx, cfg.DatabaseURL, cfg.GenerateConfig, show, log)
	if err != nil {
		return err
	}
	for _, f := range g.Files {
		fmt.Fprintln(stdout, f)
	}
	return nil
}
