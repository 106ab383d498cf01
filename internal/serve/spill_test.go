package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// spillDuringOutage runs cycles on a runner whose database is down until
// at least two spill files are in dir, and returns them, oldest first.
func spillDuringOutage(t *testing.T, dir string) []string {
	t.Helper()
	g := newRig(t, Config{BufferLimit: 2, BufferDir: dir}, false)
	g.store.down = true
	var jobs []slurmctl.Job
	for c := 0; ; c++ {
		jobs = append(jobs, job(int64(c+1), "a", policy.StatePending, time.Duration(c)*time.Second))
		g.cycle(t, jobs...)
		if files, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix)); len(files) >= 2 {
			return files
		}
		if c > 100 {
			t.Fatal("nothing spilled")
		}
	}
}

// TestRunner_CorruptSpillLeftForAdminRestShipped: a spill file cut short
// (a crash, a full disk under another writer) does not keep serve from
// starting or the other records from shipping; it stays where it is for
// the admin, and fairway_buffer_unreadable_files says so, since the
// buffer gauges and fairway_database_up look healthy.
func TestRunner_CorruptSpillLeftForAdminRestShipped(t *testing.T) {
	dir := t.TempDir()
	files := spillDuringOutage(t, dir)
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	g := newRig(t, Config{BufferLimit: 2, BufferDir: dir}, false) // the restart
	res := g.cycle(t)
	if !res.Recorded {
		t.Error("the readable records did not ship past the corrupt file")
	}
	if len(g.store.cycles) < 2 {
		t.Errorf("%d cycle rows shipped, want the readable spill's and the new cycle's", len(g.store.cycles))
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix))
	if len(left) != 1 || left[0] != files[0] {
		t.Fatalf("spill files left %v, want only the corrupt %s", left, files[0])
	}
	if got := gauge(t, g.r.metrics, "fairway_buffer_unreadable_files"); got != 1 {
		t.Errorf("fairway_buffer_unreadable_files = %v, want 1", got)
	}
	if err := os.Remove(files[0]); err != nil { // the admin dealt with it
		t.Fatal(err)
	}
	g.cycle(t)
	if got := gauge(t, g.r.metrics, "fairway_buffer_unreadable_files"); got != 0 {
		t.Errorf("fairway_buffer_unreadable_files = %v once the file is gone, want 0", got)
	}
}

// TestRunner_SpillFailsKeepsRecordsInMemory: a spill directory that cannot
// be written (here a path under a regular file; a full disk fails the
// same way) loses nothing: the records stay in memory, each failed spill
// is counted, and all of them ship when the database is back.
func TestRunner_SpillFailsKeepsRecordsInMemory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g := newRig(t, Config{BufferLimit: 2, BufferDir: filepath.Join(file, "buffer")}, false)
	g.store.down = true
	var jobs []slurmctl.Job
	for c := range 4 {
		jobs = append(jobs, job(int64(c+1), "a", policy.StatePending, time.Duration(c)*time.Second))
		g.cycle(t, jobs...)
	}
	if got := metricValue(t, g.r.metrics, "fairway_buffer_spill_errors_total"); got == 0 {
		t.Error("failed spills not counted")
	}
	kept := g.r.buffer.mem.len()
	if kept <= 2 {
		t.Fatalf("%d records in memory after failed spills, want them all (over the bound 2)", kept)
	}
	g.store.down = false
	g.cycle(t, jobs...)
	if g.r.buffer.len() != 0 || len(g.store.cycles) != 5 || len(g.store.decisions) != 4 {
		t.Errorf("after the outage: %d buffered, %d cycle rows, %d decisions; want 0, 5, 4",
			g.r.buffer.len(), len(g.store.cycles), len(g.store.decisions))
	}
}
