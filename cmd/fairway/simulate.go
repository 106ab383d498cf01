package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/fairway-hpc/fairway/policy/sim/simplot"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// simulateConfig is `fairway simulate`'s validated settings.
type simulateConfig struct {
	sim.RunConfig
	JSON bool
	Out  string
	// Progress draws a status line on stderr (--progress).
	Progress bool
	// db, with --from-db, is where the workload is read instead of a
	// trace.
	db *tuneDB
	// Slurm is the slurm policy's settings (--slurm-config), nil when
	// not given; the cluster's size is the workload's.
	Slurm *policy.MultifactorParams
	// bfEpoch is when --slurm-config's backfill passes count from (its
	// BOOT_TIME).
	bfEpoch time.Time
	// slurmUnmodelled are --slurm-config's settings the slurm policy
	// leaves out (slurmctl.PriorityConfig.Unmodelled).
	slurmUnmodelled []string
	// notes is where simulate says what its slurm row leaves out, and
	// slurmConfig the --slurm-config file it names.
	notes       io.Writer
	slurmConfig string
	// HeliosQSSF replays qssf as the Helios artifact does (--helios-qssf).
	HeliosQSSF bool
}

// clusterJSON is a workload's cluster in JSON output.
type clusterJSON = sim.ClusterInfo

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "replay a trace through the ranking policies on a simulated Slurm cluster and compare them",
		Description: "Without --trace, simulates a small synthetic workload (`fairway trace synth` defaults, seed 1)\n" +
			"on 8 nodes × 8 GPUs. SWF traces run on one pool of the header's MaxProcs processors; Philly-MIX on\n" +
			"120 nodes × 8 GPUs (the Chronus artifact's cluster); Helios traces need --nodes.\n\n" +
			"Two evaluation protocols replay only part of the trace, each part on an empty cluster, every policy\n" +
			"without preemption. The trace's jobs are put in submit order; a fraction F of the trace is the\n" +
			"boundary index ⌊F × jobs⌋, so the parts before and from it never share a job.\n" +
			"  --split 0.7: replays the last 30% of submits and says which of fairshare's constraints each policy\n" +
			"    meets (avg wait ≤ fairshare's, Jain ≥ fairshare's − 0.01, max ρ ≤ fairshare's; all met when\n" +
			"    every policy gives the same schedule). fairshare is added to --policies when missing.\n" +
			"  --sequences 10 --length 1024: RLScheduler's protocol (SC'20): 10 windows of 1024 consecutive jobs\n" +
			"    from random starts (--seed) within --window-from/--window-to; the mean, spread and range of\n" +
			"    their average bounded slowdowns (τ = 10 s). Unlike RLScheduler's simulator, backfilling is\n" +
			"    Slurm's EASY in priority order (theirs backfills in FCFS order, only jobs that end before the\n" +
			"    reservation), runs are cut at their time limits, and jobs that ran 0 s are kept.\n" +
			"Unless --cold, the jobs that ended before a replay's first submit warm its fair-share ledger and\n" +
			"predictor first, as serve warms from the accounting history; jobs still pending or running then\n" +
			"are left out. A replay cannot know how users would react to another policy.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "trace file (gzip or plain); empty runs the bundled synthetic workload", EnvVars: []string{"FAIRWAY_SIMULATE_TRACE"}},
			&cli.StringFlag{Name: "format", Usage: "trace format: swf, helios or philly-mix (default: told from the file's first line)", EnvVars: []string{"FAIRWAY_SIMULATE_FORMAT"}},
			&cli.StringFlag{Name: "policies", Value: strings.Join(policy.Compared(), ","), Usage: "comma-separated policies to compare", EnvVars: []string{"FAIRWAY_SIMULATE_POLICIES"}},
			&cli.StringFlag{Name: "backfill", Value: string(sim.EASY), Usage: "easy or none", EnvVars: []string{"FAIRWAY_SIMULATE_BACKFILL"}},
			&cli.StringFlag{Name: "predictor", Value: "fairway", Usage: "run-time predictor, learning online (" + strings.Join(predict.Names(), ", ") + ", or none)", EnvVars: []string{"FAIRWAY_SIMULATE_PREDICTOR"}},
			&cli.StringFlag{Name: "preempt", Value: strings.Join(policy.Preemptive(), ","), Usage: "comma-separated policies simulated preemptively (requeue with checkpoint); empty for none", EnvVars: []string{"FAIRWAY_SIMULATE_PREEMPT"}},
			&cli.IntFlag{Name: "nodes", Usage: "number of nodes (0: the trace's default; an SWF trace given only --per-node gets MaxProcs ÷ --per-node, rounded up)", EnvVars: []string{"FAIRWAY_SIMULATE_NODES"}},
			&cli.BoolFlag{Name: "helios-qssf", Usage: "replay qssf as the Helios artifact's simulator does (contrib/helios/compare): each job ranked and predicted when it arrives and keeping that estimate, jobs arriving to an empty queue taken by GPU count, the helios predictor's arithmetic (a user's GPU-time estimate truncated to whole seconds); not with --split, --sequences, --suite, --power or --forecast", EnvVars: []string{"FAIRWAY_SIMULATE_HELIOS_QSSF"}},
			&cli.StringFlag{Name: "partitions", Usage: "partition the cluster: ';'-separated NAME:nodes=N,per-node=U[,type=T] (N new nodes of U GPUs, or processors for SWF, of GPU type T, in partition NAME; A+B:… puts them in both) or NAME:of=A+B (every node of A and B), the first partition the default; or a file of such entries, one a line; or slurmrestd: the live cluster's partitions, nodes and GPU types, read through --slurm-url. Jobs run only in their trace partition (SWF queue, Helios or Philly virtual cluster) and GPU type; not with --nodes, --per-node, preemption, --power or --forecast", EnvVars: []string{"FAIRWAY_SIMULATE_PARTITIONS"}},
			&cli.IntFlag{Name: "per-node", Usage: "GPUs (or processors, for SWF) per node (0: the trace's default; an SWF trace given only --nodes gets MaxProcs ÷ --nodes, rounded up)", EnvVars: []string{"FAIRWAY_SIMULATE_PER_NODE"}},
			&cli.StringFlag{Name: "slurm-config", Usage: "saved output of scontrol show config: replay the slurm policy (Slurm's multifactor priority) with its weights, PriorityMaxAge, PriorityFavorSmall, PriorityFlags, FairShareDampeningFactor and PriorityDecayHalfLife (every policy's fair-share half-life), beside --policies; as slurmctld acts, its priorities are held between PriorityCalcPeriod recalculations (from BOOT_TIME) and every policy is backfilled every bf_interval", EnvVars: []string{"FAIRWAY_SIMULATE_SLURM_CONFIG"}},
			&cli.StringFlag{Name: "slurm-partitions", Usage: "saved output of scontrol show partition -o: each partition's PriorityJobFactor and TRES totals for the slurm policy (with --slurm-config); without it every partition has factor 1 and the TRES totals are the simulated cluster's", EnvVars: []string{"FAIRWAY_SIMULATE_SLURM_PARTITIONS"}},
			&cli.StringFlag{Name: "slurm-qos", Usage: "saved output of sacctmgr -nP show qos format=Name,Priority: each QOS's priority for the slurm policy's QOS factor (with --slurm-config)", EnvVars: []string{"FAIRWAY_SIMULATE_SLURM_QOS"}},
			&cli.StringFlag{Name: "slurm-assoc", Usage: "saved output of sacctmgr -nP show associations format=Account,User,Partition,Priority: each association's priority for the slurm policy's association factor (PriorityWeightAssoc; with --slurm-config)", EnvVars: []string{"FAIRWAY_SIMULATE_SLURM_ASSOC"}},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table", EnvVars: []string{"FAIRWAY_SIMULATE_JSON"}},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "status line on stderr: auto (when stderr is a terminal), always or never", EnvVars: []string{"FAIRWAY_SIMULATE_PROGRESS"}},
			&cli.StringFlag{Name: "out", Usage: "directory for policies.csv, users.csv and SVG plots (JCT CDF, per-user wait)", EnvVars: []string{"FAIRWAY_SIMULATE_OUT"}},
			&cli.IntFlag{Name: "parallel", Value: runtime.GOMAXPROCS(0), Usage: "policies (with --suite, simulations) run at once", EnvVars: []string{"FAIRWAY_SIMULATE_PARALLEL"}},
			&cli.Float64Flag{Name: "load", Value: 1, Usage: "scale inter-arrival times so the offered load is this many times the trace's own", EnvVars: []string{"FAIRWAY_SIMULATE_LOAD"}},
			&cli.BoolFlag{Name: "suite", Usage: "replay every policy over the evaluation suite (CTC, KTH, SDSC-BLUE, Philly-MIX1, 3 synthetic seeds × loads) and judge the default", EnvVars: []string{"FAIRWAY_SIMULATE_SUITE"}},
			&cli.StringFlag{Name: "traces-dir", Value: defaultTracesDir, Usage: "with --suite: folder holding the suite's traces", EnvVars: []string{"FAIRWAY_TRACES", "FAIRWAY_TRACES_DIR"}},
			&cli.StringFlag{Name: "loads", Value: "0.8,1.0,1.2", Usage: "with --suite: comma-separated load factors", EnvVars: []string{"FAIRWAY_SIMULATE_LOADS"}},
			&cli.IntFlag{Name: "max-jobs", Usage: "with --suite, --split or --sequences: replay only each trace's first N jobs in submit order (0: all)", EnvVars: []string{"FAIRWAY_SIMULATE_MAX_JOBS"}},
			&cli.Float64Flag{Name: "split", Usage: "time-split evaluation: replay the submits after this fraction (0.7: the last 30%) with every policy, warmed on the history before, and judge each against fairshare (0: off)", EnvVars: []string{"FAIRWAY_SIMULATE_SPLIT"}},
			&cli.IntFlag{Name: "sequences", Usage: "RLScheduler's protocol: replay this many random windows of --length consecutive jobs, each on an empty cluster, and average their bounded slowdowns (0: off)", EnvVars: []string{"FAIRWAY_SIMULATE_SEQUENCES"}},
			&cli.IntFlag{Name: "length", Value: 1024, Usage: "with --sequences: jobs per sequence", EnvVars: []string{"FAIRWAY_SIMULATE_LENGTH"}},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "with --sequences: seed of the sequences' random starts", EnvVars: []string{"FAIRWAY_SIMULATE_SEED"}},
			&cli.Float64Flag{Name: "window-from", Value: 0, Usage: "with --sequences: draw them from the submits from this fraction of the trace (0.7: the last 30%)", EnvVars: []string{"FAIRWAY_SIMULATE_WINDOW_FROM"}},
			&cli.Float64Flag{Name: "window-to", Value: 1, Usage: "with --sequences: ... up to this fraction (0.7: the first 70%)", EnvVars: []string{"FAIRWAY_SIMULATE_WINDOW_TO"}},
			&cli.StringFlag{Name: "predictions", Value: string(sim.PredictOnline), Usage: "with --split or --sequences: online (each replay's predictor learns as jobs finish, as serve's does) or at-submit (each job predicted once from the history before its submit: faster, the same for every policy)", EnvVars: []string{"FAIRWAY_SIMULATE_PREDICTIONS"}},
			&cli.StringSliceFlag{Name: "policy-file", Usage: "with --split, --sequences or --suite: also replay the policy in this file (fairway tune writes one), as the row \"" + tunedRow + "\"; given more than once, each file's row is named after the file, without .json; with --suite each row is also judged by the default's criteria", EnvVars: []string{"FAIRWAY_SIMULATE_POLICY_FILE"}},
			&cli.BoolFlag{Name: "cold", Usage: "with --split or --sequences: no warm-up from the history before the replayed jobs (RLScheduler's own setting)", EnvVars: []string{"FAIRWAY_SIMULATE_COLD"}},
			&cli.BoolFlag{Name: "markdown", Usage: "with --suite: print Markdown tables (docs/POLICY.md)", EnvVars: []string{"FAIRWAY_SIMULATE_MARKDOWN"}},
			&cli.BoolFlag{Name: "no-predictors", Usage: "with --suite: skip scoring the predictors", EnvVars: []string{"FAIRWAY_SIMULATE_NO_PREDICTORS"}},
			&cli.BoolFlag{Name: "forecast", Usage: "measure start-time forecasts (predicted run times vs time limits) for one policy (default " + policy.Default + ") instead of comparing policies", EnvVars: []string{"FAIRWAY_SIMULATE_FORECAST"}},
			&cli.BoolFlag{Name: "power", Usage: "replay one policy (the first of --policies, default " + policy.Default + ") without power saving and with each power rule, and print the power table with the waits", EnvVars: []string{"FAIRWAY_SIMULATE_POWER"}},
			&cli.DurationFlag{Name: "resume-time", Value: 5 * time.Minute, Usage: "with --power: how long a powered-down node takes to come up for a job (Slurm's ResumeTimeout)", EnvVars: []string{"FAIRWAY_SIMULATE_RESUME_TIME"}},
			&cli.StringFlag{Name: "power-buffer", Value: "0,5,10,20", Usage: "with --power: comma-separated buffers of the artifact's predictive rule", EnvVars: []string{"FAIRWAY_SIMULATE_POWER_BUFFER"}},
			&cli.StringFlag{Name: "suspend-time", Value: "10m,30m,60m", Usage: "with --power: comma-separated SuspendTime settings of Slurm's idle-time rule", EnvVars: []string{"FAIRWAY_SIMULATE_SUSPEND_TIME"}},
			&cli.StringFlag{Name: "power-sequence", Usage: "with --power: also write the simulated node usage without power saving, one row a minute (time,active,total,pending: the most nodes with a running job in the minute, and the nodes queued jobs ask for), to this file, a node sequence for fairway power eval", EnvVars: []string{"FAIRWAY_SIMULATE_POWER_SEQUENCE"}},
			&cli.StringFlag{Name: "hybrid-idle", Value: "5m,50m", Usage: "with --power: comma-separated idle times of the hybrid rule (Slurm's idle clock holding the nodes the forecast wants: the GBT refit daily on the simulated usage)", EnvVars: []string{"FAIRWAY_SIMULATE_HYBRID_IDLE"}},
			&cli.StringFlag{Name: "nowcast", Value: "off", Usage: "with --power: also replay each hybrid with the trend nowcast, e.g. gain=0.5,window=2m,after=2m,expire=5m (when demand has lacked nodes for after and still rises, resume ceil(gain × its rise over window) more; those unused expire after they came up power down)", EnvVars: []string{"FAIRWAY_SIMULATE_NOWCAST"}},
			&cli.BoolFlag{Name: "share", Usage: "let jobs share GPUs, as Slurm's shards do: a one-GPU job whose user's earlier runs of the same job name used little of their GPU (the share rule serve's job_submit.lua table applies; GPU use drawn by a seeded model, since traces record none) and a trace job asking for shards run several to a GPU, each slowed by the interference model; prints what sharing did. No backfill (the default with --share), no preemption; not with --partitions, --power, --forecast, --suite, --split or --sequences", EnvVars: []string{"FAIRWAY_SIMULATE_SHARE"}},
			&cli.IntFlag{Name: "share-shards", Value: sim.DefaultShardsPerGPU, Usage: "with --share: shards per GPU (gres.conf), so the most jobs one GPU holds at once", EnvVars: []string{"FAIRWAY_SIMULATE_SHARE_SHARDS"}},
			&cli.Float64Flag{Name: "share-interference", Value: sim.DefaultInterference, Usage: "with --share: the interference β: n jobs on a GPU each run at 1/(max(1, Σ their solo utilizations) × (1 + β(n−1))) of their solo speed", EnvVars: []string{"FAIRWAY_SIMULATE_SHARE_INTERFERENCE"}},
			&cli.Uint64Flag{Name: "share-seed", Value: 1, Usage: "with --share: seed of the GPU usage model", EnvVars: []string{"FAIRWAY_SIMULATE_SHARE_SEED"}},
			&cli.Float64Flag{Name: "share-light", Value: sim.DefaultLightFraction, Usage: "with --share: fraction of the (user, job name) templates the usage model makes light (5-35% of a GPU)", EnvVars: []string{"FAIRWAY_SIMULATE_SHARE_LIGHT"}},
			&cli.BoolFlag{Name: "forecast-oracle", Usage: "with --forecast: also play each forecast with the true run times of the running jobs, and of every job (bounds on what a better predictor could give)", EnvVars: []string{"FAIRWAY_SIMULATE_FORECAST_ORACLE"}},
		}, append(simulateDBFlags(), slurmFlags("with --partitions slurmrestd: ", "with --partitions slurmrestd: read the live cluster's layout through this slurmrestd (base URL)")...)...),
		Action: func(c *cli.Context) error {
			if err := simulateModeFlags(c); err != nil {
				return err
			}
			if c.Bool("suite") {
				if c.String("partitions") != "" {
					return fmt.Errorf("--partitions: not with --suite (its traces have their own clusters)")
				}
				if c.Bool("share") {
					return fmt.Errorf("--share: not with --suite")
				}
				if c.Bool("helios-qssf") {
					return fmt.Errorf("--helios-qssf: not with --suite")
				}
				return simulateSuite(c)
			}
			cfg, err := simulateSettings(c)
			if err != nil {
				return err
			}
			cfg.notes = c.App.ErrWriter
			if c.IsSet("split") || c.IsSet("sequences") {
				return simulateProtocol(c, cfg)
			}
			if len(c.StringSlice("policy-file")) > 0 {
				return fmt.Errorf("--policy-file: only with --split, --sequences or --suite")
			}
			if c.Bool("power") {
				return simulatePower(c, cfg)
			}
			if c.Bool("forecast") {
				return simulateForecast(c.Context, cfg, c.IsSet("policies"), c.Bool("forecast-oracle"), c.App.Writer, os.Stderr)
			}
			return simulate(c.Context, cfg, c.App.Writer, os.Stderr)
		},
	}
}

