package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// serveFlags are serve's settings. explain and queue (readOnly) accept
// every one of them, since they read serve's environment and config file,
// but list in their help only those that change one ranking of the queue:
// the others are marked Hidden where they are defined.
func serveFlags(readOnly bool) []cli.Flag {
	flags := append([]cli.Flag{
		databaseFlag(),
		&cli.StringFlag{Name: "config", Usage: "file of FAIRWAY_...=value lines for settings not given otherwise (owned by root or the user running fairway, mode 0600; it may hold the database password)", EnvVars: []string{"FAIRWAY_CONFIG"}},
		&cli.StringFlag{Name: "cluster", Usage: "Slurm ClusterName, the key of this cluster's history", EnvVars: []string{"FAIRWAY_CLUSTER"}},
	}, slurmFlags("", "slurmrestd base URL")...)
	flags = append(flags,
		&cli.StringFlag{Name: "write-mode", Hidden: readOnly, Value: "scontrol-site-factor", Usage: "scontrol-site-factor, rest-site-factor or rest-priority", EnvVars: []string{"FAIRWAY_WRITE_MODE"}},
		&cli.StringFlag{Name: "policy", Value: policy.Default, Usage: "ranking policy: " + strings.Join(policy.Names(), ", "), EnvVars: []string{"FAIRWAY_POLICY"}},
		&cli.StringFlag{Name: "policy-file", Usage: "rank with the policy this file describes (JSON, as fairway tune writes it) instead of --policy; setting both is refused. serve checks the file at every cycle and reloads it when it changes, keeping the last good policy while the file cannot be loaded (docs/POLICY.md, Policy files)", EnvVars: []string{"FAIRWAY_POLICY_FILE"}},
		&cli.StringFlag{Name: "predictor", Value: "fairway", Usage: "run-time predictor: " + strings.Join(predict.Names(), ", "), EnvVars: []string{"FAIRWAY_PREDICTOR"}},
		&cli.DurationFlag{Name: "interval", Hidden: readOnly, Value: 30 * time.Second, Usage: "time between cycles", EnvVars: []string{"FAIRWAY_INTERVAL"}},
		&cli.DurationFlag{Name: "max-backoff", Hidden: readOnly, Value: 5 * time.Minute, Usage: "longest wait between cycles while Slurm is unreadable", EnvVars: []string{"FAIRWAY_MAX_BACKOFF"}},
		&cli.BoolFlag{Name: "dry-run", Hidden: readOnly, Usage: "shadow mode: rank, log and record decisions, write nothing to Slurm", EnvVars: []string{"FAIRWAY_DRY_RUN"}},
		&cli.IntFlag{Name: "max-writes", Hidden: readOnly, Value: 5000, Usage: "changed values written per cycle at most (best-ranked first); 0 = no cap", EnvVars: []string{"FAIRWAY_MAX_WRITES"}},
		&cli.Int64Flag{Name: "gap", Hidden: readOnly, Value: 1, Usage: "least difference between two written values: above the sum of the PriorityWeight* Slurm keeps non-zero (INSTALL.md, Slurm priority settings)", EnvVars: []string{"FAIRWAY_GAP"}},
		&cli.StringSliceFlag{Name: "partitions", Usage: "rank only jobs in these partitions (default: all)", EnvVars: []string{"FAIRWAY_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exclude-partitions", Usage: "never rank or write jobs in these partitions", EnvVars: []string{"FAIRWAY_EXCLUDE_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exempt-qos", Usage: "never rank or write jobs with these QOS", EnvVars: []string{"FAIRWAY_EXEMPT_QOS"}},
		&cli.StringFlag{Name: "listen", Hidden: readOnly, Value: "127.0.0.1:9464", Usage: "address of /metrics, /healthz and /readyz; empty to disable", EnvVars: []string{"FAIRWAY_LISTEN"}},
		&cli.StringFlag{Name: "http-addr", Hidden: readOnly, Usage: "address of the read-only job API (GET /v1/jobs/{id}, /v1/queue?user=U), answered from the last cycle's start-time forecast, e.g. 127.0.0.1:9465; needs --http-user-header or --http-all-users; empty (default): off", EnvVars: []string{"FAIRWAY_HTTP_ADDR"}},
		&cli.StringFlag{Name: "http-user-header", Hidden: readOnly, Usage: "answer the job API only about the user this request header names (set by the site's authenticating proxy, which must replace any the client sent), like PrivateData=jobs", EnvVars: []string{"FAIRWAY_HTTP_USER_HEADER"}},
		&cli.BoolFlag{Name: "http-all-users", Hidden: readOnly, Usage: "without --http-user-header, show every pending job's user, account and forecast to anyone who reaches --http-addr, like squeue without PrivateData=jobs", EnvVars: []string{"FAIRWAY_HTTP_ALL_USERS"}},
		&cli.Float64Flag{Name: "http-rate", Hidden: readOnly, Value: serve.DefaultAPIRate, Usage: "job API requests per second per caller (the trusted user, else the client address); past it 429 with Retry-After", EnvVars: []string{"FAIRWAY_HTTP_RATE"}},
		&cli.IntFlag{Name: "http-burst", Hidden: readOnly, Value: serve.DefaultAPIBurst, Usage: "job API requests a caller may make at once after a pause", EnvVars: []string{"FAIRWAY_HTTP_BURST"}},
		&cli.IntFlag{Name: "http-max-in-flight", Hidden: readOnly, Value: serve.DefaultAPIMaxInFlight, Usage: "job API requests answered at the same time, all callers; past it 503 with Retry-After", EnvVars: []string{"FAIRWAY_HTTP_MAX_IN_FLIGHT"}},
		&cli.BoolFlag{Name: "no-ha", Hidden: readOnly, Usage: "write without the PostgreSQL leader lease (only when a single serve runs)", EnvVars: []string{"FAIRWAY_NO_HA"}},
		&cli.IntFlag{Name: "history-days", Value: 30, Usage: "days of finished jobs loaded at start to warm the predictor and fair-share usage", EnvVars: []string{"FAIRWAY_HISTORY_DAYS"}},
		&cli.IntFlag{Name: "sync-history-every", Hidden: readOnly, Value: 10, Usage: "cycles between incremental slurmdbd history pulls (see --history-from); 0 = never", EnvVars: []string{"FAIRWAY_SYNC_HISTORY_EVERY"}},
		&cli.StringFlag{Name: "history-from", Value: historyFromREST, Usage: "how history pulls read slurmdbd: rest (slurmrestd's slurmdbd plugin, same URL and token) or sacct (sacct --json on this host)", EnvVars: []string{"FAIRWAY_HISTORY_FROM"}},
		&cli.DurationFlag{Name: "charge-every", Hidden: readOnly, Value: policy.DefaultChargeEvery, Usage: "how often running jobs are charged to fair-share usage (Slurm's PriorityCalcPeriod)", EnvVars: []string{"FAIRWAY_CHARGE_EVERY"}},
		&cli.IntFlag{Name: "buffer-limit", Hidden: readOnly, Value: serve.DefaultBufferLimit, Usage: "records kept in memory while PostgreSQL is down; past it they are spilled to --buffer-dir", EnvVars: []string{"FAIRWAY_BUFFER_LIMIT"}},
		&cli.StringFlag{Name: "buffer-dir", Hidden: readOnly, Value: "/var/lib/fairway/serve-buffer", Usage: "directory for records spilled while PostgreSQL is down (created, mode 0700); shipped when it is back, also after a restart", EnvVars: []string{"FAIRWAY_BUFFER_DIR"}},
		&cli.IntFlag{Name: "shards-per-gpu", Value: 4, Usage: "shards one GPU is split into (gres.conf), to weigh shard jobs", EnvVars: []string{"FAIRWAY_SHARDS_PER_GPU"}},
		&cli.IntFlag{Name: "retention-job-months", Hidden: readOnly, Value: accounting.DefaultRetention.JobMonths, Usage: "whole months of jobs, GPU usage and predictions kept besides the current one (the leader drops older monthly partitions once a day); 0 = keep all", EnvVars: []string{"FAIRWAY_RETENTION_JOB_MONTHS"}},
		&cli.IntFlag{Name: "retention-decision-days", Hidden: readOnly, Value: accounting.DefaultRetention.DecisionDays, Usage: "days of decisions (whole monthly partitions) and cycle timings kept; 0 = keep all", EnvVars: []string{"FAIRWAY_RETENTION_DECISION_DAYS"}},
		&cli.BoolFlag{Name: "once", Hidden: readOnly, Usage: "run one cycle, print what it decided, and exit"})
	flags = append(flags, powerServeFlags(readOnly)...)
	return append(flags, rewriteFlags(readOnly)...)
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the sidecar: read Slurm, rank pending jobs fairly, write the order back",
		Flags: serveFlags(false),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			cfg, err := serveSettings(c)
			if err != nil {
				return err
			}
			return runServe(c.Context, c, cfg, log)
		},
	}
}

