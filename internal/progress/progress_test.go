package progress

import (
	"bytes"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBarLine(t *testing.T) {
	b := New(&bytes.Buffer{}, "ingest swf")
	b.Stop()
	start := b.start
	if got, want := b.line(start.Add(2*time.Second)), "\r\033[Kingest swf: reading 2s"; got != want {
		t.Errorf("before Track: %q, want %q", got, want)
	}
	var n atomic.Int64
	n.Store(500_000)
	b.Track(&n, 1_000_000)
	b.Phase("copy")
	want := "\r\033[Kingest swf: writing [" + strings.Repeat("#", 15) + strings.Repeat(".", 15) + "]  50% 0.5 MB 3s"
	if got := b.line(start.Add(3 * time.Second)); got != want {
		t.Errorf("half read: %q, want %q", got, want)
	}
	n.Store(2_000_000) // more than the size: the bar stays full
	if got := b.line(start); !strings.Contains(got, "["+strings.Repeat("#", 30)+"] 100%") {
		t.Errorf("past the size: %q", got)
	}
	b.Stop() // twice is safe
}

func TestBarErasesOnStop(t *testing.T) {
	var w bytes.Buffer
	New(&w, "x").Stop()
	if !strings.HasSuffix(w.String(), "\r\033[K") {
		t.Errorf("after Stop the terminal holds %q, want the line erased", w.String())
	}
}

func TestETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		el          time.Duration
		done, total int
		want        string
	}{
		{10 * time.Second, 250, 1000, "elapsed 10s, about 30s left"},
		{90 * time.Second, 1, 2, "elapsed 1m30s, about 1m30s left"},
		{5 * time.Second, 0, 1000, "elapsed 5s"},
		{5 * time.Second, 1000, 1000, "elapsed 5s"},
	} {
		if got := ETA(t0, t0.Add(tc.el), tc.done, tc.total); got != tc.want {
			t.Errorf("ETA(%s, %d/%d) = %q, want %q", tc.el, tc.done, tc.total, got, tc.want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a plain file taken for a terminal")
	}
}

func TestWanted(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		mode string
		want bool
	}{{"auto", false}, {"always", true}, {"never", false}} {
		if got, err := Wanted(tc.mode, f); err != nil || got != tc.want {
			t.Errorf("Wanted(%q, a file) = %v, %v; want %v", tc.mode, got, err, tc.want)
		}
	}
	if _, err := Wanted("sometimes", f); err == nil || err.Error() != `--progress "sometimes": want auto, always or never` {
		t.Errorf("Wanted(sometimes) = %v", err)
	}
}

// TestTally: one short line, redrawn at most every Redraw. It was a line
// listing every run's count (205 characters for the nine policies) drawn
// on every Update.
func TestTally(t *testing.T) {
	var b bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	long := "simulating " + strings.Repeat("a-very-long-trace-name-", 4) + ".csv.gz"
	tl := NewTally(&b, long, "9 policies", "jobs", t0)
	tl.now = func() time.Time { return clock }
	names := []string{"fifo", "fairshare", "vtc", "tiresias", "themis", "qssf", "sjf-oracle", "fair-qssf", "fair-sjf"}
	for step := 1; step <= 20; step++ { // every 100 jobs of 2000, every 10 ms
		clock = clock.Add(10 * time.Millisecond)
		for _, n := range names {
			tl.Update(n, 100*step, 2000)
		}
	}
	lines := strings.Split(b.String(), "\r\033[K")[1:]
	// 180 updates over 200 ms: the first draws, then none until 250 ms.
	if len(lines) != 1 {
		t.Fatalf("%d redraws in 200 ms, want 1: %q", len(lines), b.String())
	}
	clock = clock.Add(Redraw)
	tl.Update("fifo", 2000, 2000)
	lines = strings.Split(b.String(), "\r\033[K")[1:]
	if len(lines) != 2 {
		t.Fatalf("%d redraws after %s more, want 2", len(lines), Redraw)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > MaxLine {
			t.Errorf("line %d is %d characters, want at most %d: %q", i+1, n, MaxLine, l)
		}
	}
	if want := "…: 1% of 9 policies × 2000 jobs; elapsed 0s"; !strings.HasSuffix(lines[0], want) || !strings.HasPrefix(lines[0], "simulating a-very") {
		t.Errorf("first line %q, want the head cut and ending %q", lines[0], want)
	}
	if !strings.Contains(lines[1], ": 100% of 9 policies × 2000 jobs; elapsed 0s") {
		t.Errorf("second line %q", lines[1])
	}
}
