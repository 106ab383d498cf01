package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/jackc/pgx/v5"
)

// Ways serve's history pulls read slurmdbd (serveConfig.HistoryFrom).
const (
	historyFromREST  = "rest"
	historyFromSacct = "sacct"
)

// defaultRewriteTable is where serve writes the job_submit table and where
// contrib/slurm/job_submit.lua looks first: SlurmUser's state directory
// (fairway-serve.service's StateDirectory), not /etc/slurm, which must stay
// read-only to SlurmUser (else it could rewrite slurm.conf).
const defaultRewriteTable = "/var/lib/fairway/fairway-rewrite.table"

// serveConfig is `fairway serve`'s settings (explain and queue read with
// them too). Validate fills the fields derived from the others.
type serveConfig struct {
	Runner  serve.Config
	Rewrite serve.RewriteConfig
	// RewriteRules is the comma-separated rule list; Validate parses it
	// into Rewrite.Rules.
	RewriteRules string
	Planned      bool // decides the Sink (newSink), nothing else

	Slurm slurmctl.ConnectConfig // how serve reaches slurmrestd
	// WriteModeName is how values reach Slurm; Validate parses it into
	// WriteMode and picks Runner.Range and Runner.Field from it.
	WriteModeName string
	WriteMode     slurmctl.Mode
	Gap           int64 // least difference between two written values
	DatabaseURL   string

	Interval     time.Duration
	MaxBackoff   time.Duration
	Listen       string
	HTTPAddr     string          // the read-only job API; "" disables it
	API          serve.APIConfig // its audience and limits
	HA           bool
	HistoryDays  int
	SyncEvery    int    // cycles between slurmdbd history syncs; 0 = never
	HistoryFrom  string // how they read slurmdbd: historyFromREST or historyFromSacct
	Once         bool
	ChargeEvery  time.Duration
	ShardsPerGPU int
	Retention    accounting.Retention
	PowerMode    string // --power: powerOff, powerDryRun or powerOn
	Power        serve.PowerConfig

	// WaitForSlurm retries slurmrestd at start the way the loop does
	// mid-run (serve.StartRetry): serve's loop sets it; explain, queue and
	// serve --once answer now or fail.
	WaitForSlurm bool
	startSleep   func(context.Context, time.Duration) error // serve.StartRetry.Sleep; tests replace it
}

// startRetry waits for slurmrestd at start as the loop does mid-run.
func (c *serveConfig) startRetry(base *slog.Logger) serve.StartRetry {
	if !c.WaitForSlurm {
		return serve.StartRetry{Log: base}
	}
	return serve.StartRetry{Interval: c.Interval, MaxBackoff: c.MaxBackoff, Log: base.With("component", "serve"), Sleep: c.startSleep}
}

// Connect is how c reaches slurmrestd.
func (c *serveConfig) Connect() slurmctl.ConnectConfig {
	return c.Slurm
}

