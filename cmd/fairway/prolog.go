package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/fairway-hpc/fairway/prolog"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"
)

// The slurmd hooks. A prolog that exits non-zero drains the node, so every
// hook setting is a string flag parsed inside the action: a bad setting is
// logged and the hook exits 0, never fails in flag parsing. Only a hardware
// fault found by the prolog exits 1.

// defaultHookConfig is the root-only file of hook settings.
const defaultHookConfig = "/etc/fairway/hooks.env"

// hookFlags are the settings of prolog, epilog and spool flush. timeoutEnv
// and timeoutDefault differ per command.
func hookFlags(timeoutEnv, timeoutDefault string) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "config", Value: defaultHookConfig, Usage: "file of FAIRWAY_...=value lines for the settings below (owned by root, mode 0600: it holds the database password)", EnvVars: []string{"FAIRWAY_CONFIG"}},
		&cli.StringFlag{Name: "timeout", Value: timeoutDefault, Usage: "hard time budget of the whole run", EnvVars: []string{timeoutEnv}},
		&cli.StringFlag{Name: "cluster", Usage: "Slurm ClusterName for usage records (slurmd sets SLURM_CLUSTER_NAME)", EnvVars: []string{"FAIRWAY_CLUSTER", "SLURM_CLUSTER_NAME"}},
		&cli.StringFlag{Name: "database-url", Usage: "PostgreSQL URL of the accounting database; empty keeps records in the spool", EnvVars: []string{"FAIRWAY_DATABASE_URL"}},
		&cli.StringFlag{Name: "database-timeout", Value: "2s", Usage: "time for one database write", EnvVars: []string{"FAIRWAY_DATABASE_TIMEOUT"}},
		&cli.StringFlag{Name: "spool-dir", Value: "/var/spool/fairway", Usage: "usage records not yet in the database (persistent, root only; FAIRWAY_SPOOL_DIR in the config file, never the environment)"},
		&cli.StringFlag{Name: "state-dir", Value: "/run/fairway", Usage: "node state between prolog and epilog, MPS pipes (tmpfs, root only; FAIRWAY_STATE_DIR in the config file, never the environment)"},
		&cli.StringFlag{Name: "log-file", Usage: "append the log here instead of stderr (slurmd discards hook output; FAIRWAY_LOG_FILE in the config file, never the environment)"},
		&cli.StringFlag{Name: "shards-per-gpu", Value: "0", Usage: "shard GRES per GPU in gres.conf; 0 when the node has none", EnvVars: []string{"FAIRWAY_SHARDS_PER_GPU"}},
		&cli.StringFlag{Name: "default-compute-mode", Value: "default", Usage: "compute mode a GPU returns to after a job: default, exclusive-process or prohibited", EnvVars: []string{"FAIRWAY_DEFAULT_COMPUTE_MODE"}},
		&cli.StringFlag{Name: "kill-stray", Value: "false", Usage: "kill processes found on a job's GPUs before it starts (they are always reported)", EnvVars: []string{"FAIRWAY_KILL_STRAY"}},
		&cli.StringFlag{Name: "drain", Value: "true", Usage: "on a hardware fault, drain the node with a reason naming the GPU and fault", EnvVars: []string{"FAIRWAY_DRAIN"}},
		&cli.StringFlag{Name: "scontrol", Value: "/usr/bin/scontrol", Usage: "scontrol, for drain reasons; squeue next to it, for shard lookups (FAIRWAY_SCONTROL in the config file, never the environment)"},
		&cli.StringFlag{Name: "mps-control", Value: "/usr/bin/nvidia-cuda-mps-control", Usage: "NVIDIA's MPS control program (FAIRWAY_MPS_CONTROL in the config file, never the environment)"},
		&cli.StringFlag{Name: "kernel-log", Value: "/dev/kmsg", Usage: "kernel log to read XIDs from; empty skips the XID check (FAIRWAY_KERNEL_LOG in the config file, never the environment)"},
	}, testNVMLFlags()...)
}

// rootOnlySettings are the hook settings that name what root runs, reads or
// keeps state in. They come from the command line (slurm.conf's hook
// script, root's), the root-only config file or the default, never from
// the environment, and each path must pass prolog.CheckRootPath.
var rootOnlySettings = map[string]string{
	"FAIRWAY_SPOOL_DIR":   "spool-dir",
	"FAIRWAY_STATE_DIR":   "state-dir",
	"FAIRWAY_SCONTROL":    "scontrol",
	"FAIRWAY_MPS_CONTROL": "mps-control",
	"FAIRWAY_KERNEL_LOG":  "kernel-log",
	"FAIRWAY_LOG_FILE":    "log-file",
}

