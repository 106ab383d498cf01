// Package shareddata finds the real data the tests replay but the repository
// does not carry: the public workload traces and the slurmrestd captures
// (see README.md, "Traces and captures"). Both live in a folder named shared/
// beside the repository (shared/data/traces, shared/data/slurmrestd);
// FAIRWAY_TRACES and FAIRWAY_CAPTURES point elsewhere.
//
// A test that needs them calls Traces or Captures: on a fresh clone, where
// they are absent, the test is skipped with a message starting with
// SkipPrefix, which `make test` counts in its closing summary; under
// CI=true a missing folder fails the test instead.
package shareddata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SkipPrefix starts every skip message of this package, so that a test
// run's output can be searched for tests skipped for want of data.
const SkipPrefix = "shared data not found:"

// Environment variables naming the folders.
const (
	TracesEnv   = "FAIRWAY_TRACES"
	CapturesEnv = "FAIRWAY_CAPTURES"
)

// TracesDir returns the traces folder: $FAIRWAY_TRACES, else
// shared/data/traces beside the repository. The error says where it looked.
func TracesDir() (string, error) { return find(TracesEnv, "traces") }

// CapturesDir returns the slurmrestd captures folder: $FAIRWAY_CAPTURES,
// else shared/data/slurmrestd beside the repository.
func CapturesDir() (string, error) { return find(CapturesEnv, "slurmrestd") }

func find(env, sub string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("%s=%s is not a folder", env, dir)
		}
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "data", sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("no folder %s; set %s or place shared/ beside the repository", dir, env)
	}
	return dir, nil
}

// moduleRoot is the nearest directory at or above the working directory
// holding go.mod: a test runs in its package's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// Traces returns the traces folder, or skips tb (fails it under CI=true).
func Traces(tb testing.TB) string {
	tb.Helper()
	return need(tb, TracesDir)
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
	return need(tb, CapturesDir)
}

func need(tb testing.TB, find func() (string, error)) string {
	tb.Helper()
	dir, err := find()
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
