package sim

import (
	"fmt"

	"github.com/fairway-hpc/fairway/policy/schedule"
)

// Unit is what a job asks for and nodes hold: GPUs for GPU traces, or
// processors for CPU traces (SWF), where each processor is one unit.
type Unit string

// The units.
const (
	GPUs Unit = "gpus"
	CPUs Unit = "cpus"
)

// Cluster is the simulated machine: Nodes identical nodes of PerNode units.
// A CPU trace whose machine is one pool of processors (SWF's MaxProcs) is
// one node of MaxProcs units.
//
// A cluster with Layout is partitioned (see Layout): Nodes is then the
// number of its nodes and PerNode the largest of them (WithLayout sets
// both).
type Cluster struct {
	Nodes   int
	PerNode int
	Unit    Unit
	// Layout, when not nil, is the cluster's nodes with their partitions
	// and GPU types; nil is one partition of identical nodes.
	Layout *Layout `json:",omitempty"`
}

// Bounds on a simulated cluster's size: maxNodes nodes, and maxPoolWords
// 64-bit words (256 MiB) for the placement index of each partition.
const (
	maxNodes     = 1 << 22
	maxPoolWords = 1 << 25
)

// Capacity is the cluster's total number of units.
func (c Cluster) Capacity() int {
	if c.Layout != nil {
		return c.Layout.capacity()
	}
	return c.Nodes * c.PerNode
}

func (c Cluster) validate() error {
	if c.Layout != nil {
		if err := c.Layout.validate(); err != nil {
			return err
		}
		if c.Nodes != len(c.Layout.Nodes) || c.PerNode != c.Layout.largest() {
			return fmt.Errorf("cluster %d nodes × %d %s does not match its layout (%d nodes, the largest of %d): use WithLayout",
				c.Nodes, c.PerNode, c.Unit, len(c.Layout.Nodes), c.Layout.largest())
		}
	}
	if c.Nodes <= 0 || c.PerNode <= 0 {
		return fmt.Errorf("cluster %d nodes × %d %s: want both > 0", c.Nodes, c.PerNode, c.Unit)
	}
	// The placement index has a bit per node for each count of free units a
	// node can have (schedule.Pool): bounded, so that a mistyped size is an
	// error and not a machine out of memory.
	if words := (c.PerNode + 1) * ((c.Nodes + 63) / 64); c.Nodes > maxNodes || c.PerNode > maxNodes || words > maxPoolWords {
		return fmt.Errorf("cluster %d nodes × %d %s: too large to simulate (at most %d nodes, and nodes × units per node about %d)",
			c.Nodes, c.PerNode, c.Unit, maxNodes, maxPoolWords*64)
	}
	if c.Unit != GPUs && c.Unit != CPUs {
		return fmt.Errorf("cluster unit %q: want gpus or cpus", c.Unit)
	}
	return nil
}

// Machine is the cluster as the forecast sees it.
func (c Cluster) Machine() schedule.Machine {
	return schedule.Machine{Nodes: c.Nodes, PerNode: c.PerNode, CPUs: c.Unit == CPUs}
}
