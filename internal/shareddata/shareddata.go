// Package shareddata finds the project's shared data (traces, real
// slurmrestd captures) for tests. The data is never copied into the
// repository: it lives in a "shared" folder beside the checkout, or wherever
// $FAIRWAY_SHARED points; $FAIRWAY_TRACES points at the traces alone (see
// README.md, "Traces and captures").
//
// A test that needs the data calls Dir, Read, Traces, Trace or Captures: on
// a fresh clone, where it is absent, the test is skipped with a message
// starting with SkipPrefix, which `make test` counts in its closing
// summary; under CI=true a missing folder fails the test instead.
package shareddata

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the variable that points at the shared folder (the one holding
// data/traces and data/slurmrestd).
const Env = "FAIRWAY_SHARED"

// TracesEnv names the variable that points at the traces folder alone; it
// wins over Env for traces.
const TracesEnv = "FAIRWAY_TRACES"

// SkipPrefix starts every skip message of this package, so that a test
// run's output can be searched for tests skipped for want of data.
const SkipPrefix = "shared data not found:"

// Root returns the shared folder: $FAIRWAY_SHARED, else "shared" beside the
// repository root (the nearest parent of the working directory holding
// go.mod).
func Root() (string, error) {
	if d := os.Getenv(Env); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(dir), "shared"), nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// TracesDir returns the traces folder: $FAIRWAY_TRACES, else data/traces
// in the shared folder. The error says where it looked and how to point
// elsewhere.
func TracesDir() (string, error) {
	if d := os.Getenv(TracesEnv); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("%s=%s is not a folder", TracesEnv, d)
		}
		return d, nil
	}
	return sub("data", "traces")
}

// CapturesDir returns the slurmrestd captures folder, data/slurmrestd in
// the shared folder.
func CapturesDir() (string, error) { return sub("data", "slurmrestd") }

func sub(elem ...string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(append([]string{root}, elem...)...)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("no folder %s (set %s to the shared folder or %s to the traces, or place shared/ beside the repository)",
			dir, Env, TracesEnv)
	}
	return dir, nil
}

// Dir returns the shared sub-folder elem (e.g. "data", "slurmrestd"). When
// it is missing the test is skipped (a fresh clone has no shared data), but
// under CI=true it fails: there the data must be present.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	if len(elem) == 2 && elem[0] == "data" && elem[1] == "traces" {
		return Traces(t)
	}
	dir, err := sub(elem...)
	if err != nil {
		miss(t, err)
	}
	return dir
}

// Read returns the file at elem inside the shared folder, with Dir's
// skip/fail rule for a missing folder and a test failure for a missing file.
func Read(t testing.TB, elem ...string) []byte {
	t.Helper()
	dir := Dir(t, elem[:len(elem)-1]...)
	b, err := os.ReadFile(filepath.Join(dir, elem[len(elem)-1]))
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("shared file %s missing: %v", filepath.Join(elem...), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Traces returns the traces folder, or skips tb (fails it under CI=true).
func Traces(tb testing.TB) string {
	tb.Helper()
	dir, err := TracesDir()
	if err != nil {
		miss(tb, err)
	}
	return dir
}

// Trace returns the path of one trace file, or skips tb (fails it under
// CI=true) when the folder or the file is missing.
func Trace(tb testing.TB, file string) string {
	tb.Helper()
	p := filepath.Join(Traces(tb), file)
	if _, err := os.Stat(p); err != nil {
		miss(tb, fmt.Errorf("trace %s: %w", file, err))
	}
	return p
}

// Captures returns the slurmrestd captures folder, or skips tb (fails it
// under CI=true).
func Captures(tb testing.TB) string {
	tb.Helper()
	dir, err := CapturesDir()
	if err != nil {
		miss(tb, err)
	}
	return dir
}

func miss(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s %v (required under CI=true)", SkipPrefix, err)
	}
	tb.Skipf("%s %v", SkipPrefix, err)
}

// GzipHead is the first n lines of the gzip-compressed file at path,
// uncompressed, each ending in a newline: a real trace's or sequence's
// head, small enough for a test's input or a fuzz seed. Any error fails tb.
func GzipHead(tb testing.TB, path string, n int) string {
	tb.Helper()
	fh, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(zr)
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return b.String()
}
