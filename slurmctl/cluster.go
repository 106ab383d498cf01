package slurmctl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// Node is one compute node.
type Node struct {
	Name        string
	State       []string // base state first, then flags: ["IDLE"], ["MIXED", "DRAIN"]
	Partitions  []string
	CPUs        int
	AllocCPUs   int
	MemoryMB    int64
	AllocMemMB  int64
	GPUs        int    // configured whole GPUs
	GPUType     string // first configured GPU type
	Shards      int    // configured shards
	AllocGPUs   int    // from gres_used
	AllocShards int
	Reason      string
}

// Usable reports whether jobs can start on the node: not down, drained,
// draining, failing or powered off.
func (n *Node) Usable() bool {
	for _, s := range n.State {
		switch s {
		case "DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "ERROR", "INVALID",
			"NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "FUTURE", "MAINTENANCE", "UNKNOWN":
			return false
		}
	}
	return len(n.State) > 0
}

// Partition is one partition.
type Partition struct {
	Name      string
	Nodes     string // host list expression, e.g. "gpu[1-2]"
	State     string // "UP", "DOWN", "DRAIN", "INACTIVE"
	TotalCPUs int
	TotalNode int
	GPUs      int // gres/gpu in the partition's TRES
	Shards    int
	MaxTime   time.Duration // 0 when unlimited
	// Default is the partition of jobs that name none (Default=YES), as
	// far as the answer says: v0.0.38 and v0.0.45 on flag it, v0.0.40 to
	// v0.0.44 do not, and then no partition is marked.
	Default bool
}

// Cluster is one consistent read of the cluster: all three lists come from
// the same Read call, or Read fails as a whole.
type Cluster struct {
	Jobs       []Job
	Nodes      []Node
	Partitions []Partition
	Version    string // API version used, e.g. "v0.0.38"
	Slurm      string // Slurm release reported by slurmrestd, e.g. "22.05.8"
	// Skipped are the job records of this read that could not be
	// translated: left out of Jobs, each logged.
	Skipped []SkippedRecord
}

// Pending returns the domain jobs Fairway may rank (pending and not held),
// optionally only those in the given partitions. Heterogeneous-job
// components are included, since they compete for the same resources; the
// Writer leaves them alone.
func (c *Cluster) Pending(partitions ...string) []policy.Job {
	var out []policy.Job
	for i := range c.Jobs {
		if j := &c.Jobs[i]; j.Pending() && inPartitions(j.Partition, partitions) {
			out = append(out, j.Job)
		}
	}
	return out
}

// Running returns the running (and suspended/completing) domain jobs.
func (c *Cluster) Running(partitions ...string) []policy.Job {
	var out []policy.Job
	for i := range c.Jobs {
		if j := &c.Jobs[i]; j.State == policy.StateRunning && inPartitions(j.Partition, partitions) {
			out = append(out, j.Job)
		}
	}
	return out
}

// GPUs is the GPU capacity of the given partitions (all when none given),
// counting each node once and only usable nodes.
func (c *Cluster) GPUs(partitions ...string) int {
	total := 0
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !n.Usable() {
			continue
		}
		for _, p := range n.Partitions {
			if inPartitions(p, partitions) {
				total += n.GPUs
				break
			}
		}
	}
	return total
}

// inPartitions reports whether p is in want; an empty want matches all.
// A job's partition may be a comma-separated list while pending.
func inPartitions(p string, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, jp := range strings.Split(p, ",") {
		for _, w := range want {
			if jp == w {
				return true
			}
		}
	}
	return false
}