// serveSettings validates every setting once and says which one is wrong.
func serveSettings(c *cli.Context) (serveConfig, error) {
	cfg := serveConfig{
		Slurm: slurmConnect(c), WriteModeName: c.String("write-mode"), Gap: c.Int64("gap"), DatabaseURL: c.String("database-url"),
		Interval: c.Duration("interval"), MaxBackoff: c.Duration("max-backoff"), Listen: c.String("listen"),
		HTTPAddr: c.String("http-addr"), API: serve.APIConfig{UserHeader: c.String("http-user-header"), AllUsers: c.Bool("http-all-users"),
			Rate: c.Float64("http-rate"), Burst: c.Int("http-burst"), MaxInFlight: c.Int("http-max-in-flight")},
		HA: !c.Bool("no-ha"), HistoryDays: c.Int("history-days"), SyncEvery: c.Int("sync-history-every"), HistoryFrom: c.String("history-from"),
		Once: c.Bool("once"), ChargeEvery: c.Duration("charge-every"), ShardsPerGPU: c.Int("shards-per-gpu"),
		Retention: accounting.Retention{JobMonths: c.Int("retention-job-months"), DecisionDays: c.Int("retention-decision-days")},
		Planned:   c.Bool("dry-run"), RewriteRules: c.String("rewrite-rules"), Rewrite: rewriteSettings(c),
	}
	var err error
	cfg.PowerMode = c.String("power")
	if cfg.Power, err = powerServeSettings(c); err != nil {
		return cfg, err
	}
	if err := policyOrFile(c); err != nil {
		return cfg, err
	}
	cfg.Runner = serve.Config{
		Cluster: c.String("cluster"), Policy: c.String("policy"), PolicyFile: c.String("policy-file"), Predictor: c.String("predictor"),
		MaxWrites: c.Int("max-writes"), Partitions: c.StringSlice("partitions"), ExcludePartitions: c.StringSlice("exclude-partitions"),
		ExemptQOS: c.StringSlice("exempt-qos"), BufferLimit: c.Int("buffer-limit"), BufferDir: c.String("buffer-dir"),
		Forecast: c.String("http-addr") != "", ForecastAsync: true,
	}
	if c.Command != nil && c.Command.Name != "serve" {
		// explain and queue read serve's environment and config file but
		// answer no HTTP: the job API's audience is not theirs to refuse.
		cfg.HTTPAddr = ""
	}
	return cfg, cfg.Validate()
}

