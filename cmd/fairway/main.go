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

	"github.com/fairway-hpc/fairway/internal/cliargs"
	"github.com/urfave/cli/v2"
)

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	app := newApp()
	if err := app.RunContext(ctx, cliargs.Normalize(app, os.Args)); err != nil {
		fmt.Fprintf(os.Stderr, "fairway: %v\n", err)
		return 1
	}
	return 0
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "fairway",
		Usage: "fair, short-waited GPU scheduling for Slurm",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"FAIRWAY_LOG_LEVEL"}},
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
			reportCommand(),
			traceCommand(),
			powerCommand(),
		},
		HideHelpCommand: true,
	}
	withConfigFiles(app)
	cliargs.WithUsageHelp(app)
	return app
}

// logger builds the process logger from the global --log-level flag.
func logger(c *cli.Context) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}
