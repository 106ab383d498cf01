package main

import (
	"fmt"

	"github.com/fairway-hpc/fairway/internal/serve"
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
			res, err := planCycle(c.Context, cfg, s.Deps, log)
			if err != nil {
				return err
			}
			if res.Forecast == nil {
				return fmt.Errorf("no start-time forecast: the ranked partitions have no usable node")
			}
			ans := serve.QueueAnswer{At: res.Forecast.At, Policy: res.Forecast.Policy,
				Jobs: res.Forecast.Filter(c.String("user"), c.String("account"))}
			if c.Bool("json") {
				return printJSON(c.App.Writer, ans)
			}
			return writeQueueAnswer(c.App.Writer, &ans)
		},
	}
}