func prologCommand() *cli.Command {
	return &cli.Command{
		Name:   "prolog",
		Usage:  "slurmd Prolog (PrologFlags=Alloc): GPU health, exclusivity or MPS sharing; exits 1 only on a hardware fault",
		Flags:  hookFlags("FAIRWAY_PROLOG_TIMEOUT", "5s"),
		Action: func(c *cli.Context) error { return runHook(c, "prolog") },
	}
}

func epilogCommand() *cli.Command {
	return &cli.Command{
		Name:   "epilog",
		Usage:  "slurmd Epilog: per-job GPU usage records to the spool and the database, GPUs back to the default; always exits 0",
		Flags:  hookFlags("FAIRWAY_EPILOG_TIMEOUT", "10s"),
		Action: func(c *cli.Context) error { return runHook(c, "epilog") },
	}
}

func spoolCommand() *cli.Command {
	return &cli.Command{
		Name:  "spool",
		Usage: "the node's spool of GPU usage records",
		Subcommands: []*cli.Command{{
			Name:  "flush",
			Usage: "store every spooled usage record in the database (for a systemd timer); exits 1 when records are left",
			Flags: append(hookFlags("FAIRWAY_FLUSH_TIMEOUT", "5m"),
				&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text", EnvVars: []string{"FAIRWAY_FLUSH_JSON"}}),
			Action: spoolFlush,
		}},
	}
}

// runHook runs the prolog or the epilog. It returns an error only for a
// hardware fault (exit 1, after printing the reason on stdout, which slurmd
// writes to its log); everything else is logged and exits 0.
func runHook(c *cli.Context, which string) error {
	cfg, err := hookSettings(c)
	log, closeLog := cfg.OpenLog(which, os.Stderr)
	defer closeLog()
	if err != nil {
		log.Error("bad setting: "+which+" does nothing", "err", err)
		return nil
	}
	if cfg.ConfigFileError != nil {
		log.Error("config file unusable: running without its settings", "err", cfg.ConfigFileError)
	}
	var store prolog.UsageStore
	if cfg.DatabaseURL != "" {
		store = &hookUsageStore{URL: cfg.DatabaseURL, Log: log.With("component", "accounting")}
	}
	lib, err := nvmlInterface(c.String)
	if err != nil {
		log.Error("bad setting: "+which+" does nothing", "err", err)
		return nil
	}
	err = prolog.Run(c.Context, which, cfg, cfg.Deps(prolog.NewNVML(lib), slurmctl.Commands{}, store, log), os.Getenv)
	if fault := (*prolog.FaultError)(nil); errors.As(err, &fault) {
		fmt.Fprintln(c.App.Writer, fault.Reason())
		return cli.Exit("", 1)
	}
	return err
}

// spoolFlush is `fairway spool flush`.
func spoolFlush(c *cli.Context) error {
	cfg, err := hookSettings(c)
	if err != nil {
		return err
	}
	if cfg.ConfigFileError != nil {
		return cfg.ConfigFileError
	}
	if cfg.DatabaseURL == "" {
		return errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL (environment or config file)")
	}
	log, closeLog := cfg.OpenLog("spool-flush", os.Stderr)
	defer closeLog()
	ctx, cancel := context.WithTimeout(c.Context, cfg.Timeout)
	defer cancel()
	store := &hookUsageStore{URL: cfg.DatabaseURL, Log: log.With("component", "accounting")}
	rep := prolog.Spool{Dir: cfg.Hooks.SpoolDir}.FlushReport(ctx, store, log)
	if c.Bool("json") {
		if err := json.NewEncoder(c.App.Writer).Encode(rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(c.App.Writer); err != nil {
		return err
	}
	return rep.Err()
}

// hookSettings reads the config file into the flags not set otherwise and
// validates everything, naming the bad setting. Precedence: command line,
// environment, config file, default.
func hookSettings(c *cli.Context) (prolog.Settings, error) {
	fileErr := applyConfigFile(c)
	cfg, err := parseHookSettings(c.String, func(url string) error { _, err := pgxpool.ParseConfig(url); return err })
	cfg.ConfigFileError = fileErr
	if err != nil {
		return cfg, err
	}
	return cfg, validateHookSettings(cfg, c.Command.Name == "flush")
}
