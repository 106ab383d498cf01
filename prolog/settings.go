package prolog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Settings are a hook's validated settings: prolog, epilog and spool
// flush share them.
type Settings struct {
	Hooks       Config
	Timeout     time.Duration // hard budget of the whole run
	DatabaseURL string        // "" keeps usage records in the spool
	LogFile     string        // "" logs to stderr
	LogLevel    slog.Level
	Scontrol    string
	MPSControl  string
	KernelLog   string // "" skips the XID check
	// ConfigFileError says the config file was unusable: its settings are
	// missing, and a hook logs that and runs on without them.
	ConfigFileError error
}

// ParseSettings reads the settings from get, which returns a flag's value by
// name. Every hook setting is a string: a prolog that exits non-zero drains
// the node, so a bad setting must come back here as an error the hook logs,
// never fail flag parsing. checkDB validates the database URL. The log
// settings come first and stay set on error, so a hook can log the error
// where it was asked to; a log file root could be tricked into appending to
// is dropped. ParseSettings does not Validate.
func ParseSettings(get func(flag string) string, checkDB func(string) error) (Settings, error) {
	var s Settings
	s.LogFile = get("log-file")
	if s.LogFile != "" {
		if err := CheckRootPath(s.LogFile); err != nil {
			s.LogFile = ""
			return s, fmt.Errorf("--log-file: %w", err)
		}
	}
	if err := s.LogLevel.UnmarshalText([]byte(get("log-level"))); err != nil {
		s.LogLevel = slog.LevelInfo
		return s, fmt.Errorf("--log-level %q: want debug, info, warn or error", get("log-level"))
	}
	positive := func(flag string) (time.Duration, error) {
		d, err := time.ParseDuration(get(flag))
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("--%s %q: want a duration like 5s", flag, get(flag))
		}
		return d, nil
	}
	var err error
	if s.Timeout, err = positive("timeout"); err != nil {
		return s, err
	}
	if s.Hooks.StoreTimeout, err = positive("database-timeout"); err != nil {
		return s, err
	}
	s.Hooks.Cluster = get("cluster")
	s.DatabaseURL = get("database-url")
	if s.DatabaseURL != "" && checkDB != nil {
		if err := checkDB(s.DatabaseURL); err != nil {
			return s, errors.New("--database-url is not a valid PostgreSQL URL or DSN")
		}
	}
	for _, p := range []struct {
		flag string
		to   *string
	}{{"spool-dir", &s.Hooks.SpoolDir}, {"state-dir", &s.Hooks.StateDir}} {
		*p.to = get(p.flag)
		if !filepath.IsAbs(*p.to) {
			return s, fmt.Errorf("--%s %q: want an absolute path", p.flag, *p.to)
		}
	}
	s.Hooks.MPSDir = filepath.Join(s.Hooks.StateDir, "mps")
	n, err := strconv.Atoi(get("shards-per-gpu"))
	if err != nil || n < 0 {
		return s, fmt.Errorf("--shards-per-gpu %q: want 0 or more", get("shards-per-gpu"))
	}
	s.Hooks.ShardsPerGPU = n
	switch m := get("default-compute-mode"); m {
	case "default":
		s.Hooks.DefaultMode = ComputeDefault
	case "exclusive-process":
		s.Hooks.DefaultMode = ComputeExclusiveProcess
	case "prohibited":
		s.Hooks.DefaultMode = ComputeProhibited
	default:
		return s, fmt.Errorf("--default-compute-mode %q: want default, exclusive-process or prohibited", m)
	}
	for _, b := range []struct {
		flag string
		to   *bool
	}{{"kill-stray", &s.Hooks.KillStray}, {"drain", &s.Hooks.Drain}} {
		v, err := strconv.ParseBool(get(b.flag))
		if err != nil {
			return s, fmt.Errorf("--%s %q: want true or false", b.flag, get(b.flag))
		}
		*b.to = v
	}
	s.Scontrol, s.MPSControl, s.KernelLog = get("scontrol"), get("mps-control"), get("kernel-log")
	return s, nil
}

// Validate checks that every path root runs, reads or keeps state in is
// root's alone (CheckRootPath), and, unless flushOnly (a spool flush needs
// only the spool and the database), the hooks' Config.
func (s Settings) Validate(flushOnly bool) error {
	for _, p := range []struct{ flag, path string }{
		{"spool-dir", s.Hooks.SpoolDir}, {"state-dir", s.Hooks.StateDir},
		{"scontrol", s.Scontrol}, {"mps-control", s.MPSControl}, {"kernel-log", s.KernelLog},
	} {
		if p.path == "" && p.flag == "kernel-log" {
			continue
		}
		if err := CheckRootPath(p.path); err != nil {
			return fmt.Errorf("--%s: %w", p.flag, err)
		}
	}
	if flushOnly {
		return nil
	}
	return s.Hooks.Validate()
}

// OpenLog logs to the log file when set and openable (slurmd discards what
// hooks print), else to stderr; the function returned closes it.
func (s Settings) OpenLog(which string, stderr io.Writer) (*slog.Logger, func()) {
	w := stderr
	closeFn := func() {}
	if s.LogFile != "" {
		f, err := os.OpenFile(s.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
		if err == nil {
			w, closeFn = f, func() { f.Close() }
		} else {
			fmt.Fprintf(stderr, "fairway %s: log file: %v\n", which, err)
		}
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: s.LogLevel}))
	return log.With("component", "prolog", "command", which, "node", os.Getenv("SLURMD_NODENAME")), closeFn
}

// Deps wires the hooks to lib (NVML), MPS, Slurm's scontrol and squeue
// (run by slurm), the kernel log and store (nil: records stay in the
// spool).
func (s Settings) Deps(lib Library, slurm SlurmCommands, store UsageStore, log *slog.Logger) Deps {
	sc := Scontrol{Path: s.Scontrol, Slurm: slurm}
	d := Deps{
		Library: lib,
		MPS:     MPSControl{Binary: s.MPSControl, Dir: s.Hooks.MPSDir},
		Shards:  sc,
		Drainer: sc,
		Procs:   ProcFS{Root: "/proc", CgroupRoot: "/sys/fs/cgroup"},
		Store:   store,
		Logger:  log,
	}
	if s.KernelLog != "" {
		d.XIDs = KernelLog{Path: s.KernelLog}
	}
	return d
}

// Run runs the prolog or the epilog (which) for the job in env within
// s.Timeout. It returns a FaultError only for a hardware fault found by the
// prolog; everything else is logged, and the job starts anyway: a hook that
// fails for any other reason must not drain the node.
func Run(ctx context.Context, which string, s Settings, d Deps, env func(string) string) error {
	log := d.Logger
	job, err := JobFromEnv(env)
	if err != nil {
		log.Error(which+" does nothing", "err", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	h, err := New(s.Hooks, d)
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
	var fault *FaultError
	if errors.As(err, &fault) {
		return fault
	}
	if err != nil {
		log.Warn("prolog incomplete; the job starts anyway", "err", err)
	}
	return nil
}
