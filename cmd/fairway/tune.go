package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/fairway-hpc/fairway/policy/tune"
	"github.com/urfave/cli/v2"
)

// tunedRow is the row name of a tuned policy in the tables tune and
// simulate --policy-file print.
const tunedRow = "tuned"

func tuneCommand() *cli.Command {
	return &cli.Command{
		Name:  "tune",
		Usage: "fit the learned ranking's exponents to a trace and write a policy file",
		Description: "Searches the learned family (key = run^a · limit^b · size^c · (1+usage)^d · (1+counter)^e /\n" +
			"(1+wait/run)^age · (effective/run)^f, f searched with --effective; `fairway explain` shows each\n" +
			"part) with CMA-ES over replays of the trace.\n" +
			"The trace's jobs are put in submit order. Only the first --train of them are looked at; the rest\n" +
			"are held out for `fairway simulate --split <train> --policy-file FILE`. Of the part looked at, the\n" +
			"search scores points on the jobs before its last --validate: after a warm-up of 30%, three\n" +
			"consecutive windows, each replayed alone and warmed by the history before it, the constraints\n" +
			"required on each. It re-judges its best points on the last --validate, never the same jobs, and\n" +
			"chooses by the violations on both, then the validation's value; fair-sjf's point is the start and\n" +
			"is kept unless a point does better. The family's heuristics (SJF on predictions, QSSF, SJF on\n" +
			"limits, fair share, fair share × QSSF, each with the least aging; with --objective bsld also the\n" +
			"requested area by time limit, limit × size, alone and with fair share, the ingredient of F1, WFP3\n" +
			"and UNICEP) are anchors: always judged, and CMA-ES starts from the best of them and fair-sjf on\n" +
			"training. Each job's run time is predicted once, at submit.\n" +
			"  --from-db tunes on the site's own history instead: the finished jobs of --cluster in the\n" +
			"    accounting database (all of them, or --since/--until, --days, --months), all looked at (the\n" +
			"    first 70% of the submits train, the last 30% validate), replayed on the least machine the\n" +
			"    history fits (the database keeps no node list: --nodes and --per-node give the real one, or\n" +
			"    --partitions its partitions, nodes and GPU types, as simulate --from-db replays them).\n" +
			"    --train 0.7 holds out the last 30% for simulate --from-db --split 0.7 on the same period.\n" +
			"  --objective fair (default): the lowest avg bounded slowdown subject to avg wait ≤ fairshare's,\n" +
			"    Jain ≥ fairshare's − 0.01 and max ρ ≤ fairshare's on the same window; violations are\n" +
			"    penalised so that the search moves towards feasibility.\n" +
			"  --objective bsld: the lowest avg bounded slowdown, no fairness constraint, over RLScheduler's\n" +
			"    sequences (--sequences × --length) drawn from each part; the validation part draws 3 ×\n" +
			"    --sequences, as ten sequences' mean is too noisy to choose among close candidates.\n" +
			"  --objective wait: the lowest avg wait, no fairness constraint.\n" +
			"  --loads 1,1.5 also replays each training and validation window with its inter-arrival times\n" +
			"    divided by 1.5 (its history, sizes and run times as recorded): a point must meet the\n" +
			"    constraints at every load, and its value is the mean over them (docs/POLICY.md has its\n" +
			"    time-split rows). --loads auto (default, objective fair): the recorded load, and twice it\n" +
			"    too where fairshare's replay of the validation window has no hour with two users backlogged\n" +
			"    throughout: a history where users never queue at once cannot tell a ranking fair between\n" +
			"    users from one that is not. --loads 1 keeps the recorded load only.\n" +
			"  --value-loads 1,1.5 (with --loads 1) replays the windows at 1.5 too, but for the value only: a\n" +
			"    point must meet the constraints at --loads, and its value is the mean over --value-loads.\n" +
			"The same trace, flags, --seed, --population and --generations give the same file; a --budget that\n" +
			"stops the search first gives the best found by then. The file records what it was trained on and\n" +
			"every policy's metrics on the validation part.\n\n" +
			"What a replay cannot know: users react to a new policy. Once short requests start sooner, users\n" +
			"ask for shorter limits, split jobs, or submit more; a tuned ranking is fitted to how they behaved\n" +
			"under the old one. Re-tune on fresh history after a change, and watch the waits it was meant to cut.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "trace file (gzip or plain); required unless --from-db", EnvVars: []string{"FAIRWAY_TUNE_TRACE"}},
			&cli.StringFlag{Name: "format", Usage: "trace format: swf, helios or philly-mix (default: told from the file's first line)", EnvVars: []string{"FAIRWAY_TUNE_FORMAT"}},
			&cli.IntFlag{Name: "nodes", Usage: "number of nodes (0: the trace's default, or with --from-db what the history shows; an SWF trace given only --per-node gets MaxProcs ÷ --per-node, rounded up; required for Helios)", EnvVars: []string{"FAIRWAY_TUNE_NODES"}},
			&cli.IntFlag{Name: "per-node", Usage: "GPUs (or processors, for SWF) per node (0: the trace's default, or with --from-db what the history shows; an SWF trace given only --nodes gets MaxProcs ÷ --nodes, rounded up)", EnvVars: []string{"FAIRWAY_TUNE_PER_NODE"}},
			&cli.IntFlag{Name: "max-jobs", Usage: "use only the trace's first N jobs in submit order (0: all)", EnvVars: []string{"FAIRWAY_TUNE_MAX_JOBS"}},
			&cli.StringFlag{Name: "out", Usage: "policy file to write; required", EnvVars: []string{"FAIRWAY_TUNE_OUT"}},
			&cli.StringFlag{Name: "objective", Value: string(tune.Fair), Usage: "fair, bsld or wait", EnvVars: []string{"FAIRWAY_TUNE_OBJECTIVE"}},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the search (and of the sequences, with --objective bsld)", EnvVars: []string{"FAIRWAY_TUNE_SEED"}},
			&cli.DurationFlag{Name: "budget", Value: 10 * time.Minute, Usage: "wall time for the search and the validation; the best point so far is kept when it ends", EnvVars: []string{"FAIRWAY_TUNE_BUDGET"}},
			&cli.BoolFlag{Name: "effective", Usage: "also fit the effective feature's exponent (the run times the user's same job had, beside its prediction: docs/POLICY.md); off, it stays 0 as in fair-sjf", EnvVars: []string{"FAIRWAY_TUNE_EFFECTIVE"}},
			&cli.IntFlag{Name: "generations", Usage: "stop after this many CMA-ES generations (0: when the budget ends or the search converges)", EnvVars: []string{"FAIRWAY_TUNE_GENERATIONS"}},
			&cli.IntFlag{Name: "population", Usage: "points per generation, at least 2 (0: the larger of 9 and --parallel)", EnvVars: []string{"FAIRWAY_TUNE_POPULATION"}},
			&cli.IntFlag{Name: "parallel", Value: runtime.GOMAXPROCS(0), Usage: "replays run at once", EnvVars: []string{"FAIRWAY_TUNE_PARALLEL"}},
			&cli.Float64Flag{Name: "train", Value: 0.7, Usage: "fraction of the trace's submits the tuner looks at (the rest is held out; 1: all; with --from-db the default is 1)", EnvVars: []string{"FAIRWAY_TUNE_TRAIN"}},
			&cli.Float64Flag{Name: "validate", Value: 0.3, Usage: "fraction of the part looked at, at its end, that only validates", EnvVars: []string{"FAIRWAY_TUNE_VALIDATE"}},
			&cli.StringFlag{Name: "predictor", Value: "fairway", Usage: "run-time predictor (" + strings.Join(predict.Names(), ", ") + ", or none); each job is predicted once, at submit, from the jobs ended before", EnvVars: []string{"FAIRWAY_TUNE_PREDICTOR"}},
			&cli.StringFlag{Name: "backfill", Value: string(sim.EASY), Usage: "easy or none", EnvVars: []string{"FAIRWAY_TUNE_BACKFILL"}},
			&cli.IntFlag{Name: "sequences", Value: 10, Usage: "with --objective bsld: sequences per window", EnvVars: []string{"FAIRWAY_TUNE_SEQUENCES"}},
			&cli.IntFlag{Name: "length", Value: 1024, Usage: "with --objective bsld: jobs per sequence", EnvVars: []string{"FAIRWAY_TUNE_LENGTH"}},
			&cli.StringFlag{Name: "loads", Value: "auto", Usage: "offered loads each training and validation window is replayed at, as factors of its own (1 among them; not with --objective bsld); auto: 1, and 2 too where fairshare's replay of the validation window has no hour with two users backlogged throughout", EnvVars: []string{"FAIRWAY_TUNE_LOADS"}},
			&cli.StringFlag{Name: "value-loads", Usage: "offered loads the value is averaged over, the constraints required at --loads only (default: --loads; 1 among them; not with --objective bsld)", EnvVars: []string{"FAIRWAY_TUNE_VALUE_LOADS"}},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "status line on stderr: auto (when stderr is a terminal), always or never", EnvVars: []string{"FAIRWAY_TUNE_PROGRESS"}},
		}, append(tuneDBFlags(), partitionsFlags("replay", "FAIRWAY_TUNE_PARTITIONS")...)...),
		Action: func(c *cli.Context) error {
			cfg, err := tuneSettings(c)
			if err != nil {
				return err
			}
			return runTune(c.Context, cfg, c.App.Writer, os.Stderr)
		},
	}
}

