package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predeval"
	"github.com/fairway-hpc/fairway/policy/predict"
	"golang.org/x/sync/errgroup"
)

// SuiteTrace is one workload of the evaluation suite.
type SuiteTrace struct {
	Name string
	Load func() (*Workload, error)
}

// The shared traces the suite replays, by file name (see
// ../shared/data/traces/README.md).
const (
	CTCFile    = "CTC-SP2-1996-3.1-cln.swf.gz"
	KTHFile    = "KTH-SP2-filtered.swf.gz"
	SDSCFile   = "SDSC-BLUE-2000-4.2-cln.swf.gz"
	PhillyFile = "Philly-MIX1.csv.gz"
)

// SuiteTraces is the default suite: the archive traces CTC, KTH and
// SDSC-BLUE and the GPU trace Philly-MIX1 from dir, and three seeds of the
// synthetic Helios-like workload.
func SuiteTraces(dir string) []SuiteTrace {
	file := func(name string, f trace.Format) SuiteTrace {
		return SuiteTrace{Name: name, Load: func() (*Workload, error) { return LoadTrace(filepath.Join(dir, name), f, 0, 0) }}
	}
	ts := []SuiteTrace{file(CTCFile, trace.SWF), file(KTHFile, trace.SWF), file(SDSCFile, trace.SWF), file(PhillyFile, trace.PhillyMIX)}
	for seed := uint64(1); seed <= 3; seed++ {
		name := fmt.Sprintf("synthetic seed %d", seed)
		ts = append(ts, SuiteTrace{Name: name, Load: func() (*Workload, error) { return SynthWorkload(name, seed, 0, 0) }})
	}
	return ts
}

// ParseLoads reads --loads: comma-separated positive load factors.
func ParseLoads(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) {
			return nil, fieldErr("Loads", "", fmt.Errorf("%q: want positive numbers like 0.8,1.0,1.2", f))
		}
		out = append(out, x)
	}
	return out, nil
}

// SuiteLoads are the default offered loads, as factors of each trace's own.
var SuiteLoads = []float64{0.8, 1.0, 1.2}

// SuiteConfig is one run of the suite.
type SuiteConfig struct {
	Traces []SuiteTrace
	// Loads scale each trace's inter-arrival times (ScaleLoad); nil means
	// SuiteLoads.
	Loads []float64
	// Policies to replay; nil means policy.Compared(). Default is the
	// one the criteria judge; "" means policy.Default.
	Policies []string
	Default  string
	// Params are the policies' parameters by name (see CompareConfig).
	Params map[string]any
	// Factories make the policies that are not registered (a policy
	// file's row), by name (see CompareConfig).
	Factories map[string]PolicyFactory
	// Predictor learns online in every simulation ("none" for none; ""
	// means "fairway").
	Predictor string
	Backfill  Backfill
	// Preempt names the policies simulated preemptively; nil means those
	// with the Preemptive trait (tiresias), as `fairway simulate` does.
	Preempt map[string]bool
	// MaxJobs replays only each trace's first MaxJobs jobs (0: all).
	MaxJobs int
	// Parallel bounds the simulations run at once (at least 1).
	Parallel int
	// Predictors also scores every registered predictor on each trace (its
	// own load) under both protocols.
	Predictors bool
	// Progress, when set, is told of each finished piece of work.
	Progress func(msg string)
}

// SuiteRow is one trace at one load: every policy's metrics and how the
// default fares.
type SuiteRow struct {
	Trace string
	Load  float64
	// Offered is the offered load after scaling (OfferedLoad).
	Offered float64
	Jobs    int
	Cluster Cluster
	LeftOut map[string]int
	Metrics []Metrics // in SuiteConfig.Policies order
	// Beaten lists each (policy, metric) on which another policy does
	// better than the default.
	Beaten []Beat
	// Checks are the default's acceptance criteria on this row.
	Checks []Check
}

// Beat is one metric on which Policy does better than the default.
type Beat struct {
	Policy, Metric string
	Default, Other float64
}

