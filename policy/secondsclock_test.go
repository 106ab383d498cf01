package policy

import (
	"fmt"
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

// TestFairQSSF_GuardsAsFormula checks fair-qssf's two guards, whose ρ and
// starvation boost read each job's rate and time since submit once per
// ranking, against the formulas on the job, bit for bit: jobs eligible at
// submit and later (ρ counts from the submit, the wait from eligibility),
// jobs past the starvation bound and past the ρ bound, with and without a
// capacity.
func TestFairQSSF_GuardsAsFormula(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	for _, gpus := range []float64{64, 0} {
		t.Run(fmt.Sprint("gpus=", gpus), func(t *testing.T) {
			s := &Snapshot{Now: now, GPUs: gpus, Service: Service{CPUsPerGPU: 8}}
			for i := range 40 {
				j := Job{ID: int64(i + 1), User: fmt.Sprint("u", i%7), Account: fmt.Sprint("a", i%3),
					GPUs: 1 + i%5, CPUs: 4, TimeLimit: time.Duration(1+i%9) * 13 * time.Minute,
					Submit: now.Add(-time.Duration(i*i) * 97 * time.Minute)}
				if i%4 == 1 {
					j.Eligible = j.Submit.Add(time.Duration(i) * 11 * time.Minute)
				}
				if i%6 == 5 {
					j.GPUs = 0
				}
				s.Pending = append(s.Pending, j)
			}
			s.Running = []Job{{ID: 100, User: "u9", Account: "a0", GPUs: 8, Start: now.Add(-time.Hour), TimeLimit: 2 * time.Hour}}
			p, err := NewFairQSSF(FairQSSFParams{})
			if err != nil {
				t.Fatal(err)
			}
			scores, err := p.Rank(s)
			if err != nil {
				t.Fatal(err)
			}
			users := groupByAssoc(s.Pending).activeUsers(indexRunning(s))
			c := newSecondsClock(s.Now)
			byID := map[int64]*Job{}
			for i := range s.Pending {
				byID[s.Pending[i].ID] = &s.Pending[i]
			}
			minTag, top := math.Inf(1), 0.0
			for _, sc := range scores {
				j := byID[sc.JobID]
				run := predictedRun(s, j).Seconds()
				want := finishTimeFairness(s, &c, j, run, users, fairQSSFMinRun)
				if got := sc.Parts.Get("estimated_rho"); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("job %d: estimated_rho %v, want %v", j.ID, got, want)
				}
				minTag = min(minTag, sc.Parts.Get("vtc_tag"))
				top = max(top, want-DefaultRhoMax)
			}
			boosted, rhoed := 0, 0
			for _, sc := range scores {
				j := byID[sc.JobID]
				wait := c.since(waitingSince(j))
				rho := sc.Parts.Get("estimated_rho")
				want := 0.0
				switch {
				case wait > 24*3600:
					want = sc.Parts.Get("vtc_tag") - minTag + (top + wait/shareSlowdown(s, j, users))
					boosted++
				case rho > DefaultRhoMax:
					want = sc.Parts.Get("vtc_tag") - minTag + (rho - DefaultRhoMax)
					rhoed++
				}
				if got := sc.Parts.Get("starvation_boost"); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("job %d: starvation_boost %v, want %v", j.ID, got, want)
				}
			}
			if boosted == 0 || rhoed == 0 {
				t.Fatalf("%d jobs starved, %d past the ρ bound: the test checks too little", boosted, rhoed)
			}
		})
	}
}