// tuneConfig is `fairway tune`'s validated settings.
type tuneConfig struct {
	sim.RunConfig
	MaxJobs     int
	Out         string
	Setup       tune.Setup
	Seed        uint64
	Budget      time.Duration
	Generations int
	Population  int
	// Effective also searches the effective feature (--effective).
	Effective bool
	// AutoLoads adds tune.AutoLoad to the loads when the validation
	// window tests no Jain window at the recorded load (--loads auto).
	AutoLoads bool
	autoUsers int // the validation window's users, when AutoLoads added a load
	Progress  bool
	// DB, when set, is the history read instead of Trace (--from-db).
	DB *tuneDB
}

// tuneSettings validates the flags once, naming the bad one.
func tuneSettings(c *cli.Context) (tuneConfig, error) {
	cfg := tuneConfig{RunConfig: sim.RunConfig{Trace: c.String("trace"), Nodes: c.Int("nodes"), PerNode: c.Int("per-node"),
		Parallel: c.Int("parallel"), Load: 1, Predictor: c.String("predictor"), Policies: []string{policy.Default}},
		MaxJobs: c.Int("max-jobs"), Out: c.String("out"), Seed: c.Uint64("seed"), Budget: c.Duration("budget"),
		Generations: c.Int("generations"), Population: c.Int("population"), Effective: c.Bool("effective")}
	var err error
	if c.Bool("from-db") {
		if cfg.DB, err = tuneDBSettings(c, time.Now()); err != nil {
			return cfg, err
		}
	} else {
		// --cluster is left alone: FAIRWAY_CLUSTER serves every command.
		for _, f := range []string{"since", "until", "days", "months", "unit"} {
			if v := fmt.Sprint(c.Value(f)); c.IsSet(f) && v != "" && v != "0" {
				return cfg, fmt.Errorf("--%s: only with --from-db", f)
			}
		}
	}
	switch {
	case cfg.Trace == "" && cfg.DB == nil:
		return cfg, fmt.Errorf("--trace: required (the history to tune on), or --from-db")
	case cfg.Out == "":
		return cfg, fmt.Errorf("--out: required (the policy file to write)")
	}
	// The file is written after the search: a directory that is missing
	// or read-only is said now, not once --budget is spent.
	if err := atomicfile.Check(cfg.Out); err != nil {
		return cfg, fmt.Errorf("--out: %w", err)
	}
	if cfg.Progress, err = progress.Wanted(c.String("progress"), os.Stderr); err != nil {
		return cfg, err
	}
	if cfg.DB == nil {
		if cfg.Format, err = trace.FileFormat(cfg.Trace, c.String("format")); err != nil {
			return cfg, err
		}
	}
	if cfg.Layout, err = layoutSettings(c); err != nil {
		return cfg, err
	}
	ch, err := simChoice(sim.ParseChoice(policy.Default, "", c.String("backfill"), cfg.Predictor))
	if err != nil {
		return cfg, err
	}
	cfg.Backfill = ch.Backfill
	if err := simFlagError(cfg.Validate()); err != nil {
		return cfg, err
	}
	obj, err := tune.ParseObjective(c.String("objective"))
	if err != nil {
		return cfg, fmt.Errorf("--%w", err)
	}
	seen := c.Float64("train")
	if cfg.DB != nil && !c.IsSet("train") {
		// A site tunes on all of its history: the first 70% trains, the
		// last 30% validates; nothing is held out for simulate --split.
		seen = 1
	}
	s := tune.Setup{Objective: obj, Seen: seen, Validate: c.Float64("validate"), Sequences: c.Int("sequences"),
		Length: c.Int("length"), Seed: cfg.Seed, Backfill: cfg.Backfill, Predictions: sim.PredictAtSubmit}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-jobs", cfg.MaxJobs}, {"generations", cfg.Generations}, {"population", cfg.Population}} {
		if f.v < 0 {
			return cfg, fmt.Errorf("--%s %d: want >= 0", f.name, f.v)
		}
	}
	switch {
	case cfg.Population == 1:
		return cfg, fmt.Errorf("--population 1: want 0 (the larger of 9 and --parallel) or at least 2: CMA-ES keeps the better half of each generation")
	case !(s.Seen > 0 && s.Seen <= 1):
		return cfg, fmt.Errorf("--train %g: want a fraction in (0, 1], e.g. 0.7 to hold out the last 30%%", s.Seen)
	case !(s.Validate > 0 && s.Validate < 1):
		return cfg, fmt.Errorf("--validate %g: want a fraction in (0, 1)", s.Validate)
	case cfg.Budget < 0:
		return cfg, fmt.Errorf("--budget %s: want >= 0 (0: no limit)", cfg.Budget)
	case obj == tune.BSLD && (s.Sequences < 1 || s.Length < 1):
		return cfg, fmt.Errorf("--sequences %d, --length %d: want >= 1", s.Sequences, s.Length)
	case obj != tune.BSLD && (c.IsSet("sequences") || c.IsSet("length")):
		return cfg, fmt.Errorf("--sequences, --length: only with --objective bsld")
	}
	if loads := c.String("loads"); strings.TrimSpace(loads) == "auto" {
		// The Jain constraint is the only one a quiet history leaves
		// untested; the other objectives have no constraint.
		cfg.AutoLoads = obj == tune.Fair
	} else if s.Loads, err = tune.ParseLoads(loads); err != nil {
		return cfg, fmt.Errorf("--loads %s: %w (or auto, the default)", loads, err)
	}
	if len(s.Loads) > 1 && obj == tune.BSLD {
		return cfg, fmt.Errorf("--loads %s: only with --objective fair or wait", c.String("loads"))
	}
	if c.IsSet("value-loads") {
		if s.ValueLoads, err = tune.ParseLoads(c.String("value-loads")); err != nil {
			return cfg, fmt.Errorf("--value-loads %s: %w", c.String("value-loads"), err)
		}
		if obj == tune.BSLD {
			return cfg, fmt.Errorf("--value-loads %s: only with --objective fair or wait", c.String("value-loads"))
		}
		if sameSet(s.ValueLoads, s.Loads) {
			s.ValueLoads = nil // the constraints' loads, as without the flag
		}
		cfg.AutoLoads = false // --value-loads says which loads count for what
	}
	if len(s.Loads) == 1 {
		s.Loads = nil // the windows as recorded
	}
	if name := cfg.Predictor; name != "none" {
		s.NewPredictor = func() (policy.Predictor, error) { return predict.New(name, predict.Params{}) }
	}
	cfg.Setup = s
	return cfg, nil
}

