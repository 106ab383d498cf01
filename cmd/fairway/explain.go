package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"

	"github.com/urfave/cli/v2"
)

// explainCommand answers "why is my job where it is?": it ranks the live
// queue once, exactly as serve does (same engine, warmed from the same
// history, nothing written or recorded), and prints the job's place, the
// parts of its score, its prediction and its association's fair-share
// state, what separates it from the job just ahead, and the last decision
// serve logged for it.
func explainCommand() *cli.Command {
	flags := append(readOnlyFlags(), &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"},
		&cli.StringFlag{Name: "node", Usage: "instead of a job: the power-saving actions serve took on this node (power_action), newest last"},
		&cli.IntFlag{Name: "last", Value: 20, Usage: "with --node: how many of its latest actions"})
	return &cli.Command{
		Name:      "explain",
		Usage:     "explain where a pending job stands in Fairway's order and what would move it, or why serve powered a node down or up (--node)",
		ArgsUsage: "JOBID | --node NODE",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if node := c.String("node"); node != "" {
				if c.NArg() != 0 {
					return usagef("usage: fairway explain --node NODE (no job id with --node)")
				}
				return explainNode(c, node)
			}
			id, err := strconv.ParseInt(c.Args().First(), 10, 64)
			if c.NArg() != 1 || err != nil || id <= 0 {
				return usagef("usage: fairway explain JOBID (one numeric Slurm job id)")
			}
			cfg, s, log, err := openReadOnly(c)
			if err != nil {
				return err
			}
			defer s.Close()
			ex, err := explainJob(c.Context, cfg, s.Deps, id, log)
			if err != nil {
				return err
			}
			ex.Last, err = s.Store.LastDecision(c.Context, cfg.Runner.Cluster, id)
			if err != nil {
				return err
			}
			if ex.Policy == "" {
				ex.Policy = cfg.Runner.Policy
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, ex)
			}
			return writeExplanation(c.App.Writer, ex)
		},
	}
}

// readOnlyLogLevel is explain's and queue's log level when --log-level is
// not set: their answer is the output, and serve's info lines (API version
// negotiated, warmed up, cycle) are noise above it.
const readOnlyLogLevel = "warn"

// openReadOnly opens what explain and queue read with serve's settings,
// never taking the lease from a running serve.
func openReadOnly(c *cli.Context) (serveConfig, *openedServe, *slog.Logger, error) {
	log, err := loggerDefault(c, readOnlyLogLevel)
	if err != nil {
		return serveConfig{}, nil, nil, err
	}
	cfg, err := serveSettings(c)
	if err != nil {
		return cfg, nil, nil, err
	}
	cfg.HA = false
	s, err := openServe(c.Context, cfg, log)
	return cfg, s, log, err
}

// explainNode prints the power actions serve recorded for node, the
// latest --last of them, each with its reason and, for the newest, the
// numbers the decision was made from.
func explainNode(c *cli.Context, node string) error {
	if c.Int("last") < 1 {
		return fmt.Errorf("--last %d: want at least 1", c.Int("last"))
	}
	cluster, dbURL := c.String("cluster"), c.String("database-url")
	if cluster == "" || dbURL == "" {
		return errors.New("explain --node needs --cluster and --database-url (FAIRWAY_CLUSTER, FAIRWAY_DATABASE_URL)")
	}
	log, err := logger(c)
	if err != nil {
		return err
	}
	pool, store, err := accounting.Open(c.Context, dbURL, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	acts, err := store.PowerActions(c.Context, cluster, node, time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		return err
	}
	if n := c.Int("last"); len(acts) > n {
		acts = acts[len(acts)-n:]
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, acts)
	}
	return writeNodeActions(c.App.Writer, cluster, node, acts)
}

// writeNodeActions is explain --node's text.
func writeNodeActions(w io.Writer, cluster, node string, acts []accounting.PowerAction) error {
	if len(acts) == 0 {
		_, err := fmt.Fprintf(w, "node %s of %s: serve has recorded no power action on it (power saving off, excluded, or never idle above need)\n", node, cluster)
		return err
	}
	fmt.Fprintf(w, "node %s of %s: %d power actions\n", node, cluster, len(acts))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCYCLE\tACTION\tRESULT\tREASON")
	for _, a := range acts {
		res := "done"
		switch {
		case a.Error != "":
			res = "refused: " + a.Error
		case a.Planned:
			res = "dry run"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", a.At.Local().Format("2006-01-02 15:04:05"), a.Cycle, a.Action, res, a.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	last := acts[len(acts)-1]
	keys := make([]string, 0, len(last.Parts))
	for k := range last.Parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(w, "\nthe latest decision was made from:")
	for _, k := range keys {
		fmt.Fprintf(w, " %s=%g", k, last.Parts[k])
	}
	_, err := fmt.Fprintln(w)
	return err
}

// readOnlyFlags are serve's flags as explain and queue take them: the
// serve-only ones accepted and hidden.
func readOnlyFlags() []cli.Flag { return serveFlags(true) }
