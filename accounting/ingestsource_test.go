package accounting_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
)

// TestIngestSource_ReadsOnlyTheStart: telling a FILE's format (`fairway
// ingest FILE` without --from) read the whole file into memory, so a
// 527 MB sacct --json file cost 527 MB before the import began, and a
// multi-GB one as much again. Only the start is read now. The file is
// slurmrestd 26.05.3's real answer repeated (about 16 MB).
func TestIngestSource_ReadsOnlyTheStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sacct.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
	if _, err := newBigHistory(t, 3000).write(f, day, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := accounting.IngestSource(path)
	runtime.ReadMemStats(&after)
	if err != nil || got != accounting.FormatSacctJSON {
		t.Fatalf("IngestSource = %q, %v; want %s", got, err, accounting.FormatSacctJSON)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(st.Size())/8 {
		t.Errorf("telling the format of a %d-byte file allocated %d bytes, want only its start read", st.Size(), n)
	}
}
