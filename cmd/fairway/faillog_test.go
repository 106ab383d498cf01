package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failureLog keeps a failed test's output readable: serve runs at debug level
// in lab tests, and hundreds of DEBUG lines around one failure bury it. The
// whole log is kept in the lab directory for whoever needs it; the test output
// gets its warnings and errors and the last lines before the failure.
func failureLog(t *testing.T, labDir, name string, log []byte) string {
	const tail = 30
	kept := "(not kept)"
	dir := filepath.Join(labDir, "test-logs")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(t.Name()+"-"+name)+".log")
		if os.WriteFile(path, log, 0o644) == nil {
			kept = path
		}
	}
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %d log lines, whole log in %s\nwarnings and errors:\n", name, len(lines), kept)
	for _, l := range lines {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			fmt.Fprintln(&b, "  "+l)
		}
	}
	fmt.Fprintf(&b, "last %d lines:\n", tail)
	for _, l := range lines[max(0, len(lines)-tail):] {
		fmt.Fprintln(&b, "  "+l)
	}
	return b.String()
}

func TestFailureLog_KeepsWarningsAndTail(t *testing.T) {
	var log strings.Builder
	for i := range 500 {
		fmt.Fprintf(&log, "time=x level=DEBUG msg=\"cycle step\" n=%d\n", i)
		if i == 7 {
			log.WriteString("time=x level=ERROR msg=\"write failed\" job=42\n")
		}
	}
	dir := t.TempDir()
	out := failureLog(t, dir, "serve-127.0.0.1:1", []byte(log.String()))
	if got := strings.Count(out, "level=DEBUG"); got != 30 {
		t.Errorf("DEBUG lines in the test output: %d, want the last 30", got)
	}
	if !strings.Contains(out, `msg="write failed" job=42`) {
		t.Errorf("the ERROR line is missing:\n%s", out)
	}
	if !strings.Contains(out, "n=499") {
		t.Errorf("the last line is missing:\n%s", out)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "test-logs", "*.log"))
	if len(matches) != 1 {
		t.Fatalf("kept logs: %v, want one", matches)
	}
	if b, _ := os.ReadFile(matches[0]); string(b) != log.String() {
		t.Errorf("the kept log differs from the original")
	}
}
