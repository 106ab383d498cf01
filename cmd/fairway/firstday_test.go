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

// TestREADME_TryItBlock: the README's try-it block wrote under fixed /tmp
// paths (another user's file, or a stale one from an earlier run, was
// read back), and ranked before ingesting any history, so every expected
// start was the time-limit bound. It ingests first and writes under a
// mktemp -d folder.
func TestREADME_TryItBlock(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Try it on the lab")
	if !ok {
		t.Fatal("README has no '## Try it on the lab'")
	}
	_, block, _ := strings.Cut(rest, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if strings.Contains(block, "/tmp") {
		t.Errorf("the try-it block writes under /tmp:\n%s", block)
	}
	if !strings.Contains(block, "mktemp -d") {
		t.Errorf("the try-it block makes no folder of its own (mktemp -d):\n%s", block)
	}
	ingest, serve := strings.Index(block, "fairway ingest"), strings.Index(block, "fairway serve")
	if ingest < 0 || serve < 0 || ingest > serve {
		t.Errorf("the try-it block must ingest the history before serve ranks (ingest at %d, serve at %d):\n%s", ingest, serve, block)
	}
}
