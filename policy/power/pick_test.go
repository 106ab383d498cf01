package power

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// days builds a validation row from its per-day node-steps off and lack.
func days(name string, buffer int, off, lack []int) RuleRow {
	r := RuleRow{Metrics: Metrics{Rule: name}, Kind: "predictive", Buffer: buffer}
	for i := range off {
		r.parts = append(r.parts, partSum{off: off[i], lack: lack[i]})
		r.NodeHoursOff += float64(off[i]) / 60
		r.LackNodeMinutes += float64(lack[i])
	}
	return r
}

func TestPickRows_Criteria(t *testing.T) {
	idle := days("idle-time 30m", 0, []int{600, 600, 600, 600}, []int{100, 100, 100, 100})
	idle.Kind, idle.Suspend = "idle-time", 30*time.Minute
	hybrid := func(idleAfter time.Duration, early bool) Setting {
		st := Setting{Hybrid: true, Lookahead: 10, NoAhead: true, Anchored: true}
		if early {
			st.EarlyFrac, st.EarlyK = 1.0/3, 4
		}
		return st
	}
	// burst wins by the most margin in all, but on one bursty day: it
	// lacks more than the idle-time rule in the first half.
	burst := candidate{hybrid(25*time.Minute, true), days("burst", 3, []int{700, 700, 700, 700}, []int{150, 100, 0, 20})}
	burst.row.IdleAfter = 25 * time.Minute
	// steady wins a little every day.
	steady := candidate{hybrid(28*time.Minute, false), days("steady", 0, []int{610, 610, 610, 610}, []int{90, 90, 90, 90})}
	steady.row.IdleAfter = 28 * time.Minute
	// early wins every day by more than steady, with the early power-down.
	early := candidate{hybrid(20*time.Minute, true), days("early", 2, []int{640, 640, 640, 640}, []int{80, 85, 80, 85})}
	early.row.IdleAfter = 20 * time.Minute
	// loser lacks less but keeps fewer node-hours off: never admitted.
	loser := candidate{hybrid(30*time.Minute, false), days("loser", 10, []int{500, 500, 500, 500}, []int{0, 0, 0, 0})}
	loser.row.IdleAfter = 30 * time.Minute
	all := []candidate{burst, steady, early, loser}
	for _, tc := range []struct {
		c    PickCriterion
		want string
	}{
		{PickMargin, "burst"},         // margin min(+16.7 %, +32.5 %)
		{PickHalves, "early"},         // burst lacks more in the first half
		{PickThirds, "early"},         // likewise
		{PickWorstHalf, "early"},      // early's worse half beats steady's
		{PickNoise, "early"},          // burst's daily cuts −50, 0, 100, 80: t 0.93 < 1
		{PickNoiseMax, "steady"},      // steady cuts the same every day: +Inf
		{PickNearest, "steady"},       // no early power-down, idle time 2m from SuspendTime
		{PickHalvesNoEarly, "steady"}, // the only admitted row without the early power-down
		{PickNoiseBoth, "early"},      // burst's lack cut is noise; early's and steady's are not
		{PickNoiseMin, "steady"},      // the same gain and cut every day (+Inf both ways); early's cut is 12 standard errors
		{PickNoise2, "early"},         // early's cut is 12 standard errors, burst's under 1
		{PickRecent, "burst"},         // burst wins the later half by the most: 1400 vs 1200 off, lack 20 vs 200
		{PickEarlyHalves, "early"},    // burst has the early power-down and loses the first half
		{PickMaxCut, "burst"},         // burst cuts lack by 32.5 %, early by 17.5 %
		{PickBootstrap, "early"},      // early and steady dominate on every resample; burst not
		{PickRobust, "early"},         // worse halves: burst −25 % (lack), steady +1.7 %, early +6.7 %
		{PickRobust3, "early"},        // worst thirds: steady +1.7 %, early +6.7 %
		{PickRobustDays, "early"},     // worst day, in idle-time mean days (600 off, 100 lack): burst −0.5, steady +0.017, early +0.067
		{PickDaysOrMargin, "early"},   // robust-days admits rows: its pick
	} {
		t.Run(string(tc.c), func(t *testing.T) {
			got := pickRows(tc.c, all, []RuleRow{idle})
			if len(got) != 1 || got[0].Valid.Rule != tc.want {
				t.Fatalf("picked %+v, want %s", got, tc.want)
			}
			if got[0].Idle != idle.Rule || got[0].ValidCut <= 0 || got[0].ValidGain < 0 {
				t.Errorf("pick %+v: want it named for %s with a positive cut and no loss of node-hours", got[0], idle.Rule)
			}
		})
	}
	// Robust asks for slack on the whole span: a row that dominates by a
	// hair (node-hours off +0.04 %, lack −1 %) is margin's pick, not robust's.
	hair := candidate{hybrid(29*time.Minute, false), days("hair", 0, []int{600, 600, 601, 600}, []int{99, 99, 99, 99})}
	for _, tc := range []struct {
		c    PickCriterion
		want string
	}{{PickMargin, "hair"}, {PickRobust, ""}, {PickRobust3, ""}, {PickRobustDays, ""}, {PickDaysOrMargin, "hair"}} {
		if got := pickRows(tc.c, []candidate{hair, loser}, []RuleRow{idle}); got[0].Valid.Rule != tc.want {
			t.Errorf("%s with hair and loser picked %q, want %q", tc.c, got[0].Valid.Rule, tc.want)
		}
	}
	// A criterion that admits nothing leaves the pick empty, named.
	got := pickRows(PickHalves, []candidate{burst, loser}, []RuleRow{idle})
	if got[0].Valid.Rule != "" || got[0].Idle != idle.Rule {
		t.Errorf("halves with only burst and loser picked %+v, want none for %s", got[0], idle.Rule)
	}
}