// simulateOnly are simulate's flags that act in some of its modes only,
// with those modes: given in another, they would change nothing, and a
// replay that silently left out --max-jobs or --resume-time would answer
// a question the admin did not ask.
var simulateOnly = []struct{ flags, modes []string }{
	{[]string{"loads", "markdown", "no-predictors"}, []string{"suite"}},
	{[]string{"max-jobs"}, []string{"suite", "split", "sequences"}},
	{[]string{"length", "seed", "window-from", "window-to"}, []string{"sequences"}},
	{[]string{"predictions", "cold"}, []string{"split", "sequences"}},
	{[]string{"resume-time", "power-buffer", "suspend-time", "power-sequence", "hybrid-idle", "nowcast"}, []string{"power"}},
	{[]string{"forecast-oracle"}, []string{"forecast"}},
}

// suiteIgnores are the flags --suite has no use for: it replays its own
// traces, each on its own cluster, and prints its own tables.
var suiteIgnores = []string{"trace", "format", "from-db", "nodes", "per-node", "load", "split", "sequences", "power", "forecast", "out", "json", "slurm-config", "slurm-partitions", "slurm-qos", "slurm-assoc"}

// simulateModeFlags refuses a flag given in a mode that does not read it,
// naming the modes that do.
func simulateModeFlags(c *cli.Context) error {
	// A switch counts when on (FAIRWAY_SIMULATE_JSON=false gives none);
	// any other flag when set.
	switches := map[string]bool{}
	for _, f := range c.Command.Flags {
		if b, ok := f.(*cli.BoolFlag); ok {
			switches[b.Name] = true
		}
	}
	given := func(name string) bool {
		if switches[name] {
			return c.Bool(name)
		}
		return c.IsSet(name)
	}
	for _, g := range simulateOnly {
		if slices.ContainsFunc(g.modes, given) {
			continue
		}
		for _, f := range g.flags {
			if given(f) {
				return fmt.Errorf("--%s: only with --%s", f, orList(g.modes))
			}
		}
	}
	// The protocols, the power and forecast replays would run the slurm
	// row with none of the site's settings: as fifo.
	for _, m := range []string{"split", "sequences", "power", "forecast"} {
		if given("slurm-config") && given(m) {
			return fmt.Errorf("--slurm-config: not with --%s (only a plain replay runs the slurm policy with the site's settings)", m)
		}
	}
	if c.Bool("suite") {
		for _, f := range suiteIgnores {
			if given(f) {
				return fmt.Errorf("--%s: not with --suite (it replays its own traces on their own clusters)", f)
			}
		}
	}
	return nil
}

