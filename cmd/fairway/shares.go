package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

func sharesCommand() *cli.Command {
	cluster := func() cli.Flag {
		return &cli.StringFlag{Name: "cluster", Usage: "Slurm cluster name (ClusterName)", EnvVars: []string{"FAIRWAY_CLUSTER"}}
	}
	return &cli.Command{
		Name:  "shares",
		Usage: "the account/user share tree fair-share policies read",
		Subcommands: []*cli.Command{
			{
				Name:  "sync",
				Usage: "replace the stored share tree from slurmdbd associations or from a shares file",
				Description: "--from slurmdbd runs `sacctmgr -nP show associations` (on the slurmctld host it needs no\n" +
					"token and works whether or not slurmrestd has the dbv0.0.38 plugin). --from slurmrestd reads the\n" +
					"same associations from slurmrestd's /slurm/<version>/shares (Slurm 23.11 and later; Slurm 22.05's\n" +
					"v0.0.38 has no such endpoint), so the host needs no sacctmgr; they are stored as slurmdbd's.\n" +
					"--from config reads a shares file, one `ACCOUNT[/SUB][:USER] SHARES` a line. Each source is\n" +
					"replaced whole; shares from config override slurmdbd's for the same account or association.",
				Flags: append([]cli.Flag{
					databaseFlag(), cluster(),
					&cli.StringFlag{Name: "from", Value: accounting.SharesFromSlurmdbd, Usage: "slurmdbd, slurmrestd or config", EnvVars: []string{"FAIRWAY_SHARES_FROM"}},
					&cli.StringFlag{Name: "file", Usage: "config: the shares file", EnvVars: []string{"FAIRWAY_SHARES_FILE"}},
					&cli.StringFlag{Name: "sacctmgr", Value: "sacctmgr", Usage: "slurmdbd: sacctmgr binary", EnvVars: []string{"FAIRWAY_SACCTMGR"}},
				}, slurmFlags("slurmrestd: ", "slurmrestd: base URL")...),
				Action: func(c *cli.Context) error {
					clusterName := c.String("cluster")
					if clusterName == "" {
						return errors.New("--cluster: required")
					}
					log, err := logger(c)
					if err != nil {
						return err
					}
					src := accounting.SharesSource{From: c.String("from"), File: c.String("file"), Sacctmgr: c.String("sacctmgr"), Slurm: slurmctl.Commands{},
						REST: func(ctx context.Context) (accounting.SharesClient, string, error) {
							return connectShares(ctx, slurmConnect(c), log)
						}}
					nodes, from, err := src.Read(c.Context, clusterName)
					if err != nil {
						return err
					}
					store, closeStore, err := openStore(c.Context, c.String("database-url"), log)
					if err != nil {
						return err
					}
					defer closeStore()
					before, after, err := store.SyncShares(c.Context, clusterName, from, nodes)
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "shares of %s from %s: %s (was %d)\n", clusterName, src.Via(), plural.N(after, "node", "nodes"), before)
					return nil
				},
			},
			{
				Name:  "show",
				Usage: "print the stored share tree (config overriding slurmdbd)",
				Flags: []cli.Flag{
					databaseFlag(), cluster(),
					&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table", EnvVars: []string{"FAIRWAY_SHARES_JSON"}},
				},
				Action: func(c *cli.Context) error {
					clusterName := c.String("cluster")
					if clusterName == "" {
						return errors.New("--cluster: required")
					}
					log, err := logger(c)
					if err != nil {
						return err
					}
					store, closeStore, err := openStore(c.Context, c.String("database-url"), log)
					if err != nil {
						return err
					}
					defer closeStore()
					tree, err := store.LoadShares(c.Context, clusterName)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c.App.Writer, tree.Rows())
					}
					return tree.WriteText(c.App.Writer)
				},
			},
		},
	}
}
