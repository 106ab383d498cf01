package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/fairway-hpc/fairway/slurmctl/sidecar"
	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"
)

// Ways serve's history pulls read slurmdbd, as --history-from spells them.
const (
	historyFromREST  = "rest"
	historyFromSacct = "sacct"
)

// serveConfig is serve's validated configuration.
type serveConfig struct {
	runner  sidecar.Config
	rewrite sidecar.RewriteConfig // resource rewriting (rewrite.go)
	DryRun  bool                  // decides the Sink (serveSink), nothing else

	SlurmURL      string
	SlurmUser     string
	TokenFile     string
	TokenEnv      string // the JWT from $SLURM_JWT, never logged
	ScontrolToken bool
	APIVersion    string
	MaxBody       int64 // --slurm-max-body
	WriteMode     slurmctl.Mode

	Interval     time.Duration
	MaxBackoff   time.Duration
	Listen       string
	HTTPAddr     string            // the read-only job API; "" disables it
	API          sidecar.APIConfig // its privacy option
	HA           bool
	HistoryDays  int
	SyncEvery    int    // cycles between slurmdbd history syncs; 0 = never
	HistoryFrom  string // how they read slurmdbd: rest (slurmrestd) or sacct
	Once         bool
	ChargeEvery  time.Duration
	ShardsPerGPU int
	Retention    accounting.Retention
}

