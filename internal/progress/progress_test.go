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

func TestTally(t *testing.T) {
	var b bytes.Buffer
	tl := NewTally(&b, "simulating kth, jobs replayed", "per policy", []string{"fifo", "sjf"}, time.Now())
	tl.Update("sjf", 80, 2913)
	tl.Update("fifo", 120, 2913)
	lines := strings.Split(b.String(), "\r\033[K")
	if len(lines) != 3 || lines[0] != "" {
		t.Fatalf("got %q, want two redrawn lines", b.String())
	}
	want := []string{"simulating kth, jobs replayed of 2913 per policy: fifo 0 sjf 80; elapsed ",
		"simulating kth, jobs replayed of 2913 per policy: fifo 120 sjf 80; elapsed "}
	for i, w := range want {
		if !strings.HasPrefix(lines[i+1], w) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i+1], w)
		}
	}
}
