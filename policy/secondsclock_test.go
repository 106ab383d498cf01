package policy

import (
	"math"
	"testing"
	"time"
)

// TestSecondsClock_MatchesSub checks since against now.Sub(t).Seconds(),
// bit for bit, where its shortcut applies and where it must hand over to
// Sub: the zero time, differences near and past 2³³ seconds, negative
// differences with nanoseconds on either side, and a now with a
// monotonic reading.
func TestSecondsClock_MatchesSub(t *testing.T) {
	base := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	nows := []time.Time{
		base,
		base.In(time.FixedZone("x", 3600)),
		time.Unix(0, 0),
		time.Unix(-5, 999999999),
		time.Now(), // monotonic
		{},
	}
	var ts []time.Time
	for _, d := range []time.Duration{0, 1, -1, time.Second - 1, -time.Second + 1, 90 * time.Minute, -90 * time.Minute,
		(1<<33 - 1) * time.Second, (1 << 33) * time.Second, -(1<<33 - 1) * time.Second, -(1 << 33) * time.Second,
		math.MaxInt64, math.MinInt64} {
		ts = append(ts, base.Add(d), base.Add(-d).Add(777), time.Unix(0, 0).Add(d))
	}
	ts = append(ts, time.Time{}, time.Unix(1<<40, 5), time.Unix(-1<<40, 5), time.Now().Add(-time.Hour))
	for _, now := range nows {
		c := newSecondsClock(now)
		for _, u := range ts {
			want, got := now.Sub(u).Seconds(), c.since(u)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("since(%v) from %v = %v, want now.Sub(t).Seconds() = %v", u, now, got, want)
			}
		}
	}
}

// TestSecondsClock_Waited checks the clock's waited against waited, which
// reads eligible before submit.
func TestSecondsClock_Waited(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 5, time.UTC)
	s := &Snapshot{Now: now}
	c := newSecondsClock(now)
	for _, j := range []Job{
		{Submit: now.Add(-time.Hour)},
		{Submit: now.Add(-time.Hour), Eligible: now.Add(-time.Minute - 3)},
		{Submit: now.Add(time.Hour)},
		{},
	} {
		if got, want := c.waited(&j), waited(s, &j); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("waited(submit %v, eligible %v) = %v, want %v", j.Submit, j.Eligible, got, want)
		}
	}
}

// TestFinishTimeFairness_MatchesSub checks fair-qssf's ρ, which reads
// Now − Submit through the clock, against the formula with Snapshot.Now's
// Sub, bit for bit: jobs submitted before and after Now, the zero submit
// time, a Now with a monotonic reading, with and without a capacity.
func TestFinishTimeFairness_MatchesSub(t *testing.T) {
	base := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		gpus float64
	}{{"wall", base, 64}, {"monotonic", time.Now(), 64}, {"no-capacity", base, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Now: tc.now, GPUs: tc.gpus}
			c := newSecondsClock(s.Now)
			for _, j := range []Job{
				{GPUs: 1, Submit: tc.now.Add(-90*time.Minute - 7)},
				{GPUs: 32, Submit: tc.now.Add(-time.Second + 1)},
				{GPUs: 4, Submit: tc.now.Add(time.Hour)},
				{GPUs: 2},
			} {
				for _, run := range []float64{0, 3.5, 7200} {
					tid := max(run*shareSlowdown(s, &j, 9), 10)
					want := (s.Now.Sub(j.Submit).Seconds() + run) / tid
					if got := finishTimeFairness(s, &c, &j, run, 9, 10); math.Float64bits(got) != math.Float64bits(want) {
						t.Errorf("job of %d GPUs submitted %v, run %v s: ρ %v, want %v", j.GPUs, j.Submit, run, got, want)
					}
				}
			}
		})
	}
}