// policyOrFile refuses --policy and --policy-file set together: which one
// the admin meant cannot be known, and ranking with the other one without
// a word would be the surprise a daemon must not spring. --policy's
// default does not count as set.
func policyOrFile(c *cli.Context) error {
	if c.String("policy-file") == "" || !c.IsSet("policy") {
		return nil
	}
	return fmt.Errorf("--policy %s and --policy-file %s are both set (on the command line, as FAIRWAY_POLICY and FAIRWAY_POLICY_FILE in the environment, or in the config file): a policy file replaces --policy, so set only one",
		c.String("policy"), c.String("policy-file"))
}

// Power-saving modes (--power).
const (
	powerOff    = "off"
	powerDryRun = "dry-run" // decide and record, change nothing
	powerOn     = "on"
)

// powerServeFlags are serve's power-saving settings (INSTALL.md, "Power
// saving"), hidden from a help that does not list them.
func powerServeFlags(hidden bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "power", Hidden: hidden, Value: powerOff, Usage: "power saving: off, dry-run (decide and record which idle nodes to power down or up, change nothing) or on (scontrol update nodename=N state=POWER_DOWN|POWER_UP)", EnvVars: []string{"FAIRWAY_POWER"}},
		&cli.IntFlag{Name: "power-buffer", Hidden: hidden, Value: 1, Usage: "idle nodes kept powered above demand (busy nodes, nodes pending jobs wait for, and the forecast)", EnvVars: []string{"FAIRWAY_POWER_BUFFER"}},
		&cli.IntFlag{Name: "power-max-changes-per-hour", Hidden: hidden, Value: 10, Usage: "power-downs and forecast power-ups per hour at most; power-ups for jobs waiting now are never held back", EnvVars: []string{"FAIRWAY_POWER_MAX_CHANGES_PER_HOUR"}},
		&cli.Float64Flag{Name: "power-idle-watts", Hidden: hidden, Value: 0, Usage: "power an idle node draws, for the report's energy estimate (0: no estimate)", EnvVars: []string{"FAIRWAY_POWER_IDLE_WATTS"}},
		&cli.StringFlag{Name: "power-exclude", Hidden: hidden, Usage: "nodes never powered down or up, as a Slurm host list (e.g. gpu[1-2],login1): SuspendExcNodes' role for Fairway", EnvVars: []string{"FAIRWAY_POWER_EXCLUDE"}},
		&cli.StringFlag{Name: "power-nowcast", Hidden: hidden, Value: "off", Usage: "the trend nowcast of fairway power eval's hybrid, e.g. gain=0.5,window=2m,after=2m,expire=5m: when jobs have lacked powered nodes for after and demand still rises, power up ceil(gain × its rise over window) more nodes (within --power-max-changes-per-hour); those still idle expire after they came up may go down again; off by default", EnvVars: []string{"FAIRWAY_POWER_NOWCAST"}},
		&cli.DurationFlag{Name: "power-horizon", Hidden: hidden, Value: time.Hour, Usage: "how far ahead the demand forecast (the same time a day earlier, from serve's own observations) keeps nodes powered; 0: no forecast", EnvVars: []string{"FAIRWAY_POWER_HORIZON"}},
	}
}

