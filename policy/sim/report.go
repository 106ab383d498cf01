package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/atomicfile"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// MaxLoad is the largest offered-load factor a replay takes: a trace
// compressed a thousandfold is far past any cluster's saturation, and a
// larger factor only squeezes the submit times towards one instant.
const MaxLoad = 1000

// BundledSeed fixes the bundled synthetic workload `fairway simulate` runs
// without a trace.
const BundledSeed = 1

// RunConfig is what `fairway simulate` compares: a workload (a trace, or
// the bundled synthetic one), the cluster it runs on and the policies.
type RunConfig struct {
	Trace     string // "" runs the bundled synthetic workload
	Format    trace.Format
	Policies  []string
	Backfill  Backfill
	Predictor string // "none" for no predictor
	Preempt   map[string]bool
	Nodes     int // 0: the trace's default
	PerNode   int
	Parallel  int
	Load      float64 // inter-arrival scale: offered load × Load
	// Layout, when set, partitions the cluster (--partitions): it
	// replaces Nodes and PerNode and the trace's own size.
	Layout *Layout
	// Share, when set, lets jobs share GPUs (--share; see Share).
	Share *Share
	// BackfillInterval is the site's bf_interval when backfill runs only
	// every so often (Config.BackfillInterval); 0: at every point.
	BackfillInterval time.Duration
}

// Validate checks what the flags' parsers cannot, naming the flag.
func (c RunConfig) Validate() error {
	if err := checkPredictor(c.Predictor); err != nil {
		return err
	}
	if c.Nodes < 0 || c.PerNode < 0 {
		return &FieldError{Fields: []Setting{{"Nodes", fmt.Sprint(c.Nodes)}, {"PerNode", fmt.Sprint(c.PerNode)}}, Err: errors.New("want >= 0")}
	}
	if c.Layout != nil && (c.Nodes != 0 || c.PerNode != 0) {
		return fmt.Errorf("--partitions: not with --nodes or --per-node (the partitions give the nodes)")
	}
	if c.Trace != "" && c.Format == trace.Helios && c.Nodes == 0 && c.Layout == nil {
		return fmt.Errorf("--nodes: required for Helios traces, which do not record their cluster's size")
	}
	if c.Parallel < 1 {
		return fieldErr("Parallel", fmt.Sprint(c.Parallel), errors.New("want >= 1"))
	}
	if !(c.Load > 0) || c.Load > MaxLoad {
		return fieldErr("Load", fmt.Sprintf("%g", c.Load), fmt.Errorf("want a factor > 0 and at most %d (1 replays the trace as it arrived)", MaxLoad))
	}
	if c.Share != nil {
		return c.validateShare()
	}
	return nil
}

// validateShare checks the sharing settings (--share), naming the field.
func (c RunConfig) validateShare() error {
	sh := c.Share
	switch {
	case sh.ShardsPerGPU < 2:
		return fieldErr("Share.ShardsPerGPU", fmt.Sprint(sh.ShardsPerGPU), errors.New("want at least 2 (a GPU of one shard is not shared)"))
	case !(sh.Interference >= 0) || math.IsInf(sh.Interference, 1):
		return fieldErr("Share.Interference", fmt.Sprintf("%g", sh.Interference), errors.New("want a finite number >= 0"))
	case !(sh.Model.LightFraction > 0 && sh.Model.LightFraction <= 1):
		return fieldErr("Share.Model.LightFraction", fmt.Sprintf("%g", sh.Model.LightFraction), errors.New("want a fraction > 0 and <= 1"))
	case c.Layout != nil:
		return errors.New("--share: not with --partitions (sharing is not modelled on a partitioned cluster)")
	case c.Backfill != NoBackfill:
		return fieldErr("Backfill", string(c.Backfill), errors.New("not with --share: a shared job's end moves as co-runners come and go, so no reservation holds; give --backfill none"))
	case len(c.Preempt) > 0:
		return errors.New("--share: not with --preempt (preemption is not modelled with shared GPUs; give --preempt '')")
	}
	return nil
}

// checkPredictor names the predictors there are when name is none of
// them (nor "none").
func checkPredictor(name string) error {
	if _, ok := predict.Predictors[name]; !ok && name != "none" {
		return fieldErr("Predictor", "", fmt.Errorf("unknown predictor %q: want one of %s, or none", name, strings.Join(predict.Names(), ", ")))
	}
	return nil
}

