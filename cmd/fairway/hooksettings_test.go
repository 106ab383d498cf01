package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/prolog"
)

// goodHookSettings are valid hook settings by flag name, with the state and
// spool directories under / (root's on any test machine).
func goodHookSettings() map[string]string {
	return map[string]string{
		"log-level": "info", "timeout": "5s", "database-timeout": "2s", "cluster": "lab",
		"spool-dir": "/", "state-dir": "/", "shards-per-gpu": "4", "default-compute-mode": "exclusive-process",
		"kill-stray": "true", "drain": "false", "scontrol": "/", "mps-control": "/", "kernel-log": "",
	}
}

func TestParseHookSettings(t *testing.T) {
	m := goodHookSettings()
	s, err := parseHookSettings(func(f string) string { return m[f] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := prolog.Config{Cluster: "lab", StateDir: "/", SpoolDir: "/", MPSDir: "/mps", ShardsPerGPU: 4,
		DefaultMode: prolog.ComputeExclusiveProcess, KillStray: true, Drain: false, StoreTimeout: 2 * time.Second}
	if s.Hooks != want || s.Timeout != 5*time.Second || s.LogLevel != slog.LevelInfo {
		t.Errorf("parseHookSettings = %+v, want hooks %+v, timeout 5s", s, want)
	}
	if err := validateHookSettings(s, false); err != nil {
		t.Errorf("Validate: %v", err)
	}
	s.Scontrol = "scontrol"
	if err := validateHookSettings(s, true); err == nil || !strings.HasPrefix(err.Error(), "--scontrol: ") {
		t.Errorf("a relative scontrol: %v, want it named by its flag", err)
	}
}

func TestParseHookSettingsNamesTheBadOne(t *testing.T) {
	badDB := func(string) error { return errors.New("bad") }
	for _, tc := range []struct {
		flag, value, want string
	}{
		{"log-level", "loud", `--log-level "loud": want debug, info, warn or error`},
		{"log-file", "relative.log", "--log-file: relative.log: want an absolute path"},
		{"timeout", "soon", `--timeout "soon": want a duration like 5s`},
		{"database-timeout", "-1s", `--database-timeout "-1s"`},
		{"database-url", "not a url", "--database-url is not a valid PostgreSQL URL or DSN"},
		{"spool-dir", "spool", `--spool-dir "spool": want an absolute path`},
		{"shards-per-gpu", "-1", `--shards-per-gpu "-1": want 0 or more`},
		{"default-compute-mode", "shared", `--default-compute-mode "shared"`},
		{"drain", "maybe", `--drain "maybe": want true or false`},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			m := goodHookSettings()
			m[tc.flag] = tc.value
			s, err := parseHookSettings(func(f string) string { return m[f] }, badDB)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.flag == "log-file" && s.LogFile != "" {
				t.Errorf("a refused log file is kept: %q", s.LogFile)
			}
		})
	}
}