// Validate checks every setting, naming the first bad one by its flag, and
// fills WriteMode, Runner.Range, Runner.Field and Rewrite.Rules, and, with
// a policy file, Runner.Policy (the file's family).
func (c *serveConfig) Validate() error {
	switch {
	case c.Runner.Cluster == "":
		return errors.New("--cluster (FAIRWAY_CLUSTER) is required: Slurm's ClusterName")
	case c.Slurm.URL == "":
		return errors.New("--slurm-url (FAIRWAY_SLURM_URL) is required, e.g. http://127.0.0.1:6820")
	case !c.Connect().HasToken():
		return errors.New("no slurmrestd token: set --slurm-token-file, $SLURM_JWT, or --scontrol-token")
	case c.Interval < time.Second:
		return fmt.Errorf("--interval %s: want at least 1s", c.Interval)
	case c.MaxBackoff < c.Interval:
		return fmt.Errorf("--max-backoff %s: want at least --interval (%s)", c.MaxBackoff, c.Interval)
	case c.Runner.BufferLimit < 1:
		return fmt.Errorf("--buffer-limit %d: want at least 1", c.Runner.BufferLimit)
	case c.Runner.BufferDir == "":
		return errors.New("--buffer-dir is required: records spilled while PostgreSQL is down go there")
	case c.Runner.MaxWrites < 0:
		return fmt.Errorf("--max-writes %d: want 0 (no cap) or more", c.Runner.MaxWrites)
	case c.Retention.JobMonths < 0 || c.Retention.DecisionDays < 0:
		return errors.New("--retention-job-months and --retention-decision-days must not be negative (0 keeps everything)")
	case c.HistoryDays < 0 || c.SyncEvery < 0:
		return errors.New("--history-days and --sync-history-every must not be negative")
	case c.HistoryFrom != historyFromREST && c.HistoryFrom != historyFromSacct:
		return fmt.Errorf("--history-from %q: want %s or %s", c.HistoryFrom, historyFromREST, historyFromSacct)
	}
	if c.Runner.PolicyFile != "" {
		// Read now so that a bad file stops serve at start, naming it;
		// newServeRunner reads it again for the policy it ranks with.
		pf, err := serve.LoadPolicyFile(c.Runner.PolicyFile)
		if err != nil {
			return fmt.Errorf("--policy-file: %w", err)
		}
		c.Runner.Policy = pf.Policy.Name()
	}
	switch {
	case !known(c.Runner.Policy):
		return fmt.Errorf("--policy %q: want one of %s", c.Runner.Policy, strings.Join(policy.Names(), ", "))
	case !slices.Contains(predict.Names(), c.Runner.Predictor):
		return fmt.Errorf("--predictor %q: want one of %s", c.Runner.Predictor, strings.Join(predict.Names(), ", "))
	case needsTrueRunTimes(c.Runner.Policy):
		return fmt.Errorf("--policy %s needs true run times: it exists only in `fairway simulate`", c.Runner.Policy)
	}
	mode, err := slurmctl.ParseMode(c.WriteModeName)
	if err != nil {
		return fmt.Errorf("--write-mode: %w", err)
	}
	c.WriteMode = mode
	if mode == slurmctl.ModeRESTPriority {
		c.Runner.Range, c.Runner.Field = policy.PriorityRange(), "priority"
	} else {
		c.Runner.Range, c.Runner.Field = policy.SiteFactorRange(), "site_factor"
	}
	if c.Gap < 1 || c.Gap > c.Runner.Range.Max/1000 {
		return fmt.Errorf("--gap %d: want 1 to %d", c.Gap, c.Runner.Range.Max/1000)
	}
	c.Runner.Range.Gap = c.Gap
	if c.DatabaseURL == "" {
		return errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL")
	}
	if c.HTTPAddr != "" {
		if err := validateAPI(c.API); err != nil {
			return err
		}
	}
	switch c.PowerMode {
	case "", powerOff:
	case powerDryRun, powerOn:
		if err := c.Power.Validate(); err != nil {
			return flagError(err)
		}
	default:
		return fmt.Errorf("--power %q: want off, dry-run or on", c.PowerMode)
	}
	c.Rewrite.ShardsPerGPU, c.Rewrite.Cluster = c.ShardsPerGPU, c.Runner.Cluster
	if c.Rewrite.Rules, err = parseRules(c.RewriteRules); err != nil {
		return err
	}
	return validateRewrite(c.Rewrite)
}

// known reports whether name is a registered policy.
func known(name string) bool {
	_, ok := policy.Lookup(name)
	return ok
}

// needsTrueRunTimes reports whether the policy called name ranks by run
// times only the simulator knows.
func needsTrueRunTimes(name string) bool {
	e, ok := policy.Lookup(name)
	return ok && e.Traits.NeedsTrueRunTimes
}

// parseRules reads a comma-separated list of serve.RuleNames.
func parseRules(list string) (map[string]bool, error) {
	rules := map[string]bool{}
	for _, r := range strings.Split(list, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !slices.Contains(serve.RuleNames, r) {
			return rules, fmt.Errorf("--rewrite-rules: unknown rule %q: want some of %s", r, strings.Join(serve.RuleNames, ","))
		}
		rules[r] = true
	}
	return rules, nil
}