// orList is "a", "a or --b", "a, --b or --c": the flags of a message that
// starts with "--".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", --") + " or --" + names[len(names)-1]
}

// simulateSettings validates the flags once, naming the bad one.
func simulateSettings(c *cli.Context) (simulateConfig, error) {
	cfg := simulateConfig{RunConfig: sim.RunConfig{Trace: c.String("trace"), Nodes: c.Int("nodes"), PerNode: c.Int("per-node"),
		Parallel: c.Int("parallel"), Load: c.Float64("load"), Predictor: c.String("predictor")}, JSON: c.Bool("json"), Out: c.String("out")}
	var err error
	if cfg.Progress, err = progress.Wanted(c.String("progress"), os.Stderr); err != nil {
		return cfg, err
	}
	// Outputs are written after the replays, which may take an hour: one
	// that cannot be written is said now. A missing --out is made later.
	if st, err := os.Stat(cfg.Out); cfg.Out != "" && (err == nil && !st.IsDir() || errors.Is(err, syscall.ENOTDIR)) {
		return cfg, fmt.Errorf("--out %s: not a directory (simulate writes policies.csv, users.csv and its plots into it)", cfg.Out)
	}
	if path := c.String("power-sequence"); path != "" {
		if err := atomicfile.Check(path); err != nil {
			return cfg, fmt.Errorf("--power-sequence: %w", err)
		}
	}
	switch {
	case c.Bool("from-db") && cfg.Trace != "":
		return cfg, fmt.Errorf("--from-db and --trace: give one source")
	case cfg.Trace != "":
		if cfg.Format, err = trace.FileFormat(cfg.Trace, c.String("format")); err != nil {
			return cfg, err
		}
	case c.String("format") != "":
		return cfg, fmt.Errorf("--format: only with --trace")
	}
	ch, err := simChoice(sim.ParseChoice(c.String("policies"), c.String("preempt"), c.String("backfill"), c.String("predictor")))
	if err != nil {
		return cfg, err
	}
	if len(ch.Policies) == 0 {
		return cfg, fmt.Errorf("--policies: empty")
	}
	cfg.Policies, cfg.Preempt, cfg.Backfill = ch.Policies, ch.Preempt, ch.Backfill
	if c.Bool("from-db") {
		if cfg.db, err = simulateDBSettings(c); err != nil {
			return cfg, err
		}
	} else {
		for _, f := range []string{"month", "since", "until"} {
			if c.IsSet(f) {
				return cfg, fmt.Errorf("--%s: only with --from-db", f)
			}
		}
	}
	if c.String("partitions") != "" {
		if c.Bool("power") || c.Bool("forecast") {
			return cfg, fmt.Errorf("--partitions: not with --power or --forecast (not modelled on a partitioned cluster)")
		}
		// Preemption is not modelled on partitions: the policies that
		// default to it run without.
		if c.IsSet("preempt") && c.String("preempt") != "" {
			return cfg, fmt.Errorf("--partitions: not with --preempt (preemption is not modelled on a partitioned cluster; give --preempt '')")
		}
		cfg.Preempt = nil
		if cfg.Layout, err = layoutSettings(c); err != nil {
			return cfg, err
		}
	}
	if err := shareSettings(c, &cfg); err != nil {
		return cfg, err
	}
	if c.Bool("helios-qssf") {
		for _, f := range []string{"split", "sequences", "power", "forecast"} {
			if c.IsSet(f) {
				return cfg, fmt.Errorf("--helios-qssf: not with --%s", f)
			}
		}
		if !slices.Contains(cfg.Policies, "qssf") {
			return cfg, fmt.Errorf("--helios-qssf: --policies %s has no qssf, the policy it replays", strings.Join(cfg.Policies, ","))
		}
		if cfg.Preempt["qssf"] {
			return cfg, fmt.Errorf("--helios-qssf: qssf is in --preempt, and the artifact's QSSF does not preempt")
		}
		cfg.HeliosQSSF = true
	}
	if path := c.String("slurm-config"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("--slurm-config: %w", err)
		}
		pc, err := slurmctl.ParsePriorityConfig(b)
		if err != nil {
			return cfg, fmt.Errorf("--slurm-config %s: %w", path, err)
		}
		if pc.Type != "priority/multifactor" {
			return cfg, fmt.Errorf("--slurm-config %s: PriorityType is %s: the slurm policy replays priority/multifactor (fifo is priority/basic)", path, pc.Type)
		}
		cfg.Slurm, cfg.slurmUnmodelled, cfg.slurmConfig = &pc.Multifactor, pc.Unmodelled, path
		// Slurm's cadence, which the site's config sets: priorities held
		// between recalculations (PriorityCalcPeriod, from BOOT_TIME), and
		// backfill every bf_interval, for every policy (the scheduler acts
		// on any ranking so).
		cfg.Slurm.CalcPeriod, cfg.Slurm.CalcEpoch = pc.CalcPeriod, pc.BootTime
		if pc.SchedulerType == "sched/backfill" && cfg.Backfill != sim.NoBackfill {
			cfg.BackfillInterval, cfg.bfEpoch = pc.BackfillInterval, pc.BootTime
		}
		if !slices.Contains(cfg.Policies, "slurm") {
			cfg.Policies = append(cfg.Policies, "slurm")
		}
		if err := slurmSiteFiles(c, &cfg); err != nil {
			return cfg, err
		}
	} else {
		for _, f := range []string{"slurm-partitions", "slurm-qos", "slurm-assoc"} {
			if c.String(f) != "" {
				return cfg, fmt.Errorf("--%s: only with --slurm-config", f)
			}
		}
	}
	return cfg, simFlagError(cfg.Validate())
}

