package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/sql"
	"github.com/urfave/cli/v2"
)

// databaseFlag is the PostgreSQL URL flag shared by every command that
// touches the accounting database.
func databaseFlag() *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "database-url",
		Usage:   "PostgreSQL URL, e.g. postgres://fairway@127.0.0.1:5432/fairway",
		EnvVars: []string{"FAIRWAY_DATABASE_URL"},
	}
}

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply or inspect the database schema",
		Flags: []cli.Flag{databaseFlag()},
		Subcommands: []*cli.Command{
			{
				Name:  "up",
				Usage: "apply every migration the database lacks (idempotent)",
				Action: func(c *cli.Context) error {
					conn, err := accounting.Connect(c.Context, c.String("database-url"))
					if err != nil {
						return err
					}
					defer conn.Close(context.WithoutCancel(c.Context))
					done, err := sql.Up(c.Context, conn)
					for _, m := range done {
						fmt.Fprintf(c.App.Writer, "applied %04d_%s\n", m.Version, m.Name)
					}
					if err != nil {
						return err
					}
					if len(done) == 0 {
						latest, _ := sql.Latest()
						fmt.Fprintf(c.App.Writer, "schema is current (version %d)\n", latest)
					}
					return nil
				},
			},
			{
				Name:  "status",
				Usage: "list applied and pending migrations",
				Action: func(c *cli.Context) error {
					conn, err := accounting.Connect(c.Context, c.String("database-url"))
					if err != nil {
						return err
					}
					defer conn.Close(context.WithoutCancel(c.Context))
					applied, err := sql.Status(c.Context, conn)
					if err != nil {
						return err
					}
					pend, err := sql.Pending(applied)
					if err != nil {
						return err
					}
					w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "VERSION\tNAME\tAPPLIED")
					for _, a := range applied {
						fmt.Fprintf(w, "%04d\t%s\t%s\n", a.Version, a.Name, a.AppliedAt.UTC().Format(time.RFC3339))
					}
					for _, m := range pend {
						fmt.Fprintf(w, "%04d\t%s\tpending\n", m.Version, m.Name)
					}
					if err := w.Flush(); err != nil {
						return err
					}
					return sql.CheckCurrent(c.Context, conn)
				},
			},
		},
	}
}