func serveFlags() []cli.Flag {
	return append([]cli.Flag{
		databaseFlag(),
		&cli.StringFlag{Name: "config", Usage: "file of FAIRWAY_...=value lines for settings not given otherwise (owned by root or the user running fairway, mode 0600; it may hold the database password)", EnvVars: []string{"FAIRWAY_CONFIG"}},
		&cli.StringFlag{Name: "cluster", Usage: "Slurm ClusterName, the key of this cluster's history", EnvVars: []string{"FAIRWAY_CLUSTER"}},
		&cli.StringFlag{Name: "slurm-url", Usage: "slurmrestd base URL", EnvVars: []string{"FAIRWAY_SLURM_URL"}},
		&cli.StringFlag{Name: "slurm-user", Value: "slurm", Usage: "user name sent to slurmrestd (an operator or SlurmUser)", EnvVars: []string{"FAIRWAY_SLURM_USER"}},
		&cli.StringFlag{Name: "slurm-token-file", Usage: "file holding the JWT (re-read when it changes); else $SLURM_JWT", EnvVars: []string{"FAIRWAY_SLURM_TOKEN_FILE"}},
		&cli.BoolFlag{Name: "scontrol-token", Usage: "mint and renew the JWT with \"scontrol token\" (Fairway runs as SlurmUser)", EnvVars: []string{"FAIRWAY_SCONTROL_TOKEN"}},
		&cli.StringFlag{Name: "slurm-api", Usage: "pin the REST API version (v0.0.38, v0.0.40 to v0.0.45); default: negotiate", EnvVars: []string{"FAIRWAY_SLURM_API"}},
		&cli.Int64Flag{Name: "slurm-max-body", Value: slurmctl.DefaultMaxResponseBytes, Usage: "largest slurmrestd answer read, in bytes: about 10 kB per job record on Slurm 24.11+ (3 kB on 22.05), so 256 MiB holds ~27,000 jobs; raise it with MaxJobCount", EnvVars: []string{"FAIRWAY_SLURM_MAX_BODY"}},
		&cli.StringFlag{Name: "write-mode", Value: "scontrol-site-factor", Usage: "scontrol-site-factor, rest-site-factor or rest-priority", EnvVars: []string{"FAIRWAY_WRITE_MODE"}},
		&cli.StringFlag{Name: "policy", Value: policy.DefaultPolicy, Usage: "ranking policy: " + strings.Join(policy.PolicyNames(), ", "), EnvVars: []string{"FAIRWAY_POLICY"}},
		&cli.StringFlag{Name: "predictor", Value: "fairway", Usage: "run-time predictor: " + strings.Join(predict.Names(), ", "), EnvVars: []string{"FAIRWAY_PREDICTOR"}},
		&cli.DurationFlag{Name: "interval", Value: 30 * time.Second, Usage: "time between cycles", EnvVars: []string{"FAIRWAY_INTERVAL"}},
		&cli.DurationFlag{Name: "max-backoff", Value: 5 * time.Minute, Usage: "longest wait between cycles while Slurm is unreadable", EnvVars: []string{"FAIRWAY_MAX_BACKOFF"}},
		&cli.BoolFlag{Name: "dry-run", Usage: "shadow mode: rank, log and record decisions, write nothing to Slurm", EnvVars: []string{"FAIRWAY_DRY_RUN"}},
		&cli.IntFlag{Name: "max-writes", Value: 5000, Usage: "changed values written per cycle at most (best-ranked first); 0 = no cap", EnvVars: []string{"FAIRWAY_MAX_WRITES"}},
		&cli.Int64Flag{Name: "gap", Value: 1, Usage: "least difference between two written values: above the sum of the PriorityWeight* Slurm keeps non-zero (INSTALL.md, Slurm priority settings)", EnvVars: []string{"FAIRWAY_GAP"}},
		&cli.StringSliceFlag{Name: "partitions", Usage: "rank only jobs in these partitions (default: all)", EnvVars: []string{"FAIRWAY_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exclude-partitions", Usage: "never rank or write jobs in these partitions", EnvVars: []string{"FAIRWAY_EXCLUDE_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exempt-qos", Usage: "never rank or write jobs with these QOS", EnvVars: []string{"FAIRWAY_EXEMPT_QOS"}},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9464", Usage: "address of /metrics, /healthz and /readyz; empty to disable", EnvVars: []string{"FAIRWAY_LISTEN"}},
		&cli.StringFlag{Name: "http-addr", Value: "127.0.0.1:9465", Usage: "address of the read-only job API (GET /v1/jobs/{id}, /v1/queue?user=U), answered from the last cycle's start-time forecast; empty to disable", EnvVars: []string{"FAIRWAY_HTTP_ADDR"}},
		&cli.StringFlag{Name: "http-user-header", Usage: "answer the job API only about the user this request header names (set by the site's authenticating proxy, which must strip it from clients), like PrivateData=jobs; empty: every job is visible", EnvVars: []string{"FAIRWAY_HTTP_USER_HEADER"}},
		&cli.BoolFlag{Name: "no-ha", Usage: "write without the PostgreSQL leader lease (only when a single serve runs)", EnvVars: []string{"FAIRWAY_NO_HA"}},
		&cli.IntFlag{Name: "history-days", Value: 30, Usage: "days of finished jobs loaded at start to warm the predictor and fair-share usage", EnvVars: []string{"FAIRWAY_HISTORY_DAYS"}},
		&cli.IntFlag{Name: "sync-history-every", Value: 10, Usage: "cycles between incremental slurmdbd history pulls (see --history-from); 0 = never", EnvVars: []string{"FAIRWAY_SYNC_HISTORY_EVERY"}},
		&cli.StringFlag{Name: "history-from", Value: historyFromREST, Usage: "how history pulls read slurmdbd: rest (slurmrestd's slurmdbd plugin, same URL and token) or sacct (sacct --json on this host)", EnvVars: []string{"FAIRWAY_HISTORY_FROM"}},
		&cli.DurationFlag{Name: "charge-every", Value: policy.DefaultChargeEvery, Usage: "how often running jobs are charged to fair-share usage (Slurm's PriorityCalcPeriod)", EnvVars: []string{"FAIRWAY_CHARGE_EVERY"}},
		&cli.IntFlag{Name: "buffer-limit", Value: sidecar.DefaultBufferLimit, Usage: "records kept in memory while PostgreSQL is down; past it they are spilled to --buffer-dir", EnvVars: []string{"FAIRWAY_BUFFER_LIMIT"}},
		&cli.StringFlag{Name: "buffer-dir", Value: "/var/lib/fairway/serve-buffer", Usage: "directory for records spilled while PostgreSQL is down (created, mode 0700); shipped when it is back, also after a restart", EnvVars: []string{"FAIRWAY_BUFFER_DIR"}},
		&cli.IntFlag{Name: "shards-per-gpu", Value: 4, Usage: "shards one GPU is split into (gres.conf), to weigh shard jobs", EnvVars: []string{"FAIRWAY_SHARDS_PER_GPU"}},
		&cli.IntFlag{Name: "retention-job-months", Value: accounting.DefaultRetention.JobMonths, Usage: "whole months of jobs, GPU usage and predictions kept besides the current one (the leader drops older monthly partitions once a day); 0 = keep all", EnvVars: []string{"FAIRWAY_RETENTION_JOB_MONTHS"}},
		&cli.IntFlag{Name: "retention-decision-days", Value: accounting.DefaultRetention.DecisionDays, Usage: "days of decisions (whole monthly partitions) and cycle timings kept; 0 = keep all", EnvVars: []string{"FAIRWAY_RETENTION_DECISION_DAYS"}},
		&cli.BoolFlag{Name: "once", Usage: "run one cycle, print what it decided, and exit"},
	}, rewriteFlags()...)
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the sidecar: read Slurm, rank pending jobs fairly, write the order back",
		Flags: serveFlags(),
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
		SlurmURL: c.String("slurm-url"), SlurmUser: c.String("slurm-user"), TokenFile: c.String("slurm-token-file"),
		TokenEnv: os.Getenv("SLURM_JWT"), ScontrolToken: c.Bool("scontrol-token"), APIVersion: c.String("slurm-api"),
		MaxBody:  c.Int64("slurm-max-body"),
		Interval: c.Duration("interval"), MaxBackoff: c.Duration("max-backoff"), Listen: c.String("listen"),
		HTTPAddr: c.String("http-addr"), API: sidecar.APIConfig{UserHeader: c.String("http-user-header")},
		HA: !c.Bool("no-ha"), HistoryDays: c.Int("history-days"), SyncEvery: c.Int("sync-history-every"), HistoryFrom: c.String("history-from"),
		Once: c.Bool("once"), ChargeEvery: c.Duration("charge-every"), ShardsPerGPU: c.Int("shards-per-gpu"),
		Retention: accounting.Retention{JobMonths: c.Int("retention-job-months"), DecisionDays: c.Int("retention-decision-days")},
	}
	cfg.DryRun = c.Bool("dry-run")
	cfg.runner = sidecar.Config{
		Cluster: c.String("cluster"), Policy: c.String("policy"), Predictor: c.String("predictor"),
		MaxWrites: c.Int("max-writes"), Partitions: c.StringSlice("partitions"), ExcludePartitions: c.StringSlice("exclude-partitions"),
		ExemptQOS: c.StringSlice("exempt-qos"), BufferLimit: c.Int("buffer-limit"), BufferDir: c.String("buffer-dir"),
		Forecast: c.String("http-addr") != "", ForecastAsync: true,
	}
	switch {
	case cfg.runner.Cluster == "":
		return cfg, errors.New("--cluster (FAIRWAY_CLUSTER) is required: Slurm's ClusterName")
	case cfg.SlurmURL == "":
		return cfg, errors.New("--slurm-url (FAIRWAY_SLURM_URL) is required, e.g. http://127.0.0.1:6820")
	case cfg.TokenFile == "" && cfg.TokenEnv == "" && !cfg.ScontrolToken:
		return cfg, errors.New("no slurmrestd token: set --slurm-token-file, $SLURM_JWT, or --scontrol-token")
	case cfg.Interval < time.Second:
		return cfg, fmt.Errorf("--interval %s: want at least 1s", cfg.Interval)
	case cfg.MaxBackoff < cfg.Interval:
		return cfg, fmt.Errorf("--max-backoff %s: want at least --interval (%s)", cfg.MaxBackoff, cfg.Interval)
	case cfg.runner.BufferLimit < 1:
		return cfg, fmt.Errorf("--buffer-limit %d: want at least 1", cfg.runner.BufferLimit)
	case cfg.runner.BufferDir == "":
		return cfg, errors.New("--buffer-dir is required: records spilled while PostgreSQL is down go there")
	case cfg.runner.MaxWrites < 0:
		return cfg, fmt.Errorf("--max-writes %d: want 0 (no cap) or more", cfg.runner.MaxWrites)
	case cfg.Retention.JobMonths < 0 || cfg.Retention.DecisionDays < 0:
		return cfg, errors.New("--retention-job-months and --retention-decision-days must not be negative (0 keeps everything)")
	case cfg.HistoryDays < 0 || cfg.SyncEvery < 0:
		return cfg, errors.New("--history-days and --sync-history-every must not be negative")
	case cfg.HistoryFrom != historyFromREST && cfg.HistoryFrom != historyFromSacct:
		return cfg, fmt.Errorf("--history-from %q: want %s or %s", cfg.HistoryFrom, historyFromREST, historyFromSacct)
	case !slices.Contains(policy.PolicyNames(), cfg.runner.Policy):
		return cfg, fmt.Errorf("--policy %q: want one of %s", cfg.runner.Policy, strings.Join(policy.PolicyNames(), ", "))
	case !slices.Contains(predict.Names(), cfg.runner.Predictor):
		return cfg, fmt.Errorf("--predictor %q: want one of %s", cfg.runner.Predictor, strings.Join(predict.Names(), ", "))
	case cfg.runner.Policy == "sjf-oracle":
		return cfg, errors.New("--policy sjf-oracle needs true run times: it exists only in `fairway simulate`")
	}
	mode, err := slurmctl.ParseMode(c.String("write-mode"))
	if err != nil {
		return cfg, fmt.Errorf("--write-mode: %w", err)
	}
	cfg.WriteMode = mode
	if mode == slurmctl.ModeRESTPriority {
		cfg.runner.Range, cfg.runner.Field = policy.PriorityRange(), "priority"
	} else {
		cfg.runner.Range, cfg.runner.Field = policy.SiteFactorRange(), "site_factor"
	}
	if g := c.Int64("gap"); g < 1 || g > cfg.runner.Range.Max/1000 {
		return cfg, fmt.Errorf("--gap %d: want 1 to %d", g, cfg.runner.Range.Max/1000)
	} else {
		cfg.runner.Range.Gap = g
	}
	if c.String("database-url") == "" {
		return cfg, errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL")
	}
	if cfg.rewrite, err = rewriteSettings(c, cfg.ShardsPerGPU, cfg.runner.Cluster); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// runServe wires the adapters around the engine and runs the loop until
// ctx ends (SIGTERM/SIGINT), finishing the cycle in flight.
func runServe(ctx context.Context, c *cli.Context, cfg serveConfig, base *slog.Logger) error {
	log := base.With("component", "serve")
	s, err := buildServe(ctx, cfg, c.String("database-url"), base)
	if err != nil {
		return err
	}
	defer s.close()
	r := s.runner
	if cfg.Once {
		res, err := r.RunCycle(ctx)
		if err != nil {
			return err
		}
		return printOnce(c.App.Writer, res, cfg)
	}

	var ready atomic.Bool
	if cfg.Listen != "" {
		srv, err := sidecar.StartHTTP(cfg.Listen, r.Metrics(), &ready, log)
		if err != nil {
			return err
		}
		defer shutdown(srv)
	}
	if cfg.HTTPAddr != "" {
		srv, err := sidecar.StartAPI(cfg.HTTPAddr, sidecar.NewAPI(cfg.API, r.LastForecast), log)
		if err != nil {
			return err
		}
		defer shutdown(srv)
	}
	log.Info("serving", "cluster", cfg.runner.Cluster, "policy", cfg.runner.Policy, "predictor", cfg.runner.Predictor,
		"write_mode", cfg.WriteMode.String(), "dry_run", cfg.DryRun, "ha", cfg.HA, "interval_seconds", cfg.Interval.Seconds(),
		"slurm_api", s.client.Version(), "history_from", cfg.HistoryFrom)

	var history accounting.HistorySource = &accounting.RESTHistory{Client: s.client, Cluster: cfg.runner.Cluster, Log: log.With("component", "history")}
	if cfg.HistoryFrom == historyFromSacct {
		history = &accounting.SacctHistory{Cluster: cfg.runner.Cluster}
	}
	sync := func(ctx context.Context) error {
		_, _, _, err := s.store.SyncHistory(ctx, history, accounting.SyncOptions{Cluster: cfg.runner.Cluster, SkipBad: true})
		return err
	}
	retain := func(ctx context.Context) error {
		rep, err := s.store.ApplyRetention(ctx, time.Now(), cfg.Retention)
		if err != nil {
			return err
		}
		log.Info("retention: history trimmed", "dropped_partitions", rep.Dropped, "cycles_pruned", rep.CyclesPruned,
			"jobs_kept_since", keptSince(rep.JobsSince), "decisions_kept_since", keptSince(rep.DecisionsSince))
		return nil
	}
	return r.Loop(ctx, sidecar.LoopConfig{Interval: cfg.Interval, MaxBackoff: cfg.MaxBackoff, SyncEvery: cfg.SyncEvery, Retain: retain}, &ready, sync)
}

// shutdown stops srv, giving its requests in flight 5 seconds.
func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// keptSince names a retention cutoff for the log.
func keptSince(t time.Time) string {
	if t.IsZero() {
		return "all"
	}
	return t.Format(time.RFC3339)
}

// serveStore is what serve keeps in and reads from the database
// (accounting.Store).
type serveStore interface {
	sidecar.Recorder
	sidecar.History
	sidecar.UsageSource
}

// serveDeps are the adapters a serve (or explain) cycle runs on; tests
// hand in fakes.
type serveDeps struct {
	source   sidecar.Source
	values   sidecar.ValueWriter
	resizes  sidecar.Resizer
	comments sidecar.CommentReader
	store    serveStore
	leader   sidecar.Leadership
}

// served is an opened serve: its adapters, its runner once built, and what
// must be closed after.
type served struct {
	runner *sidecar.Runner
	deps   serveDeps
	store  *accounting.Store
	client *slurmctl.Client
	close  func()
}

// openServe connects to PostgreSQL and slurmrestd and builds the adapters.
func openServe(ctx context.Context, cfg serveConfig, dbURL string, base *slog.Logger) (*served, error) {
	pool, store, err := accounting.Open(ctx, dbURL, base)
	if err != nil {
		return nil, err
	}
	closers := []func(){pool.Close}
	s := &served{store: store, close: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	fail := func(err error) (*served, error) { s.close(); return nil, err }

	client, err := newSlurmClient(ctx, slurmSettings{URL: cfg.SlurmURL, User: cfg.SlurmUser, TokenFile: cfg.TokenFile,
		TokenEnv: cfg.TokenEnv, ScontrolToken: cfg.ScontrolToken, APIVersion: cfg.APIVersion, MaxBody: cfg.MaxBody}, base)
	if err != nil {
		return fail(err)
	}
	s.client = client
	writer, err := slurmctl.NewWriter(slurmctl.WriterConfig{Mode: cfg.WriteMode, Range: cfg.runner.Range},
		client, base.With("component", "writer"))
	if err != nil {
		return fail(err)
	}
	resizes, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{}, base.With("component", "rewrite"))
	if err != nil {
		return fail(err)
	}
	var lead sidecar.Leadership = sidecar.AlwaysLeader{}
	if cfg.HA {
		pcfg, err := pgx.ParseConfig(dbURL)
		if err != nil {
			return fail(errors.New("--database-url is not a valid PostgreSQL URL or DSN"))
		}
		l := accounting.NewLease(pcfg, cfg.runner.Cluster, base.With("component", "leader"))
		closers = append(closers, l.Close)
		lead = l
	}
	s.deps = serveDeps{source: client, values: writer, resizes: resizes, comments: resizes, store: store, leader: lead}
	return s, nil
}

// buildServe opens serve's adapters and builds its runner.
func buildServe(ctx context.Context, cfg serveConfig, dbURL string, base *slog.Logger) (*served, error) {
	if cfg.runner.BufferDir != "" {
		if err := os.MkdirAll(cfg.runner.BufferDir, 0o700); err != nil {
			return nil, fmt.Errorf("--buffer-dir: %w", err)
		}
	}
	s, err := openServe(ctx, cfg, dbURL, base)
	if err != nil {
		return nil, err
	}
	if s.runner, err = newServeRunner(ctx, cfg, s.deps, serveSink(cfg, s.deps), base); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// serveSink is where serve's effects go: Slurm, the table and the database,
// or, with --dry-run, a Planner that writes nothing to Slurm or the disk and
// keeps the shadow decision log in the database.
func serveSink(cfg serveConfig, d serveDeps) sidecar.Sink {
	if cfg.DryRun {
		return sidecar.NewPlanner(d.store, nil)
	}
	return &sidecar.Live{Values: d.values, Resizes: d.resizes, Recorder: d.store}
}

// newServeRunner reads the cluster once (for its GPU count), warms the
// engine from history and returns the runner that hands every effect to
// sink.
func newServeRunner(ctx context.Context, cfg serveConfig, d serveDeps, sink sidecar.Sink, base *slog.Logger) (*sidecar.Runner, error) {
	log := base.With("component", "serve")
	cl, err := d.source.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("first read of the cluster: %w", err)
	}
	engine, err := sidecar.NewEngine(ctx, d.store, sidecar.EngineConfig{
		Cluster: cfg.runner.Cluster, Policy: cfg.runner.Policy, Predictor: cfg.runner.Predictor,
		GPUs: float64(cl.GPUs(cfg.runner.Partitions...)), ShardsPerGPU: cfg.ShardsPerGPU, ChargeEvery: cfg.ChargeEvery,
		HistoryDays: cfg.HistoryDays,
	}, log)
	if err != nil {
		return nil, err
	}
	rw, err := sidecar.NewRewriter(cfg.rewrite, base.With("component", "rewrite"), d.store, d.comments)
	if err != nil {
		return nil, err
	}
	return sidecar.New(cfg.runner, log, d.source, sink, d.leader, engine, rw, sidecar.NewMetrics()), nil
}

// printOnce prints what one cycle decided, best first.
func printOnce(w io.Writer, res *sidecar.CycleResult, cfg serveConfig) error {
	jobs := make(map[int64]*policy.Job, len(res.Snapshot.Pending))
	for i := range res.Snapshot.Pending {
		jobs[res.Snapshot.Pending[i].ID] = &res.Snapshot.Pending[i]
	}
	changed := make(map[int64]bool, len(res.Changed))
	for _, ch := range res.Changed {
		changed[ch.JobID] = true
	}
	mode := fmt.Sprintf("written: %d applied, %d failed", len(res.Report.Applied), len(res.Report.Failed))
	if res.DryRun {
		mode = "dry run: nothing written"
	}
	fmt.Fprintf(w, "policy %s, %d pending jobs ranked, %d values changed (%s)\n", cfg.runner.Policy, res.Pending, len(res.Changed), mode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RANK\tJOB\tUSER\tACCOUNT\tGPUS\tPREDICTED\tSCORE\t%s\tCHANGED\n", strings.ToUpper(cfg.runner.Field))
	for i, s := range res.Ranked {
		j := jobs[s.JobID]
		pred := "-"
		if d, ok := res.Snapshot.Predicted[s.JobID]; ok {
			pred = d.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%.4g\t%d\t%v\n", i+1, s.JobID, j.User, j.Account, j.GPUs, pred, s.Value, res.Values[s.JobID], changed[s.JobID])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printRewrite(w, res.Rewrite); err != nil {
		return err
	}
	return onceWriteErr(res.Report)
}

// onceWriteErr makes `serve --once` fail when any write failed, naming
// each job and why, so a script or an operator cannot take a cycle whose
// writes Slurm refused for a success.
func onceWriteErr(rep slurmctl.Report) error {
	if len(rep.Failed) == 0 && len(rep.ReadBack.Mismatches) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d writes failed", len(rep.Failed), len(rep.Planned))
	for _, f := range rep.Failed {
		fmt.Fprintf(&b, "\n  job %s: %v", f.Target, f.Err)
	}
	for _, m := range rep.ReadBack.Mismatches {
		fmt.Fprintf(&b, "\n  job %d read back wrong: %s", m.JobID, m.Why)
	}
	return errors.New(b.String())
}
