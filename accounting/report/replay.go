package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// ReplayWorkload is a database history as the simulator replays it: the
// jobs in submit order (the id breaking ties, as a trace is read: the time
// split cuts by submits), on the cluster of layout when given, where each
// job runs only in its recorded partition and on its GPU type and the
// simulator counts and names the jobs no node can run; else on nodes ×
// perNode; else on the least the history fits (HistoryCluster).
// simulate --from-db, tune --from-db and the report's counterfactual all
// replay through it, so a layout routes and leaves out the same jobs in
// each. jobs is sorted in place.
func ReplayWorkload(name string, jobs []policy.Job, unit sim.Unit, nodes, perNode int, layout *sim.Layout) (*sim.Workload, error) {
	if layout != nil {
		nodes, perNode = len(layout.Nodes), 1 // sized by the layout below
	}
	c, err := HistoryCluster(jobs, unit, nodes, perNode)
	if err != nil {
		return nil, err
	}
	if layout != nil {
		c = c.WithLayout(layout)
	}
	slices.SortStableFunc(jobs, func(a, b policy.Job) int {
		return cmp.Or(a.Submit.Compare(b.Submit), cmp.Compare(a.ID, b.ID))
	})
	return &sim.Workload{Name: name, Format: "accounting database", Jobs: jobs, Cluster: c, LeftOut: map[string]int{}}, nil
}

// HistoryCluster is the machine a database history is replayed on. The
// database keeps no node inventory, only what each job asked for, so the
// history tells a lower bound: a node holds at least the most units one
// job asked for on one node (units ÷ nodes, rounded up), and there are at
// least as many nodes as the widest job spanned and as the most units in
// use at once need. nodes and perNode, when > 0, override; unit "" is GPUs
// when a job asked for GPUs, else processors.
func HistoryCluster(jobs []policy.Job, unit sim.Unit, nodes, perNode int) (sim.Cluster, error) {
	if unit == "" {
		unit = sim.CPUs
		if slices.ContainsFunc(jobs, func(j policy.Job) bool { return j.GPUs > 0 }) {
			unit = sim.GPUs
		}
	}
	c := sim.Cluster{Nodes: nodes, PerNode: perNode, Unit: unit}
	if nodes > 0 && perNode > 0 {
		return c, nil
	}
	var evs []useEvent[int]
	widest, most := 0, 0
	for i := range jobs {
		j := &jobs[i]
		need := c.Need(j)
		if need <= 0 || j.Start.IsZero() || !j.End.After(j.Start) {
			continue
		}
		n := max(j.Nodes, 1)
		widest = max(widest, n)
		most = max(most, (need+n-1)/n)
		evs = append(evs, useEvent[int]{j.Start.UnixNano(), need}, useEvent[int]{j.End.UnixNano(), -need})
	}
	if most == 0 {
		return c, fmt.Errorf("no job of the history ran with %s: give --nodes and --per-node, or --unit", unit)
	}
	peak := peakUse(evs)
	if c.PerNode == 0 {
		c.PerNode = most
	}
	if c.Nodes == 0 {
		c.Nodes = max(widest, (peak+c.PerNode-1)/c.PerNode)
	}
	return c, nil
}