// validateRewrite checks the rewriting settings, naming the first bad one by its
// flag; with no partitions rewriting is off and nothing else matters.
func validateRewrite(c serve.RewriteConfig) error {
	switch {
	case len(c.Partitions) == 0:
		return nil
	case len(c.Rules) == 0:
		return errors.New("--rewrite-rules: empty while --rewrite-partitions is set")
	case c.Rules[rewrite.RuleShare] && c.Table == "":
		return errors.New("--rewrite-table is required by the share rule: the file job_submit.lua reads (default " + defaultRewriteTable + ")")
	case c.TableMaxRulesPerUser < 1 || c.TableMaxBytes < 4096 || c.TableMaxBytes > serve.MaxTableBytes:
		return fmt.Errorf("--rewrite-table-max-rules-per-user %d, --rewrite-table-max-bytes %d: want at least 1, and 4096 to %d (job_submit.lua ignores a larger table)",
			c.TableMaxRulesPerUser, c.TableMaxBytes, serve.MaxTableBytes)
	case c.Rules[rewrite.RuleShare] && c.ShardsPerGPU < 2:
		return fmt.Errorf("--shards-per-gpu %d: the share rule needs at least 2", c.ShardsPerGPU)
	case c.TableMaxAge < time.Minute:
		return fmt.Errorf("--rewrite-table-max-age %s: want at least 1m", c.TableMaxAge)
	case c.HistoryDays < 1 || c.RefreshEvery < 1 || c.MinHistory < 1:
		return errors.New("--rewrite-history-days, --rewrite-refresh-every and --rewrite-min-history must be at least 1")
	case c.CPUsPerGPU < 0 || c.MemPerGPUMB < 0:
		return errors.New("--rewrite-cpus-per-gpu and --rewrite-mem-per-gpu must not be negative")
	case c.ShareMaxUtil <= 0 || c.ShareMaxUtil > 100:
		return fmt.Errorf("--rewrite-share-max-util %g: want more than 0 and at most 100", c.ShareMaxUtil)
	}
	if c.Table != "" {
		dir := filepath.Dir(c.Table)
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("--rewrite-table %s: its directory must exist", c.Table)
		}
		// slurmctld applies whatever table it finds there to every user's
		// jobs, and a sticky bit does not help: another user can create
		// the file before serve does, and serve cannot then replace it.
		if st.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("--rewrite-table %s: its directory %s has mode %04o, writable by users other than its owner: "+
				"any of them could put a table there that job_submit.lua applies to every job (want 0755 or stricter, as the systemd unit's 0750)",
				c.Table, dir, st.Mode().Perm())
		}
	}
	return nil
}

// serveStore is what serve keeps in and reads from the database
// (accounting.Store).
type serveStore interface {
	serve.Recorder
	serve.History
	serve.UsageSource
	serve.JobFinder
}

// serveDeps are the adapters a serve (or explain) cycle runs on; tests hand in
// fakes.
type serveDeps struct {
	Source   serve.Source
	Values   serve.ValueWriter
	Resizes  serve.Resizer
	Comments serve.SlurmReader // pending jobs' comments and Slurm's limits, for rewriting
	Store    serveStore
	Leader   serve.Leadership
	// Now is the clock of the warm-up and of every cycle; nil: time.Now.
	Now func() time.Time
}

// openedServe is an opened serve: its adapters, its runner once built,
// and what must be closed after.
type openedServe struct {
	Runner *serve.Runner
	Deps   serveDeps
	Store  *accounting.Store
	Client *slurmctl.Client
	Close  func()
}

