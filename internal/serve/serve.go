package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// EngineConfig is what NewEngine needs of serve's settings.
type EngineConfig struct {
	Cluster string
	Policy  string
	// Ranker, when not nil, ranks instead of the registered policy
	// Policy names with its defaults: a policy file's.
	Ranker       policy.Policy
	Predictor    string
	GPUs         float64 // GPUs of the partitions ranked
	ShardsPerGPU int
	ChargeEvery  time.Duration
	HistoryDays  int // days of finished jobs to warm up from; 0: none
}

// History is what the engine warms up from (accounting.Store).
type History interface {
	LoadShares(ctx context.Context, cluster string) (*accounting.ShareTree, error)
	FinishedJobs(ctx context.Context, cluster string, since, until time.Time) ([]policy.Job, error)
}

// NewEngine builds the engine and warms it at now with the cluster's
// recent history: fair-share usage, VTC counters and the predictor start
// where the last run (or slurmdbd's history) left them, so a restart does
// not forget who used the cluster. listed are the finished jobs Slurm
// still lists: the first cycle records them in the history without
// charging them (Runner.stopped), so the warm-up takes those the history
// lacks yet. Without them a serve started before its first cycle stored
// them would rank from less history than an explain run just after it.
func NewEngine(ctx context.Context, h History, cfg EngineConfig, now time.Time, listed []policy.Job, log *slog.Logger) (*policy.Engine, error) {
	pol := cfg.Ranker
	if pol == nil {
		var err error
		if pol, err = policy.New(cfg.Policy, nil); err != nil {
			return nil, &FieldError{Field: "Policy", Err: err}
		}
	}
	pred, err := predict.New(cfg.Predictor, predict.Params{})
	if err != nil {
		return nil, &FieldError{Field: "Predictor", Err: err}
	}
	var shares *policy.Shares
	if tree, err := h.LoadShares(ctx, cfg.Cluster); err != nil {
		return nil, fmt.Errorf("load shares: %w", err)
	} else if tree != nil && len(tree.Nodes) > 0 {
		shares = tree.Policy()
	} else {
		log.Warn("no share tree in the database: every account and user has one share; run `fairway shares sync`")
	}
	engine, err := policy.NewEngine(policy.EngineParams{
		Policy: pol, Predictor: pred, Shares: shares, GPUs: cfg.GPUs,
		Service: policy.Service{ShardsPerGPU: cfg.ShardsPerGPU}, ChargeEvery: cfg.ChargeEvery,
	})
	if err != nil {
		return nil, err
	}
	if cfg.HistoryDays == 0 {
		return engine, nil
	}
	since := now.AddDate(0, 0, -cfg.HistoryDays)
	hist, err := h.FinishedJobs(ctx, cfg.Cluster, since, now)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	stored := len(hist)
	hist = withListed(hist, listed, since, now)
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
	log.Info("warmed up from history", "jobs", len(hist), "stored", stored, "listed_by_slurm", len(hist)-stored, "days", cfg.HistoryDays)
	return engine, nil
}

// withListed adds to hist the jobs of listed that ran, ended in [since,
// until) and are not in hist (the same job id, array task and submit
// time), as the first cycle will record them.
func withListed(hist, listed []policy.Job, since, until time.Time) []policy.Job {
	type key struct {
		id     int64
		task   int
		submit int64
	}
	have := make(map[key]bool, len(hist))
	for i := range hist {
		j := &hist[i]
		have[key{j.ID, j.ArrayTask, j.Submit.Unix()}] = true
	}
	for i := range listed {
		j := &listed[i]
		k := key{j.ID, j.ArrayTask, j.Submit.Unix()}
		if !j.State.Finished() || j.Start.IsZero() || j.End.Before(since) || !j.End.Before(until) || have[k] {
			continue
		}
		have[k] = true
		hist = append(hist, *j)
	}
	return hist
}

// LoopConfig is how often Loop runs cycles.
type LoopConfig struct {
	Interval   time.Duration
	MaxBackoff time.Duration // longest wait while Slurm is unreadable
	SyncEvery  int           // cycles between slurmdbd history syncs; 0: never
	// Retain, when not nil, applies the history's retention: while this
	// process leads, after its first successful cycle and then every
	// RetainEvery (a day when 0).
	Retain      func(ctx context.Context) error
	RetainEvery time.Duration
	// StopGrace is how long, after a signal, the cycle in flight may go
	// on writing what it decided and recording it; its reads stop at
	// once. 0: DefaultStopGrace.
	StopGrace time.Duration
}

// DefaultStopGrace and drainTimeout bound a stop: a Loop returns at most
// their sum after SIGTERM (70s), well within the TimeoutStopSec=120 of
// contrib/systemd's unit, whose SIGKILL would otherwise cut a write or
// the records' flush half way.
const (
	DefaultStopGrace = time.Minute
	drainTimeout     = 10 * time.Second
)

