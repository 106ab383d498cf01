package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/prolog"
	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// settingsOf runs a prolog command with the real flags and returns the
// settings it would use.
func settingsOf(t *testing.T, args ...string) (prolog.Settings, error) {
	t.Helper()
	var cfg prolog.Settings
	var err error
	app := newApp()
	for _, c := range app.Commands {
		if c.Name == "prolog" {
			c.Action = func(c *cli.Context) error {
				cfg, err = hookSettings(c)
				return nil
			}
		}
	}
	if runErr := app.RunContext(context.Background(), append([]string{"fairway", "prolog"}, args...)); runErr != nil {
		t.Fatalf("run: %v", runErr)
	}
	return cfg, err
}

// unsetenv unsets variables for the test (an empty variable still counts
// as set for a flag).
func unsetenv(t *testing.T, keys ...string) {
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// cleanHookEnv unsets every setting in the environment (`lab env`
// exports FAIRWAY_DATABASE_URL, which would win over a config file).
func cleanHookEnv(t *testing.T) {
	for k := range knownSettings(newApp()) {
		unsetenv(t, k)
	}
	unsetenv(t, "SLURM_CLUSTER_NAME", "FAIRWAY_CONFIG")
}

func writeConfig(t *testing.T, mode os.FileMode, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hooks.env")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHookSettings_Precedence: command line over environment over config
// file over default; paths root uses (spool, state, programs) never from
// the environment.
func TestHookSettings_Precedence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the config file must belong to root")
	}
	path := writeConfig(t, 0o600, `FAIRWAY_SPOOL_DIR=/file/spool
FAIRWAY_STATE_DIR=/file/state
FAIRWAY_PROLOG_TIMEOUT=3s
FAIRWAY_EPILOG_TIMEOUT=30s
FAIRWAY_DATABASE_URL=postgres://u:secret@db:5432/fw
FAIRWAY_SHARDS_PER_GPU=8
FAIRWAY_LOG_LEVEL=debug
FAIRWAY_CLUSTER=fromfile
`)
	cleanHookEnv(t)
	t.Setenv("FAIRWAY_SPOOL_DIR", "/env/spool")
	t.Setenv("FAIRWAY_SCONTROL", "/env/scontrol")
	t.Setenv("FAIRWAY_DATABASE_TIMEOUT", "2s")
	got, err := settingsOf(t, "--config", path, "--timeout", "1s")
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigFileError != nil {
		t.Fatal(got.ConfigFileError)
	}
	want := prolog.Settings{
		Hooks: prolog.Config{Cluster: "fromfile", StateDir: "/file/state", SpoolDir: "/file/spool", MPSDir: "/file/state/mps",
			ShardsPerGPU: 8, DefaultMode: prolog.ComputeDefault, Drain: true, StoreTimeout: 2 * time.Second},
		Timeout: time.Second, DatabaseURL: "postgres://u:secret@db:5432/fw", LogLevel: -4,
		Scontrol: "/usr/bin/scontrol", MPSControl: "/usr/bin/nvidia-cuda-mps-control", KernelLog: "/dev/kmsg",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

// TestHookSettings_RootPaths: FAIRWAY_SCONTROL and FAIRWAY_MPS_CONTROL in
// the environment do not reach root's exec (they used to override the
// root-only file), and a state or spool directory, or a program, that
// another user could change is refused with the path named.
func TestHookSettings_RootPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory of another owner")
	}
	cleanHookEnv(t)
	t.Setenv("FAIRWAY_SCONTROL", "/tmp/evil/scontrol")
	t.Setenv("FAIRWAY_MPS_CONTROL", "/tmp/evil/mps")
	t.Setenv("FAIRWAY_STATE_DIR", "/tmp/evil/state")
	t.Setenv("FAIRWAY_LOG_FILE", "/tmp/evil/log")
	got, err := settingsOf(t, "--config", "", "--cluster", "lab")
	if err != nil {
		t.Fatal(err)
	}
	if got.Scontrol != "/usr/bin/scontrol" || got.MPSControl != "/usr/bin/nvidia-cuda-mps-control" || got.Hooks.StateDir != "/run/fairway" || got.LogFile != "" {
		t.Errorf("paths from the environment: scontrol %q, MPS %q, state %q, log %q", got.Scontrol, got.MPSControl, got.Hooks.StateDir, got.LogFile)
	}

	dir := t.TempDir()
	userDir := filepath.Join(dir, "alice")
	if err := os.Mkdir(userDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(userDir, 1001, 1001); err != nil {
		t.Fatal(err)
	}
	worldDir := filepath.Join(dir, "world")
	if err := os.Mkdir(worldDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(worldDir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		body, want string
	}{
		{"FAIRWAY_STATE_DIR=" + filepath.Join(userDir, "state") + "\n", "--state-dir: " + userDir + " belongs to uid 1001"},
		{"FAIRWAY_SPOOL_DIR=" + worldDir + "\n", "--spool-dir: " + worldDir + " has mode 0777"},
		{"FAIRWAY_SCONTROL=" + filepath.Join(userDir, "scontrol") + "\n", "--scontrol: " + userDir},
		{"FAIRWAY_MPS_CONTROL=" + filepath.Join(worldDir, "mps") + "\n", "--mps-control: " + worldDir},
		{"FAIRWAY_LOG_FILE=" + filepath.Join(userDir, "hooks.log") + "\n", "--log-file: " + userDir},
	} {
		_, err := settingsOf(t, "--config", writeConfig(t, 0o600, tt.body), "--cluster", "lab")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", strings.TrimSpace(tt.body), err, tt.want)
		}
	}
}

func TestHookSettings_Errors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "soon"}, "--timeout"},
		{[]string{"--timeout", "-1s"}, "--timeout"},
		{[]string{"--database-timeout", "0s"}, "--database-timeout"},
		{[]string{"--shards-per-gpu", "-1"}, "--shards-per-gpu"},
		{[]string{"--default-compute-mode", "exclusive"}, "--default-compute-mode"},
		{[]string{"--kill-stray", "sometimes"}, "--kill-stray"},
		{[]string{"--spool-dir", "spool"}, "--spool-dir"},
		{[]string{"--database-url", "postgres://%zz"}, "--database-url"},
		{[]string{"--cluster", ""}, "cluster"},
	}
	cleanHookEnv(t)
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"--config", "", "--cluster", "lab"}, tt.args...)
			_, err := settingsOf(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestApplyConfigFile_Refusals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the config file must belong to root")
	}
	cleanHookEnv(t)
	tests := []struct {
		name string
		path string
		want string
	}{
		{"readable by others", writeConfig(t, 0o644, "FAIRWAY_CLUSTER=x\n"), "mode 0644"},
		{"unknown setting", writeConfig(t, 0o600, "FAIRWAY_CLUSTER=x\nFAIRWAY_SPOOL=/x\n"), "line 2: unknown setting FAIRWAY_SPOOL"},
		{"not a setting line", writeConfig(t, 0o600, "cluster x\n"), "line 1"},
		{"missing", filepath.Join(t.TempDir(), "nope.env"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := settingsOf(t, "--config", tt.path)
			if got.ConfigFileError == nil || !strings.Contains(got.ConfigFileError.Error(), tt.want) {
				t.Errorf("config file error %v, want one with %q", got.ConfigFileError, tt.want)
			}
			if got.Hooks.Cluster == "x" {
				t.Error("settings taken from a refused file")
			}
		})
	}
}