// openServe connects to PostgreSQL and slurmrestd and builds the adapters; the
// lease is taken only with cfg.HA.
func openServe(ctx context.Context, cfg serveConfig, base *slog.Logger) (*openedServe, error) {
	pool, store, err := accounting.Open(ctx, cfg.DatabaseURL, base)
	if err != nil {
		return nil, err
	}
	closers := []func(){pool.Close}
	s := &openedServe{Store: store, Close: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	fail := func(err error) (*openedServe, error) { s.Close(); return nil, err }

	client, err := connectSlurm(ctx, cfg, base)
	if err != nil {
		return fail(err)
	}
	s.Client = client
	writer, err := slurmctl.NewWriter(slurmctl.WriterConfig{Mode: cfg.WriteMode, Range: cfg.Runner.Range},
		client, base.With("component", "writer"))
	if err != nil {
		return fail(err)
	}
	resizes, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{}, base.With("component", "rewrite"))
	if err != nil {
		return fail(err)
	}
	var lead serve.Leadership = serve.AlwaysLeader{}
	if cfg.HA {
		pcfg, err := pgx.ParseConfig(cfg.DatabaseURL)
		if err != nil {
			return fail(errors.New("--database-url is not a valid PostgreSQL URL or DSN"))
		}
		l := accounting.NewLease(pcfg, cfg.Runner.Cluster, base.With("component", "leader"))
		closers = append(closers, l.Close)
		lead = l
	}
	s.Deps = serveDeps{Source: client, Values: writer, Resizes: resizes, Comments: resizes, Store: store, Leader: lead}
	return s, nil
}

// connectSlurm connects to slurmrestd, waiting for it with cfg's backoff
// when cfg.WaitForSlurm: a serve started while slurmrestd is down or
// restarting rides it out as a running one does.
func connectSlurm(ctx context.Context, cfg serveConfig, base *slog.Logger) (*slurmctl.Client, error) {
	var client *slurmctl.Client
	err := cfg.startRetry(base).Do(ctx, "connect to slurmrestd", func(ctx context.Context) error {
		var cerr error
		client, cerr = dialSlurm(ctx, cfg.Connect(), base)
		return cerr
	})
	return client, err
}

