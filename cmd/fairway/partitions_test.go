package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadLayout_File reads --partitions from a file as from the flag, a
// file a Windows editor saved with a byte order mark included.
func TestReadLayout_File(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"plain": "gpu:nodes=2,per-node=8\ncpu:nodes=4,per-node=32\n",
		"bom":   "\ufeffgpu:nodes=2,per-node=8\ncpu:nodes=4,per-node=32\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := readLayout(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		fromFlag, err := readLayout("gpu:nodes=2,per-node=8;cpu:nodes=4,per-node=32")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fromFile.String(), fromFlag.String(); got != want {
			t.Errorf("%s: read %q, want %q", name, got, want)
		}
	}
}
