package report

import (
	"fmt"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// ParseUnit reads --unit: what jobs are counted in, gpu, or cpu for a CPU
// cluster.
func ParseUnit(s string) (sim.Unit, error) {
	switch s {
	case "gpu":
		return sim.GPUs, nil
	case "cpu":
		return sim.CPUs, nil
	}
	return "", fmt.Errorf("--unit %q: want gpu or cpu", s)
}

// Validate checks the options the command line sets, naming the flag of
// the first bad one.
func (o Options) Validate() error {
	if o.Cluster.Nodes < 0 || o.Cluster.PerNode < 0 || (o.Cluster.Nodes > 0) != (o.Cluster.PerNode > 0) {
		return fmt.Errorf("--nodes %d, --per-node %d: give both (positive) or neither", o.Cluster.Nodes, o.Cluster.PerNode)
	}
	if o.ShardsPerGPU < 0 {
		return fmt.Errorf("--shards-per-gpu %d: want >= 0", o.ShardsPerGPU)
	}
	if _, ok := policy.Lookup(o.SimPolicy); !ok && o.SimPolicy != "" {
		return fmt.Errorf("--sim-policy %q: want one of %s", o.SimPolicy, strings.Join(policy.Names(), ", "))
	}
	if _, ok := predict.Predictors[o.SimPredictor]; !ok && o.SimPredictor != "" && o.SimPredictor != "none" {
		return fmt.Errorf("--sim-predictor %q: want one of %s, or none", o.SimPredictor, strings.Join(predict.Names(), ", "))
	}
	return nil
}
