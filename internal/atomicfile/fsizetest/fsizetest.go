// Package fsizetest runs a write under a tiny file size limit
// (RLIMIT_FSIZE, what `ulimit -f` sets), so that writing an output file
// fails part-way with "file too large" the way it does on a full disk, for
// tests that the commands' output files survive such a write (package
// atomicfile). Unlike an unwritable directory it works as root too.
package fsizetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Run calls write with the process's soft file size limit lowered to limit
// bytes, and restores it after. The limit holds for the whole process: call
// Run only from a test that is not parallel (while one runs, no other test
// does), and keep write to the write under test.
func Run(t *testing.T, limit uint64, write func() error) error {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	lowered := was
	lowered.Cur = min(limit, was.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lowered); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
			t.Fatalf("restoring the file size limit: %v", err)
		}
	}()
	return write()
}

// CheckKept fails t unless path holds old, byte for byte, and no
// temporary file of atomicfile's for it (".BASE.*") is left beside it.
func CheckKept(t *testing.T, path string, old []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the old file: %v", err)
	}
	if !bytes.Equal(got, old) {
		t.Errorf("%s holds %d bytes (%.60q...), want the old %d bytes (%.60q...)", path, len(got), got, len(old), old)
	}
	es, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.HasPrefix(e.Name(), "."+filepath.Base(path)+".") {
			t.Errorf("temporary file %s left beside %s", e.Name(), path)
		}
	}
}
