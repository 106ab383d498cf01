package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
)

// Workload is what a simulation replays: jobs and the cluster they ran on.
type Workload struct {
	Name    string
	Format  string // a trace.Format, or "synthetic"
	Jobs    []policy.Job
	Cluster Cluster
	// LeftOut counts the trace records the reader left out, by reason
	// (nil for a synthetic workload).
	LeftOut map[string]int
	// OwnLoad is the trace's offered load as it arrived, before any
	// ScaleLoad (set by whoever scales).
	OwnLoad float64
}

// The clusters traces that do not record their size are replayed on.
const (
	// PhillyNodes × PhillyGPUsPerNode is the cluster the Chronus artifact
	// replays Philly-MIX on (run/exp_cluster/batch_run.sh:
	// num_node_p_switch=120; options.py: num_gpu_p_node=8).
	PhillyNodes       = 120
	PhillyGPUsPerNode = 8
	// SynthNodes × SynthGPUsPerNode is the synthetic workload's cluster,
	// Synth's default.
	SynthNodes       = 8
	SynthGPUsPerNode = 8
)

// LoadTrace reads the trace at path and sizes its cluster: an SWF trace
// runs on one pool of its header's MaxProcs (else MaxNodes) processors,
// Philly-MIX on PhillyNodes × PhillyGPUsPerNode, a Helios trace on nodes ×
// perNode (8 GPUs a node by default). nodes and perNode, when > 0,
// override the trace's own size; a trace that gives none needs both. An
// SWF trace given only one of them splits its processors by it (rounding
// up), so --per-node 1 on a 100-processor trace means 100 nodes of one
// processor, not a machine shrunk to one processor. A trace of which the
// reader kept no job is ErrNoJobs, with what it left out.
func LoadTrace(path string, f trace.Format, nodes, perNode int) (*Workload, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer fh.Close()
	tr, err := trace.ReadAll(fh, f, trace.Options{Name: path})
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	w := &Workload{Name: filepath.Base(path), Format: string(f), Jobs: tr.Jobs, LeftOut: tr.LeftOut}
	if w.LeftOut == nil {
		w.LeftOut = map[string]int{}
	}
	if len(w.Jobs) == 0 {
		return nil, fmt.Errorf("%s: %w (left out: %s)", path, ErrNoJobs, trace.FormatLeftOut(w.LeftOut))
	}
	switch f {
	case trace.SWF:
		procs := tr.Meta.MaxProcs
		if procs == 0 {
			procs = tr.Meta.MaxNodes
		}
		if procs == 0 && (nodes == 0 || perNode == 0) {
			return nil, fmt.Errorf("%s: no MaxProcs or MaxNodes header: give --nodes and --per-node", path)
		}
		switch {
		case nodes == 0 && perNode == 0:
			nodes, perNode = 1, procs
		case nodes == 0:
			nodes = (procs + perNode - 1) / perNode
		case perNode == 0:
			perNode = (procs + nodes - 1) / nodes
		}
		w.Cluster = Cluster{Nodes: nodes, PerNode: perNode, Unit: CPUs}
	case trace.PhillyMIX:
		w.Cluster = Cluster{Nodes: orDefault(nodes, PhillyNodes), PerNode: orDefault(perNode, PhillyGPUsPerNode), Unit: GPUs}
	case trace.Helios:
		if nodes == 0 {
			return nil, fmt.Errorf("%s: Helios traces do not record their cluster's size: give --nodes", path)
		}
		w.Cluster = Cluster{Nodes: nodes, PerNode: orDefault(perNode, 8), Unit: GPUs}
	}
	return w, nil
}

