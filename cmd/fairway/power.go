package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/urfave/cli/v2"
)

// powerEvalConfig is `fairway power eval`'s validated settings.
type powerEvalConfig struct {
	Sequence string
	// Total is the cluster's node count for a sequence without a total
	// column, or for the database's node use (--total); 0: the
	// sequence's own, or the most the history shows.
	Total int
	// DB, when set, is read instead of Sequence (--from-db).
	DB    *powerDB
	JSON  bool
	Brief bool
	Eval  power.EvalConfig
	// The split's bounds the flags gave; the others come from the
	// sequence (power.DefaultSplit) once it is read.
	TrainUntilSet, TestFromSet, TestUntilSet bool
}

func powerCommand() *cli.Command {
	def := power.DefaultEvalConfig()
	return &cli.Command{
		Name:  "power",
		Usage: "power saving from predicted node demand",
		Subcommands: []*cli.Command{{
			Name:  "eval",
			Usage: "fit the node-demand forecaster and replay the predictive power rule against Slurm's idle-time rule on a node sequence",
			Description: "The sequence is a CSV time,active,total (gzip or plain), e.g. ../shared/data/power/philly_node_sequence.csv.gz,\n" +
				"or with --from-db the node use of the accounting database's finished jobs (their recorded starts and ends; a node jobs share counts once),\n" +
				"with an optional column pending (nodes asked for by queued jobs, as simulate --power-sequence writes it) that the hybrid rule powers up for at once.\n" +
				"Dates are days (the until dates are included whole) or times \"2017-12-01 06:00\". By default the test is the sequence's last 14 whole days\n" +
				"(on Philly the artifact's split: train through 2017-11-30, test 2017-12-01 to 12-14) and everything before it trains. docs/POWER.md has the method.",
			Flags: append(powerDBFlags(),
				&cli.StringFlag{Name: "sequence", Usage: "node-demand sequence: CSV time,active,total[,pending], or the Helios artifact's time,All Node Number,Use 1 GPU,…,Use 8 GPU (nodes by GPUs in use; gzip or plain)", EnvVars: []string{"FAIRWAY_POWER_SEQUENCE"}},
				&cli.IntFlag{Name: "total", Usage: "nodes in the cluster, for a sequence without a total or All Node Number column, or with --from-db", EnvVars: []string{"FAIRWAY_POWER_TOTAL"}},
				&cli.StringFlag{Name: "train-until", Usage: "last day (or time) the forecaster learns from (default: the day before the test)", EnvVars: []string{"FAIRWAY_POWER_TRAIN_UNTIL"}},
				&cli.StringFlag{Name: "test-from", Usage: "first day (or time) replayed (default: 14 days before the test's end)", EnvVars: []string{"FAIRWAY_POWER_TEST_FROM"}},
				&cli.StringFlag{Name: "test-until", Usage: "last day (or time) replayed (default: the sequence's last whole day)", EnvVars: []string{"FAIRWAY_POWER_TEST_UNTIL"}},
				&cli.IntFlag{Name: "validation-days", Value: def.ValidDays, Usage: "the last days of training that choose the forecaster's size and each SuspendTime's pick (a sequence needs 8 days, these and the test's)", EnvVars: []string{"FAIRWAY_POWER_VALIDATION_DAYS"}},
				&cli.StringFlag{Name: "buffer", Value: joinInts(def.Buffers), Usage: "comma-separated buffers (nodes kept powered above demand) of the predictive rule", EnvVars: []string{"FAIRWAY_POWER_BUFFER"}},
				&cli.StringFlag{Name: "suspend-time", Value: "10m,30m,60m", Usage: "comma-separated SuspendTime settings of Slurm's idle-time rule", EnvVars: []string{"FAIRWAY_POWER_SUSPEND_TIME"}},
				&cli.StringFlag{Name: "hybrid-idle", Value: joinDurations(def.IdleAfter), Usage: "comma-separated idle times of the hybrid rule (Slurm's idle clock with the forecast holding idle nodes), a parameter of its curve with the buffer", EnvVars: []string{"FAIRWAY_POWER_HYBRID_IDLE"}},
				&cli.DurationFlag{Name: "step", Value: def.Step, Usage: "the forecaster's step and how often the predictive rules decide, in whole minutes (each step keeps its maximum demand); every rule is accounted per minute", EnvVars: []string{"FAIRWAY_POWER_STEP"}},
				&cli.DurationFlag{Name: "resume-time", Value: def.Resume, Usage: "how long a powered-down node takes to become usable, under every rule (Slurm's ResumeTimeout; rounded up to whole minutes)", EnvVars: []string{"FAIRWAY_POWER_RESUME_TIME"}},
				&cli.IntFlag{Name: "history", Value: def.History, Usage: "predictive rule: steps of falling demand before a power-down", EnvVars: []string{"FAIRWAY_POWER_HISTORY"}},
				&cli.IntFlag{Name: "future", Value: def.Future, Usage: "predictive rule: forecast steps that must not exceed demand now", EnvVars: []string{"FAIRWAY_POWER_FUTURE"}},
				&cli.IntFlag{Name: "keep", Value: def.Keep, Usage: "predictive rule: steps held after a power-up", EnvVars: []string{"FAIRWAY_POWER_KEEP"}},
				&cli.StringFlag{Name: "pick", Value: joinCriteria(def.Pick), Usage: "comma-separated criteria choosing each SuspendTime's row on the validation days (" + joinCriteria(power.PickCriteria()) + "; docs/POWER.md): the first gives the verdict, the others are replayed on the test days for comparison", EnvVars: []string{"FAIRWAY_POWER_PICK"}},
				&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table", EnvVars: []string{"FAIRWAY_POWER_JSON"}},
				&cli.BoolFlag{Name: "brief", Usage: "of the predictive rows, print only the artifact's and each SuspendTime's validation pick (the table docs/POWER.md shows)", EnvVars: []string{"FAIRWAY_POWER_BRIEF"}},
			),
			Action: func(c *cli.Context) error {
				cfg, err := powerEvalSettings(c)
				if err != nil {
					return err
				}
				return powerEval(cfg, c.App.Writer, os.Stderr)
			},
		}},
	}
}

