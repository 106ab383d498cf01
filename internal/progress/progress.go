// Package progress draws a one-line status bar on a terminal for the
// CLI's long imports.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bar redraws one status line every 200 ms until Stop.
type Bar struct {
	w     io.Writer
	label string
	done  chan struct{}
	ended chan struct{}
	start time.Time

	bytes atomic.Pointer[atomic.Int64]
	total atomic.Int64
	phase atomic.Value // string
	once  bool
}

// New starts a bar labelled label on w.
func New(w io.Writer, label string) *Bar {
	b := &Bar{w: w, label: label, done: make(chan struct{}), ended: make(chan struct{}), start: time.Now()}
	b.phase.Store("reading")
	go b.loop()
	return b
}

// Track shows n bytes of total read (total 0: no bar, only the count).
func (b *Bar) Track(n *atomic.Int64, total int64) { b.total.Store(total); b.bytes.Store(n) }

// Phase names the step under way, in words for the import's steps.
func (b *Bar) Phase(p string) {
	switch p {
	case "check":
		p = "checking"
	case "copy":
		p = "writing"
	case "merge":
		p = "merging into job"
	case "commit":
		p = "committing"
	}
	b.phase.Store(p)
}

func (b *Bar) loop() {
	defer close(b.ended)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			fmt.Fprint(b.w, "\r\033[K")
			return
		case <-t.C:
			fmt.Fprint(b.w, b.line(time.Now()))
		}
	}
}

// line is the bar as drawn at now.
func (b *Bar) line(now time.Time) string {
	phase, _ := b.phase.Load().(string)
	secs := now.Sub(b.start).Seconds()
	line := fmt.Sprintf("%s: %s", b.label, phase)
	if p := b.bytes.Load(); p != nil {
		n := p.Load()
		if total := b.total.Load(); total > 0 {
			frac := float64(n) / float64(total)
			if frac > 1 {
				frac = 1
			}
			const width = 30
			fill := int(frac * width)
			line = fmt.Sprintf("%s [%s%s] %3.0f%%", line, strings.Repeat("#", fill), strings.Repeat(".", width-fill), frac*100)
		}
		line += fmt.Sprintf(" %.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("\r\033[K%s %.0fs", line, secs)
}

// Stop erases the bar; safe to call twice.
func (b *Bar) Stop() {
	if b.once {
		return
	}
	b.once = true
	close(b.done)
	<-b.ended
}

// ETA spells the time a long run has taken and, once a little is done,
// how long it should still take at the same pace: "elapsed 12s, about 40s
// left". The CLI's progress lines end with it.
func ETA(started, now time.Time, done, total int) string {
	el := now.Sub(started)
	s := "elapsed " + el.Round(time.Second).String()
	if done <= 0 || total <= 0 || done >= total || el < time.Second {
		return s
	}
	left := time.Duration(float64(el) * float64(total-done) / float64(done))
	return fmt.Sprintf("%s, about %s left", s, left.Round(time.Second))
}

// IsTerminal reports whether f is a character device (a terminal), so
// that progress goes to people and not into logs.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Wanted reads a --progress setting: auto shows progress when f is a
// terminal, always and never say so.
func Wanted(mode string, f *os.File) (bool, error) {
	switch mode {
	case "auto":
		return IsTerminal(f), nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, fmt.Errorf("--progress %q: want auto, always or never", mode)
}

// Tally is one short status line for several runs done side by side,
// each out of the same total: "simulating kth: 40% of 9 policies × 2913
// jobs; elapsed 3s, about 9s left". It fits an 80-column terminal
// (MaxLine) and is redrawn at most every Redraw, however often Update is
// called: a line per run listing each run's count was 205 characters,
// redrawn every 100 jobs, and wrapped into thousands of lines. Its Update
// may be called from the runs' goroutines.
type Tally struct {
	mu      sync.Mutex
	w       io.Writer
	head    string // what is done: "simulating kth"
	runs    string // the runs, counted: "9 policies"
	unit    string // what each run goes through: "jobs"
	done    map[string]int
	started time.Time
	drawn   time.Time // last redraw; zero: never
	now     func() time.Time
}

// MaxLine is the longest status line drawn: one less than an 80-column
// terminal, so that the cursor never wraps.
const MaxLine = 79

// Redraw is the least time between two redraws of a Tally.
const Redraw = 250 * time.Millisecond

// NewTally starts a Tally at started of runs (counted, as "9 policies"),
// each going through total units (as "jobs").
func NewTally(w io.Writer, head, runs, unit string, started time.Time) *Tally {
	return &Tally{w: w, head: head, runs: runs, unit: unit, done: map[string]int{}, started: started, now: time.Now}
}

// Update records that run name has done done of total and redraws the
// line, unless it was drawn less than Redraw ago.
func (t *Tally) Update(name string, done, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done[name] = done
	now := t.now()
	if !t.drawn.IsZero() && now.Sub(t.drawn) < Redraw {
		return
	}
	t.drawn = now
	all := 0
	for _, d := range t.done {
		all += d
	}
	n := len(t.done)
	if n == 0 || total <= 0 {
		return
	}
	// The share of all runs' work done, counting runs not reported yet
	// as not started: runs is how many there are.
	runs := max(n, leadingInt(t.runs))
	pct := 100 * float64(all) / float64(runs*total)
	tail := fmt.Sprintf(": %.0f%% of %s × %d %s; %s", pct, t.runs, total, t.unit, ETA(t.started, now, all, runs*total))
	fmt.Fprint(t.w, "\r\033[K"+Fit(t.head, MaxLine-len([]rune(tail)))+tail)
}

// leadingInt is the number s starts with ("9 policies": 9), 0 if none.
func leadingInt(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = 10*n + int(r-'0')
	}
	return n
}

// Fit cuts s to at most n runes, ending in "…" when cut.
func Fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-1]) + "…"
}
