package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/urfave/cli/v2"
)

func TestReportCommand_BadSettings(t *testing.T) {
	const db = "postgres://nobody@127.0.0.1:1/none"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no database", []string{"report", "--database-url", "", "--month", "2026-10"}, "no database"},
		{"month", []string{"report", "--database-url", db, "--month", "10/2026"}, "--month"},
		{"format", []string{"report", "--database-url", db, "--month", "2026-10", "--format", "pdf"}, "--format"},
		{"half a size", []string{"report", "--database-url", db, "--month", "2026-10", "--nodes", "4"}, "--per-node"},
		{"unit", []string{"report", "--database-url", db, "--month", "2026-10", "--unit", "tpu"}, "--unit"},
		{"sim policy", []string{"report", "--database-url", db, "--month", "2026-10", "--sim-policy", "lottery"}, "--sim-policy"},
		{"sim predictor", []string{"report", "--database-url", db, "--month", "2026-10", "--sim-predictor", "oracle"}, "--sim-predictor"},
		{"sim policy without the counterfactual", []string{"report", "--database-url", db, "--counterfactual=false", "--sim-policy", "fifo"},
			"--sim-policy: only with the counterfactual (--counterfactual=false leaves it out)"},
		{"bad partitions", []string{"report", "--database-url", db, "--partitions", "gpu:nodes=x,per-node=4"}, `--partitions: partition entry 1 "gpu:nodes=x,per-node=4": nodes=x`},
		{"no partitions file", []string{"report", "--database-url", db, "--partitions", "/nonexistent/parts"}, `--partitions "/nonexistent/parts": no such file`},
		{"partitions and nodes", []string{"report", "--database-url", db, "--partitions", "gpu:nodes=1,per-node=4", "--nodes", "2", "--per-node", "4"},
			"--partitions, --nodes 2, --per-node 4: give the partitions or the nodes, not both"},
		{"partitions slurmrestd without url", []string{"report", "--database-url", db, "--partitions", "slurmrestd"}, "--partitions slurmrestd: --slurm-url (FAIRWAY_SLURM_URL) is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "")
			t.Setenv("FAIRWAY_SLURM_URL", "")
			out, err := runApp(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %s; output:\n%s", err, tc.want, out)
			}
		})
	}
}

// TestReportCommand_KTH ingests the KTH trace with `fairway ingest` and
// writes January 1997's report in every format with `fairway report`.
func TestReportCommand_KTH(t *testing.T) {
	e := lab.Get(t)
	file := shareddata.Trace(t, "KTH-SP2-filtered.swf.gz")
	url := e.EmptyDatabase(t)
	if out, err := runApp(t, "migrate", "--database-url", url, "up"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	// an empty database: a clear message, not a simulator error
	if out, err := runApp(t, "report", "--database-url", url, "--out", t.TempDir(), "--progress", "never"); err == nil ||
		!strings.Contains(err.Error(), "the database holds no finished jobs") {
		t.Errorf("report on an empty database: %v, want \"the database holds no finished jobs\"; output:\n%s", err, out)
	}
	if out, err := runApp(t, "ingest", "--database-url", url, "--from", "swf", "--cluster", "kth", "--progress", "never", file); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	outDir := t.TempDir()
	out, err := runApp(t, "report", "--database-url", url, "--month", "1997-01", "--format", "html,md,csv,json",
		"--out", outDir, "--unit", "cpu", "--nodes", "1", "--per-node", "100", "--sim-predictor", "tsafrir", "--progress", "never")
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, f := range []string{"report.html", "report.md", "accounts.csv", "report.json", "utilization.svg"} {
		if !strings.Contains(out, filepath.Join(outDir, f)) {
			t.Errorf("output does not list %s:\n%s", f, out)
		}
	}
	md, err := os.ReadFile(filepath.Join(outDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Fairness report: kth, January 1997", "2913 jobs ended this month", "Capacity: 100 processors"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	// no flags: the last month with jobs (the trace's last job ends in
	// August 1997); an unknown cluster or an empty month says what there is
	lastDir := t.TempDir()
	if out, err := runApp(t, "report", "--database-url", url, "--format", "md", "--out", lastDir, "--progress", "never", "--counterfactual=false"); err != nil {
		t.Errorf("report with no month: %v\n%s", err, out)
	} else if md, err := os.ReadFile(filepath.Join(lastDir, "report.md")); err != nil || !strings.Contains(string(md), "# Fairness report: kth, August 1997") {
		t.Errorf("report with no month: %v; want August 1997, the last month with jobs:\n%.300s", err, md)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "nosuch"}, "no jobs for cluster nosuch; clusters in the database: kth (28481 jobs ending 1996-"},
		{[]string{"--month", "2020-01"}, "no jobs for cluster kth between 2020-01-01 and 2020-02-01; clusters in the database: kth ("},
	} {
		out, err := runApp(t, append([]string{"report", "--database-url", url, "--out", t.TempDir(), "--progress", "never"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("report %v: %v, want %q; output:\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestReportSettings_ShardsPerGPU: the report timer reads serve.env, where
// the shipped file sets serve's FAIRWAY_SHARDS_PER_GPU; the report counts
// shard jobs with it unless its own setting says otherwise (a shard job
// was left out of a report as asking for no GPU).
func TestReportSettings_ShardsPerGPU(t *testing.T) {
	for _, tc := range []struct {
		name          string
		serve, report string
		want          int
	}{{"neither", "", "", 0}, {"serve's", "8", "", 8}, {"the report's own first", "8", "2", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			for env, v := range map[string]string{"FAIRWAY_SHARDS_PER_GPU": tc.serve, "FAIRWAY_REPORT_SHARDS_PER_GPU": tc.report} {
				t.Setenv(env, v)
				if v == "" {
					os.Unsetenv(env)
				}
			}
			cmd, got := reportCommand(), -1
			cmd.Action = func(c *cli.Context) error {
				cfg, err := reportSettings(c, time.Now())
				got = cfg.Options.ShardsPerGPU
				return err
			}
			app := &cli.App{Commands: []*cli.Command{cmd}}
			if err := app.Run([]string{"fairway", "report", "--database-url", "postgres://nobody@127.0.0.1:1/none", "--month", "2026-10"}); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("shards per GPU %d, want %d", got, tc.want)
			}
		})
	}
}