func parseNodes(body []byte) ([]Node, *envelope, error) {
	ws, env, err := decodeList[wireNode](body, "nodes")
	if err != nil || len(env.Errors) > 0 {
		return nil, env, err
	}
	nodes := make([]Node, 0, len(ws))
	for _, w := range ws {
		for _, v := range []int64{w.CPUs, w.AllocCPUs, w.RealMemory, w.AllocMemory} {
			if v < 0 || v > maxCount {
				return nil, env, fmt.Errorf("%w: node %s: cpus %d, alloc_cpus %d, real_memory %d, alloc_memory %d: want 0 to %d",
					ErrMalformed, w.Name, w.CPUs, w.AllocCPUs, w.RealMemory, w.AllocMemory, int64(maxCount))
			}
		}
		n := Node{
			Name:       w.Name,
			Partitions: w.Partitions,
			CPUs:       int(w.CPUs),
			AllocCPUs:  int(w.AllocCPUs),
			MemoryMB:   w.RealMemory,
			AllocMemMB: w.AllocMemory,
			Reason:     w.Reason,
		}
		for _, s := range append(append([]string{}, w.State...), w.StateFlags...) {
			n.State = append(n.State, strings.ToUpper(s))
		}
		conf, err := ParseGRES(w.Gres)
		if err != nil {
			return nil, env, fmt.Errorf("%w: node %s: %v", ErrMalformed, w.Name, err)
		}
		g, s, t, err := gresTotals(conf, 1)
		if err != nil {
			return nil, env, fmt.Errorf("%w: node %s: gres %q: %v", ErrMalformed, w.Name, w.Gres, err)
		}
		n.GPUs, n.Shards, n.GPUType = int(g), int(s), t
		used, err := ParseGRES(w.GresUsed)
		if err != nil {
			return nil, env, fmt.Errorf("%w: node %s: %v", ErrMalformed, w.Name, err)
		}
		if g, s, _, err = gresTotals(used, 1); err != nil {
			return nil, env, fmt.Errorf("%w: node %s: gres_used %q: %v", ErrMalformed, w.Name, w.GresUsed, err)
		}
		n.AllocGPUs, n.AllocShards = int(g), int(s)
		nodes = append(nodes, n)
	}
	return nodes, env, nil
}

// wirePartition38 is a v0.0.38 partition (flat).
type wirePartition38 struct {
	Name         string `json:"name"`
	Nodes        string `json:"nodes"`
	State        string `json:"state"`
	TotalCPUs    int64  `json:"total_cpus"`
	TotalNodes   int64  `json:"total_nodes"`
	TRES         string `json:"tres"`
	MaxTimeLimit num    `json:"max_time_limit"`
	Flags        strs   `json:"flags"` // "default"
}

// wirePartition41 is a v0.0.40-45 partition_info (nested).
type wirePartition41 struct {
	Name  string `json:"name"`
	Nodes struct {
		Configured string `json:"configured"`
		Total      int64  `json:"total"`
	} `json:"nodes"`
	CPUs struct {
		Total int64 `json:"total"`
	} `json:"cpus"`
	TRES struct {
		Configured string `json:"configured"`
	} `json:"tres"`
	Maximums struct {
		Time num `json:"time"`
	} `json:"maximums"`
	Partition struct {
		State strs `json:"state"`
	} `json:"partition"`
	Flags strs `json:"flags"` // v0.0.45 on: "DEFAULT"
}

func parsePartitions(body []byte, version string) ([]Partition, *envelope, error) {
	var out []Partition
	mk := func(name, nodes, state, tres string, cpus, nn int64, maxTime num, flags strs) error {
		g, s, _, err := tresTotals(tres)
		if err != nil {
			return fmt.Errorf("%w: partition %s: %v", ErrMalformed, name, err)
		}
		if cpus < 0 || nn < 0 || cpus > maxCount || nn > maxCount {
			return fmt.Errorf("%w: partition %s: %d cpus, %d nodes", ErrMalformed, name, cpus, nn)
		}
		p := Partition{Name: name, Nodes: nodes, State: strings.ToUpper(state), TotalCPUs: int(cpus),
			TotalNode: int(nn), GPUs: int(g), Shards: int(s), Default: slices.ContainsFunc(flags, func(f string) bool { return strings.EqualFold(f, "default") })}
		if p.MaxTime, err = minutes("max time", maxTime); err != nil {
			return fmt.Errorf("%w: partition %s: %v", ErrMalformed, name, err)
		}
		out = append(out, p)
		return nil
	}
	if version == V0038 {
		ws, env, err := decodeList[wirePartition38](body, "partitions")
		if err != nil || len(env.Errors) > 0 {
			return nil, env, err
		}
		for _, w := range ws {
			if err := mk(w.Name, w.Nodes, w.State, w.TRES, w.TotalCPUs, w.TotalNodes, w.MaxTimeLimit, w.Flags); err != nil {
				return nil, env, err
			}
		}
		return out, env, nil
	}
	ws, env, err := decodeList[wirePartition41](body, "partitions")
	if err != nil || len(env.Errors) > 0 {
		return nil, env, err
	}
	for _, w := range ws {
		state := ""
		if len(w.Partition.State) > 0 {
			state = w.Partition.State[0]
		}
		if err := mk(w.Name, w.Nodes.Configured, state, w.TRES.Configured, w.CPUs.Total, w.Nodes.Total, w.Maximums.Time, w.Flags); err != nil {
			return nil, env, err
		}
	}
	return out, env, nil
}
