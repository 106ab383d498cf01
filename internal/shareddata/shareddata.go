// Package shareddata finds the project's shared data (traces, real
// slurmrestd captures) for tests. The data is never copied into the
// repository: it lives in a "shared" folder beside the checkout, or wherever
// $FAIRWAY_SHARED points.
package shareddata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env names the variable that points at the shared folder (the one holding
// data/traces and data/slurmrestd).
const Env = "FAIRWAY_SHARED"

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

// Dir returns the shared sub-folder elem (e.g. "data", "slurmrestd"). When
// it is missing the test is skipped (a fresh clone has no shared data), but
// under CI=true it fails: there the data must be present.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := Root()
	dir := filepath.Join(append([]string{root}, elem...)...)
	if err == nil {
		_, err = os.Stat(dir)
	}
	if err != nil {
		msg := fmt.Sprintf("shared data %s not found (set %s to the shared folder, or check it out beside the repository): %v",
			filepath.Join(elem...), Env, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
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
