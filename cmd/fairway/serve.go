package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
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
	runner  runnerConfig
	rewrite rewriteConfig // resource rewriting (rewrite.go)

	SlurmURL      string
	SlurmUser     string
	TokenFile     string
	TokenEnv      string // the JWT from $SLURM_JWT, never logged
	ScontrolToken bool
	APIVersion    string
	WriteMode     slurmctl.Mode

	Interval     time.Duration
	MaxBackoff   time.Duration
	Listen       string
	HA           bool
	HistoryDays  int
	SyncEvery    int    // cycles between slurmdbd history syncs; 0 = never
	HistoryFrom  string // how they read slurmdbd: rest (slurmrestd) or sacct
	Once         bool
	ChargeEvery  time.Duration
	ShardsPerGPU int
}

func serveFlags() []cli.Flag {
	return append([]cli.Flag{
		databaseFlag(),
		&cli.StringFlag{Name: "config", Usage: "root-only file of FAIRWAY_...=value lines (for secrets such as the database password)", EnvVars: []string{"FAIRWAY_CONFIG"}},
		&cli.StringFlag{Name: "cluster", Usage: "Slurm ClusterName, the key of this cluster's history", EnvVars: []string{"FAIRWAY_CLUSTER"}},
		&cli.StringFlag{Name: "slurm-url", Usage: "slurmrestd base URL", EnvVars: []string{"FAIRWAY_SLURM_URL"}},
		&cli.StringFlag{Name: "slurm-user", Value: "slurm", Usage: "user name sent to slurmrestd (an operator or SlurmUser)", EnvVars: []string{"FAIRWAY_SLURM_USER"}},
		&cli.StringFlag{Name: "slurm-token-file", Usage: "file holding the JWT (re-read when it changes); else $SLURM_JWT", EnvVars: []string{"FAIRWAY_SLURM_TOKEN_FILE"}},
		&cli.BoolFlag{Name: "scontrol-token", Usage: "mint and renew the JWT with `scontrol token` (Fairway runs as SlurmUser)", EnvVars: []string{"FAIRWAY_SCONTROL_TOKEN"}},
		&cli.StringFlag{Name: "slurm-api", Usage: "pin the REST API version (v0.0.38, v0.0.40, v0.0.41); default: negotiate", EnvVars: []string{"FAIRWAY_SLURM_API"}},
		&cli.StringFlag{Name: "write-mode", Value: "scontrol-site-factor", Usage: "scontrol-site-factor, rest-site-factor or rest-priority", EnvVars: []string{"FAIRWAY_WRITE_MODE"}},
		&cli.StringFlag{Name: "policy", Value: policy.DefaultPolicy, Usage: "ranking policy: " + strings.Join(policy.PolicyNames(), ", "), EnvVars: []string{"FAIRWAY_POLICY"}},
		&cli.StringFlag{Name: "predictor", Value: "fairway", Usage: "run-time predictor: " + strings.Join(policy.PredictorNames(), ", "), EnvVars: []string{"FAIRWAY_PREDICTOR"}},
		&cli.DurationFlag{Name: "interval", Value: 30 * time.Second, Usage: "time between cycles", EnvVars: []string{"FAIRWAY_INTERVAL"}},
		&cli.DurationFlag{Name: "max-backoff", Value: 5 * time.Minute, Usage: "longest wait between cycles while Slurm is unreadable", EnvVars: []string{"FAIRWAY_MAX_BACKOFF"}},
		&cli.BoolFlag{Name: "dry-run", Usage: "shadow mode: rank, log and record decisions, write nothing to Slurm", EnvVars: []string{"FAIRWAY_DRY_RUN"}},
		&cli.IntFlag{Name: "max-writes", Value: 5000, Usage: "changed values written per cycle at most (best-ranked first); 0 = no cap", EnvVars: []string{"FAIRWAY_MAX_WRITES"}},
		&cli.Int64Flag{Name: "gap", Value: 1, Usage: "least difference between two written values: above the sum of the PriorityWeight* Slurm keeps non-zero (INSTALL.md, Slurm priority settings)", EnvVars: []string{"FAIRWAY_GAP"}},
		&cli.StringSliceFlag{Name: "partitions", Usage: "rank only jobs in these partitions (default: all)", EnvVars: []string{"FAIRWAY_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exclude-partitions", Usage: "never rank or write jobs in these partitions", EnvVars: []string{"FAIRWAY_EXCLUDE_PARTITIONS"}},
		&cli.StringSliceFlag{Name: "exempt-qos", Usage: "never rank or write jobs with these QOS", EnvVars: []string{"FAIRWAY_EXEMPT_QOS"}},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9464", Usage: "address of /metrics, /healthz and /readyz; empty to disable", EnvVars: []string{"FAIRWAY_LISTEN"}},
		&cli.BoolFlag{Name: "no-ha", Usage: "write without the PostgreSQL leader lease (only when a single serve runs)", EnvVars: []string{"FAIRWAY_NO_HA"}},
		&cli.IntFlag{Name: "history-days", Value: 30, Usage: "days of finished jobs loaded at start to warm the predictor and fair-share usage", EnvVars: []string{"FAIRWAY_HISTORY_DAYS"}},
		&cli.IntFlag{Name: "sync-history-every", Value: 10, Usage: "cycles between incremental slurmdbd history pulls (see --history-from); 0 = never", EnvVars: []string{"FAIRWAY_SYNC_HISTORY_EVERY"}},
		&cli.StringFlag{Name: "history-from", Value: historyFromREST, Usage: "how history pulls read slurmdbd: rest (slurmrestd's slurmdbd plugin, same URL and token) or sacct (sacct --json on this host)", EnvVars: []string{"FAIRWAY_HISTORY_FROM"}},
		&cli.DurationFlag{Name: "charge-every", Value: policy.DefaultChargeEvery, Usage: "how often running jobs are charged to fair-share usage (Slurm's PriorityCalcPeriod)", EnvVars: []string{"FAIRWAY_CHARGE_EVERY"}},
		&cli.IntFlag{Name: "shards-per-gpu", Value: 4, Usage: "shards one GPU is split into (gres.conf), to weigh shard jobs", EnvVars: []string{"FAIRWAY_SHARDS_PER_GPU"}},
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
			if err := applyConfigFile(c); err != nil {
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
		Interval: c.Duration("interval"), MaxBackoff: c.Duration("max-backoff"), Listen: c.String("listen"),
		HA: !c.Bool("no-ha"), HistoryDays: c.Int("history-days"), SyncEvery: c.Int("sync-history-every"), HistoryFrom: c.String("history-from"),
		Once: c.Bool("once"), ChargeEvery: c.Duration("charge-every"), ShardsPerGPU: c.Int("shards-per-gpu"),
	}
	cfg.runner = runnerConfig{
		Cluster: c.String("cluster"), Policy: c.String("policy"), Predictor: c.String("predictor"), DryRun: c.Bool("dry-run"),
		MaxWrites: c.Int("max-writes"), Partitions: c.StringSlice("partitions"), ExcludePartitions: c.StringSlice("exclude-partitions"),
		ExemptQOS: c.StringSlice("exempt-qos"),
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
	case cfg.runner.MaxWrites < 0:
		return cfg, fmt.Errorf("--max-writes %d: want 0 (no cap) or more", cfg.runner.MaxWrites)
	case cfg.HistoryDays < 0 || cfg.SyncEvery < 0:
		return cfg, errors.New("--history-days and --sync-history-every must not be negative")
	case cfg.HistoryFrom != historyFromREST && cfg.HistoryFrom != historyFromSacct:
		return cfg, fmt.Errorf("--history-from %q: want %s or %s", cfg.HistoryFrom, historyFromREST, historyFromSacct)
	case !slices.Contains(policy.PolicyNames(), cfg.runner.Policy):
		return cfg, fmt.Errorf("--policy %q: want one of %s", cfg.runner.Policy, strings.Join(policy.PolicyNames(), ", "))
	case !slices.Contains(policy.PredictorNames(), cfg.runner.Predictor):
		return cfg, fmt.Errorf("--predictor %q: want one of %s", cfg.runner.Predictor, strings.Join(policy.PredictorNames(), ", "))
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
	if cfg.rewrite, err = rewriteSettings(c, cfg.ShardsPerGPU, cfg.runner.DryRun, cfg.runner.Cluster); err != nil {
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
		res, err := r.runCycle(ctx)
		if err != nil {
			return err
		}
		return printOnce(c.App.Writer, res, cfg)
	}
	m := r.metrics
	store := s.store

	var ready atomic.Bool
	if cfg.Listen != "" {
		srv, err := startHTTP(cfg.Listen, m, &ready, log)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	log.Info("serving", "cluster", cfg.runner.Cluster, "policy", cfg.runner.Policy, "predictor", cfg.runner.Predictor,
		"write_mode", cfg.WriteMode.String(), "dry_run", cfg.runner.DryRun, "ha", cfg.HA, "interval_seconds", cfg.Interval.Seconds(),
		"slurm_api", s.client.Version(), "history_from", cfg.HistoryFrom)

	var history accounting.HistorySource = &accounting.RESTHistory{Client: s.client, Cluster: cfg.runner.Cluster}
	if cfg.HistoryFrom == historyFromSacct {
		history = &accounting.SacctHistory{Cluster: cfg.runner.Cluster}
	}
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping: signal received, no cycle in flight")
			return nil
		case <-time.After(wait):
		}
		// The cycle in flight finishes even when a signal arrives: it
		// runs on a context that is not cancelled by the signal, bounded
		// by a generous timeout.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*cfg.Interval+time.Minute)
		_, err := r.runCycle(cctx)
		if err == nil && cfg.SyncEvery > 0 && r.cycle%int64(cfg.SyncEvery) == 0 && r.wasLeader {
			if _, _, _, serr := store.SyncHistory(cctx, history, accounting.SyncOptions{Cluster: cfg.runner.Cluster, SkipBad: true}); serr != nil {
				log.Warn("slurmdbd history sync", "err", serr)
			}
		}
		cancel()
		switch {
		case err == nil:
			ready.Store(true)
			wait = cfg.Interval
		case errors.Is(err, errSlurmRead):
			ready.Store(false)
			wait = min(max(2*wait, cfg.Interval), cfg.MaxBackoff)
			log.Error("cycle skipped: cannot read Slurm; writing nothing", "err", err, "retry_in_seconds", wait.Seconds())
		default:
			ready.Store(false)
			wait = cfg.Interval
			log.Error("cycle failed", "err", err)
		}
	}
}

// served is a wired serve: the runner and what must be closed after it.
type served struct {
	runner *runner
	store  *accounting.Store
	client *slurmctl.Client
	close  func()
}

// buildServe connects to PostgreSQL and slurmrestd, warms the engine from
// history and returns the runner. Tests build the same thing.
func buildServe(ctx context.Context, cfg serveConfig, dbURL string, base *slog.Logger) (*served, error) {
	log := base.With("component", "serve")
	store, closeDB, err := openStoreURL(ctx, dbURL, base)
	if err != nil {
		return nil, err
	}
	closers := []func(){closeDB}
	s := &served{store: store, close: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	fail := func(err error) (*served, error) { s.close(); return nil, err }

	client, err := newSlurmClient(ctx, slurmSettings{URL: cfg.SlurmURL, User: cfg.SlurmUser, TokenFile: cfg.TokenFile,
		TokenEnv: cfg.TokenEnv, ScontrolToken: cfg.ScontrolToken, APIVersion: cfg.APIVersion}, base)
	if err != nil {
		return fail(err)
	}
	s.client = client
	writer, err := slurmctl.NewWriter(slurmctl.WriterConfig{Mode: cfg.WriteMode, Range: cfg.runner.Range, DryRun: cfg.runner.DryRun},
		client, base.With("component", "writer"))
	if err != nil {
		return fail(err)
	}
	cl, err := client.Read(ctx)
	if err != nil {
		return fail(fmt.Errorf("first read of the cluster: %w", err))
	}
	engine, err := newServeEngine(ctx, store, cfg, cl, log)
	if err != nil {
		return fail(err)
	}
	var lead leadership = alwaysLeader{}
	if cfg.HA {
		pcfg, err := pgx.ParseConfig(dbURL)
		if err != nil {
			return fail(errors.New("--database-url is not a valid PostgreSQL URL or DSN"))
		}
		l := newPGLeader(pcfg, cfg.runner.Cluster, base.With("component", "leader"))
		closers = append(closers, l.Close)
		lead = l
	}
	s.runner = newRunner(cfg.runner, log, client, writer, store, lead, engine, newMetrics())
	if s.runner.rewrite, err = buildRewriter(cfg.rewrite, store, base); err != nil {
		return fail(err)
	}
	return s, nil
}

// newServeEngine builds the engine and warms it with the cluster's recent
// history from the database: fair-share usage, VTC counters and the
// predictor start where the last run (or slurmdbd's history) left them.
func newServeEngine(ctx context.Context, store *accounting.Store, cfg serveConfig, cl *slurmctl.Cluster, log *slog.Logger) (*policy.Engine, error) {
	pol, err := policy.NewPolicy(cfg.runner.Policy, policy.PolicyParams{})
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	pred, err := policy.NewPredictor(cfg.runner.Predictor, policy.PredictorParams{})
	if err != nil {
		return nil, fmt.Errorf("--predictor: %w", err)
	}
	var shares *policy.Shares
	if tree, err := store.LoadShares(ctx, cfg.runner.Cluster); err != nil {
		return nil, fmt.Errorf("load shares: %w", err)
	} else if tree != nil && len(tree.Nodes) > 0 {
		shares = tree.Policy()
	} else {
		log.Warn("no share tree in the database: every account and user has one share; run `fairway shares sync`")
	}
	engine, err := policy.NewEngine(policy.EngineParams{
		Policy: pol, Predictor: pred, Shares: shares, GPUs: float64(cl.GPUs(cfg.runner.Partitions...)),
		Service: policy.Service{ShardsPerGPU: cfg.ShardsPerGPU}, ChargeEvery: cfg.ChargeEvery,
	})
	if err != nil {
		return nil, err
	}
	if cfg.HistoryDays == 0 {
		return engine, nil
	}
	now := time.Now()
	hist, err := store.FinishedJobs(ctx, cfg.runner.Cluster, now.AddDate(0, 0, -cfg.HistoryDays), now)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	slices.SortFunc(hist, func(a, b policy.Job) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	// One cycle that only learns: every finished job stopped, nothing pending.
	if _, _, err := engine.Cycle(&policy.Observation{Now: now, Stopped: hist}); err != nil {
		return nil, fmt.Errorf("warm up from history: %w", err)
	}
	log.Info("warmed up from history", "jobs", len(hist), "days", cfg.HistoryDays)
	return engine, nil
}

// startHTTP serves /metrics, /healthz (the process is alive) and /readyz
// (the last cycle succeeded).
func startHTTP(addr string, m *metrics, ready *atomic.Bool, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready: the last cycle did not complete", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	return srv, nil
}

// printOnce prints what one cycle decided, best first.
func printOnce(w io.Writer, res *cycleResult, cfg serveConfig) error {
	jobs := make(map[int64]*policy.Job, len(res.Snapshot.Pending))
	for i := range res.Snapshot.Pending {
		jobs[res.Snapshot.Pending[i].ID] = &res.Snapshot.Pending[i]
	}
	changed := make(map[int64]bool, len(res.Changed))
	for _, ch := range res.Changed {
		changed[ch.JobID] = true
	}
	mode := "written"
	if cfg.runner.DryRun || !res.Leader {
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
	return printRewrite(w, res.Rewrite)
}