func runTune(ctx context.Context, cfg tuneConfig, out io.Writer, errOut *os.File) error {
	started := time.Now()
	var w *sim.Workload
	var err error
	if cfg.DB != nil {
		w, err = cfg.DB.load(ctx, cfg.Nodes, cfg.PerNode, cfg.Layout)
	} else {
		w, err = simWorkload(cfg.LoadWorkload())
	}
	if err != nil {
		return err
	}
	w = w.FirstJobs(cfg.MaxJobs)
	win, err := tune.NewWindows(w.Jobs, w.Cluster, cfg.Setup)
	if errors.Is(err, sim.ErrShortWindow) || errors.Is(err, sim.ErrNoJobs) {
		more := ""
		if cfg.DB != nil {
			more = "; take a longer period (--since, --months)"
		}
		return fmt.Errorf("%s: %s on %s: too few to split into training and validation windows (%w)%s",
			w.Name, plural.N(len(w.Jobs), "job", "jobs"), clusterText(w.Cluster), err, more)
	}
	if err != nil {
		return err
	}
	if cfg.AutoLoads {
		untested, users, err := tune.JainUntested(ctx, win)
		if err != nil {
			return interrupted(ctx, cfg, err)
		}
		cfg.AutoLoads = untested
		if untested {
			cfg.autoUsers = users
			cfg.Setup.Loads = []float64{1, tune.AutoLoad}
			if win, err = tune.NewWindows(w.Jobs, w.Cluster, cfg.Setup); err != nil {
				return err
			}
		}
	}
	policies := append(policy.Compared(), tunedRow)
	// The search's reserve counts evaluations on the validation window;
	// the table's may be on fewer sequences (tune.Windows.Table).
	after := len(policies)
	if win.Table != win.Validate {
		n, of := len(win.Table.Starts()), len(win.Validate.Starts())
		after = (after*n + of - 1) / of
	}
	tc := tune.Config{Objective: cfg.Setup.Objective, Train: win.Train, Validate: win.Validate, ValidateLoads: win.ValidateLoads,
		TrainCounts: win.TrainCounts, ValidateLoadsCounts: win.ValidateLoadsCounts, Start: policy.DefaultLearnedParams(),
		Seed: cfg.Seed, Parallel: cfg.Parallel, Population: cfg.Population, Generations: cfg.Generations,
		After: after, Anchors: tune.AnchorsFor(cfg.Setup.Objective), SearchEffective: cfg.Effective}
	if cfg.Effective {
		tc.Anchors = append(tc.Anchors, tune.EffectiveAnchors()...)
	}
	if cfg.Budget > 0 {
		tc.Budget = cfg.Budget - time.Since(started)
		if tc.Budget <= 0 {
			return fmt.Errorf("--budget %s: spent loading the trace and preparing its windows (%s)", cfg.Budget, time.Since(started).Round(time.Second))
		}
	}
	if cfg.Progress {
		var mu sync.Mutex
		var drawn time.Time
		tc.Progress = func(p tune.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(drawn) < progress.Redraw {
				return
			}
			drawn = time.Now()
			line := fmt.Sprintf("tuning %s: %d evaluations, generation %d; best %s (start %s); %s",
				w.Name, p.Evaluations, p.Generation, scoreText(cfg.Setup.Objective, p.Best), scoreText(cfg.Setup.Objective, p.Start),
				progress.ETA(started, time.Now(), int(p.Elapsed), int(p.Deadline)))
			fmt.Fprint(errOut, "\r\033[K"+progress.Fit(line, progress.MaxLine))
		}
	}
	res, err := tune.Run(ctx, tc)
	if cfg.Progress {
		fmt.Fprint(errOut, "\r\033[K")
	}
	if err != nil {
		return interrupted(ctx, cfg, err)
	}
	tuned := res.Params
	tab, err := win.Table.Table(ctx, sim.ProtocolConfig{Trace: w.Name, Policies: policies, Predictor: cfg.Predictor,
		Parallel: cfg.Parallel, Factories: map[string]sim.PolicyFactory{tunedRow: func() (policy.Policy, error) { return policy.NewLearned(tuned) }}})
	if err != nil {
		return fmt.Errorf("validation table: %w", err)
	}
	f := tuneFile(cfg, w, win, res, tab)
	b, err := f.Encode()
	if err != nil {
		return err
	}
	// What is written must load: the same strict reader serve uses.
	if _, err := policy.ParseFile(b); err != nil {
		return fmt.Errorf("the policy file tune made does not load: %w", err)
	}
	// Replaced whole: a failed write leaves the old policy file, which
	// serve may be reading, as it was.
	if err := atomicfile.WriteFile(cfg.Out, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return writeTuneSummary(out, cfg, w, win, res, tab, time.Since(started))
}

// tuneFile is the policy file of a tuning run.
func tuneFile(cfg tuneConfig, w *sim.Workload, win *tune.Windows, res *tune.Result, tab *sim.ProtocolTable) *policy.File {
	f := policy.NewLearnedFile(res.Params)
	f.TrainedOn = policy.TrainedOn{Cluster: w.Name + ": " + clusterText(w.Cluster),
		From: win.From.UTC(), To: win.To.UTC(), Jobs: win.Seen, Source: cfg.Trace}
	if cfg.DB != nil {
		f.TrainedOn.Source = cfg.DB.source()
	}
	f.Objective = cfg.Setup.Objective.Describe()
	start := map[string]float64{}
	for i, v := range res.Start.Params.Vector() {
		start[policy.LearnedFeatures[i].Name] = v
	}
	f.Tuning = &policy.Tuning{Method: "CMA-ES (gonum optimize.CmaEsChol)", Seed: cfg.Seed, Population: res.Population,
		Generations: res.Generations, Evaluations: res.Evaluations, Stopped: res.Stopped, KeptStart: res.KeptStart,
		Windows: windowsText(cfg, win, tab), Start: start, SearchFrom: res.SearchFrom, SearchedEffective: cfg.Effective}
	for _, r := range tab.Rows {
		row := policy.ValidationRow{Policy: r.Name, Metrics: map[string]float64{
			"avg_wait_s": r.AvgWait, "p95_wait_s": r.P95Wait, "avg_bsld": r.AvgBSLD, "avg_jct_s": r.AvgJCT,
			"jain": r.Jain, "max_rho": r.MaxRho, "utilization": r.Utilization, "jobs": float64(r.Jobs)}}
		if r.Meets != nil {
			for _, m := range []struct {
				ok   bool
				name string
			}{{r.Meets.Wait, "avg_wait"}, {r.Meets.Jain, "jain"}, {r.Meets.Rho, "max_rho"}} {
				if m.ok {
					row.Meets = append(row.Meets, m.name)
				}
			}
		}
		f.Validation = append(f.Validation, row)
	}
	return f
}

// clusterText spells a machine: "2 × 4 gpus", or a partitioned one as
// simulate prints it.
func clusterText(c sim.Cluster) string {
	ci := sim.InfoOf(c)
	if c.Layout != nil {
		return ci.String()
	}
	return fmt.Sprintf("%d × %d %s", ci.Nodes, ci.PerNode, ci.Unit)
}

// interrupted says what an interrupted tune kept when ctx's end caused
// err (Ctrl-C or a TERM: the admin wants to know); other errors as they are.
func interrupted(ctx context.Context, cfg tuneConfig, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("tune: interrupted before the search ended: %s left as it was (--budget ends a search early and writes the best point found by then): %w", cfg.Out, err)
}

// windowsText says which jobs trained and which validated.
func windowsText(cfg tuneConfig, win *tune.Windows, tab *sim.ProtocolTable) string {
	s := cfg.Setup
	held := "none held out"
	if s.Seen < 1 {
		held = fmt.Sprintf("the last %d held out for the final evaluation", win.Total-win.Seen)
	}
	if s.Objective == tune.BSLD {
		return fmt.Sprintf("looked at the first %d of %d jobs (%s); trained on %d sequences × %d jobs (seed %d) drawn from the first %g of them, validated on %d from the last %g (the table below on the first %d of them)",
			win.Seen, win.Total, held, s.Sequences, s.Length, s.Seed, 1-s.Validate, len(win.Validate.Starts()), s.Validate, len(win.Table.Starts()))
	}
	var chunks []string
	for _, e := range win.Train[:len(win.Train)/len(win.Loads)] {
		lo, hi := e.Window()
		chunks = append(chunks, fmt.Sprintf("%d–%d", lo, hi-1))
	}
	first, _ := win.Train[0].Window()
	loads := ""
	if len(win.Loads) > 1 {
		var xs []string
		for _, x := range win.Loads {
			xs = append(xs, fmt.Sprintf("%g", x))
		}
		judged := "the constraints required at each load and the value averaged over them"
		if s.ValueLoads != nil {
			judged = fmt.Sprintf("the constraints required at load %s and the value averaged over loads %s", loadsText(s.Loads), loadsText(s.ValueLoads))
		}
		why := ""
		if cfg.AutoLoads {
			why = fmt.Sprintf(" (--loads auto: under %s no hour of the validation window had two of its %d users backlogged throughout, so the recorded load cannot judge fairness between users)", sim.Reference, cfg.autoUsers)
		}
		loads = fmt.Sprintf("; every window also replayed at its offered load × %s%s (inter-arrival times divided about its first replayed submit), %s (the table below at load 1)",
			strings.Join(slices.DeleteFunc(xs, func(x string) bool { return x == "1" }), ", "), why, judged)
	}
	return fmt.Sprintf("looked at the first %d of %d jobs (%s); trained on jobs %s of them, each window replayed alone (the %d before the first warm up), validated on jobs %d–%d%s",
		win.Seen, win.Total, held, strings.Join(chunks, ", "), first, tab.Window[0], tab.Window[1]-1, loads)
}

// loadsText lists loads as --loads takes them (nil: the recorded load, 1).
func loadsText(loads []float64) string {
	if len(loads) == 0 {
		return "1"
	}
	xs := make([]string, len(loads))
	for i, x := range loads {
		xs[i] = fmt.Sprintf("%g", x)
	}
	return strings.Join(xs, ", ")
}

// sameSet reports whether a and b hold the same loads, nil standing for [1].
func sameSet(a, b []float64) bool {
	if len(a) == 0 {
		a = []float64{1}
	}
	if len(b) == 0 {
		b = []float64{1}
	}
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x float64) bool { return !slices.Contains(b, x) })
}

