package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runCapturing runs the app on args with command name's action replaced by
// act, and returns what the app printed.
func runCapturing(t *testing.T, args []string, name string, act cli.ActionFunc) (string, error) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	for _, c := range app.Commands {
		if c.Name == name {
			c.Action = act
		}
	}
	err := app.Run(append([]string{"fairway"}, args...))
	return out.String(), err
}

// TestLogLevel_ReadOnlyCommandsDefaultToWarn: queue and explain logged
// every info line of a serve cycle above their answer; they now log at
// warn unless a level is set by flag or environment.
func TestLogLevel_ReadOnlyCommandsDefaultToWarn(t *testing.T) {
	for _, tc := range []struct {
		name, cmd, env string
		args           []string
		def            string
		want           slog.Level
	}{
		{"queue, no level set", "queue", "", []string{"queue"}, readOnlyLogLevel, slog.LevelWarn},
		{"explain, no level set", "explain", "", []string{"explain", "7"}, readOnlyLogLevel, slog.LevelWarn},
		{"explain --log-level info", "explain", "", []string{"--log-level", "info", "explain", "7"}, readOnlyLogLevel, slog.LevelInfo},
		{"queue, FAIRWAY_LOG_LEVEL=debug", "queue", "debug", []string{"queue"}, readOnlyLogLevel, slog.LevelDebug},
		{"other commands keep info", "queue", "", []string{"queue"}, "", slog.LevelInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_LOG_LEVEL", tc.env)
			if tc.env == "" {
				os.Unsetenv("FAIRWAY_LOG_LEVEL")
			}
			var got slog.Level
			_, err := runCapturing(t, tc.args, tc.cmd, func(c *cli.Context) error {
				var err error
				got, err = logLevel(c, tc.def)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("level %v, want %v", got, tc.want)
			}
		})
	}
}

// TestVersionFlag: `fairway --version` was an unknown flag; it prints
// what `fairway version` prints.
func TestVersionFlag(t *testing.T) {
	run := func(args ...string) (string, error) {
		app := newApp()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		err := app.Run(append([]string{"fairway"}, args...))
		return out.String(), err
	}
	want, err := run("version")
	if err != nil || !strings.HasPrefix(want, "fairway ") {
		t.Fatalf("fairway version: %q, %v", want, err)
	}
	got, err := run("--version")
	if err != nil || got != want {
		t.Errorf("fairway --version: %q, %v; want %q", got, err, want)
	}
}
