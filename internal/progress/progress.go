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

// Tally is one status line for several runs done side by side, each out
// of the same total: "simulating kth, jobs replayed of 2913 per policy:
// fifo 120 sjf 80; elapsed 3s, about 9s left". Its Update may be called
// from the runs' goroutines.
type Tally struct {
	mu      sync.Mutex
	w       io.Writer
	head    string // what is done, and of what: "simulating kth, jobs replayed"
	per     string // what each run is: "per policy"
	names   []string
	done    map[string]int
	started time.Time
}

// NewTally starts a Tally of the runs names at started.
func NewTally(w io.Writer, head, per string, names []string, started time.Time) *Tally {
	return &Tally{w: w, head: head, per: per, names: names, done: map[string]int{}, started: started}
}

// Update records that run name has done done of total and redraws the
// line.
func (t *Tally) Update(name string, done, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done[name] = done
	var b strings.Builder
	all := 0
	for _, n := range t.names {
		fmt.Fprintf(&b, " %s %d", n, t.done[n])
		all += t.done[n]
	}
	fmt.Fprintf(t.w, "\r\033[K%s of %d %s:%s; %s", t.head, total, t.per, b.String(), ETA(t.started, time.Now(), all, total*len(t.names)))
}
