package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/prolog"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"
)

// The slurmd hooks. A prolog that exits non-zero drains the node, so every
// hook setting is a string flag parsed inside the action: a bad setting is
// logged and the hook exits 0, never fails in flag parsing. Only a hardware
// fault found by the prolog exits 1.

// defaultHookConfig is the root-only file of hook settings.
const defaultHookConfig = "/etc/fairway/hooks.env"

// hookConfig is a hook's validated settings.
type hookConfig struct {
	Hooks           prolog.Config
	Timeout         time.Duration
	DatabaseURL     string
	LogFile         string
	LogLevel        slog.Level
	Scontrol        string
	MPSControl      string
	KernelLog       string
	ConfigFileError error // the config file was unusable; its settings are missing
}

// hookFlags are the settings of prolog, epilog and spool flush. timeoutEnv
// and timeoutDefault differ per command.
func hookFlags(timeoutEnv, timeoutDefault string) []cli.Flag {
	return []cli.Flag{
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
	}
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
	log, closeLog := hookLogger(cfg, which)
	defer closeLog()
	if err != nil {
		log.Error("bad setting: "+which+" does nothing", "err", err)
		return nil
	}
	if cfg.ConfigFileError != nil {
		log.Error("config file unusable: running without its settings", "err", cfg.ConfigFileError)
	}
	job, err := prolog.JobFromEnv(os.Getenv)
	if err != nil {
		log.Error(which+" does nothing", "err", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(c.Context, cfg.Timeout)
	defer cancel()
	h, err := prolog.New(cfg.Hooks, hookDeps(cfg, log))
	if err != nil {
		log.Error("bad setting: "+which+" does nothing", "err", err)
		return nil
	}
	if which == "epilog" {
		if err := h.Epilog(ctx, job); err != nil {
			log.Warn("epilog finished with errors", "err", err)
		}
		return nil
	}
	err = h.Prolog(ctx, job)
	var fault *prolog.FaultError
	if errors.As(err, &fault) {
		fmt.Fprintln(c.App.Writer, fault.Reason())
		return cli.Exit("", 1)
	}
	if err != nil {
		log.Warn("prolog incomplete; the job starts anyway", "err", err)
	}
	return nil
}

// hookDeps wires the hooks to NVML, MPS, scontrol, the kernel log and the
// database.
func hookDeps(cfg hookConfig, log *slog.Logger) prolog.Deps {
	sc := prolog.Scontrol{Path: cfg.Scontrol}
	d := prolog.Deps{
		Library: prolog.NewNVML(nvmlInterface()),
		MPS:     prolog.MPSControl{Binary: cfg.MPSControl, Dir: cfg.Hooks.MPSDir},
		Shards:  sc,
		Drainer: sc,
		Procs:   prolog.ProcFS{Root: "/proc"},
		Logger:  log,
	}
	if cfg.KernelLog != "" {
		d.XIDs = prolog.KernelLog{Path: cfg.KernelLog}
	}
	if cfg.DatabaseURL != "" {
		d.Store = &usageStore{url: cfg.DatabaseURL, log: log.With("component", "accounting")}
	}
	return d
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
	log, closeLog := hookLogger(cfg, "spool-flush")
	defer closeLog()
	ctx, cancel := context.WithTimeout(c.Context, cfg.Timeout)
	defer cancel()
	store := &usageStore{url: cfg.DatabaseURL, log: log.With("component", "accounting")}
	spool := prolog.Spool{Dir: cfg.Hooks.SpoolDir}
	stored, left, err := spool.Flush(ctx, store, log)
	if c.Bool("json") {
		out := struct {
			Spool  string `json:"spool"`
			Stored int    `json:"stored"`
			Left   int    `json:"left"`
			Error  string `json:"error,omitempty"`
		}{spool.Dir, stored, left, ""}
		if err != nil {
			out.Error = err.Error()
		}
		if jerr := json.NewEncoder(c.App.Writer).Encode(out); jerr != nil {
			return jerr
		}
	} else {
		fmt.Fprintf(c.App.Writer, "stored %d usage records from %s, %d left\n", stored, spool.Dir, left)
	}
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d spooled files are not usage records; see the log", left)
	}
	return nil
}

// hookSettings reads the config file into the flags not set otherwise and
// validates everything, naming the bad setting. Precedence: command line,
// environment, config file, default.
func hookSettings(c *cli.Context) (hookConfig, error) {
	var cfg hookConfig
	cfg.ConfigFileError = applyConfigFile(c)

	// The log settings first: a hook logs every other bad setting there.
	cfg.LogFile = c.String("log-file")
	if cfg.LogFile != "" {
		if err := prolog.CheckRootPath(cfg.LogFile); err != nil {
			cfg.LogFile = "" // root must not append to a file another user can swap
			return cfg, fmt.Errorf("--log-file: %w", err)
		}
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		cfg.LogLevel = slog.LevelInfo
		return cfg, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	var err error
	if cfg.Timeout, err = positiveDuration(c, "timeout"); err != nil {
		return cfg, err
	}
	if cfg.Hooks.StoreTimeout, err = positiveDuration(c, "database-timeout"); err != nil {
		return cfg, err
	}
	cfg.Hooks.Cluster = c.String("cluster")
	cfg.DatabaseURL = c.String("database-url")
	if cfg.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(cfg.DatabaseURL); err != nil {
			return cfg, errors.New("--database-url is not a valid PostgreSQL URL or DSN")
		}
	}
	for _, p := range []struct {
		flag string
		to   *string
	}{{"spool-dir", &cfg.Hooks.SpoolDir}, {"state-dir", &cfg.Hooks.StateDir}} {
		*p.to = c.String(p.flag)
		if !filepath.IsAbs(*p.to) {
			return cfg, fmt.Errorf("--%s %q: want an absolute path", p.flag, *p.to)
		}
	}
	cfg.Hooks.MPSDir = filepath.Join(cfg.Hooks.StateDir, "mps")
	n, err := strconv.Atoi(c.String("shards-per-gpu"))
	if err != nil || n < 0 {
		return cfg, fmt.Errorf("--shards-per-gpu %q: want 0 or more", c.String("shards-per-gpu"))
	}
	cfg.Hooks.ShardsPerGPU = n
	switch m := c.String("default-compute-mode"); m {
	case "default":
		cfg.Hooks.DefaultMode = prolog.ComputeDefault
	case "exclusive-process":
		cfg.Hooks.DefaultMode = prolog.ComputeExclusiveProcess
	case "prohibited":
		cfg.Hooks.DefaultMode = prolog.ComputeProhibited
	default:
		return cfg, fmt.Errorf("--default-compute-mode %q: want default, exclusive-process or prohibited", m)
	}
	for _, b := range []struct {
		flag string
		to   *bool
	}{{"kill-stray", &cfg.Hooks.KillStray}, {"drain", &cfg.Hooks.Drain}} {
		v, err := strconv.ParseBool(c.String(b.flag))
		if err != nil {
			return cfg, fmt.Errorf("--%s %q: want true or false", b.flag, c.String(b.flag))
		}
		*b.to = v
	}
	cfg.Scontrol, cfg.MPSControl, cfg.KernelLog = c.String("scontrol"), c.String("mps-control"), c.String("kernel-log")
	for _, p := range []struct{ flag, path string }{
		{"spool-dir", cfg.Hooks.SpoolDir}, {"state-dir", cfg.Hooks.StateDir},
		{"scontrol", cfg.Scontrol}, {"mps-control", cfg.MPSControl}, {"kernel-log", cfg.KernelLog},
	} {
		if p.path == "" && p.flag == "kernel-log" {
			continue
		}
		if err := prolog.CheckRootPath(p.path); err != nil {
			return cfg, fmt.Errorf("--%s: %w", p.flag, err)
		}
	}
	if c.Command.Name == "flush" {
		return cfg, nil // a flush needs only the spool and the database
	}
	return cfg, cfg.Hooks.Validate()
}

func positiveDuration(c *cli.Context, flag string) (time.Duration, error) {
	d, err := time.ParseDuration(c.String(flag))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--%s %q: want a duration like 5s", flag, c.String(flag))
	}
	return d, nil
}

