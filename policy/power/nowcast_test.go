package power

import (
	"testing"
	"time"
)

// TestNowcast_Observe: the nowcast fires only on a rise that has lacked
// for After steps and still rises, wanting the demand plus ceil(gain ×
// its rise over the window); skipped steps repeat the last observation.
func TestNowcast_Observe(t *testing.T) {
	type obs struct {
		idx          int64
		demand, lack int
	}
	nc := Nowcast{Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute, Gain: 0.5}
	for _, tc := range []struct {
		name string
		obs  []obs
		want Ramp
		ok   bool
	}{
		{"a rise lacking two steps", []obs{{0, 10, 0}, {1, 14, 2}, {2, 18, 3}}, Ramp{Want: 22, Demand: 18, Low: 10, Lacking: 2, Gain: 0.5}, true},
		{"one lacking step is a jump", []obs{{0, 10, 0}, {1, 10, 0}, {2, 18, 3}}, Ramp{}, false},
		{"lacking but flat", []obs{{0, 10, 0}, {1, 14, 2}, {2, 14, 3}}, Ramp{}, false},
		{"no lack now", []obs{{0, 10, 0}, {1, 14, 2}, {2, 18, 0}}, Ramp{}, false},
		{"too little history", []obs{{0, 14, 2}, {1, 18, 3}}, Ramp{}, false},
		{"window reads only its steps", []obs{{0, 2, 0}, {1, 16, 1}, {2, 17, 1}, {3, 18, 1}}, Ramp{Want: 19, Demand: 18, Low: 16, Lacking: 3, Gain: 0.5}, true},
		// Step 1 is skipped: it repeats step 0 (10, lacking), so step 2
		// has lacked two steps and rose over the window.
		{"a skipped step repeats the last", []obs{{-1, 8, 0}, {0, 10, 1}, {2, 14, 2}}, Ramp{Want: 16, Demand: 14, Low: 10, Lacking: 3, Gain: 0.5}, true},
		{"an old step is ignored", []obs{{0, 10, 0}, {1, 14, 2}, {2, 18, 3}, {2, 30, 9}}, Ramp{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nc.Start(time.Minute)
			var got Ramp
			var ok bool
			for _, o := range tc.obs {
				got, ok = s.Observe(o.idx, o.demand, o.lack)
			}
			if ok != tc.ok || got != tc.want {
				t.Errorf("Observe = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if s := (Nowcast{Window: time.Minute}).Start(time.Minute); s != nil {
		t.Errorf("gain 0 started a nowcast: %+v", s)
	}
	if err := (Nowcast{Gain: -1}).Validate(); err == nil {
		t.Error("Validate accepted a negative gain")
	}
}
