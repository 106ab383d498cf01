package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/sql"
	"github.com/jackc/pgx/v5"
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

// connect opens one connection to the database named by --database-url and
// says clearly what is wrong when it cannot. The password never appears in
// the error.
func connect(ctx context.Context, c *cli.Context) (*pgx.Conn, error) {
	url := c.String("database-url")
	if url == "" {
		return nil, errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("--database-url is not a valid PostgreSQL URL or DSN")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at %s:%d database %q: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return conn, nil
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
					conn, err := connect(c.Context, c)
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
					conn, err := connect(c.Context, c)
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
