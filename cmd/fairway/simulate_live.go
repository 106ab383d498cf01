package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// liveLayoutSpec is the --partitions value that reads the layout from the
// live cluster through slurmrestd.
const liveLayoutSpec = "slurmrestd"

// readLiveLayout reads --partitions slurmrestd: the nodes and partitions
// of the cluster that slurmrestd at s serves, as a layout.
func readLiveLayout(ctx context.Context, s slurmctl.ConnectConfig, log *slog.Logger) (*sim.Layout, error) {
	if s.URL == "" {
		return nil, errors.New("--partitions slurmrestd: --slurm-url (FAIRWAY_SLURM_URL) is required")
	}
	if !s.HasToken() {
		return nil, errors.New("--partitions slurmrestd: no token: set --slurm-token-file, $SLURM_JWT or --scontrol-token")
	}
	client, err := dialSlurm(ctx, s, log)
	if err != nil {
		return nil, fmt.Errorf("--partitions slurmrestd: %w", err)
	}
	nodes, err := client.ListNodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("--partitions slurmrestd: %w", err)
	}
	parts, err := client.ListPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("--partitions slurmrestd: %w", err)
	}
	l, err := liveLayout(nodes, parts)
	if err != nil {
		return nil, fmt.Errorf("--partitions slurmrestd at %s: %w", s.URL, err)
	}
	return l, nil
}

// liveLayout is the layout of a cluster as slurmrestd lists it: every node
// that has GPUs, with its GPU count and type, in the partitions it lists
// (or, on a cluster without GPUs, every node with its CPUs). Nodes count
// whatever their state: a replay asks what the cluster can do, not what is
// up at this instant. The default partition comes first (the one the
// answer flags, else the first listed: REST v0.0.40 to v0.0.44 flag none);
// a partition with no node of the unit is left out, so its jobs are named
// as left out by the replay.
func liveLayout(nodes []slurmctl.Node, parts []slurmctl.Partition) (*sim.Layout, error) {
	if len(nodes) == 0 {
		return nil, errors.New("slurmrestd lists no nodes")
	}
	gpus := slices.ContainsFunc(nodes, func(n slurmctl.Node) bool { return n.GPUs > 0 })
	units := func(n *slurmctl.Node) int {
		if gpus {
			return n.GPUs
		}
		return n.CPUs
	}
	// Partition order: the default, then as listed; then any a node names
	// that the partition list lacks (a read between two reconfigurations).
	var names []string
	if i := slices.IndexFunc(parts, func(p slurmctl.Partition) bool { return p.Default }); i >= 0 {
		names = append(names, parts[i].Name)
	}
	for _, p := range parts {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	for _, n := range nodes {
		for _, p := range n.Partitions {
			if !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
	}
	// Only partitions with a node of the unit stay, in that order.
	used := map[string]bool{}
	for i := range nodes {
		if units(&nodes[i]) > 0 {
			for _, p := range nodes[i].Partitions {
				used[p] = true
			}
		}
	}
	l := &sim.Layout{}
	index := map[string]int{}
	for _, name := range names {
		if used[name] {
			index[name] = len(l.Partitions)
			l.Partitions = append(l.Partitions, name)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		u := units(n)
		if u <= 0 || len(n.Partitions) == 0 {
			continue
		}
		nd := sim.Node{Units: u}
		if gpus {
			nd.Type = n.GPUType
		}
		for _, p := range n.Partitions {
			if k := index[p]; !slices.Contains(nd.Partitions, k) {
				nd.Partitions = append(nd.Partitions, k)
			}
		}
		slices.Sort(nd.Partitions)
		l.Nodes = append(l.Nodes, nd)
	}
	// The default's nodes first, so that the text form names it first.
	slices.SortStableFunc(l.Nodes, func(a, b sim.Node) int { return a.Partitions[0] - b.Partitions[0] })
	if len(l.Nodes) == 0 {
		kind := "GPUs"
		if !gpus {
			kind = "CPUs"
		}
		return nil, fmt.Errorf("no node with %s in a partition, of %d nodes", kind, len(nodes))
	}
	// The layout's text form is what a replay prints; reading it back
	// checks the layout (names included) as a written one is checked.
	return sim.ParseLayout(l.String())
}
