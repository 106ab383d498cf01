// Command fairway is the single Fairway binary: the serve sidecar, the slurmd
// hooks, the report, the simulator and the admin tools. It wires flags into
// typed configs and hands them to the packages; no logic lives here.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	app := newApp()
	err := app.RunContext(ctx, normalizeArgs(app, os.Args))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fairway: %v\n", err)
	}
	return exitStatus(err)
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "fairway",
		Usage: "fair, short-waited GPU scheduling for Slurm",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"FAIRWAY_LOG_LEVEL"}},
			&cli.BoolFlag{Name: "version", Usage: "print the version and exit (as `fairway version`)"},
		},
		// Without a command: --version, or the help.
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				return printVersion(c)
			}
			if c.NArg() > 0 && c.App.CommandNotFound != nil {
				c.App.CommandNotFound(c, c.Args().First())
				return nil
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			versionCommand(),
			migrateCommand(),
			serveCommand(),
			explainCommand(),
			queueCommand(),
			predictCommand(),
			ingestCommand(),
			sharesCommand(),
			prologCommand(),
			epilogCommand(),
			spoolCommand(),
			simulateCommand(),
			tuneCommand(),
			reportCommand(),
			traceCommand(),
			powerCommand(),
		},
		HideHelpCommand: true,
	}
	withConfigFiles(app)
	withUsageHelp(app)
	return app
}

// logger builds the process logger from the global --log-level flag.
func logger(c *cli.Context) (*slog.Logger, error) {
	return loggerDefault(c, "")
}

// loggerDefault is logger for a command whose output is meant for people
// (explain, queue): it logs at def unless --log-level is set (flag,
// FAIRWAY_LOG_LEVEL or config file), so that the answer is not buried in
// the progress notes a daemon's log wants. def "" keeps the flag's default.
func loggerDefault(c *cli.Context, def string) (*slog.Logger, error) {
	lvl, err := logLevel(c, def)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// logLevel is the level loggerDefault logs at.
func logLevel(c *cli.Context, def string) (slog.Level, error) {
	name := c.String("log-level")
	if def != "" && !c.IsSet("log-level") {
		name = def
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(name)); err != nil {
		return lvl, fmt.Errorf("--log-level %q: want debug, info, warn or error", name)
	}
	return lvl, nil
}
