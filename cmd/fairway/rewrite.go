package main

import (
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/urfave/cli/v2"
)

// Flags and printing of serve's resource rewriting (INSTALL.md, "GPU
// sharing and resource rewriting"); the rules run in serve.Rewriter.

func rewriteFlags(hidden bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "rewrite-partitions", Hidden: hidden, Usage: "rewrite requests (GPU sharing, CPUs per GPU, elastic GPU counts) in these partitions; default: nowhere", EnvVars: []string{"FAIRWAY_REWRITE_PARTITIONS"}},
		&cli.StringFlag{Name: "rewrite-rules", Hidden: hidden, Value: "share,cpus", Usage: "rewrite rules to run: some of " + strings.Join(serve.RuleNames, ","), EnvVars: []string{"FAIRWAY_REWRITE_RULES"}},
		&cli.StringFlag{Name: "rewrite-table", Hidden: hidden, Value: defaultRewriteTable, Usage: "table file job_submit.lua reads (mode 0640; the systemd unit's StateDirectory); used by the share rule", EnvVars: []string{"FAIRWAY_REWRITE_TABLE"}},
		&cli.IntFlag{Name: "rewrite-table-max-rules-per-user", Hidden: hidden, Value: serve.DefaultTableMaxRulesPerUser, Usage: "share rules per user in the table at most (slurmctld reads it on every submission)", EnvVars: []string{"FAIRWAY_REWRITE_TABLE_MAX_RULES_PER_USER"}},
		&cli.IntFlag{Name: "rewrite-table-max-bytes", Hidden: hidden, Value: serve.DefaultTableMaxBytes, Usage: "size of the table at most; the users with the most rules lose rules first (job_submit.lua ignores a table over 4 MiB)", EnvVars: []string{"FAIRWAY_REWRITE_TABLE_MAX_BYTES"}},
		&cli.DurationFlag{Name: "rewrite-table-max-age", Hidden: hidden, Value: 15 * time.Minute, Usage: "job_submit.lua ignores a table older than this (serve rewrites it every cycle)", EnvVars: []string{"FAIRWAY_REWRITE_TABLE_MAX_AGE"}},
		&cli.IntFlag{Name: "rewrite-history-days", Hidden: hidden, Value: 60, Usage: "days of usage history the rules look at", EnvVars: []string{"FAIRWAY_REWRITE_HISTORY_DAYS"}},
		&cli.IntFlag{Name: "rewrite-refresh-every", Hidden: hidden, Value: 10, Usage: "cycles between reloads of the usage history", EnvVars: []string{"FAIRWAY_REWRITE_REFRESH_EVERY"}},
		&cli.Float64Flag{Name: "rewrite-cpus-per-gpu", Hidden: hidden, Usage: "GPU-proportional CPU share; 0: each partition's nodes' CPUs over their GPUs", EnvVars: []string{"FAIRWAY_REWRITE_CPUS_PER_GPU"}},
		&cli.Int64Flag{Name: "rewrite-mem-per-gpu", Hidden: hidden, Usage: "GPU-proportional memory share in MB (memory rule); 0: each partition's nodes' memory over their GPUs", EnvVars: []string{"FAIRWAY_REWRITE_MEM_PER_GPU"}},
		&cli.Float64Flag{Name: "rewrite-share-max-util", Hidden: hidden, Value: 50, Usage: "share a job's GPU only when its runs used at most this % of it (90th percentile)", EnvVars: []string{"FAIRWAY_REWRITE_SHARE_MAX_UTIL"}},
		&cli.IntFlag{Name: "rewrite-min-history", Hidden: hidden, Value: 3, Usage: "measured runs of the same user and job name a rule needs", EnvVars: []string{"FAIRWAY_REWRITE_MIN_HISTORY"}},
		&cli.BoolFlag{Name: "rewrite-sacct", Hidden: hidden, Value: true, Usage: "read jobs' CPU and memory use (TotalCPU, MaxRSS) from sacct", EnvVars: []string{"FAIRWAY_REWRITE_SACCT"}},
	}
}

// rewriteSettings reads the rewriting flags; serve's settings fill the
// rest and validate them (serveConfig.Validate).
func rewriteSettings(c *cli.Context) serve.RewriteConfig {
	return serve.RewriteConfig{
		Partitions: c.StringSlice("rewrite-partitions"), Table: c.String("rewrite-table"), TableMaxAge: c.Duration("rewrite-table-max-age"),
		HistoryDays: c.Int("rewrite-history-days"), RefreshEvery: c.Int("rewrite-refresh-every"), CPUsPerGPU: c.Float64("rewrite-cpus-per-gpu"),
		MemPerGPUMB: c.Int64("rewrite-mem-per-gpu"), ShareMaxUtil: c.Float64("rewrite-share-max-util"), MinHistory: c.Int("rewrite-min-history"),
		Sacct: c.Bool("rewrite-sacct"), ExemptQOS: c.StringSlice("exempt-qos"),
		TableMaxRulesPerUser: c.Int("rewrite-table-max-rules-per-user"), TableMaxBytes: c.Int("rewrite-table-max-bytes"),
	}
}
