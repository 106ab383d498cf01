package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fairway-hpc/fairway/prolog"
)

// The hooks' flags and their reading: every hook setting is a string flag,
// parsed here into prolog.Settings.

// parseHookSettings reads the hooks' settings from get, which returns a flag's value by
// name. Every hook setting is a string: a prolog that exits non-zero drains
// the node, so a bad setting must come back here as an error the hook logs,
// never fail flag parsing. checkDB validates the database URL. The log
// settings come first and stay set on error, so a hook can log the error
// where it was asked to; a log file root could be tricked into appending to
// is dropped. It does not Validate (validateHookSettings).
func parseHookSettings(get func(flag string) string, checkDB func(string) error) (prolog.Settings, error) {
	var s prolog.Settings
	s.LogFile = get("log-file")
	if s.LogFile != "" {
		if err := prolog.CheckRootPath(s.LogFile); err != nil {
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
		s.Hooks.DefaultMode = prolog.ComputeDefault
	case "exclusive-process":
		s.Hooks.DefaultMode = prolog.ComputeExclusiveProcess
	case "prohibited":
		s.Hooks.DefaultMode = prolog.ComputeProhibited
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

// hookFlagOf names prolog.Settings' fields, as its SettingErrors name
// them, by their flags.
var hookFlagOf = map[string]string{"Hooks.SpoolDir": "--spool-dir", "Hooks.StateDir": "--state-dir",
	"Scontrol": "--scontrol", "MPSControl": "--mps-control", "KernelLog": "--kernel-log"}

// validateHookSettings is s.Validate with the bad setting named by its
// flag.
func validateHookSettings(s prolog.Settings, flushOnly bool) error {
	err := s.Validate(flushOnly)
	var se *prolog.SettingError
	if errors.As(err, &se) {
		if f, ok := hookFlagOf[se.Field]; ok {
			return fmt.Errorf("%s: %w", f, se.Err)
		}
	}
	return err
}
