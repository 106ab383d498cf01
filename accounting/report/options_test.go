package report_test

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy/sim"
)

func TestParseUnit(t *testing.T) {
	for s, want := range map[string]sim.Unit{"gpu": sim.GPUs, "cpu": sim.CPUs} {
		if got, err := report.ParseUnit(s); err != nil || got != want {
			t.Errorf("ParseUnit(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	if _, err := report.ParseUnit("gpus"); err == nil || err.Error() != `Cluster.Unit "gpus": want gpu or cpu` {
		t.Errorf("ParseUnit(gpus) = %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := report.Options{Cluster: sim.Cluster{Nodes: 2, PerNode: 8}, ShardsPerGPU: 4, SimPolicy: "fifo", SimPredictor: "none"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", ok, err)
	}
	if err := (report.Options{}).Validate(); err != nil {
		t.Fatalf("zero Options: %v (size unknown, defaults for the rest)", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*report.Options)
		want string
	}{
		{"nodes only", func(o *report.Options) { o.Cluster.PerNode = 0 }, "Cluster.Nodes 2, Cluster.PerNode 0: give both (positive) or neither"},
		{"negative", func(o *report.Options) { o.Cluster = sim.Cluster{Nodes: -1, PerNode: -1} }, "Cluster.Nodes -1, Cluster.PerNode -1"},
		{"shards", func(o *report.Options) { o.ShardsPerGPU = -1 }, "ShardsPerGPU -1: want >= 0"},
		{"layout and nodes", func(o *report.Options) { o.Layout = &sim.Layout{} },
			"Layout, Cluster.Nodes 2, Cluster.PerNode 8: give the partitions or the nodes, not both"},
		{"policy", func(o *report.Options) { o.SimPolicy = "lottery" }, `SimPolicy "lottery": want one of`},
		{"predictor", func(o *report.Options) { o.SimPredictor = "oracle" }, `SimPredictor "oracle": want one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}