func TestLackCutT(t *testing.T) {
	idle := days("idle", 0, []int{1, 1, 1, 1}, []int{10, 10, 10, 10})
	for _, tc := range []struct {
		name string
		lack []int
		want float64
	}{
		{"the same cut every day", []int{5, 5, 5, 5}, math.Inf(1)},
		{"no cut", []int{10, 10, 10, 10}, math.Inf(-1)},
		// cuts 8, 0, 0, 0: mean 2, sd 4, se 2.
		{"one day's cut", []int{2, 10, 10, 10}, 1},
		// cuts 4, 4, 2, 2: mean 3, sd 1.1547, se 0.57735.
		{"every day", []int{6, 6, 8, 8}, 3 / (math.Sqrt(4.0/3) / 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lackCutT(days("p", 0, []int{1, 1, 1, 1}, tc.lack), idle)
			if math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Errorf("t = %v, want %v", got, tc.want)
			}
		})
	}
	if got := lackCutT(days("p", 0, []int{1}, []int{0}), idle); !math.IsInf(got, -1) {
		t.Errorf("parts of different lengths: t = %v, want -Inf", got)
	}
}

func TestFoldsDominate(t *testing.T) {
	idle := days("idle", 0, []int{10, 10, 10, 10, 10, 10}, []int{5, 0, 5, 0, 5, 0})
	for _, tc := range []struct {
		name      string
		off, lack []int
		k         int
		want      bool
	}{
		{"every fold", []int{10, 11, 10, 10, 10, 10}, []int{4, 0, 5, 0, 5, 0}, 3, true},
		// thirds: days 0-1, 2-3, 4-5. More lack in the last third.
		{"one third lacks more", []int{11, 11, 11, 11, 11, 11}, []int{0, 0, 0, 0, 6, 0}, 3, false},
		// halves: days 0-2, 3-5: 5 + 0 + 5 = 10 ≥ 6, 0 + 0 + 6 = 6 > 5.
		{"one half lacks more", []int{11, 11, 11, 11, 11, 11}, []int{6, 0, 0, 0, 6, 0}, 2, false},
		{"fewer node-hours off in a fold", []int{12, 12, 12, 12, 8, 8}, []int{0, 0, 0, 0, 0, 0}, 3, false},
		{"a fold with no lack either side", []int{10, 10, 10, 10, 10, 10}, []int{5, 0, 5, 0, 4, 0}, 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := foldsDominate(days("p", 0, tc.off, tc.lack), idle, tc.k); got != tc.want {
				t.Errorf("foldsDominate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParsePickCriterion(t *testing.T) {
	for _, c := range PickCriteria() {
		if got, err := ParsePickCriterion(" " + string(c)); err != nil || got != c {
			t.Errorf("ParsePickCriterion(%q) = %q, %v", c, got, err)
		}
	}
	if _, err := ParsePickCriterion("best"); err == nil || !strings.Contains(err.Error(), `"best"`) || !strings.Contains(err.Error(), "halves") {
		t.Errorf("ParsePickCriterion(best) error %v: want it to name the value and the criteria", err)
	}
}

func TestBootstrapShare(t *testing.T) {
	if a, b := resampleDays(7), resampleDays(7); len(a) != bootstrapSamples || !slices.EqualFunc(a, b, slices.Equal[[]int]) {
		t.Fatalf("resampleDays draws %d sets, differently on each call: want %d, the same", len(a), bootstrapSamples)
	}
	idle := days("idle", 0, []int{10, 10, 10, 10}, []int{5, 5, 5, 5})
	draws := resampleDays(4)
	for _, tc := range []struct {
		name      string
		off, lack []int
		lo, hi    float64
	}{
		{"every day", []int{10, 10, 10, 10}, []int{4, 4, 4, 4}, 1, 1},
		{"never", []int{9, 9, 9, 9}, []int{0, 0, 0, 0}, 0, 0},
		// lack differences +5, −3, −3, −3: a resample with two or more of
		// the first day loses (0.75^4 + 4·0.25·0.75^3 ≈ 0.74 do not).
		{"one bad day", []int{10, 10, 10, 10}, []int{10, 2, 2, 2}, 0.65, 0.83},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bootstrapShare(days("p", 0, tc.off, tc.lack), idle, draws); got < tc.lo || got > tc.hi {
				t.Errorf("share %.3f, want in [%.2f, %.2f]", got, tc.lo, tc.hi)
			}
		})
	}
}