// powerEvalSettings validates the flags once, naming the bad one.
func powerEvalSettings(c *cli.Context) (powerEvalConfig, error) {
	cfg := powerEvalConfig{Sequence: c.String("sequence"), JSON: c.Bool("json"), Brief: c.Bool("brief"), Eval: power.DefaultEvalConfig()}
	if c.Bool("from-db") {
		db, err := powerDBSettings(c)
		if err != nil {
			return cfg, err
		}
		cfg.DB = db
	} else if cfg.Sequence == "" {
		return cfg, fmt.Errorf("--sequence: required (a CSV time,active,total), or --from-db")
	}
	if cfg.Total = c.Int("total"); cfg.Total < 0 || c.IsSet("total") && cfg.Total == 0 {
		return cfg, fmt.Errorf("--total %d: want the cluster's node count, at least 1", cfg.Total)
	}
	if cfg.Eval.Step = c.Duration("step"); cfg.Eval.Step <= 0 || cfg.Eval.Step%time.Minute != 0 {
		return cfg, fmt.Errorf("--step %v: want a positive whole number of minutes", cfg.Eval.Step)
	}
	if cfg.Eval.Resume = c.Duration("resume-time"); cfg.Eval.Resume <= 0 {
		return cfg, fmt.Errorf("--resume-time %v: want a positive duration (a node is never usable the instant it is resumed)", cfg.Eval.Resume)
	}
	var err error
	for _, d := range []struct {
		flag    string
		through bool
		at      *time.Time
		set     *bool
	}{
		{"train-until", true, &cfg.Eval.TrainUntil, &cfg.TrainUntilSet},
		{"test-from", false, &cfg.Eval.TestFrom, &cfg.TestFromSet},
		{"test-until", true, &cfg.Eval.TestUntil, &cfg.TestUntilSet},
	} {
		if *d.set = c.IsSet(d.flag); !*d.set {
			continue
		}
		if *d.at, err = parseDay(c.String(d.flag), d.through); err != nil {
			return cfg, fmt.Errorf("--%s: %w", d.flag, err)
		}
	}
	if cfg.Eval.Buffers, err = parseInts(c.String("buffer")); err != nil {
		return cfg, fmt.Errorf("--buffer: %w", err)
	}
	if cfg.Eval.SuspendTimes, err = parseDurations(c.String("suspend-time")); err != nil {
		return cfg, fmt.Errorf("--suspend-time: %w", err)
	}
	if cfg.Eval.IdleAfter, err = parseDurations(c.String("hybrid-idle")); err != nil {
		return cfg, fmt.Errorf("--hybrid-idle: %w", err)
	}
	cfg.Eval.Pick = nil
	for _, v := range strings.Split(c.String("pick"), ",") {
		pc, err := power.ParsePickCriterion(v)
		if err != nil {
			return cfg, fmt.Errorf("--pick: %w", err)
		}
		cfg.Eval.Pick = append(cfg.Eval.Pick, pc)
	}
	cfg.Eval.History, cfg.Eval.Future, cfg.Eval.Keep = c.Int("history"), c.Int("future"), c.Int("keep")
	cfg.Eval.ValidDays = c.Int("validation-days")
	switch {
	case cfg.Eval.ValidDays < 1:
		return cfg, fmt.Errorf("--validation-days %d: want at least 1", cfg.Eval.ValidDays)
	case cfg.Eval.History < 1:
		return cfg, fmt.Errorf("--history %d: want at least 1", cfg.Eval.History)
	case cfg.Eval.Future < 1:
		return cfg, fmt.Errorf("--future %d: want at least 1", cfg.Eval.Future)
	case cfg.Eval.Keep < 0:
		return cfg, fmt.Errorf("--keep %d: want at least 0", cfg.Eval.Keep)
	}
	return cfg, nil
}

