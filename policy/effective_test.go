package policy

import (
	"math"
	"testing"
	"time"
)

func TestEffectiveRun(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	tests := []struct {
		name string
		runs []float64
		want time.Duration
	}{
		{"no runs", nil, 0},
		{"one run: itself", []float64{3600}, time.Hour},
		{"the same run again: itself", []float64{600, 600, 600}, 10 * time.Minute},
		{"a run under τ counts as τ", []float64{3}, 10 * time.Second},
		{"a negative run counts as 0", []float64{-5}, 10 * time.Second},
		// E[p] = 1805, E[1/max(p,τ)] = (1/3600 + 1/10)/2: √(1805/0.0501389)
		{"an hour or a failure at once", []float64{3600, 10}, s(math.Sqrt(1805 / ((1.0/3600 + 0.1) / 2)))},
		// Converted as they are, both came out negative.
		{"runs beyond a Duration: the largest", []float64{1e12, 1e12}, time.Duration(math.MaxInt64)},
		{"a NaN run: nothing to go on", []float64{3600, math.NaN()}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EffectiveRun(tt.runs)
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("EffectiveRun(%v) = %v, want %v", tt.runs, got, tt.want)
			}
		})
	}
	// A job that fails at once one time in four ranks before one sure to
	// run a third of its long runs: the exchange argument's order.
	risky := EffectiveRun([]float64{10, 7200, 7200, 7200})
	if sure := EffectiveRun([]float64{2400}); risky >= sure {
		t.Errorf("EffectiveRun(1 in 4 fails at once, else 2h) = %v, not below a sure 40 min (%v)", risky, sure)
	}
}
