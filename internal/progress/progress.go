// Package progress draws a one-line status bar on a terminal for the
// CLI's long imports.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
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
