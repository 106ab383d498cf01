package simplot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/internal/atomicfile/fsizetest"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestWrite_FailedWriteKeepsOld: an SVG too big for a 1 KiB file size
// limit fails naming jct_cdf.svg once and leaves its old version.
func TestWrite_FailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jct_cdf.svg")
	old := []byte("<svg>last run's plot</svg>\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &sim.Report{Trace: "t", Policies: []sim.Metrics{{Name: "fifo"}}}
	runs := []sim.PolicyRun{{JCT: []float64{1, 2, 3}, Users: []sim.UserWait{{P95Wait: 5}}}}
	err := fsizetest.Run(t, 1024, func() error { return Write(dir, rep, runs) })
	if want := "write " + path + ": file too large"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	fsizetest.CheckKept(t, path, old)
}