// slurmSiteFiles reads --slurm-partitions, --slurm-qos and --slurm-assoc
// into the slurm policy's settings, and names among what its row leaves
// out the weights whose per-partition, per-QOS or per-association values
// were not given.
func slurmSiteFiles(c *cli.Context, cfg *simulateConfig) error {
	m := cfg.Slurm
	leaveOut := func(format string, a ...any) {
		cfg.slurmUnmodelled = append(cfg.slurmUnmodelled, fmt.Sprintf(format, a...))
	}
	given, err := siteFile(c, "slurm-partitions", func(b []byte) error {
		parts, err := slurmctl.ParsePartitions(b)
		m.PartitionFactor, m.PartitionTRES = parts.Factor, parts.TRES
		return err
	})
	if err != nil {
		return err
	}
	if !given && m.WeightPartition > 0 {
		leaveOut("PriorityWeightPartition = %g with the partitions' PriorityJobFactor (every partition counts as 1; give --slurm-partitions)", m.WeightPartition)
	}
	given, err = siteFile(c, "slurm-qos", func(b []byte) (err error) {
		m.QOSPriority, err = slurmctl.ParseQOSPriorities(b)
		return err
	})
	if err != nil {
		return err
	}
	if !given && m.WeightQOS > 0 {
		leaveOut("PriorityWeightQOS = %g with the QOS priorities (every QOS counts as 0; give --slurm-qos)", m.WeightQOS)
	}
	var assocs slurmctl.AssocPriorities
	given, err = siteFile(c, "slurm-assoc", func(b []byte) (err error) {
		assocs, err = slurmctl.ParseAssocPriorities(b)
		m.AssocPriority, m.AssocMax = assocs.ByAssoc, assocs.Max
		return err
	})
	switch {
	case err != nil:
		return err
	case !given && m.WeightAssoc > 0:
		leaveOut("PriorityWeightAssoc = %g with the associations' priorities (every association counts as 0; give --slurm-assoc)", m.WeightAssoc)
	case assocs.PerPartition > 0 && m.WeightAssoc > 0:
		leaveOut("the priorities of %s (their jobs take their user's association's)", plural.N(assocs.PerPartition, "partition-specific association", "partition-specific associations"))
	}
	return nil
}

