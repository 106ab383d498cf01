package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestRewriteSettings_Validation(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		bad  string
	}{
		{args: nil},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-table", filepath.Join(dir, "t")}},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-table", ""}, bad: "--rewrite-table is required"},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-table", filepath.Join(dir, "t"), "--rewrite-table-max-bytes", "100"}, bad: "--rewrite-table-max-bytes"},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-rules", "cpus,bogus"}, bad: "unknown rule"},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-table", "/no/such/dir/t"}, bad: "directory must exist"},
		{args: []string{"--rewrite-partitions", "gpu", "--rewrite-rules", "cpus", "--rewrite-share-max-util", "0"}, bad: "share-max-util"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			base := []string{"serve", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y"}
			cfg, err := settingsFromArgs(t, append(base, tt.args...))
			if tt.bad == "" && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)) {
				t.Fatalf("error %v, want it to mention %q", err, tt.bad)
			}
			if err == nil && len(tt.args) == 0 && len(cfg.Rewrite.Partitions) != 0 {
				t.Errorf("rewriting on by default: %+v", cfg.Rewrite)
			}
		})
	}
}

// settingsFromArgs parses serve's flags and returns serveSettings' result.
func settingsFromArgs(t *testing.T, args []string) (serveConfig, error) {
	t.Helper()
	t.Setenv("SLURM_JWT", "x")
	var cfg serveConfig
	var serr error
	app := newApp()
	for _, c := range app.Commands {
		if c.Name == args[0] {
			c.Action = func(c *cli.Context) error { cfg, serr = serveSettings(c); return nil }
		}
	}
	if err := app.Run(append([]string{"fairway"}, args...)); err != nil {
		return cfg, err
	}
	return cfg, serr
}
