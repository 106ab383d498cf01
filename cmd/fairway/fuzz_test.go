package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/prolog"
	"github.com/urfave/cli/v2"
)

// FuzzConfigFile feeds the hooks' config-file loader (--config, systemd
// EnvironmentFile syntax) arbitrary files through a real prolog command
// line. Seeds: the shipped example and the syntax the parser's test covers.
//
//	go test -run '^$' -fuzz '^FuzzConfigFile$' -fuzztime 10m -parallel 1 ./cmd/fairway
func FuzzConfigFile(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "..", "contrib", "slurm", "hooks.env.example"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte("# comment\n\nFAIRWAY_CLUSTER=1\n  FAIRWAY_SPOOL_DIR = \"/var/spool/x y\" \n; other\nFAIRWAY_LOG_LEVEL='debug'\nFAIRWAY_DRAIN=\n"))
	f.Add([]byte("FAIRWAY_SHARDS_PER_GPU=8\r\nFAIRWAY_KILL_STRAY=true\r\n"))
	// the environment takes precedence over the file (the lab's env sets it)
	clusterFromEnv := os.Getenv("FAIRWAY_CLUSTER") != "" || os.Getenv("SLURM_CLUSTER_NAME") != ""
	f.Fuzz(func(t *testing.T, file []byte) {
		lines, perr := parseEnvFile(file)
		if perr == nil {
			last := 0
			for _, l := range lines {
				if !envKeyPattern().MatchString(l.Key) || l.Line <= last || strings.ContainsAny(l.Value, "\n") {
					t.Fatalf("parseEnvFile: bad line %+v after line %d", l, last)
				}
				last = l.Line
			}
		}
		path := filepath.Join(t.TempDir(), "hooks.env")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		var got prolog.Settings
		var cluster string // --cluster as the command saw it, whatever else was bad
		app := &cli.App{
			Name: "fairway", Writer: io.Discard, ErrWriter: io.Discard,
			Flags: []cli.Flag{&cli.StringFlag{Name: "log-level", Value: "info"}},
			Commands: []*cli.Command{{
				Name:  "prolog",
				Flags: hookFlags("FAIRWAY_PROLOG_TIMEOUT", "5s"),
				Action: func(c *cli.Context) error {
					got, _ = hookSettings(c)
					cluster = c.String("cluster")
					return nil
				},
			}},
		}
		if err := app.RunContext(context.Background(), []string{"fairway", "prolog", "--config", path}); err != nil {
			t.Fatalf("run: %v", err)
		}
		if perr != nil && got.ConfigFileError == nil {
			t.Fatalf("parseEnvFile refused the file (%v) but the loader used it", perr)
		}
		if got.ConfigFileError == nil && os.Geteuid() == 0 && !clusterFromEnv {
			// every setting the file gave reached its flag
			for _, l := range lines {
				if l.Key == "FAIRWAY_CLUSTER" && cluster != l.Value && !lastWins(lines, l) {
					t.Fatalf("FAIRWAY_CLUSTER=%q in the file, --cluster %q", l.Value, cluster)
				}
			}
		}
	})
}

// lastWins reports whether a later line of the file sets l's key again.
func lastWins(lines []envLine, l envLine) bool {
	for _, o := range lines {
		if o.Key == l.Key && o.Line > l.Line {
			return true
		}
	}
	return false
}
