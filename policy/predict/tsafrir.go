package predict

import (
	"fmt"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// TsafrirParams configures the tsafrir predictor.
type TsafrirParams struct {
	// Window is how many of the user's most recent run times are averaged;
	// 0 means the published 2.
	Window int
}

// tsafrirPredictor is the predictor of Tsafrir, Etsion and Feitelson,
// "Backfilling using system-generated predictions rather than user runtime
// estimates", IEEE TPDS 18(6), 2007, §4: the mean run time of the user's two
// most recently finished jobs, never above the job's own estimate (its time
// limit); the estimate itself while the user has fewer than two.
//
// On traces with no time limits (Helios, Philly) the estimate does not exist;
// there a user with one finished job gets that job's run time, and a user
// with none the mean run time of every job observed so far (0 before any).
type tsafrirPredictor struct {
	window int
	last   map[string]*ring
	sum    float64 // over all observed jobs, for the no-limit fallback
	n      int
}

// NewTsafrirPredictor returns the "tsafrir" baseline.
func NewTsafrirPredictor(p TsafrirParams) (policy.Predictor, error) {
	if p.Window < 0 {
		return nil, fmt.Errorf("tsafrir: window %d: want >= 0", p.Window)
	}
	if p.Window == 0 {
		p.Window = 2
	}
	return &tsafrirPredictor{window: p.Window, last: map[string]*ring{}}, nil
}

func (t *tsafrirPredictor) Name() string { return "tsafrir" }

func (t *tsafrirPredictor) Observe(j *policy.Job) {
	r := t.last[j.User]
	if r == nil {
		r = newRing(t.window)
		t.last[j.User] = r
	}
	run := j.RunTime().Seconds()
	r.push(run)
	t.sum += run
	t.n++
}

func (t *tsafrirPredictor) Predict(j *policy.Job) policy.Prediction {
	r := t.last[j.User]
	switch {
	case r != nil && r.len() >= t.window:
		return policy.Prediction{Run: clampRun(j, secs(r.mean())), Source: "user-last-mean"}
	case j.TimeLimit > 0:
		return policy.Prediction{Run: j.TimeLimit, Source: "limit"}
	case r != nil && r.len() > 0:
		return policy.Prediction{Run: secs(r.mean()), Source: "user-last-mean"}
	case t.n > 0:
		return policy.Prediction{Run: secs(t.sum / float64(t.n)), Source: "global-mean"}
	}
	return policy.Prediction{Source: "none"}
}

// ring keeps the last cap values pushed, oldest first.
type ring struct {
	v    []float64
	next int
}

func newRing(n int) *ring { return &ring{v: make([]float64, 0, n)} }

func (r *ring) push(x float64) {
	if len(r.v) < cap(r.v) {
		r.v = append(r.v, x)
		return
	}
	r.v[r.next] = x
	r.next = (r.next + 1) % len(r.v)
}

func (r *ring) len() int { return len(r.v) }

func (r *ring) mean() float64 {
	s := 0.0
	for _, x := range r.v {
		s += x
	}
	return s / float64(len(r.v))
}

func (r *ring) max() float64 {
	m := r.v[0]
	for _, x := range r.v[1:] {
		m = max(m, x)
	}
	return m
}

// secs converts float seconds to a Duration, rounding to the second as the
// traces do.
func secs(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s*float64(time.Second) + 0.5).Round(time.Millisecond)
}
