package main

import (
	"context"

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
					return sql.UpText(c.Context, conn, c.App.Writer)
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
					return sql.StatusText(c.Context, conn, c.App.Writer)
				},
			},
		},
	}
}