// SynthWorkload generates the synthetic workload of seed (Synth's
// defaults) on its cluster, nodes × perNode GPUs when given.
func SynthWorkload(name string, seed uint64, nodes, perNode int) (*Workload, error) {
	jobs, err := Synth(SynthParams{Seed: seed, Nodes: nodes, GPUsPerNode: perNode})
	if err != nil {
		return nil, err
	}
	return &Workload{Name: name, Format: "synthetic", Jobs: jobs,
		Cluster: Cluster{Nodes: orDefault(nodes, SynthNodes), PerNode: orDefault(perNode, SynthGPUsPerNode), Unit: GPUs}}, nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// FirstJobs returns the first n jobs of w in submit order (all when n <= 0
// or w has no more), for a cheaper replay of a long trace's start.
func (w *Workload) FirstJobs(n int) *Workload {
	if n <= 0 || n >= len(w.Jobs) {
		return w
	}
	jobs := slices.Clone(w.Jobs)
	slices.SortStableFunc(jobs, func(a, b policy.Job) int { return a.Submit.Compare(b.Submit) })
	c := *w
	c.Jobs = jobs[:n]
	return &c
}

// OfferedLoad is the work the jobs bring (units × run time, over the jobs
// the cluster can run) over the cluster's capacity across the submit span
// (first to last submit): 1 means the jobs, arriving as they do, would keep
// the whole cluster busy. 0 when the span is empty. On a partitioned
// cluster the jobs no node of their partition can run are not counted: a
// replay leaves them out (Unroutable).
func OfferedLoad(jobs []policy.Job, c Cluster) float64 {
	var first, last time.Time
	var r *router
	if c.Layout != nil {
		r = newRouter(c)
	}
	work := 0.0
	for i := range jobs {
		j := &jobs[i]
		need := c.Need(j)
		if need <= 0 || need > c.Capacity() || j.Start.IsZero() || j.End.Before(j.Start) || j.Submit.IsZero() {
			continue
		}
		if r != nil {
			if v, _ := r.route(j, need); v < 0 {
				continue
			}
		}
		if first.IsZero() || j.Submit.Before(first) {
			first = j.Submit
		}
		if j.Submit.After(last) {
			last = j.Submit
		}
		work += float64(need) * j.End.Sub(j.Start).Seconds()
	}
	span := last.Sub(first).Seconds()
	if span <= 0 || c.Capacity() <= 0 {
		return 0
	}
	return work / (float64(c.Capacity()) * span)
}

// ScaleLoad returns a copy of jobs whose inter-arrival times are divided by
// x, so that the offered load is x times the trace's own ("what if our
// users submit 20% more"): each submit moves to first + (submit − first)/x,
// and the job's eligible, start, end and deadline instants move with it, so
// that run times, requested times and recorded waits stay as they were.
// x must be > 0; 1 returns jobs unchanged.
func ScaleLoad(jobs []policy.Job, x float64) ([]policy.Job, error) {
	if !(x > 0) || x > 1e6 {
		return nil, fmt.Errorf("load %g: want a factor > 0", x)
	}
	if x == 1 || len(jobs) == 0 {
		return jobs, nil
	}
	var first time.Time
	for i := range jobs {
		if s := jobs[i].Submit; !s.IsZero() && (first.IsZero() || s.Before(first)) {
			first = s
		}
	}
	out := slices.Clone(jobs)
	if err := compress(out, first, x); err != nil {
		return nil, err
	}
	return out, nil
}

// ScaleLoadFrom is ScaleLoad applied to jobs[from:] only, about
// jobs[from].Submit: a window replayed at x times its offered load after
// the history that warms it, which keeps its own times. jobs must be in
// submit order (as an Evaluator holds them), so that the scaled jobs stay
// after the unscaled ones and in their order. x must be finite and > 0.
func ScaleLoadFrom(jobs []policy.Job, from int, x float64) ([]policy.Job, error) {
	if !(x > 0) || math.IsInf(x, 1) {
		return nil, fmt.Errorf("load %g: want a finite factor > 0", x)
	}
	if from < 0 || from >= len(jobs) {
		return nil, fmt.Errorf("load %g from job %d: want a job of the %d", x, from, len(jobs))
	}
	if !slices.IsSortedFunc(jobs, func(a, b policy.Job) int { return a.Submit.Compare(b.Submit) }) {
		return nil, errors.New("scale the load: jobs not in submit order")
	}
	out := slices.Clone(jobs)
	if x != 1 {
		if err := compress(out[from:], out[from].Submit, x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compress moves each job's submit to first + (submit − first)/x, and its
// other instants with it. A factor that would stretch the submits beyond
// what a time.Duration holds (292 years) is an error, not a wrapped time.
func compress(jobs []policy.Job, first time.Time, x float64) error {
	for i := range jobs {
		if off := jobs[i].Submit.Sub(first); !jobs[i].Submit.IsZero() && float64(off)/x >= math.MaxInt64/2 {
			return fmt.Errorf("load %g: stretches %s of submits beyond 146 years: want a larger factor", x, off.Round(time.Hour))
		}
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Submit.IsZero() {
			continue
		}
		off := j.Submit.Sub(first)
		d := time.Duration(float64(off)/x) - off
		for _, t := range []*time.Time{&j.Submit, &j.Eligible, &j.Start, &j.End, &j.Deadline} {
			if !t.IsZero() {
				*t = t.Add(d)
			}
		}
	}
	return nil
}