// TestPrologCommand_NeverFailsOnSettings: a bad setting or a missing Slurm
// environment is logged and the prolog exits 0, so it cannot drain a node.
func TestPrologCommand_NeverFailsOnSettings(t *testing.T) {
	cleanHookEnv(t)
	logFile := filepath.Join(t.TempDir(), "hooks.log")
	unsetenv(t, "SLURM_JOB_ID")
	for _, args := range [][]string{
		{"prolog", "--config", "", "--log-file", logFile, "--timeout", "soon"},
		{"epilog", "--config", "", "--log-file", logFile, "--cluster", "lab", "--spool-dir", "relative"},
		{"prolog", "--config", "", "--log-file", logFile, "--cluster", "lab"}, // no SLURM_JOB_ID
	} {
		out, err := runApp(t, args...)
		if err != nil {
			t.Errorf("%v: error %v (output %q), want exit 0", args, err, out)
		}
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`--timeout \"soon\"`, `--spool-dir \"relative\"`, "no SLURM_JOB_ID"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log lacks %q:\n%s", want, b)
		}
	}
}

// TestSpoolFlush_EmptySpool: flushing an empty spool needs no database
// round trip and says what it did.
func TestSpoolFlush_EmptySpool(t *testing.T) {
	cleanHookEnv(t)
	dir := t.TempDir()
	out, err := runApp(t, "spool", "flush", "--config", "", "--spool-dir", dir, "--database-url", "postgres://nobody@127.0.0.1:1/none", "--json")
	if err != nil {
		t.Fatalf("flush: %v\n%s", err, out)
	}
	if want := `{"spool":"` + dir + `","stored":0,"left":0}` + "\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}