// siteFile reads the file --flag names, when given, and hands it to
// parse; a file that cannot be read or parsed is named in the error.
func siteFile(c *cli.Context, flag string, parse func([]byte) error) (given bool, err error) {
	path := c.String(flag)
	if path == "" {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return true, fmt.Errorf("--%s: %w", flag, err)
	}
	if err := parse(b); err != nil {
		return true, fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return true, nil
}

// countableTRES returns p's TRES weights less those the simulated
// cluster has no total of (a GPU cluster counts no CPUs, no trace gives
// the nodes' memory), which slurmctld would divide by: they join the
// settings the slurm row leaves out, as written in notes.
func countableTRES(p policy.MultifactorParams, left []string) (map[string]float64, []string) {
	left = slices.Clone(left)
	kept := map[string]float64{}
	var dropped []string
	for name, w := range p.WeightTRES {
		counted := p.NoNormalTRES
		for _, totals := range p.PartitionTRES {
			counted = counted || totals[name] > 0
		}
		if counted {
			kept[name] = w
		} else {
			dropped = append(dropped, fmt.Sprintf("%s=%g", name, w))
		}
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		left = append(left, "PriorityWeightTRES "+strings.Join(dropped, ",")+" (no partition has a total of it)")
	}
	return kept, left
}

func simulate(ctx context.Context, cfg simulateConfig, out io.Writer, errOut *os.File) error {
	w, err := cfg.workload(ctx)
	if err != nil {
		return err
	}
	notePartitions(cfg.notes, w)
	noteFlatTrace(cfg.notes, w)
	var onProgress func(string, int, int)
	started := time.Now()
	if cfg.Progress {
		onProgress = progress.NewTally(errOut, "simulating "+w.Name, plural.N(len(cfg.Policies), "policy", "policies"), "jobs", started).Update
	}
	cc := sim.CompareConfig{Policies: cfg.Policies, Predictor: cfg.Predictor, Backfill: cfg.Backfill,
		Preempt: cfg.Preempt, Parallel: cfg.Parallel, Progress: onProgress, Share: cfg.Share,
		BackfillInterval: cfg.BackfillInterval, BackfillEpoch: cfg.bfEpoch, HeliosQSSF: cfg.HeliosQSSF}
	if cfg.Slurm != nil {
		p := *cfg.Slurm
		if p.WeightJobSize > 0 && w.Cluster.Unit != sim.CPUs {
			return fmt.Errorf("--slurm-config: PriorityWeightJobSize %g: Slurm's job size factor counts CPUs, and %s is a cluster of %s", p.WeightJobSize, w.Name, w.Cluster.Unit)
		}
		p.ClusterNodes, p.ClusterCPUs = w.Cluster.Nodes, w.Cluster.Capacity()
		var left []string
		if p.PartitionTRES == nil { // no --slurm-partitions: the simulated cluster's
			p.PartitionTRES = w.Cluster.TRES()
		}
		p.WeightTRES, left = countableTRES(p, cfg.slurmUnmodelled)
		if len(left) > 0 && cfg.notes != nil {
			fmt.Fprintf(cfg.notes, "note: --slurm-config %s: the slurm policy does not replay %s: its row leaves them out\n", cfg.slurmConfig, strings.Join(left, "; "))
		}
		cc.Params = map[string]any{"slurm": p}
		cc.Ledger = policy.LedgerParams{HalfLife: p.DecayHalfLife}
	}
	runs, err := sim.Compare(ctx, w, cc)
	if onProgress != nil {
		fmt.Fprintf(errOut, "\r\033[Ksimulated %s in %s\n", plural.N(len(cfg.Policies), "policy", "policies"), time.Since(started).Round(time.Millisecond))
	}
	if err != nil {
		return err
	}
	rep := sim.NewReport(w, runs, cfg.RunConfig)
	if cfg.Out != "" {
		if err := rep.WriteCSV(cfg.Out, runs); err != nil {
			return err
		}
		if err := simplot.Write(cfg.Out, rep, runs); err != nil {
			return err
		}
	}
	if cfg.JSON {
		return printJSON(out, rep)
	}
	return rep.WriteText(out, cfg.Preempt)
}

// defaultTracesDir is where a checkout beside the project's shared data
// finds the suite's traces.
const defaultTracesDir = "../shared/data/traces"

// simulateSuite runs `fairway simulate --suite`.
func simulateSuite(c *cli.Context) error {
	cfg := sim.SuiteConfig{Traces: sim.SuiteTraces(c.String("traces-dir")), MaxJobs: c.Int("max-jobs"), Parallel: c.Int("parallel"),
		Predictors: !c.Bool("no-predictors")}
	ch, err := simChoice(sim.ParseChoice(c.String("policies"), c.String("preempt"), c.String("backfill"), c.String("predictor")))
	if err != nil {
		return err
	}
	cfg.Policies, cfg.Preempt, cfg.Backfill, cfg.Predictor = ch.Policies, ch.Preempt, ch.Backfill, ch.Predictor
	if len(cfg.Policies) == 0 {
		cfg.Policies = policy.Compared()
	}
	files, err := policyFileRows(c.StringSlice("policy-file"), cfg.Policies)
	if err != nil {
		return err
	}
	var rows []string
	if len(files) > 0 {
		cfg.Policies, cfg.Factories = slices.Clone(cfg.Policies), map[string]sim.PolicyFactory{}
		for _, f := range files {
			cfg.Policies = append(cfg.Policies, f.row)
			cfg.Factories[f.row] = f.mk
			rows = append(rows, f.row)
		}
	}
	if cfg.Loads, err = simLoads(sim.ParseLoads(c.String("loads"))); err != nil {
		return err
	}
	if c.Int("max-jobs") < 0 {
		return fmt.Errorf("--max-jobs %d: want >= 0", c.Int("max-jobs"))
	}
	show, err := progress.Wanted(c.String("progress"), os.Stderr)
	if err != nil {
		return err
	}
	if show {
		suiteStart := time.Now()
		cfg.Progress = func(msg string) {
			eta := "; " + progress.ETA(suiteStart, time.Now(), 0, 0)
			fmt.Fprint(os.Stderr, "\r\033[K"+progress.Fit(msg, progress.MaxLine-len(eta))+eta)
		}
	}
	res, err := sim.RunSuite(c.Context, cfg)
	if cfg.Progress != nil {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if c.Bool("markdown") {
		err = res.WriteMarkdown(c.App.Writer)
	} else {
		err = res.WriteText(c.App.Writer)
	}
	if err != nil || len(rows) == 0 {
		return err
	}
	return writeSuiteVerdict(c.App.Writer, res, rows)
}

// suiteScore is how a policy fares on the suite's criteria (sim.Criteria)
// as if it were the default: the trace × load rows where it meets every
// one, and the checks it meets over all rows.
type suiteScore struct {
	Name                 string
	AllMet, Rows         int
	Checks, ChecksJudged int
}

// scoreOnSuite judges name on every row of res as the default is judged.
func scoreOnSuite(res *sim.SuiteResult, name string) (suiteScore, error) {
	sc := suiteScore{Name: name, Rows: len(res.Rows)}
	for _, r := range res.Rows {
		var def *sim.Metrics
		others := map[string]sim.Metrics{}
		for i, m := range r.Metrics {
			if m.Name == name {
				def = &r.Metrics[i]
			} else {
				others[m.Name] = m
			}
		}
		if def == nil {
			return sc, fmt.Errorf("suite row %s × %.1f has no policy %q", r.Trace, r.Load, name)
		}
		met := 0
		cs := sim.Criteria(*def, others)
		for _, c := range cs {
			if c.Met {
				met++
			}
		}
		if met == len(cs) {
			sc.AllMet++
		}
		sc.Checks += met
		sc.ChecksJudged += len(cs)
	}
	return sc, nil
}

// better reports whether a does better than b on the suite: no fewer rows
// where every criterion is met and no fewer checks met, and more of one.
// A tie is not better, nor is a trade (more rows, fewer checks): changing
// the default must not lose on either count.
func (a suiteScore) better(b suiteScore) bool {
	return a.AllMet >= b.AllMet && a.Checks >= b.Checks && (a.AllMet > b.AllMet || a.Checks > b.Checks)
}

// verdict says how a compares with the default def, in words.
func (a suiteScore) verdict(def suiteScore) string {
	switch {
	case a.better(def):
		return "does better than " + def.Name
	case a.AllMet > def.AllMet:
		return fmt.Sprintf("does not do better than %s: more rows where every criterion is met, but fewer checks met", def.Name)
	case a.Checks > def.Checks:
		return fmt.Sprintf("does not do better than %s: more checks met, but fewer rows where every criterion is met", def.Name)
	}
	return "does not do better than " + def.Name
}

// writeSuiteVerdict judges each policy file's row as the default is
// judged and says whether it does better than the default: what `make
// tune-default` decides the shipped default by.
func writeSuiteVerdict(w io.Writer, res *sim.SuiteResult, rows []string) error {
	def, err := scoreOnSuite(res, res.Default)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== Policy files judged as the default is (%s meets every criterion on %d of %d rows, %d of %d checks)\n",
		def.Name, def.AllMet, def.Rows, def.Checks, def.ChecksJudged)
	for _, row := range rows {
		sc, err := scoreOnSuite(res, row)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: meets every criterion on %d of %d rows, %d of %d checks: %s\n", row, sc.AllMet, sc.Rows, sc.Checks, sc.ChecksJudged, sc.verdict(def))
	}
	return nil
}

// simulatePower is `fairway simulate --power`.
func simulatePower(c *cli.Context, cfg simulateConfig) error {
	ps := sim.PowerSettings{Resume: c.Duration("resume-time")}
	if ps.Resume < 0 {
		return fmt.Errorf("--resume-time %v: want ≥ 0", ps.Resume)
	}
	var err error
	if ps.Buffers, err = parseInts(c.String("power-buffer")); err != nil {
		return fmt.Errorf("--power-buffer: %w", err)
	}
	if ps.SuspendTimes, err = parseDurations(c.String("suspend-time")); err != nil {
		return fmt.Errorf("--suspend-time: %w", err)
	}
	if ps.HybridIdle, err = parseDurations(c.String("hybrid-idle")); err != nil {
		return fmt.Errorf("--hybrid-idle: %w", err)
	}
	if ps.Nowcast, err = power.ParseNowcast(c.String("nowcast")); err != nil {
		return fmt.Errorf("--nowcast: %w", err)
	}
	name := policy.Default
	if c.IsSet("policies") {
		name = cfg.Policies[0]
	}
	w, err := simWorkload(cfg.LoadWorkload())
	if err != nil {
		return err
	}
	if w.Cluster.Nodes < 2 {
		// Power saving turns whole nodes off: on one node every rule can
		// only power the whole machine down, and the table says nothing.
		return fmt.Errorf("--power: the cluster is one node of %d %s, and power saving turns whole nodes off: give its nodes with --nodes and --per-node (an SWF trace replays on one pool of its processors; --nodes %d --per-node 1 makes each processor a node)",
			w.Cluster.PerNode, w.Cluster.Unit, w.Cluster.Capacity())
	}
	cc := sim.CompareConfig{Predictor: cfg.Predictor, Backfill: cfg.Backfill, Preempt: cfg.Preempt}
	if path := c.String("power-sequence"); path != "" {
		samples, err := sim.NodeUsage(c.Context, w, cc, name, time.Minute)
		if err != nil {
			return err
		}
		if err := writeNodeSequence(path, samples); err != nil {
			return err
		}
	}
	rows, err := sim.ComparePower(c.Context, w, cc, name, ps)
	if err != nil {
		return err
	}
	if cfg.JSON {
		return printJSON(c.App.Writer, rows)
	}
	return sim.WritePowerText(c.App.Writer, name, ps.Resume, rows)
}

// writeNodeSequence writes samples as a node sequence CSV
// (time,active,total,pending: pending is the nodes queued jobs ask for at
// the end of the minute), the format `fairway power eval --sequence`
// reads. The file is replaced whole (atomicfile): a failed write leaves
// the old one.
func writeNodeSequence(path string, samples []power.Sample) error {
	var b strings.Builder
	b.WriteString("time,active,total,pending\n")
	for _, x := range samples {
		fmt.Fprintf(&b, "%s,%d,%d,%d\n", x.Time.UTC().Format(time.DateTime), x.Active, x.Total, x.Pending)
	}
	if err := atomicfile.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--power-sequence: %w", err)
	}
	return nil
}

// shareFlags are --share's settings, given only with it.
var shareFlags = []string{"share-shards", "share-interference", "share-seed", "share-light"}

// shareSettings reads --share and its settings into cfg. With --share,
// the backfill and preemption defaults give way (sharing is modelled
// without either); given explicitly, they are refused by cfg.Validate.
func shareSettings(c *cli.Context, cfg *simulateConfig) error {
	if !c.Bool("share") {
		for _, f := range shareFlags {
			if c.IsSet(f) {
				return fmt.Errorf("--%s: only with --share", f)
			}
		}
		return nil
	}
	for _, f := range []string{"power", "forecast", "split", "sequences"} {
		if c.IsSet(f) {
			return fmt.Errorf("--share: not with --%s (not modelled with shared GPUs)", f)
		}
	}
	if !c.IsSet("backfill") {
		cfg.Backfill = sim.NoBackfill
	}
	if !c.IsSet("preempt") {
		cfg.Preempt = nil
	}
	cfg.Share = &sim.Share{ShardsPerGPU: c.Int("share-shards"), Interference: c.Float64("share-interference"),
		Model: sim.UsageModel{Seed: c.Uint64("share-seed"), LightFraction: c.Float64("share-light")}}
	return nil
}
