package trace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/internal/atomicfile/fsizetest"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestWriteHeliosFile_FailedWriteKeepsOld: a write that fails part-way
// (over a 1 KiB file size limit) leaves the old trace byte for byte, for
// a gzip and a plain path, and names the file once.
func TestWriteHeliosFile_FailedWriteKeepsOld(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 300, Users: 5, Nodes: 2, GPUsPerNode: 8, Load: 0.9, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"synth.csv", "synth.csv.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			old := []byte("the trace of last week, not to be lost\n")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			err := fsizetest.Run(t, 1024, func() error { return trace.WriteHeliosFile(path, jobs) })
			if want := "write " + path + ": file too large"; err == nil || err.Error() != want {
				t.Errorf("error %v, want %q", err, want)
			}
			fsizetest.CheckKept(t, path, old)
		})
	}
}