// buildServe opens serve's adapters and builds its runner from them.
func buildServe(ctx context.Context, cfg serveConfig, base *slog.Logger) (*openedServe, error) {
	if cfg.Runner.BufferDir != "" {
		if err := os.MkdirAll(cfg.Runner.BufferDir, 0o700); err != nil {
			return nil, fmt.Errorf("--buffer-dir: %w", err)
		}
	}
	s, err := openServe(ctx, cfg, base)
	if err != nil {
		return nil, err
	}
	m := serve.NewMetrics()
	ps, err := powerSaver(ctx, cfg, s.Store, m, base)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.Runner, err = newServeRunner(ctx, cfg, s.Deps, serve.Parts{Sink: newSink(cfg, s.Deps), Power: ps, Metrics: m}, base); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// powerSaver is serve's power saving, nil when --power is off. With
// --power dry-run its actions go to a planner that still reads the
// backfill plan's nodes through scontrol, whatever serve's own --dry-run.
func powerSaver(ctx context.Context, cfg serveConfig, store *accounting.Store, m *serve.Metrics, base *slog.Logger) (*serve.PowerSaver, error) {
	if cfg.PowerMode != powerOn && cfg.PowerMode != powerDryRun {
		return nil, nil
	}
	pw, err := slurmctl.NewPowerWriter(slurmctl.PowerConfig{})
	if err != nil {
		return nil, err
	}
	var to serve.PowerSink = &serve.PowerLive{PowerWriter: pw}
	if cfg.PowerMode == powerDryRun {
		to = &serve.PowerPlanner{Reader: pw}
	}
	ps, err := serve.NewPowerSaver(cfg.Power, cfg.Runner.Cluster, to, store, m, base.With("component", "power"))
	if err != nil {
		return nil, flagError(err)
	}
	// The hourly cap counts what an earlier serve changed too.
	now := time.Now()
	if recent, err := store.PowerActions(ctx, cfg.Runner.Cluster, "", now.Add(-time.Hour), now.Add(time.Second)); err == nil {
		var at []time.Time
		for _, a := range recent {
			if a.Action != "lack" && a.Error == "" {
				at = append(at, a.At)
			}
		}
		ps.SeedChanges(at)
	} else {
		base.Warn("read the last hour's power changes: the hourly cap starts from none", "err", err)
	}
	return ps, nil
}

// newSink is where serve's effects go: Slurm, the table and the database,
// or, with --dry-run (Planned), a Planner that writes nothing to Slurm or the disk and
// keeps the shadow decision log in the database.
func newSink(cfg serveConfig, d serveDeps) serve.Sink {
	if cfg.Planned {
		return serve.NewPlanner(d.Store, nil)
	}
	return &serve.Live{Values: d.Values, Resizes: d.Resizes, Recorder: d.Store}
}

// newServeRunner reads the cluster once (for its GPU count), warms the
// engine from history and builds the runner from d and parts (the sink,
// and power saving and metrics where set).
func newServeRunner(ctx context.Context, cfg serveConfig, d serveDeps, parts serve.Parts, base *slog.Logger) (*serve.Runner, error) {
	log := base.With("component", "serve")
	now := d.Now
	if now == nil {
		now = time.Now
	}
	var cl *slurmctl.Cluster
	err := cfg.startRetry(base).Do(ctx, "first read of the cluster", func(ctx context.Context) error {
		var rerr error
		cl, rerr = d.Source.Read(ctx)
		return rerr
	})
	if err != nil {
		return nil, fmt.Errorf("first read of the cluster: %w", err)
	}
	var listed []policy.Job
	for i := range cl.Jobs {
		if cl.Jobs[i].State.Finished() {
			listed = append(listed, cl.Jobs[i].Job)
		}
	}
	var pf *serve.PolicyFile
	if cfg.Runner.PolicyFile != "" {
		if pf, err = serve.LoadPolicyFile(cfg.Runner.PolicyFile); err != nil {
			return nil, fmt.Errorf("--policy-file: %w", err)
		}
	}
	engCfg := serve.EngineConfig{
		Cluster: cfg.Runner.Cluster, Policy: cfg.Runner.Policy, Predictor: cfg.Runner.Predictor,
		GPUs: float64(cl.GPUs(cfg.Runner.Partitions...)), ShardsPerGPU: cfg.ShardsPerGPU, ChargeEvery: cfg.ChargeEvery,
		HistoryDays: cfg.HistoryDays,
	}
	if pf != nil {
		engCfg.Ranker = pf.Policy
	}
	engine, err := serve.NewEngine(ctx, d.Store, engCfg, now(), listed, log)
	if err != nil {
		return nil, flagError(err)
	}
	rw, err := serve.NewRewriter(cfg.Rewrite, base.With("component", "rewrite"), d.Store, d.Comments)
	if err != nil {
		return nil, err
	}
	parts.Source, parts.Leader, parts.Engine, parts.Rewriter, parts.Now = d.Source, d.Leader, engine, rw, now
	r := serve.New(cfg.Runner, parts, log)
	if pf != nil {
		if err := r.SetPolicyFile(pf); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// serveLoop runs s's loop until ctx ends (SIGTERM/SIGINT), then stops within
// serve.Loop's bound (reads at once, writes after a grace, what was recorded
// shipped or spilled): metrics and health on cfg.Listen, the job API on
// cfg.HTTPAddr, history pulls every cfg.SyncEvery cycles and retention by the
// leader.
func serveLoop(ctx context.Context, cfg serveConfig, s *openedServe, base *slog.Logger) error {
	log := base.With("component", "serve")
	r := s.Runner
	var ready atomic.Bool
	if cfg.Listen != "" {
		srv, err := serve.StartHTTP(cfg.Listen, r.Metrics(), &ready, log)
		if err != nil {
			return fmt.Errorf("--listen %w", err)
		}
		defer shutdown(srv)
	}
	if cfg.HTTPAddr != "" {
		srv, err := serve.StartAPI(cfg.HTTPAddr, serve.NewAPI(cfg.API, r.LastForecast), log)
		if err != nil {
			return fmt.Errorf("--http-addr %w", err)
		}
		defer shutdown(srv)
	}
	log.Info("serving", "cluster", cfg.Runner.Cluster, "policy", cfg.Runner.Policy, "predictor", cfg.Runner.Predictor,
		"write_mode", cfg.WriteMode.String(), "dry_run", cfg.Planned, "ha", cfg.HA, "interval_seconds", cfg.Interval.Seconds(),
		"slurm_api", s.Client.Version(), "history_from", cfg.HistoryFrom)
	if pf := r.PolicyFile(); pf != nil {
		log.Info("ranking with a policy file, reloaded when it changes", "path", pf.Path, "policy", pf.Policy.Name(),
			"trained_on", pf.File.TrainedOn.String(), "objective", pf.File.Objective)
	}

	history := historySource(cfg, s.Client, base)
	sync := func(ctx context.Context) error {
		_, _, _, err := s.Store.SyncHistory(ctx, history, accounting.SyncOptions{Cluster: cfg.Runner.Cluster, SkipBad: true})
		return err
	}
	retain := func(ctx context.Context) error {
		rep, err := s.Store.ApplyRetention(ctx, time.Now(), cfg.Retention)
		if err != nil {
			return err
		}
		log.Info("retention: history trimmed", "dropped_partitions", rep.Dropped, "cycles_pruned", rep.CyclesPruned,
			"jobs_kept_since", keptSince(rep.JobsSince), "decisions_kept_since", keptSince(rep.DecisionsSince))
		return nil
	}
	return r.Loop(ctx, serve.LoopConfig{Interval: cfg.Interval, MaxBackoff: cfg.MaxBackoff, SyncEvery: cfg.SyncEvery, Retain: retain}, &ready, sync)
}

// historySource is where serve's history pulls read slurmdbd. Its logger
// is scoped from base, not from serve's: a second "component" key would
// make two of them on every line.
func historySource(cfg serveConfig, client accounting.SlurmdbJobs, base *slog.Logger) accounting.HistorySource {
	if cfg.HistoryFrom == historyFromSacct {
		return &accounting.SacctHistory{Cluster: cfg.Runner.Cluster, Slurm: slurmctl.Commands{}}
	}
	return &accounting.RESTHistory{Client: client, Cluster: cfg.Runner.Cluster, Log: base.With("component", "history")}
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

// openHistory picks where an ingest reads slurmdbd: through the slurmrestd
// s names, when it names one (this host then needs no Slurm client or
// munge), else the sacct binary on this host.
func openHistory(ctx context.Context, s slurmctl.ConnectConfig, sacct, cluster string, log *slog.Logger) (*accounting.NamedHistory, error) {
	if s.URL == "" {
		return &accounting.NamedHistory{HistorySource: &accounting.SacctHistory{Path: sacct, Cluster: cluster, Slurm: slurmctl.Commands{}}, Via: "sacct"}, nil
	}
	client, err := dialSlurm(ctx, s, log)
	if err != nil {
		return nil, err
	}
	return &accounting.NamedHistory{HistorySource: &accounting.RESTHistory{Client: client, Cluster: cluster, Log: log},
		Via: fmt.Sprintf("slurmrestd %s at %s", client.Version(), s.URL)}, nil
}

// connectShares connects to the slurmrestd that `shares sync --from
// slurmrestd` reads and returns it with its URL, naming the missing
// setting before trying.
func connectShares(ctx context.Context, s slurmctl.ConnectConfig, log *slog.Logger) (accounting.SharesClient, string, error) {
	if s.URL == "" {
		return nil, "", errors.New("--from slurmrestd: --slurm-url (FAIRWAY_SLURM_URL) is required")
	}
	if !s.HasToken() {
		return nil, "", errors.New("--from slurmrestd: no token: set --slurm-token-file, $SLURM_JWT or --scontrol-token")
	}
	client, err := dialSlurm(ctx, s, log)
	if err != nil {
		return nil, "", err
	}
	return sharesClient{client}, s.URL, nil
}

// validateAPI checks the job API's settings, naming the first bad one by
// its flag.
func validateAPI(c serve.APIConfig) error {
	switch {
	case c.UserHeader != "" && c.AllUsers:
		return errors.New("--http-user-header and --http-all-users: choose one (a header answers each user about their own jobs; all users shows every job to anyone)")
	case c.UserHeader == "" && !c.AllUsers:
		return errors.New("--http-addr: say who may read the job API: --http-user-header X-Remote-User behind your portal's authenticating proxy, " +
			"or --http-all-users to show every pending job to anyone who reaches the address (squeue without PrivateData=jobs); or --http-addr= to turn it off")
	case c.UserHeader != "" && !validHeaderName(c.UserHeader):
		return fmt.Errorf("--http-user-header %q: not an HTTP header name", c.UserHeader)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0) || c.Burst < 1 || c.MaxInFlight < 1:
		return fmt.Errorf("--http-rate %v, --http-burst %d, --http-max-in-flight %d: want positive numbers", c.Rate, c.Burst, c.MaxInFlight)
	}
	return nil
}

func validHeaderName(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return s != ""
}

// dialSlurm is slurmctl.Connect with a refused plain-http URL's way out
// named by its flag.
func dialSlurm(ctx context.Context, s slurmctl.ConnectConfig, log *slog.Logger) (*slurmctl.Client, error) {
	client, err := slurmctl.Connect(ctx, s, log)
	var ie *slurmctl.InsecureHTTPError
	if errors.As(err, &ie) {
		ie.Setting = "--slurm-allow-insecure-http"
		return nil, fmt.Errorf("slurmrestd at %s: %w", s.URL, ie)
	}
	return client, err
}

// sharesClient names the way out of a slurmrestd without /shares by the
// command that takes it.
type sharesClient struct{ *slurmctl.Client }

func (c sharesClient) Shares(ctx context.Context) ([]byte, error) {
	b, err := c.Client.Shares(ctx)
	var ns *slurmctl.NoSharesError
	if errors.As(err, &ns) {
		ns.Instead = "fairway shares sync --from slurmdbd (sacctmgr)"
	}
	return b, err
}

// flagOf names serve's settings, as internal/serve's typed field errors
// name them, by their flags.
var flagOf = map[string]string{"Policy": "--policy", "Predictor": "--predictor",
	"Partitions": "--partitions", "ExcludePartitions": "--exclude-partitions", "ExemptQOS": "--exempt-qos",
	"PowerConfig.Buffer": "--power-buffer", "PowerConfig.MaxChangesPerHour": "--power-max-changes-per-hour",
	"PowerConfig.IdleWatts": "--power-idle-watts", "PowerConfig.Exclude": "--power-exclude", "PowerConfig.Nowcast": "--power-nowcast"}

// flagError names the setting of a serve.FieldError by its flag, and the
// settings that leave a job out of the ranking (serve.NotQueuedError).
func flagError(err error) error {
	var fe *serve.FieldError
	if errors.As(err, &fe) {
		if f, ok := flagOf[fe.Field]; ok {
			if fe.Value != "" {
				return fmt.Errorf("%s %s: %w", f, fe.Value, fe.Err)
			}
			return fmt.Errorf("%s: %w", f, fe.Err)
		}
	}
	var nq *serve.NotQueuedError
	if errors.As(err, &nq) && len(nq.LeftOutBy) > 0 {
		flags := make([]string, len(nq.LeftOutBy))
		for i, f := range nq.LeftOutBy {
			if flags[i] = flagOf[f]; flags[i] == "" {
				return err
			}
		}
		or := strings.Join(flags[:len(flags)-1], ", ") + " or " + flags[len(flags)-1]
		if len(flags) == 1 {
			or = flags[0]
		}
		return &serve.NotQueuedError{JobID: nq.JobID, Why: nq.Why + ": " + or + " leave it out"}
	}
	return err
}