func scoreText(o tune.Objective, s tune.Score) string {
	unit := "bsld"
	if o == tune.Wait {
		unit = "wait"
	}
	t := fmt.Sprintf("%s %.4g", unit, s.Value)
	if o == tune.Fair {
		if s.Feasible() {
			t += " feasible"
		} else {
			t += fmt.Sprintf(" violating %.3g", s.Violation)
		}
	}
	return t
}

// writeTuneSummary prints what was chosen and the validation table.
func writeTuneSummary(out io.Writer, cfg tuneConfig, w *sim.Workload, win *tune.Windows, res *tune.Result, tab *sim.ProtocolTable, took time.Duration) error {
	o := cfg.Setup.Objective
	fmt.Fprintf(out, "tuned %s on %s (%s)\n", o.Describe(), w.Name, windowsText(cfg, win, tab))
	if cfg.DB != nil && w.Cluster.Layout != nil {
		fmt.Fprintf(out, "history: %s of cluster %s from the %s; replayed on %s (--partitions), each job in its recorded partition and on its GPU type\n",
			plural.N(len(w.Jobs), "job", "jobs"), w.Name, cfg.DB.source(), clusterText(w.Cluster))
		left := sim.Unroutable(w.Jobs, w.Cluster)
		for _, r := range slices.Sorted(maps.Keys(left)) {
			fmt.Fprintln(out, sim.SkipWarning(left[r], r))
		}
	} else if cfg.DB != nil {
		fmt.Fprintf(out, "history: %s of cluster %s from the %s; replayed on %s, the least machine the history fits (--nodes, --per-node and --unit set it)\n",
			plural.N(len(w.Jobs), "job", "jobs"), w.Name, cfg.DB.source(), clusterText(w.Cluster))
	}
	// What no replay runs (never started, no run time, no units, larger
	// than the cluster, duplicate ids, and the records the trace reader
	// dropped), counted as simulate counts it.
	if s := trace.FormatLeftOut(trace.MergeLeftOut(w.LeftOut, win.LeftOut)); s != "none" {
		fmt.Fprintf(out, "left out: %s\n", s)
	}
	if n := sim.CutAtDefaultLimit(w.Jobs); n > 0 {
		fmt.Fprintln(out, sim.CutWarning(n))
	}
	fmt.Fprintf(out, "search: CMA-ES, seed %d, population %d, %d generations, %d evaluations, stopped: %s; whole run %s\n",
		cfg.Seed, res.Population, res.Generations, res.Evaluations, res.Stopped, took.Round(time.Second))
	names := make([]string, len(policy.LearnedFeatures))
	for i, f := range policy.LearnedFeatures {
		names[i] = f.Name
	}
	vec := func(p policy.LearnedParams) string {
		var parts []string
		for i, v := range p.Vector() {
			parts = append(parts, fmt.Sprintf("%s %g", names[i], v))
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(out, "start (fair-sjf's point): %s; training %s, validation %s\n", vec(res.Start.Params), scoreText(o, res.Start.Train), scoreText(o, *res.Start.Validation))
	from := "anchor " + res.SearchFrom
	if res.SearchFrom == "start" {
		from = "the start"
	}
	fmt.Fprintf(out, "CMA-ES started from %s, the best of the start and the anchors on training\n", from)
	for i, c := range res.Candidates {
		name := "drawn"
		if c.Name != "" {
			name = "anchor " + c.Name
		}
		fmt.Fprintf(out, "candidate %d (%s): %s; training %s, validation %s\n", i+1, name, vec(c.Params), scoreText(o, c.Train), scoreText(o, *c.Validation))
	}
	if res.KeptStart {
		fmt.Fprintln(out, "kept the start: no candidate did better on the validation window")
	} else {
		name := "a drawn point"
		if res.Chosen.Name != "" {
			name = "anchor " + res.Chosen.Name
		}
		fmt.Fprintf(out, "chosen (%s): %s\n", name, vec(res.Params))
	}
	fmt.Fprintf(out, "wrote %s\n\nvalidation window:\n", cfg.Out)
	if err := tab.WriteText(out); err != nil {
		return err
	}
	if held := win.Total - win.Seen; held > 0 {
		// The same history (a database period as simulate reads it), the
		// same predictor and backfill, and the held-out part.
		history := "--trace " + cfg.Trace
		if cfg.DB != nil {
			history = cfg.DB.simulateFlags()
		}
		judge := fmt.Sprintf("--split %g", cfg.Setup.Seen)
		if cfg.Setup.Objective == tune.BSLD {
			judge = fmt.Sprintf("--sequences %d --length %d --window-from %g", cfg.Setup.Sequences, cfg.Setup.Length, cfg.Setup.Seen)
		}
		if cfg.Predictor != "fairway" {
			judge += " --predictor " + cfg.Predictor
		}
		if cfg.Backfill == sim.NoBackfill {
			judge += " --backfill " + string(sim.NoBackfill)
		}
		fmt.Fprintf(out, "\nnext: judge it on the %s held out: fairway simulate %s with this history's other flags, %s --policy-file %s\n",
			plural.N(held, "job", "jobs"), history, judge, cfg.Out)
	}
	return nil
}

// tunedFactory reads a policy file for simulate --policy-file.
func tunedFactory(path string) (sim.PolicyFactory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--policy-file: %w", err)
	}
	f, err := policy.ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("--policy-file %s: %w", path, err)
	}
	if _, err := f.Policy(); err != nil {
		return nil, fmt.Errorf("--policy-file %s: %w", path, err)
	}
	return f.Policy, nil
}
