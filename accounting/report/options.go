package report

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// ParseUnit reads --unit: what jobs are counted in, gpu, or cpu for a CPU
// cluster. A bad one is a *sim.FieldError of Cluster.Unit.
func ParseUnit(s string) (sim.Unit, error) {
	switch s {
	case "gpu":
		return sim.GPUs, nil
	case "cpu":
		return sim.CPUs, nil
	}
	return "", fieldErr("Cluster.Unit", fmt.Sprintf("%q", s), errors.New("want gpu or cpu"))
}

// Validate checks the options the command line sets; the first bad one
// is a *sim.FieldError naming its field of Options.
func (o Options) Validate() error {
	if o.Cluster.Nodes < 0 || o.Cluster.PerNode < 0 || (o.Cluster.Nodes > 0) != (o.Cluster.PerNode > 0) {
		return &sim.FieldError{Fields: []sim.Setting{{Field: "Cluster.Nodes", Value: fmt.Sprint(o.Cluster.Nodes)}, {Field: "Cluster.PerNode", Value: fmt.Sprint(o.Cluster.PerNode)}},
			Err: errors.New("give both (positive) or neither")}
	}
	if o.Layout != nil && (o.Cluster.Nodes != 0 || o.Cluster.PerNode != 0) {
		return &sim.FieldError{Fields: []sim.Setting{{Field: "Layout"}, {Field: "Cluster.Nodes", Value: fmt.Sprint(o.Cluster.Nodes)}, {Field: "Cluster.PerNode", Value: fmt.Sprint(o.Cluster.PerNode)}},
			Err: errors.New("give the partitions or the nodes, not both (the partitions give the nodes)")}
	}
	if o.ShardsPerGPU < 0 {
		return fieldErr("ShardsPerGPU", fmt.Sprint(o.ShardsPerGPU), errors.New("want >= 0"))
	}
	if _, ok := policy.Lookup(o.SimPolicy); !ok && o.SimPolicy != "" {
		return fieldErr("SimPolicy", fmt.Sprintf("%q", o.SimPolicy), fmt.Errorf("want one of %s", strings.Join(policy.Names(), ", ")))
	}
	if _, ok := predict.Predictors[o.SimPredictor]; !ok && o.SimPredictor != "" && o.SimPredictor != "none" {
		return fieldErr("SimPredictor", fmt.Sprintf("%q", o.SimPredictor), fmt.Errorf("want one of %s, or none", strings.Join(predict.Names(), ", ")))
	}
	return nil
}

// fieldErr is the *sim.FieldError of one setting of Options (or of what
// fills it: Formats for ParseFormats).
func fieldErr(field, value string, err error) error {
	return &sim.FieldError{Fields: []sim.Setting{{Field: field, Value: value}}, Err: err}
}
