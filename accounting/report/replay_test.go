package report_test

import (
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestReplayWorkload checks the one path a database history takes into
// the simulator: submit order (id breaking ties), and the cluster of the
// layout, of the size given, or the least the history fits.
func TestReplayWorkload(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	history := func() []policy.Job {
		job := func(id int64, submit time.Duration, gpus int) policy.Job {
			return policy.Job{ID: id, Partition: "gpu", GPUs: gpus, Nodes: 1, Submit: t0.Add(submit), Start: t0.Add(submit), End: t0.Add(submit + time.Hour)}
		}
		return []policy.Job{job(3, time.Minute, 2), job(2, 0, 4), job(1, 0, 1)}
	}
	layout, err := sim.ParseLayout("gpu:nodes=2,per-node=4,type=h100;debug:nodes=1,per-node=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		nodes, per   int
		layout       *sim.Layout
		want         sim.Cluster
		wantCapacity int
	}{
		{"layout", 0, 0, layout, sim.Cluster{Nodes: 3, PerNode: 4, Unit: sim.GPUs, Layout: layout}, 10},
		{"size given", 5, 8, nil, sim.Cluster{Nodes: 5, PerNode: 8, Unit: sim.GPUs}, 40},
		// Widest 1 node, most 4 on one node, 7 in use at once: 2 × 4.
		{"from the history", 0, 0, nil, sim.Cluster{Nodes: 2, PerNode: 4, Unit: sim.GPUs}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := report.ReplayWorkload("c", history(), "", tc.nodes, tc.per, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			if w.Cluster != tc.want || w.Cluster.Capacity() != tc.wantCapacity {
				t.Errorf("cluster %+v (capacity %d), want %+v (%d)", w.Cluster, w.Cluster.Capacity(), tc.want, tc.wantCapacity)
			}
			var ids []int64
			for _, j := range w.Jobs {
				ids = append(ids, j.ID)
			}
			if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 {
				t.Errorf("job order %v, want [1 2 3] (submit, then id)", ids)
			}
			if w.Name != "c" || w.Format != "accounting database" || w.LeftOut == nil {
				t.Errorf("workload %q (%s), left out %v", w.Name, w.Format, w.LeftOut)
			}
		})
	}
	if _, err := report.ReplayWorkload("c", history(), sim.CPUs, 0, 0, nil); err == nil {
		t.Error("a history of no processors: no error")
	}
}
