package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/slurmctl/sidecar"
	"github.com/urfave/cli/v2"
)

// queueCommand answers "when will my jobs start?": it ranks the live queue
// once as serve does (nothing written or recorded), plays it forward, and
// lists the pending jobs with their rank, expected start, predicted run
// time, wait so far and why they wait, sorted like squeue.
func queueCommand() *cli.Command {
	flags := append(readOnlyFlags(),
		&cli.StringFlag{Name: "user", Usage: "only this user's jobs"},
		&cli.StringFlag{Name: "account", Usage: "only this account's jobs"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"})
	return &cli.Command{
		Name:  "queue",
		Usage: "list pending jobs with Fairway's rank and expected start",
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("queue takes no arguments, got %q (filter with --user or --account)", c.Args().First())
			}
			cfg, s, log, err := openReadOnly(c)
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := sidecar.PlanCycle(c.Context, cfg, s.Deps, log)
			if err != nil {
				return err
			}
			if res.Forecast == nil {
				return fmt.Errorf("no start-time forecast: the ranked partitions have no usable node")
			}
			ans := sidecar.QueueAnswer{At: res.Forecast.At, Policy: res.Forecast.Policy,
				Jobs: res.Forecast.Filter(c.String("user"), c.String("account"))}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(ans)
			}
			return printQueue(c.App.Writer, &ans)
		},
	}
}

// printQueue prints the queue for people, times in local time.
func printQueue(w io.Writer, q *sidecar.QueueAnswer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOBID\tPARTITION\tUSER\tACCOUNT\tRANK\tEXPECTED_START\tLIMIT_BOUND\tPREDICTED_RUN\tWAITING\tREASON")
	at := func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.Local().Format("2006-01-02T15:04")
	}
	for _, j := range q.Jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", j.JobID, j.Partition, j.User, j.Account, j.Rank, j.Of,
			at(j.ExpectedStart), at(j.LimitStart), secs(j.PredictedRunS), secs(j.WaitS), j.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d pending jobs; forecast of %s under %s: expected starts from predicted run times, limit bounds from time limits (squeue --start)\n",
		len(q.Jobs), q.At.Local().Format(time.RFC3339), q.Policy)
	return err
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
