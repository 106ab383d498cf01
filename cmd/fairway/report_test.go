package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/contrib/lab"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "")
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
	dir := os.Getenv("FAIRWAY_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "data", "traces")
	}
	file := filepath.Join(dir, "KTH-SP2-filtered.swf.gz")
	if _, err := os.Stat(file); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("shared traces not found: %v", err)
	}
	url := e.EmptyDatabase(t)
	if out, err := runApp(t, "migrate", "--database-url", url, "up"); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
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
}
