package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/internal/atomicfile/fsizetest"
)

// TestReportWriteCSV_FailedWriteKeepsOld: simulate --out DIR, with a
// users.csv too big for a 1 KiB file size limit, fails naming users.csv
// once and leaves its old version byte for byte (each file is replaced
// whole; policies.csv, which fits, is the new one).
func TestReportWriteCSV_FailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	old := []byte("policy,user,jobs,avg_wait_s,p95_wait_s\nfifo,alice,1,2,3\n")
	for _, name := range []string{"policies.csv", "users.csv"} {
		if err := os.WriteFile(filepath.Join(dir, name), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := PolicyRun{}
	for i := range 100 {
		run.Users = append(run.Users, UserWait{User: fmt.Sprintf("user%03d", i), Jobs: i, AvgWait: 1.5 * float64(i), P95Wait: 3.25 * float64(i)})
	}
	rep := &Report{Policies: []Metrics{{Name: "fifo", Jobs: 4950}}}
	err := fsizetest.Run(t, 1024, func() error { return rep.WriteCSV(dir, []PolicyRun{run}) })
	users := filepath.Join(dir, "users.csv")
	if want := "write " + users + ": file too large"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	fsizetest.CheckKept(t, users, old)
	if b, err := os.ReadFile(filepath.Join(dir, "policies.csv")); err != nil || string(b) == string(old) {
		t.Errorf("policies.csv: %q, %v; want the new one", b, err)
	}
}
