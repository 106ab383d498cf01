package prolog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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

// SettingError is a Settings field that is wrong, named as the field
// ("Hooks.SpoolDir"), so that whoever reads the settings names it in its
// own words.
type SettingError struct {
	Field string
	Err   error
}

func (e *SettingError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

// Validate checks that every path root runs, reads or keeps state in is
// root's alone (CheckRootPath), and, unless flushOnly (a spool flush needs
// only the spool and the database), the hooks' Config.
func (s Settings) Validate(flushOnly bool) error {
	for _, p := range []struct{ field, path string }{
		{"Hooks.SpoolDir", s.Hooks.SpoolDir}, {"Hooks.StateDir", s.Hooks.StateDir},
		{"Scontrol", s.Scontrol}, {"MPSControl", s.MPSControl}, {"KernelLog", s.KernelLog},
	} {
		if p.path == "" && p.field == "KernelLog" {
			continue
		}
		if err := CheckRootPath(p.path); err != nil {
			return &SettingError{Field: p.field, Err: err}
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
	if s.LogLevel <= slog.LevelDebug {
		d = timed(d)
	}
	return d
}

// Run runs the prolog or the epilog (which) for the job in env within
// s.Timeout. It returns a FaultError only for a hardware fault found by the
// prolog; everything else is logged, and the job starts anyway: a hook that
// fails for any other reason must not drain the node.
func Run(ctx context.Context, which string, s Settings, d Deps, env func(string) string) error {
	log := d.Logger
	job, unread, err := JobFromEnv(env)
	if err != nil {
		log.Error(which+" does nothing", "err", err)
		return nil
	}
	for _, err := range unread {
		log.Warn("job variable unreadable: left unknown", "job_id", job.ID, "err", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	defer func(t0 time.Time) {
		log.Debug(which+" done", "job_id", job.ID, "took", time.Since(t0).Round(time.Microsecond))
	}(time.Now())
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
