package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// CompareConfig is how Compare simulates a workload under several
// policies.
type CompareConfig struct {
	Policies []string
	Params   map[string]any // parameters by policy name (see policy.Entry.New); a policy not named gets its defaults
	// Ledger configures every simulation's fair-share ledger (the usage
	// half-life: a site's PriorityDecayHalfLife).
	Ledger policy.LedgerParams
	// Factories make the policies that are not registered under their
	// names (a policy file's row), by name.
	Factories map[string]PolicyFactory
	Predictor string // a predict.Predictors name, or "none"
	Backfill  Backfill
	// BackfillInterval and BackfillEpoch: the site's bf_interval, for
	// every simulation (Config.BackfillInterval).
	BackfillInterval time.Duration
	BackfillEpoch    time.Time
	Preempt          map[string]bool // policies simulated preemptively
	Parallel         int             // policies simulated at once (at least 1)
	// Share, when set, lets jobs share GPUs in every simulation (see
	// Share); Run only reads it.
	Share *Share
	// HeliosQSSF replays qssf as the Helios artifact's simulator does
	// (Config.HeliosQSSF, and the helios predictor's
	// HeliosParams.ArtifactRounding); the other policies are unchanged.
	HeliosQSSF bool
	// Progress, when set, is called from the simulations' goroutines with
	// a policy's jobs done so far.
	Progress func(policy string, done, total int)
}

// PolicyRun is one policy's simulation, measured.
type PolicyRun struct {
	Metrics Metrics
	Users   []UserWait
	JCT     []float64 // seconds, ascending
	Skipped map[string]int
}

// Compare simulates w under every policy of cfg, cfg.Parallel at a time
// (each simulation is one goroutine: its event loop is sequential), and
// returns the runs in cfg.Policies' order. The first failure stops the
// others.
func Compare(ctx context.Context, w *Workload, cfg CompareConfig) ([]PolicyRun, error) {
	runs := make([]PolicyRun, len(cfg.Policies))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(cfg.Parallel, 1))
	for i, name := range cfg.Policies {
		g.Go(func() error {
			run, err := comparePolicy(gctx, cfg, w, name)
			if err != nil {
				return fmt.Errorf("simulate %s: %w", name, err)
			}
			runs[i] = run
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return runs, nil
}

// SimConfig is the simulation of w under policy name as cfg says, stopped
// when ctx ends.
func (cfg CompareConfig) SimConfig(ctx context.Context, w *Workload, name string) (Config, error) {
	var pol policy.Policy
	var err error
	if mk := cfg.Factories[name]; mk != nil {
		pol, err = mk()
	} else {
		pol, err = policy.New(name, cfg.Params[name])
	}
	if err != nil {
		return Config{}, err
	}
	helios := cfg.HeliosQSSF && name == "qssf"
	var pred policy.Predictor
	if cfg.Predictor != "none" {
		if pred, err = predict.New(cfg.Predictor, predict.Params{Helios: predict.HeliosParams{ArtifactRounding: helios}}); err != nil {
			return Config{}, err
		}
	}
	return Config{Cluster: w.Cluster, Policy: pol, Predictor: pred, Backfill: cfg.Backfill, Preempt: cfg.Preempt[name], Ledger: cfg.Ledger, Share: cfg.Share,
		BackfillInterval: cfg.BackfillInterval, BackfillEpoch: cfg.BackfillEpoch, HeliosQSSF: helios,
		Progress: func(done, total int) error {
			if cfg.Progress != nil {
				cfg.Progress(name, done, total)
			}
			return ctx.Err()
		}}, nil
}

func comparePolicy(ctx context.Context, cfg CompareConfig, w *Workload, name string) (PolicyRun, error) {
	if err := ctx.Err(); err != nil {
		return PolicyRun{}, err
	}
	sc, err := cfg.SimConfig(ctx, w, name)
	if err != nil {
		return PolicyRun{}, err
	}
	res, err := Run(w.Jobs, sc)
	if err != nil {
		return PolicyRun{}, err
	}
	run := PolicyRun{Metrics: Measure(res, MetricsParams{}), Users: UserWaits(res), Skipped: res.Skipped}
	run.JCT = make([]float64, len(res.Jobs))
	for i := range res.Jobs {
		run.JCT[i] = res.Jobs[i].End.Sub(res.Jobs[i].Submit).Seconds()
	}
	slices.Sort(run.JCT)
	return run, nil
}