// Choice is what a comparison replays besides the workload; simulate and
// simulate --suite read it from the same flags.
type Choice struct {
	Policies  []string // nil when none are named
	Preempt   map[string]bool
	Backfill  Backfill
	Predictor string // "none" for no predictor
}

// ParseChoice parses --policies, --preempt (comma-separated policy names),
// --backfill and --predictor, naming the flag of the first bad one.
func ParseChoice(policies, preempt, backfill, predictor string) (Choice, error) {
	ch := Choice{Preempt: map[string]bool{}, Predictor: predictor}
	var err error
	if ch.Policies, err = NameList(policies, IsPolicy); err != nil {
		return ch, fieldErr("Policies", "", fmt.Errorf("%w (want some of %s)", err, strings.Join(policy.Names(), ",")))
	}
	names, err := NameList(preempt, IsPolicy)
	if err != nil {
		return ch, fieldErr("Preempt", "", err)
	}
	for _, n := range names {
		ch.Preempt[n] = true
	}
	if ch.Backfill, err = ParseBackfill(backfill); err != nil {
		return ch, fieldErr("Backfill", "", err)
	}
	return ch, checkPredictor(predictor)
}

// NameList splits a comma-separated list, checking each name and dropping
// repeats.
func NameList(s string, known func(string) bool) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !known(n) {
			return nil, fmt.Errorf("unknown name %q", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// IsPolicy says whether name is a registered policy.
func IsPolicy(name string) bool { _, ok := policy.Lookup(name); return ok }

// LoadWorkload reads the trace, or generates the bundled workload, sizes
// the cluster and scales the offered load by c.Load.
func (c RunConfig) LoadWorkload() (*Workload, error) {
	var w *Workload
	var err error
	nodes, perNode := c.Nodes, c.PerNode
	if c.Layout != nil {
		// Sizes any trace accepts; the layout replaces them below.
		nodes, perNode = len(c.Layout.Nodes), c.Layout.largest()
	}
	if c.Trace == "" {
		w, err = SynthWorkload(fmt.Sprintf("bundled synthetic workload (seed %d)", BundledSeed), BundledSeed, nodes, perNode)
	} else {
		w, err = LoadTrace(c.Trace, c.Format, nodes, perNode)
	}
	if err != nil {
		return nil, err
	}
	if c.Layout != nil {
		w.Cluster = w.Cluster.WithLayout(c.Layout)
	}
	w.OwnLoad = OfferedLoad(w.Jobs, w.Cluster)
	if w.Jobs, err = ScaleLoad(w.Jobs, c.Load); err != nil {
		return nil, fieldErr("Load", "", err)
	}
	return w, nil
}

// ClusterInfo is a workload's cluster as reports print it.
type ClusterInfo struct {
	Nodes   int    `json:"nodes"`
	PerNode int    `json:"per_node"`
	Unit    string `json:"unit"`
	// Partitions is a partitioned cluster's layout, as ParseLayout reads
	// it (Nodes is then its node count, PerNode the largest node).
	Partitions string `json:"partitions,omitempty"`
}

// InfoOf is c as reports print it.
func InfoOf(c Cluster) ClusterInfo {
	i := ClusterInfo{Nodes: c.Nodes, PerNode: c.PerNode, Unit: string(c.Unit)}
	if c.Layout != nil {
		i.Partitions = c.Layout.String()
	}
	return i
}

// String is the cluster for people: N × U units, or the partitions.
func (i ClusterInfo) String() string {
	if i.Partitions != "" {
		return fmt.Sprintf("%d nodes of %s in partitions %s", i.Nodes, i.Unit, i.Partitions)
	}
	return fmt.Sprintf("%d × %d %s", i.Nodes, i.PerNode, i.Unit)
}

// Report is a comparison of policies on one workload (the JSON form of
// `fairway simulate`).
type Report struct {
	Trace    string         `json:"trace"`
	Format   string         `json:"format"`
	Jobs     int            `json:"jobs"`
	LeftOut  map[string]int `json:"left_out,omitempty"` // trace records the reader left out
	Skipped  map[string]int `json:"skipped,omitempty"`  // jobs the simulator left out
	Cluster  ClusterInfo    `json:"cluster"`
	Backfill Backfill       `json:"backfill"`
	// BackfillInterval: backfill ran every so many seconds (the site's
	// bf_interval); 0, left out: at every scheduling point.
	BackfillInterval float64 `json:"backfill_interval_s,omitempty"`
	Predictor        string  `json:"predictor"`
	// Load is RunConfig.Load; OwnLoad the trace's offered load as it
	// arrived and OfferedLoad the one replayed (OwnLoad × Load).
	Load        float64   `json:"load"`
	OwnLoad     float64   `json:"own_offered_load"`
	OfferedLoad float64   `json:"offered_load"`
	Policies    []Metrics `json:"policies"`
	// CutAtLimit counts the jobs without a time limit that ran longer than
	// the one a replay gives them and are cut there (CutAtDefaultLimit).
	CutAtLimit int `json:"cut_at_default_limit,omitempty"`
	// Share is the GPU sharing simulated (--share); each policy's
	// Metrics.Share says what it did.
	Share *ShareInfo `json:"share,omitempty"`
}

// ShareInfo is a shared simulation's settings, as reports print them.
type ShareInfo struct {
	ShardsPerGPU  int     `json:"shards_per_gpu"`
	Interference  float64 `json:"interference"`
	UsageSeed     uint64  `json:"usage_seed"`
	LightFraction float64 `json:"light_fraction"`
}

// NewReport measures runs, Compare's result on w under c.
func NewReport(w *Workload, runs []PolicyRun, c RunConfig) *Report {
	rep := &Report{Trace: w.Name, Format: w.Format, LeftOut: w.LeftOut, Skipped: runs[0].Skipped, Backfill: c.Backfill, Predictor: c.Predictor,
		BackfillInterval: c.BackfillInterval.Seconds(),
		Load:             c.Load, OwnLoad: w.OwnLoad, OfferedLoad: OfferedLoad(w.Jobs, w.Cluster),
		Cluster: InfoOf(w.Cluster), Jobs: runs[0].Metrics.Jobs, CutAtLimit: CutAtDefaultLimit(w.Jobs)}
	if len(rep.Skipped) == 0 {
		rep.Skipped = nil
	}
	if sh := c.Share; sh != nil {
		rep.Share = &ShareInfo{ShardsPerGPU: sh.ShardsPerGPU, Interference: sh.Interference, UsageSeed: sh.Model.Seed, LightFraction: sh.Model.LightFraction}
		if rep.Share.LightFraction == 0 {
			rep.Share.LightFraction = DefaultLightFraction
		}
	}
	for i := range runs {
		rep.Policies = append(rep.Policies, runs[i].Metrics)
	}
	return rep
}

// WriteCSV writes policies.csv (one row of metrics per policy) and
// users.csv (every policy's per-user waits, from runs) into dir. Each file
// is replaced whole (atomicfile), and that is enough: a failed write
// leaves that file's old version, never a part, and fails the command
// naming it; the directory as a set is not replaced at once (a failure at
// users.csv leaves the new policies.csv beside the old users.csv).
func (r *Report) WriteCSV(dir string, runs []PolicyRun) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	rows := [][]string{{"policy", "jobs", "avg_jct_s", "median_jct_s", "p95_jct_s", "avg_wait_s", "p95_wait_s", "avg_bsld",
		"makespan_s", "utilization", "jain", "max_rho", "p95_rho", "user_p95_wait_spread_s", "preemptions"}}
	for _, m := range r.Policies {
		rows = append(rows, []string{m.Name, strconv.Itoa(m.Jobs), f(m.AvgJCT), f(m.MedianJCT), f(m.P95JCT), f(m.AvgWait), f(m.P95Wait),
			f(m.AvgBSLD), f(m.Makespan), f(m.Utilization), f(m.Jain), f(m.MaxRho), f(m.P95Rho), f(m.UserP95WaitSpread), strconv.Itoa(m.Preemptions)})
	}
	if err := writeCSV(filepath.Join(dir, "policies.csv"), rows); err != nil {
		return err
	}
	rows = [][]string{{"policy", "user", "jobs", "avg_wait_s", "p95_wait_s"}}
	for i, run := range runs {
		for _, u := range run.Users {
			rows = append(rows, []string{r.Policies[i].Name, u.User, strconv.Itoa(u.Jobs), f(u.AvgWait), f(u.P95Wait)})
		}
	}
	return writeCSV(filepath.Join(dir, "users.csv"), rows)
}

// writeCSV writes rows to path, replacing the file whole; its error names
// path once.
func writeCSV(path string, rows [][]string) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return csv.NewWriter(w).WriteAll(rows)
	})
}
