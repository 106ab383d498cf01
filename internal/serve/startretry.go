package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fairway-hpc/fairway/slurmctl"
)

// StartRetry is how serve waits for slurmrestd at start: a failure that a
// running serve would ride out (slurmrestd down or restarting, slurmctld
// unreachable through it, a timeout, a 5xx) is retried with the loop's
// backoff, from Interval doubling up to MaxBackoff, and logged at each
// attempt; anything else (a bad token, a version neither side speaks, a
// bad URL) fails at once, since waiting would not change it. With no
// Interval (a one-shot command) nothing is retried.
type StartRetry struct {
	Interval, MaxBackoff time.Duration
	Log                  *slog.Logger
	// Sleep waits d or until ctx ends; nil: a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// startTransient says whether err is worth waiting out at start.
func startTransient(err error) bool {
	for _, e := range []error{slurmctl.ErrUnreachable, slurmctl.ErrTimeout, slurmctl.ErrServer} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Do runs fn until it succeeds, fails for good, or ctx ends. what names
// the step in the log ("connect to slurmrestd").
func (s StartRetry) Do(ctx context.Context, what string, fn func(context.Context) error) error {
	sleep := s.Sleep
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := time.Duration(0)
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			if attempt > 1 {
				log.Info("slurmrestd answers: starting", "step", what, "attempts", attempt)
			}
			return nil
		}
		if !startTransient(err) || ctx.Err() != nil || s.Interval <= 0 {
			return err
		}
		wait = min(max(2*wait, s.Interval), s.MaxBackoff)
		log.Error("cannot reach Slurm at start; retrying", "step", what, "attempt", attempt, "retry_in_seconds", wait.Seconds(), "err", err)
		if serr := sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%s: gave up waiting (%w): %w", what, serr, err)
		}
	}
}
