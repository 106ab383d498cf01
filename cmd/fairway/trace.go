package main

import (
	"fmt"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "workload trace tools",
		Subcommands: []*cli.Command{{
			Name:  "synth",
			Usage: "generate a synthetic GPU workload calibrated to the Helios characterization (SC'21)",
			Description: "Writes Helios cluster_log.csv columns plus time_limit (seconds), readable by\n" +
				"`fairway simulate --format helios` and `fairway predict eval --format helios`. start_time is the\n" +
				"submit time and end_time submit + duration: the trace says what ran, not how it was scheduled.\n" +
				"The same settings and seed give the same file.",
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "jobs", Value: 2000, Usage: "number of jobs", EnvVars: []string{"FAIRWAY_SYNTH_JOBS"}},
				&cli.IntFlag{Name: "users", Value: 40, Usage: "number of users", EnvVars: []string{"FAIRWAY_SYNTH_USERS"}},
				&cli.IntFlag{Name: "nodes", Value: 8, Usage: "nodes of the cluster the load is calibrated against", EnvVars: []string{"FAIRWAY_SYNTH_NODES"}},
				&cli.IntFlag{Name: "gpus-per-node", Value: 8, Usage: "GPUs per node", EnvVars: []string{"FAIRWAY_SYNTH_GPUS_PER_NODE"}},
				&cli.Float64Flag{Name: "load", Value: 0.9, Usage: "offered load: GPU-seconds submitted per GPU-second of the cluster", EnvVars: []string{"FAIRWAY_SYNTH_LOAD"}},
				&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed", EnvVars: []string{"FAIRWAY_SYNTH_SEED"}},
				&cli.StringFlag{Name: "out", Usage: "output file (gzip when it ends in .gz); empty writes to stdout", EnvVars: []string{"FAIRWAY_SYNTH_OUT"}},
			},
			Action: func(c *cli.Context) error {
				p := sim.SynthParams{Jobs: c.Int("jobs"), Users: c.Int("users"), Nodes: c.Int("nodes"),
					GPUsPerNode: c.Int("gpus-per-node"), Load: c.Float64("load"), Seed: c.Uint64("seed")}
				for _, f := range []struct {
					name string
					v    float64
				}{{"jobs", float64(p.Jobs)}, {"users", float64(p.Users)}, {"nodes", float64(p.Nodes)}, {"gpus-per-node", float64(p.GPUsPerNode)}, {"load", p.Load}} {
					if !(f.v > 0) { // NaN too
						return fmt.Errorf("--%s %g: want > 0", f.name, f.v)
					}
				}
				jobs, err := sim.Synth(p)
				if err != nil {
					return err
				}
				if path := c.String("out"); path != "" {
					if err := trace.WriteHeliosFile(path, jobs); err != nil {
						return fmt.Errorf("--out: %w", err)
					}
					return nil
				}
				return trace.WriteHelios(c.App.Writer, jobs)
			},
		}},
	}
}