// hookLogger logs to --log-file when set and openable (slurmd discards what
// hooks print), else to stderr.
func hookLogger(cfg hookConfig, which string) (*slog.Logger, func()) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
		if err == nil {
			w, closeFn = f, func() { f.Close() }
		} else {
			fmt.Fprintf(os.Stderr, "fairway %s: log file: %v\n", which, err)
		}
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: cfg.LogLevel}))
	return log.With("component", "prolog", "command", which, "node", os.Getenv("SLURMD_NODENAME")), closeFn
}

// usageStore is prolog.UsageStore over package accounting. A hook stores
// once per run, so it connects per call with a one-connection pool rather
// than keeping one open.
type usageStore struct {
	url string
	log *slog.Logger
}

func (s *usageStore) PutUsage(ctx context.Context, us []prolog.Usage) error {
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		return errors.New("database URL is not a valid PostgreSQL URL or DSN")
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	defer pool.Close()
	rows := make([]accounting.GPUUsage, len(us))
	for i, u := range us {
		rows[i] = accounting.GPUUsage{
			Cluster: u.Cluster, JobID: u.JobID, Node: u.Node, GPUMinor: u.GPUMinor,
			Started: u.StartedAt, Ended: u.EndedAt, UUID: u.GPUUUID, Model: u.GPUModel, Shards: u.Shards,
			UtilAvgPct: u.UtilAvgPct, UtilMaxPct: u.UtilMaxPct, MemPeakMB: u.MemPeakMB, MemTotalMB: u.MemTotalMB,
			EnergyJ: u.EnergyJoules,
		}
	}
	_, err = accounting.New(pool, s.log).RecordGPUUsage(ctx, rows)
	return err
}