// powerServeSettings reads the power-saving flags; serveConfig.Validate
// checks them.
func powerServeSettings(c *cli.Context) (serve.PowerConfig, error) {
	cfg := serve.PowerConfig{Buffer: c.Int("power-buffer"), MaxChangesPerHour: c.Int("power-max-changes-per-hour"),
		IdleWatts: c.Float64("power-idle-watts"), Horizon: c.Duration("power-horizon"), Step: 10 * time.Minute}
	ex, err := slurmctl.ExpandHostlist(c.String("power-exclude"))
	if err != nil {
		return cfg, fmt.Errorf("--power-exclude: %w", err)
	}
	cfg.Exclude = ex
	if cfg.Nowcast, err = power.ParseNowcast(c.String("power-nowcast")); err != nil {
		return cfg, fmt.Errorf("--power-nowcast: %w", err)
	}
	return cfg, nil
}

// runServe builds serve and runs its loop until ctx ends (SIGTERM/SIGINT),
// or, with --once, one cycle whose decisions it prints.
func runServe(ctx context.Context, c *cli.Context, cfg serveConfig, base *slog.Logger) error {
	cfg.WaitForSlurm = !cfg.Once
	if cfg.WriteMode != slurmctl.ModeRESTPriority {
		checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		checkSlurmWeights(checkCtx, slurmctl.Commands{Runner: slurmctl.ExecRunner{}}, cfg.Gap, base)
		cancel()
	}
	s, err := buildServe(ctx, cfg, base)
	if err != nil {
		return err
	}
	defer s.Close()
	if !cfg.Once {
		return serveLoop(ctx, cfg, s, base)
	}
	res, err := s.Runner.RunCycle(ctx)
	if err != nil {
		return err
	}
	return printOnce(c.App.Writer, res, cfg)
}

// checkSlurmWeights warns, at serve's start, when Slurm would not keep the
// order of the site factors serve writes: Slurm's own priority terms can
// move a job by as much as the gap between two consecutive values (their
// weights sum to at least --gap), or without bound, or Slurm does not use
// site factors at all (priority/basic). INSTALL.md, "Slurm priority
// settings", says what to set. When `scontrol show config` cannot be read
// (no scontrol on serve's host) it says it cannot tell, and serve goes on.
func checkSlurmWeights(ctx context.Context, cmds slurmctl.Commands, gap int64, log *slog.Logger) {
	cfg, err := cmds.ReadPriorityConfig(ctx, "")
	if err != nil {
		log.Info("cannot read Slurm's priority weights, so whether they can reorder Fairway's site factors is not checked", "err", err)
		return
	}
	if cfg.Type != "priority/multifactor" {
		log.Warn("Slurm ignores the site factors Fairway writes: PriorityType is not priority/multifactor (INSTALL.md, Slurm priority settings)", "priority_type", cfg.Type)
		return
	}
	sum, weights, unbounded := cfg.MaxMove()
	switch {
	case unbounded:
		log.Warn("Slurm's own priority terms can reorder Fairway's ranking by any amount: set them to 0 (INSTALL.md, Slurm priority settings)",
			"weights", strings.Join(weights, " "))
	case sum >= float64(gap):
		log.Warn("Slurm's own priority terms can reorder Fairway's ranking: set them to 0, or --gap above their sum (INSTALL.md, Slurm priority settings)",
			"sum", sum, "gap", gap, "weights", strings.Join(weights, " "))
	default:
		log.Debug("Slurm's own priority terms cannot reorder Fairway's ranking", "sum", sum, "gap", gap)
	}
}

// printOnce prints what one cycle decided, best first, and fails when
// any write failed, or when writes were asked for and another serve's lease
// kept them from Slurm, so that a script or an operator cannot take a cycle
// whose values never reached Slurm for a success.
func printOnce(w io.Writer, res *serve.CycleResult, cfg serveConfig) error {
	if err := writeCycleText(w, res, cfg.Runner.Policy, cfg.Runner.Field, cfg.Planned); err != nil {
		return err
	}
	if !cfg.Planned && !res.Leader {
		return fmt.Errorf("another fairway serve holds the leader lease of cluster %s: nothing written; "+
			"stop it first, or run with --dry-run", cfg.Runner.Cluster)
	}
	return res.Report.Err()
}
