package power

import (
	"strings"
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
		// serve's steps are its wall clock's minutes: after the clock
		// steps back an hour, time still went on, and the nowcast
		// follows demand from the step after the last one.
		{"after the clock stepped back, the next step", []obs{{0, 10, 0}, {1, 14, 2}, {-59, 18, 3}}, Ramp{Want: 22, Demand: 18, Low: 10, Lacking: 2, Gain: 0.5}, true},
		{"after the clock stepped back, the steps go on", []obs{{0, 10, 0}, {1, 14, 0}, {-59, 14, 2}, {-59, 40, 9}, {-58, 18, 3}}, Ramp{Want: 20, Demand: 18, Low: 14, Lacking: 2, Gain: 0.5}, true},
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

func TestParseNowcast(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Nowcast
		err  string
	}{
		{"off", Nowcast{}, ""},
		{"", Nowcast{}, ""},
		{"gain=0.5,window=2m,after=2m,expire=5m", Nowcast{Gain: 0.5, Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute}, ""},
		{"window=5m, gain=1", Nowcast{Gain: 1, Window: 5 * time.Minute, After: time.Minute}, ""},
		{"gain=1", Nowcast{}, "want at least gain=G and window=D"},
		{"gain=1,window=2m,speed=3", Nowcast{}, `unknown key "speed"`},
		{"gain=1,window=soon", Nowcast{}, "window: time: invalid duration"},
		{"gain=0,window=2m", Nowcast{}, "must be positive"},
		{"gain=1,window=2m,expire=-1m", Nowcast{}, "want 0 or more"},
		{"gain", Nowcast{}, `"gain" is not key=value`},
	} {
		got, err := ParseNowcast(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseNowcast(%q) = %+v, %v; want %+v, error containing %q", tc.in, got, err, tc.want, tc.err)
		}
		if tc.err == "" && got.On() {
			if back, err := ParseNowcast(got.Spec()); err != nil || back != got {
				t.Errorf("ParseNowcast(%q.Spec() = %q) = %+v, %v", tc.in, got.Spec(), back, err)
			}
		}
	}
}
