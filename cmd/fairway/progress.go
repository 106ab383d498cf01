package main

import (
	"fmt"
	"time"
)

// eta spells the time a long run has taken and, once a little is done,
// how long it should still take at the same pace: "elapsed 12s, about 40s
// left". Progress lines of simulate, predict eval and report end with it.
func eta(started, now time.Time, done, total int) string {
	el := now.Sub(started)
	s := "elapsed " + el.Round(time.Second).String()
	if done <= 0 || total <= 0 || done >= total || el < time.Second {
		return s
	}
	left := time.Duration(float64(el) * float64(total-done) / float64(done))
	return fmt.Sprintf("%s, about %s left", s, left.Round(time.Second))
}
