package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/internal/atomicfile/fsizetest"
)

// TestWrite_FailedWriteKeepsOld: fairway report --out DIR, with
// report.json too big for a 1 KiB file size limit, fails naming it once
// and leaves its old version byte for byte.
func TestWrite_FailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	old := []byte(`{"month": "last month's report, not to be lost"}` + "\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(handData(), nil, handOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = fsizetest.Run(t, 1024, func() error {
		_, err := report.Write(dir, r, []string{"json"})
		return err
	})
	if want := "write " + path + ": file too large"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	fsizetest.CheckKept(t, path, old)
}