func powerEval(cfg powerEvalConfig, out io.Writer, errOut *os.File) error {
	samples, err := cfg.samples(out, errOut)
	if err != nil {
		return err
	}
	if err := cfg.fillSplit(samples); err != nil {
		return err
	}
	if progress.IsTerminal(errOut) {
		cfg.Eval.Progress = func(stage string) { fmt.Fprintf(errOut, "\r\033[K%s", stage) }
		defer fmt.Fprint(errOut, "\r\033[K")
	}
	res, err := power.Evaluate(samples, cfg.Eval)
	if err != nil {
		return err
	}
	if cfg.JSON {
		return printJSON(out, res)
	}
	if cfg.Brief {
		return res.WriteBrief(out)
	}
	return res.WriteText(out)
}

// samples reads the sequence file, or with --from-db the database's node
// use, saying what it read (on errOut under --json, which keeps out JSON).
func (cfg powerEvalConfig) samples(out io.Writer, errOut io.Writer) ([]power.Sample, error) {
	if cfg.DB != nil {
		note := out
		if cfg.JSON {
			note = errOut
		}
		return dbSequence(context.Background(), cfg.DB, cfg.Total, time.Now(), note)
	}
	f, err := os.Open(cfg.Sequence)
	if err != nil {
		return nil, fmt.Errorf("open sequence: %w", err)
	}
	defer f.Close()
	return power.ReadSequenceTotal(f, cfg.Sequence, cfg.Total)
}

// fillSplit completes the split the flags left open: the test ends with
// the sequence's last whole day and spans power.TestDays, and training runs
// up to the test.
func (cfg *powerEvalConfig) fillSplit(s []power.Sample) error {
	if cfg.TrainUntilSet && cfg.TestFromSet && cfg.TestUntilSet {
		return nil
	}
	if !cfg.TestUntilSet {
		def, err := power.DefaultSplit(s)
		if err != nil {
			return fmt.Errorf("%w; --train-until, --test-from and --test-until choose the split", err)
		}
		cfg.Eval.TestUntil = def.TestUntil
	}
	if !cfg.TestFromSet {
		cfg.Eval.TestFrom = cfg.Eval.TestUntil.AddDate(0, 0, -power.TestDays)
	}
	if !cfg.TrainUntilSet {
		cfg.Eval.TrainUntil = cfg.Eval.TestFrom
	}
	return nil
}

// parseDay reads a day (2017-12-01) or a time (2017-12-01 06:00, RFC 3339)
// as UTC; a day read as an end (through=true) is the midnight after it.
func parseDay(v string, through bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		if through {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	for _, l := range []string{"2006-01-02 15:04", time.DateTime, time.RFC3339} {
		if t, err := time.Parse(l, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want a day 2017-12-01 or a time 2017-12-01 06:00", v)
}

func parseInts(v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want non-negative whole numbers, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseDurations(v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: want positive durations like 10m, comma-separated", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// joinDurations writes whole minutes as 10m (time.Duration writes 10m0s).
func joinDurations(v []time.Duration) string {
	s := make([]string, len(v))
	for i, d := range v {
		s[i] = d.String()
		if d%time.Minute == 0 {
			s[i] = fmt.Sprintf("%dm", d/time.Minute)
		}
	}
	return strings.Join(s, ",")
}

func joinCriteria(v []power.PickCriterion) string {
	s := make([]string, len(v))
	for i, c := range v {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}
