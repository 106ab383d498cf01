package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// protocolSettings reads --split or --sequences and their flags into a
// sim.Protocol, naming the bad flag. The policies gain fairshare under
// --split: the constraints are judged against it.
func protocolSettings(c *cli.Context, cfg *simulateConfig) (sim.Protocol, error) {
	p := sim.Protocol{Backfill: cfg.Backfill, Predictions: sim.PredictionMode(c.String("predictions")), Cold: c.Bool("cold")}
	switch {
	case c.IsSet("split") && c.IsSet("sequences"):
		return p, fmt.Errorf("--split and --sequences: choose one protocol")
	case c.IsSet("split"):
		p.Kind, p.Split = sim.Split, c.Float64("split")
		if !(p.Split > 0 && p.Split < 1) {
			return p, fmt.Errorf("--split %g: want a fraction in (0, 1), e.g. 0.7 to replay the last 30%%", p.Split)
		}
		for _, f := range []string{"length", "seed", "window-from", "window-to"} {
			if c.IsSet(f) {
				return p, fmt.Errorf("--%s: only with --sequences", f)
			}
		}
		if !slices.Contains(cfg.Policies, sim.Reference) {
			cfg.Policies = append(cfg.Policies, sim.Reference)
		}
	default:
		p.Kind, p.Sequences, p.Length, p.Seed = sim.Sequences, c.Int("sequences"), c.Int("length"), c.Uint64("seed")
		p.From, p.To = c.Float64("window-from"), c.Float64("window-to")
		if p.Sequences < 1 {
			return p, fmt.Errorf("--sequences %d: want >= 1", p.Sequences)
		}
		if p.Length < 1 {
			return p, fmt.Errorf("--length %d: want >= 1", p.Length)
		}
		if !(p.From >= 0 && p.From < p.To && p.To <= 1) {
			return p, fmt.Errorf("--window-from %g, --window-to %g: want 0 <= from < to <= 1", p.From, p.To)
		}
	}
	switch p.Predictions {
	case sim.PredictOnline, sim.PredictAtSubmit:
	default:
		return p, fmt.Errorf("--predictions %q: want %s or %s", p.Predictions, sim.PredictOnline, sim.PredictAtSubmit)
	}
	if c.Int("max-jobs") < 0 {
		return p, fmt.Errorf("--max-jobs %d: want >= 0", c.Int("max-jobs"))
	}
	for _, f := range []string{"power", "forecast", "out"} {
		if c.IsSet(f) {
			return p, fmt.Errorf("--%s: not with --split or --sequences", f)
		}
	}
	if name := cfg.Predictor; name != "none" {
		p.NewPredictor = func() (policy.Predictor, error) { return predict.New(name, predict.Params{}) }
	}
	return p, nil
}

// simulateProtocol is `fairway simulate --split F` and `--sequences N`.
func simulateProtocol(c *cli.Context, cfg simulateConfig) error {
	p, err := protocolSettings(c, &cfg)
	if err != nil {
		return err
	}
	files, err := policyFileRows(c.StringSlice("policy-file"), cfg.Policies)
	if err != nil {
		return err
	}
	w, err := cfg.workload(c.Context)
	if err != nil {
		return err
	}
	w = w.FirstJobs(c.Int("max-jobs"))
	notePartitions(cfg.notes, w)
	noteFlatTrace(cfg.notes, w)
	pc := sim.ProtocolConfig{Trace: w.Name, Policies: cfg.Policies, Protocol: p, Predictor: cfg.Predictor, Parallel: cfg.Parallel}
	if len(files) > 0 {
		pc.Policies, pc.Factories = slices.Clone(pc.Policies), map[string]sim.PolicyFactory{}
		for _, f := range files {
			pc.Policies = append(pc.Policies, f.row)
			pc.Factories[f.row] = f.mk
		}
	}
	if cfg.Progress {
		started, done := time.Now(), 0
		pc.Progress = func(name string) {
			done++
			fmt.Fprint(os.Stderr, "\r\033[K"+progress.Fit(fmt.Sprintf("%s: %s done (%d of %d policies)", w.Name, name, done, len(pc.Policies)), progress.MaxLine))
			if done == len(pc.Policies) {
				fmt.Fprintf(os.Stderr, "\r\033[Kevaluated %d policies in %s\n", done, time.Since(started).Round(time.Millisecond))
			}
		}
	}
	t, err := sim.RunProtocol(c.Context, w.Jobs, w.Cluster, pc)
	if err != nil {
		return err
	}
	// What no replay runs, as simulate's table says it: for a trace,
	// "none" too.
	if t.LeftOut != nil || w.Format != "synthetic" || len(w.LeftOut) > 0 {
		t.LeftOut = trace.MergeLeftOut(t.LeftOut, w.LeftOut)
	}
	if p.Kind == sim.Split && len(t.Rows) > 0 && t.Rows[0].Meets != nil {
		// A tuned file's row is what the time split judges.
		for _, f := range files {
			v, err := t.Verdict(f.row)
			if err != nil {
				return err
			}
			t.Verdicts = append(t.Verdicts, v)
		}
	}
	if p.Kind == sim.Sequences && hasAll(t, sim.SequenceComparators) {
		// RLScheduler's criterion for each file's row, where its
		// comparators were replayed.
		for _, f := range files {
			v, err := t.SequenceVerdict(f.row)
			if err != nil {
				return err
			}
			t.SequenceVerdicts = append(t.SequenceVerdicts, v)
		}
	}
	if cfg.JSON {
		return printJSON(c.App.Writer, t)
	}
	return t.WriteText(c.App.Writer)
}

// policyFileRow is a policy file's row in a protocol table.
type policyFileRow struct {
	row string
	mk  sim.PolicyFactory
}

// policyFileRows loads simulate's --policy-file files, each as a row: one
// file is the row "tuned", several are named after their files. A row
// name that is already a policy of the table is refused.
func policyFileRows(paths, policies []string) ([]policyFileRow, error) {
	var out []policyFileRow
	for _, path := range paths {
		mk, err := tunedFactory(path)
		if err != nil {
			return nil, err
		}
		row := tunedRow
		if len(paths) > 1 {
			row = strings.TrimSuffix(filepath.Base(path), ".json")
		}
		for _, o := range out {
			if o.row == row {
				return nil, fmt.Errorf("--policy-file %s: a second file named %q: rename one", path, row)
			}
		}
		if slices.Contains(policies, row) {
			return nil, fmt.Errorf("--policy-file %s: its row %q is also a policy of --policies: rename the file", path, row)
		}
		out = append(out, policyFileRow{row, mk})
	}
	return out, nil
}

// hasAll reports whether t has a row for each of names.
func hasAll(t *sim.ProtocolTable, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(t.Rows, func(r sim.ProtocolRow) bool { return r.Name == n }) {
			return false
		}
	}
	return true
}