// Check is one acceptance criterion of the default policy against another.
type Check struct {
	Name    string // "avg wait < fairshare"
	Default float64
	Bound   float64 // what the default's value must beat
	Met     bool
	// Tie marks a strict comparison the default missed only by being
	// equal: every policy gave the same value (an uncontended workload,
	// where no order can change a wait).
	Tie bool
}

// Miss says by how much a check missed: "+3.1%" or "−0.012".
func (c Check) Miss() string {
	if c.Bound != 0 && !strings.HasPrefix(c.Name, "Jain") {
		return fmt.Sprintf("%+.1f%%", 100*(c.Default-c.Bound)/math.Abs(c.Bound))
	}
	return fmt.Sprintf("%+.3f", c.Default-c.Bound)
}

// PredictorRow is every predictor's error on one trace under one protocol.
type PredictorRow struct {
	Trace    string
	Protocol predeval.Protocol
	Jobs     int
	Results  []predeval.Metrics
	// BestMAE and BestMedAE name the predictors with the lowest errors.
	BestMAE, BestMedAE string
}

// FairwayBest reports whether the fairway predictor has both the lowest
// MAE and the lowest MedAE.
func (r PredictorRow) FairwayBest() bool { return r.BestMAE == "fairway" && r.BestMedAE == "fairway" }

// SuiteResult is the whole suite.
type SuiteResult struct {
	Default    string
	Policies   []string
	Predictor  string
	MaxJobs    int
	Rows       []SuiteRow
	Predictors []PredictorRow
}

// The metrics the suite compares, lower better except Jain.
var suiteMetrics = []struct {
	name   string
	get    func(*Metrics) float64
	higher bool
}{
	{"avg wait", func(m *Metrics) float64 { return m.AvgWait }, false},
	{"avg bsld", func(m *Metrics) float64 { return m.AvgBSLD }, false},
	{"avg JCT", func(m *Metrics) float64 { return m.AvgJCT }, false},
	{"Jain", func(m *Metrics) float64 { return m.Jain }, true},
	{"max ρ", func(m *Metrics) float64 { return m.MaxRho }, false},
}

// Criteria checks the default policy's metrics against the others' (by
// policy name): an average wait below fifo's, fairshare's and vtc's, an
// average bounded slowdown below fairshare's, Jain's index at least
// fairshare's − 0.01, a maximum ρ below fairshare's and qssf's, and an
// average JCT within 15% of sjf-oracle's. A criterion whose other policy
// is missing is left out.
func Criteria(def Metrics, others map[string]Metrics) []Check {
	var cs []Check
	lower := func(metric string, v float64, other string, get func(Metrics) float64) {
		if o, ok := others[other]; ok {
			b := get(o)
			cs = append(cs, Check{Name: metric + " < " + other, Default: v, Bound: b, Met: v < b, Tie: v == b})
		}
	}
	for _, o := range []string{"fifo", "fairshare", "vtc"} {
		lower("avg wait", def.AvgWait, o, func(m Metrics) float64 { return m.AvgWait })
	}
	lower("avg bsld", def.AvgBSLD, "fairshare", func(m Metrics) float64 { return m.AvgBSLD })
	if o, ok := others["fairshare"]; ok {
		b := o.Jain - 0.01
		cs = append(cs, Check{Name: "Jain ≥ fairshare − 0.01", Default: def.Jain, Bound: b, Met: def.Jain >= b})
	}
	for _, o := range []string{"fairshare", "qssf"} {
		lower("max ρ", def.MaxRho, o, func(m Metrics) float64 { return m.MaxRho })
	}
	if o, ok := others["sjf-oracle"]; ok {
		b := 1.15 * o.AvgJCT
		cs = append(cs, Check{Name: "avg JCT ≤ 1.15 × sjf-oracle", Default: def.AvgJCT, Bound: b, Met: def.AvgJCT <= b})
	}
	return cs
}

