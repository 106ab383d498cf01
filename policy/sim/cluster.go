package sim

import "fmt"

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
type Cluster struct {
	Nodes   int
	PerNode int
	Unit    Unit
}

// Capacity is the cluster's total number of units.
func (c Cluster) Capacity() int { return c.Nodes * c.PerNode }

func (c Cluster) validate() error {
	if c.Nodes <= 0 || c.PerNode <= 0 {
		return fmt.Errorf("cluster %d nodes × %d %s: want both > 0", c.Nodes, c.PerNode, c.Unit)
	}
	if c.Unit != GPUs && c.Unit != CPUs {
		return fmt.Errorf("cluster unit %q: want gpus or cpus", c.Unit)
	}
	return nil
}

// use is the part of one node a job holds.
type use struct {
	node  int32
	units int32
}

// pool is free units per node with the two numbers that decide whether a
// job fits anywhere: the largest free amount on one node, and how many
// nodes are wholly free. It implements Helios' consolidated placement
// (Hu et al., SC'21, §5.1, the artifact's "consolidate" placer): a job
// that fits on one node goes to the node with the fewest free units that
// can take it (best fit, lowest index on ties), so large free nodes stay
// whole; a job larger than a node takes ceil(need/PerNode) wholly free
// nodes and holds them whole.
type pool struct {
	perNode   int
	free      []int
	total     int // Σ free
	maxFree   int
	wholeFree int
}

func newPool(c Cluster) *pool {
	p := &pool{perNode: c.PerNode, free: make([]int, c.Nodes)}
	for i := range p.free {
		p.free[i] = c.PerNode
	}
	p.refresh()
	return p
}

// copyFrom makes p an independent copy of q, reusing p's storage.
func (p *pool) copyFrom(q *pool) {
	p.perNode = q.perNode
	p.free = append(p.free[:0], q.free...)
	p.total, p.maxFree, p.wholeFree = q.total, q.maxFree, q.wholeFree
}

// refresh recomputes the summary numbers from free.
func (p *pool) refresh() {
	p.total, p.maxFree, p.wholeFree = 0, 0, 0
	for _, f := range p.free {
		p.total += f
		p.maxFree = max(p.maxFree, f)
		if f == p.perNode {
			p.wholeFree++
		}
	}
}

// fits reports whether a job of need units can be placed now.
func (p *pool) fits(need int) bool {
	if need <= p.perNode {
		return p.maxFree >= need
	}
	return p.wholeFree >= nodesFor(need, p.perNode)
}

func nodesFor(need, perNode int) int { return (need + perNode - 1) / perNode }

// place chooses the nodes for a job of need units without taking them; it
// returns nil when the job does not fit. dst is reused.
func (p *pool) place(need int, dst []use) []use {
	dst = dst[:0]
	if need <= p.perNode {
		best := -1
		for i, f := range p.free {
			if f >= need && (best < 0 || f < p.free[best]) {
				best = i
				if f == need {
					break
				}
			}
		}
		if best < 0 {
			return nil
		}
		return append(dst, use{int32(best), int32(need)})
	}
	k := nodesFor(need, p.perNode)
	for i, f := range p.free {
		if f == p.perNode {
			dst = append(dst, use{int32(i), int32(p.perNode)})
			if len(dst) == k {
				return dst
			}
		}
	}
	return nil
}

// take removes an allocation from the free units.
func (p *pool) take(a []use) {
	for _, u := range a {
		p.free[u.node] -= int(u.units)
	}
	p.refresh()
}

// give returns an allocation to the free units, keeping the summary
// current in O(len(a)): free units only grow.
func (p *pool) give(a []use) {
	for _, u := range a {
		f := p.free[u.node] + int(u.units)
		p.free[u.node] = f
		p.total += int(u.units)
		p.maxFree = max(p.maxFree, f)
		if f == p.perNode {
			p.wholeFree++
		}
	}
}

// limitTo lowers every node's free units to at most q's, for the nodes a
// job that would outlast a reservation may use.
func (p *pool) limitTo(q *pool) {
	for i, f := range q.free {
		p.free[i] = min(p.free[i], f)
	}
	p.refresh()
}