// HistorySyncer pulls slurmdbd's history into the database
// (accounting.Store.SyncHistory with the source bound).
type HistorySyncer func(ctx context.Context) error

// Loop runs cycles until ctx ends (SIGTERM/SIGINT), and then returns nil
// within StopGrace + drainTimeout: the cycle in flight stops reading and
// writes nothing new, a write batch already going gets StopGrace to
// finish, and what the cycles recorded is shipped to the database or,
// when it does not take it in time, spilled to BufferDir for the next
// serve (drain). ready is set while the last cycle succeeded (for
// /readyz); sync, when not nil, runs every SyncEvery cycles while this
// process leads.
func (r *Runner) Loop(ctx context.Context, cfg LoopConfig, ready *atomic.Bool, sync HistorySyncer) error {
	wait := time.Duration(0)
	if cfg.RetainEvery <= 0 {
		cfg.RetainEvery = 24 * time.Hour
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	var retained time.Time // last retention run; zero: none yet
	// A cycle logs only when it changes something, so the first one to
	// complete after failures says so: otherwise the last line an admin
	// sees stays "cycle skipped" while serve works again.
	var failed int64           // cycles failed in a row
	var failingSince time.Time // when the first of them ran
	for {
		select {
		case <-ctx.Done():
			r.log.Info("stopping: signal received, no cycle in flight")
			r.drain()
			return nil
		case <-time.After(wait):
		}
		// The cycle runs on a context of its own, bounded by a generous
		// timeout, so that a signal does not cut a write half way: the
		// signal stops its reads at once (ctx), and the rest StopGrace
		// later.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*cfg.Interval+time.Minute)
		unhook := context.AfterFunc(ctx, func() { time.AfterFunc(cfg.StopGrace, cancel) })
		_, err := r.runCycle(cctx, ctx)
		// History and retention are reads and trims: a signal stops them.
		sctx, scancel := untilDone(cctx, ctx)
		if err == nil && sync != nil && cfg.SyncEvery > 0 && r.cycle%int64(cfg.SyncEvery) == 0 && r.wasLeader {
			if serr := sync(sctx); serr != nil {
				r.log.Warn("slurmdbd history sync", "err", serr)
			}
		}
		if now := r.now(); err == nil && cfg.Retain != nil && r.wasLeader && (retained.IsZero() || now.Sub(retained) >= cfg.RetainEvery) {
			retained = now
			if rerr := cfg.Retain(sctx); rerr != nil {
				r.log.Warn("retention", "err", rerr)
			}
		}
		scancel()
		unhook()
		cancel()
		if ctx.Err() != nil {
			r.log.Info("stopping: signal received during a cycle", "cycle", r.cycle, "err", err)
			r.drain()
			return nil
		}
		if err != nil && failed == 0 {
			failingSince = r.now()
		}
		switch {
		case err == nil:
			if failed > 0 {
				r.log.Info("cycles complete again", "failed_cycles", failed,
					"failing_seconds", r.now().Sub(failingSince).Seconds())
			}
			failed = 0
			ready.Store(true)
			wait = cfg.Interval
		case errors.Is(err, ErrSlurmRead):
			failed++
			ready.Store(false)
			wait = min(max(2*wait, cfg.Interval), cfg.MaxBackoff)
			r.log.Error("cycle skipped: cannot read Slurm; writing nothing", "err", err, "retry_in_seconds", wait.Seconds())
		default:
			failed++
			ready.Store(false)
			wait = cfg.Interval
			r.log.Error("cycle failed", "err", err)
		}
	}
}

// StartHTTP serves /metrics, /healthz (the process is alive) and /readyz
// (the last cycle succeeded) on addr.
func StartHTTP(addr string, m *Metrics, ready *atomic.Bool, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready: the last cycle did not complete", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return listenAndServe(addr, "metrics server", mux, log)
}

// listenAndServe serves h on addr in the background.
func listenAndServe(addr, what string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	// The endpoints answer in microseconds; the timeouts keep idle, slow or
	// half-open clients from holding connections (and goroutines) for ever.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what, "err", err)
		}
	}()
	return srv, nil
}

// FieldError is a setting that is wrong. Field names it as the field of
// the config struct that holds it ("Policy" of EngineConfig), so that
// whoever reads the settings (cmd/fairway's flags, a config file) names it
// in its own words.
type FieldError struct {
	Field string
	Value string // the value refused, as written; "" when Err names it
	Err   error
}

func (e *FieldError) Error() string {
	if e.Value != "" {
		return e.Field + " " + e.Value + ": " + e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// AlwaysLeader is the Leadership of a serve run without HA (--no-ha) and
// of explain: nothing else writes.
type AlwaysLeader struct{}

// Leader implements Leadership.
func (AlwaysLeader) Leader(context.Context) bool { return true }

// Hold implements Leadership: there is no lease to lose.
func (AlwaysLeader) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}