func (c *SuiteConfig) defaults() error {
	if len(c.Loads) == 0 {
		c.Loads = SuiteLoads
	}
	if len(c.Policies) == 0 {
		c.Policies = policy.Compared()
	}
	if c.Default == "" {
		c.Default = policy.Default
	}
	if !slices.Contains(c.Policies, c.Default) {
		return fmt.Errorf("suite: default policy %q is not among the policies %s", c.Default, strings.Join(c.Policies, ","))
	}
	if c.Predictor == "" {
		c.Predictor = "fairway"
	}
	if c.Preempt == nil {
		c.Preempt = map[string]bool{}
		for _, name := range policy.Preemptive() {
			c.Preempt[name] = true
		}
	}
	if c.Parallel < 1 {
		c.Parallel = 1
	}
	for _, x := range c.Loads {
		if !(x > 0) {
			return fmt.Errorf("suite: load %g: want > 0", x)
		}
	}
	return nil
}

// RunSuite replays every policy over every trace × load, Parallel
// simulations at a time, and judges the default on each row.
func RunSuite(ctx context.Context, cfg SuiteConfig) (*SuiteResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &SuiteResult{Default: cfg.Default, Policies: cfg.Policies, Predictor: cfg.Predictor, MaxJobs: cfg.MaxJobs}
	ws := make([]*Workload, len(cfg.Traces))
	for i, t := range cfg.Traces {
		w, err := t.Load()
		if err != nil {
			return nil, fmt.Errorf("suite: %s: %w", t.Name, err)
		}
		ws[i] = w.FirstJobs(cfg.MaxJobs)
	}
	res.Rows = make([]SuiteRow, len(ws)*len(cfg.Loads))
	scaled := make([][]policy.Job, len(res.Rows))
	for i, w := range ws {
		for k, x := range cfg.Loads {
			jobs, err := ScaleLoad(w.Jobs, x)
			if err != nil {
				return nil, err
			}
			r := i*len(cfg.Loads) + k
			scaled[r] = jobs
			res.Rows[r] = SuiteRow{Trace: cfg.Traces[i].Name, Load: x, Offered: OfferedLoad(jobs, w.Cluster),
				Cluster: w.Cluster, LeftOut: w.LeftOut, Metrics: make([]Metrics, len(cfg.Policies))}
		}
	}
	if cfg.Predictors {
		res.Predictors = make([]PredictorRow, 2*len(ws))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	var mu sync.Mutex
	report := func(format string, a ...any) {
		if cfg.Progress != nil {
			mu.Lock()
			defer mu.Unlock()
			cfg.Progress(fmt.Sprintf(format, a...))
		}
	}
	// The biggest rows first, so that the last to finish are short.
	order := make([]int, len(res.Rows))
	for r := range order {
		order[r] = r
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(scaled[b]) - len(scaled[a]) })
	for _, r := range order {
		for p, name := range cfg.Policies {
			g.Go(func() error {
				m, err := suiteSim(gctx, cfg, name, scaled[r], res.Rows[r].Cluster)
				if err != nil {
					return fmt.Errorf("suite: %s × %.1f, %s: %w", res.Rows[r].Trace, res.Rows[r].Load, name, err)
				}
				m.Name = name // a policy file's row: its policy is named after its family
				res.Rows[r].Metrics[p] = m
				report("%s × %.1f: %s done", res.Rows[r].Trace, res.Rows[r].Load, name)
				return nil
			})
		}
	}
	for i, w := range ws {
		if !cfg.Predictors {
			break
		}
		for k, proto := range []predeval.Protocol{predeval.SubmitOrder, predeval.Online} {
			g.Go(func() error {
				row, err := suitePredictors(gctx, w.Jobs, cfg.Traces[i].Name, proto)
				if err != nil {
					return fmt.Errorf("suite: predictors on %s: %w", cfg.Traces[i].Name, err)
				}
				res.Predictors[2*i+k] = row
				report("%s: predictors (%s) done", cfg.Traces[i].Name, proto)
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for r := range res.Rows {
		res.Rows[r].judge(cfg.Default)
	}
	return res, nil
}

func suiteSim(ctx context.Context, cfg SuiteConfig, name string, jobs []policy.Job, c Cluster) (Metrics, error) {
	run, err := comparePolicy(ctx, CompareConfig{Params: cfg.Params, Factories: cfg.Factories, Predictor: cfg.Predictor, Backfill: cfg.Backfill, Preempt: cfg.Preempt},
		&Workload{Jobs: jobs, Cluster: c}, name)
	return run.Metrics, err
}

func suitePredictors(ctx context.Context, jobs []policy.Job, name string, proto predeval.Protocol) (PredictorRow, error) {
	res, err := predeval.RunNamed(jobs, predict.Names(), predeval.Options{Protocol: proto, Trace: name})
	if err != nil {
		return PredictorRow{}, err
	}
	if err := ctx.Err(); err != nil {
		return PredictorRow{}, err
	}
	row := PredictorRow{Trace: name, Protocol: proto, Jobs: res.Jobs, Results: res.Predictors}
	mae, medae := res.Lowest()
	// A tie does not beat fairway: it keeps the lowest error.
	row.BestMAE, row.BestMedAE = lowestName(mae), lowestName(medae)
	return row, nil
}

// judge fills the row's Beaten and Checks.
func (r *SuiteRow) judge(def string) {
	by := map[string]Metrics{}
	for _, m := range r.Metrics {
		by[m.Name] = m
	}
	d := by[def]
	r.Jobs = d.Jobs
	for _, m := range r.Metrics {
		if m.Name == def {
			continue
		}
		for _, sm := range suiteMetrics {
			dv, ov := sm.get(&d), sm.get(&m)
			if (sm.higher && ov > dv) || (!sm.higher && ov < dv) {
				r.Beaten = append(r.Beaten, Beat{Policy: m.Name, Metric: sm.name, Default: dv, Other: ov})
			}
		}
	}
	delete(by, def)
	r.Checks = Criteria(d, by)
}

// Misses returns the checks the row's default missed.
func (r *SuiteRow) Misses() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Met {
			out = append(out, c)
		}
	}
	return out
}

// WriteText prints the suite for people: per trace and load, the table,
// the policies that beat the default on which metric, and the criteria;
// then the predictors and a summary.
func (s *SuiteResult) WriteText(w io.Writer) error {
	return s.write(w, false)
}

// WriteMarkdown prints the same as WriteText as Markdown tables.
func (s *SuiteResult) WriteMarkdown(w io.Writer) error {
	return s.write(w, true)
}

func (s *SuiteResult) write(w io.Writer, md bool) error {
	scope := "whole traces"
	if s.MaxJobs > 0 {
		scope = fmt.Sprintf("first %d jobs of each trace", s.MaxJobs)
	}
	fmt.Fprintf(w, "Policy suite: default %s, predictor %s, EASY backfill, %s.\n\n", s.Default, s.Predictor, scope)
	missed := 0
	for i := range s.Rows {
		r := &s.Rows[i]
		head := fmt.Sprintf("%s × load %.1f: offered load %.2f, %d jobs on %d × %d %s, left out: %s",
			r.Trace, r.Load, r.Offered, r.Jobs, r.Cluster.Nodes, r.Cluster.PerNode, r.Cluster.Unit, trace.FormatLeftOut(r.LeftOut))
		if md {
			fmt.Fprintf(w, "### %s\n\n", head)
			fmt.Fprintln(w, "| policy | avg JCT (s) | avg wait (s) | p95 wait (s) | avg bsld | Jain | max ρ | util |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
			for _, m := range r.Metrics {
				name := m.Name
				if m.Name == s.Default {
					name = "**" + name + "**"
				}
				fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.2f | %.3f | %.1f | %.3f |\n", name, m.AvgJCT, m.AvgWait, m.P95Wait, m.AvgBSLD, m.Jain, m.MaxRho, m.Utilization)
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "== %s\n", head)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "policy\tavg JCT (s)\tavg wait (s)\tp95 wait\tavg bsld\tJain\tmax ρ\tutil\t")
			for _, m := range r.Metrics {
				fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f\t%.3f\t%.1f\t%.3f\t\n", m.Name, m.AvgJCT, m.AvgWait, m.P95Wait, m.AvgBSLD, m.Jain, m.MaxRho, m.Utilization)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "%s is beaten by: %s\n", s.Default, beatenText(r.Beaten))
		if md {
			fmt.Fprintln(w)
		}
		ms := r.Misses()
		var missText, tieText []string
		for _, c := range ms {
			if c.Tie {
				tieText = append(tieText, fmt.Sprintf("%s (both %.4g)", c.Name, c.Default))
			} else {
				missText = append(missText, fmt.Sprintf("%s (%.4g vs %.4g, %s)", c.Name, c.Default, c.Bound, c.Miss()))
			}
		}
		switch {
		case len(ms) == 0:
			fmt.Fprintf(w, "criteria: all %d met\n", len(r.Checks))
		default:
			missed++
			fmt.Fprintf(w, "criteria: %d of %d met", len(r.Checks)-len(ms), len(r.Checks))
			if len(missText) > 0 {
				fmt.Fprintf(w, "; MISSED: %s", strings.Join(missText, "; "))
			}
			if len(tieText) > 0 {
				fmt.Fprintf(w, "; TIED (not met; identical schedules): %s", strings.Join(tieText, "; "))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	if len(s.Predictors) > 0 {
		if md {
			fmt.Fprintln(w, "### Predictors (each trace at its own load)")
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| trace | protocol | jobs | fairway MAE / MedAE (s) | lowest MAE | lowest MedAE |")
			fmt.Fprintln(w, "|---|---|---:|---:|---|---|")
		} else {
			fmt.Fprintln(w, "== Predictors (each trace at its own load): MAE / MedAE (s)")
		}
		for _, p := range s.Predictors {
			var fw predeval.Metrics
			for _, m := range p.Results {
				if m.Name == "fairway" {
					fw = m
				}
			}
			bm, bmed := lookup(p.Results, p.BestMAE), lookup(p.Results, p.BestMedAE)
			if md {
				fmt.Fprintf(w, "| %s | %s | %d | %.1f / %.1f | %s %.1f | %s %.1f |\n", p.Trace, p.Protocol, p.Jobs, fw.MAE, fw.MedAE, p.BestMAE, bm.MAE, p.BestMedAE, bmed.MedAE)
			} else {
				fmt.Fprintf(w, "%s, %s, %d jobs: fairway %.1f / %.1f; lowest MAE %s %.1f, lowest MedAE %s %.1f\n",
					p.Trace, p.Protocol, p.Jobs, fw.MAE, fw.MedAE, p.BestMAE, bm.MAE, p.BestMedAE, bmed.MedAE)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Summary: %s meets every criterion on %d of %d trace × load rows", s.Default, len(s.Rows)-missed, len(s.Rows))
	if len(s.Predictors) > 0 {
		best := 0
		for _, p := range s.Predictors {
			if p.FairwayBest() {
				best++
			}
		}
		fmt.Fprintf(w, "; the fairway predictor has the lowest MAE and MedAE in %d of %d trace × protocol cases", best, len(s.Predictors))
	}
	fmt.Fprintln(w, ".")
	return nil
}

// lowestName is "fairway" when it is among names (tied or alone), else the
// first of names ("" for none).
func lowestName(names []string) string {
	switch {
	case slices.Contains(names, "fairway"):
		return "fairway"
	case len(names) == 0:
		return ""
	}
	return names[0]
}

func lookup(ms []predeval.Metrics, name string) predeval.Metrics {
	for _, m := range ms {
		if m.Name == name {
			return m
		}
	}
	return predeval.Metrics{}
}

// beatenText groups beats by policy: "qssf on avg wait (6397 vs 9319), avg
// bsld (36.4 vs 67.0); fifo on Jain (…)", or "nobody".
func beatenText(bs []Beat) string {
	if len(bs) == 0 {
		return "nobody"
	}
	var parts []string
	for i := 0; i < len(bs); {
		k := i
		var ms []string
		for ; k < len(bs) && bs[k].Policy == bs[i].Policy; k++ {
			ms = append(ms, fmt.Sprintf("%s (%.4g vs %.4g)", bs[k].Metric, bs[k].Other, bs[k].Default))
		}
		parts = append(parts, bs[i].Policy+" on "+strings.Join(ms, ", "))
		i = k
	}
	return strings.Join(parts, "; ")
}
