package main

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
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
					if f.v <= 0 {
						return fmt.Errorf("--%s %g: want > 0", f.name, f.v)
					}
				}
				jobs, err := sim.Synth(p)
				if err != nil {
					return err
				}
				return writeSynth(c.String("out"), c.App.Writer, jobs)
			},
		}},
	}
}

// writeSynth writes jobs to path (stdout when empty), gzip-compressed when
// path ends in .gz.
func writeSynth(path string, stdout io.Writer, jobs []policy.Job) error {
	if path == "" {
		return writeHeliosCSV(stdout, jobs)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(f)
		w = zw
	}
	err = writeHeliosCSV(w, jobs)
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// heliosTime is how Helios' cluster_log.csv spells instants.
const heliosTime = "2006-01-02 15:04:05"

// writeHeliosCSV writes jobs in the Helios cluster_log.csv layout that
// policy/trace reads (with jobname and the time_limit extension), quoting
// fields as RFC 4180 says (a job name may hold a comma or a quote). Jobs
// must have Start and End (a run time).
func writeHeliosCSV(w io.Writer, jobs []policy.Job) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state",
		"submit_time", "start_time", "end_time", "duration", "queue", "time_limit"}); err != nil {
		return err
	}
	rec := make([]string, 14)
	for i := range jobs {
		j := &jobs[i]
		limit := ""
		if j.TimeLimit > 0 {
			limit = strconv.FormatInt(int64(j.TimeLimit.Seconds()), 10)
		}
		rec = append(rec[:0], strconv.FormatInt(j.ID, 10), j.User, j.Partition, j.Name,
			strconv.Itoa(j.GPUs), strconv.Itoa(j.CPUs), strconv.Itoa(j.Nodes), j.State.String(),
			j.Submit.UTC().Format(heliosTime), j.Start.UTC().Format(heliosTime), j.End.UTC().Format(heliosTime),
			strconv.FormatInt(int64(j.RunTime().Seconds()), 10), strconv.FormatInt(int64(j.Start.Sub(j.Submit).Seconds()), 10), limit)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
