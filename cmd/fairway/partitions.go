package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// partitionsFlags are --partitions, with the slurm flags its slurmrestd
// value reads the live cluster through, for a command that replays the
// accounting database (tune, report); simulate spells its own, which also
// routes trace jobs.
func partitionsFlags(what, env string) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "partitions", Usage: what + " on the cluster's partitions: ';'-separated NAME:nodes=N,per-node=U[,type=T] (N nodes of U GPUs, or processors with --unit cpu, of GPU type T, in partition NAME; A+B:… puts them in both) or NAME:of=A+B (every node of A and B), the first partition the default; or a file of such entries, one a line; or slurmrestd: the live cluster's partitions, nodes and GPU types, read through --slurm-url. Each job runs only in its recorded partition and on its GPU type; the jobs no node can run are left out and named. Not with --nodes or --per-node", EnvVars: []string{env}},
	}, slurmFlags("with --partitions slurmrestd: ", "with --partitions slurmrestd: read the live cluster's layout through this slurmrestd (base URL)")...)
}

// layoutSettings reads --partitions: nil when not given, else the layout
// the spec, the file it names, or the live cluster (slurmrestd) gives.
func layoutSettings(c *cli.Context) (*sim.Layout, error) {
	switch spec := c.String("partitions"); spec {
	case "":
		return nil, nil
	case liveLayoutSpec:
		return readLiveLayout(c.Context, slurmConnect(c), slog.Default())
	default:
		return readLayout(spec)
	}
}

// readLayout reads --partitions: the spec itself, or the file it names.
func readLayout(spec string) (*sim.Layout, error) {
	text, what := spec, "--partitions"
	fi, err := os.Stat(spec)
	switch {
	case err == nil && fi.Mode().IsRegular():
		b, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("--partitions: %w", err)
		}
		text = strings.TrimPrefix(string(b), "\ufeff") // a Windows editor's byte order mark
		what = "--partitions " + spec
	case err == nil:
		return nil, fmt.Errorf("--partitions %q: not a regular file (want a file of entries, or NAME:nodes=N,per-node=U[,type=T] entries)", spec)
	case !strings.Contains(spec, ":"):
		return nil, fmt.Errorf("--partitions %q: no such file, and not NAME:nodes=N,per-node=U[,type=T] entries", spec)
	}
	l, err := sim.ParseLayout(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l, nil
}

// notePartitions says so when w's jobs name two or more partitions and no
// --partitions layout routes them: they replay on one pool, and an admin
// who knows the trace's queues might take the rows for a partitioned
// replay.
func notePartitions(out io.Writer, w *sim.Workload) {
	if out == nil || w.Cluster.Layout != nil {
		return
	}
	seen := map[string]bool{}
	for i := range w.Jobs {
		if p := w.Jobs[i].Partition; p != "" {
			seen[p] = true
		}
	}
	if len(seen) < 2 {
		return
	}
	names := slices.Sorted(maps.Keys(seen))
	const shown = 6
	list := strings.Join(names[:min(shown, len(names))], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	fmt.Fprintf(out, "note: the jobs name %d partitions (%s); without --partitions they replay on one pool of %d × %d %s\n",
		len(names), list, w.Cluster.Nodes, w.Cluster.PerNode, w.Cluster.Unit)
}

// noteFlatTrace says so when w's jobs leave part of a comparison nothing
// to tell apart: with one user (or none) the fairness figures, Jain over
// backlogged users and the spread of waits between users, compare nothing
// (Jain reads 1); with no time limit the policies that rank by it see the
// same one for every job (sjf-limit then ranks as fifo).
func noteFlatTrace(out io.Writer, w *sim.Workload) {
	if out == nil || len(w.Jobs) == 0 {
		return
	}
	users, limits := map[string]bool{}, false
	for i := range w.Jobs {
		users[w.Jobs[i].User] = true
		limits = limits || w.Jobs[i].TimeLimit > 0
		if len(users) > 1 && limits {
			return
		}
	}
	if len(users) < 2 {
		fmt.Fprintln(out, "note: every job has the same user (or none): the fairness figures (Jain, the spread of waits between users) have nothing to compare")
	}
	if !limits {
		fmt.Fprintf(out, "note: no job has a time limit: the policies that rank by it (sjf-limit, f1, wfp3, unicep) see the same %s for every job\n", sim.DefaultLimitText())
	}
}
