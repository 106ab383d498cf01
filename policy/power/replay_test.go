package power

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// minuteSeries is demand a minute a step on a cluster of total nodes.
func minuteSeries(total int, active ...int) *Series {
	s := &Series{Start: time.Date(2017, 12, 1, 0, 0, 0, 0, time.UTC), Step: time.Minute, Active: active}
	for range active {
		s.Total = append(s.Total, total)
	}
	return s
}

// coarsen is s's maxima over k steps, as Resample makes them.
func coarsen(s *Series, k int) *Series {
	out := &Series{Start: s.Start, Step: time.Duration(k) * s.Step}
	for i := 0; i+k <= s.Len(); i += k {
		out.Active = append(out.Active, slicesMax(s.Active[i:i+k]))
		out.Total = append(out.Total, slicesMax(s.Total[i:i+k]))
	}
	return out
}

func slicesMax(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func onAndLack(steps []Step) (on, lack []int) {
	for _, x := range steps {
		on = append(on, x.Powered)
		lack = append(lack, x.Lack)
	}
	return on, lack
}

// scripted is a Rule that plans what it is told, step by step.
type scripted []int

func (scripted) Name() string              { return "scripted" }
func (scripted) Reset(*Series)             {}
func (p scripted) Powered(i, prev int) int { return p[i] }

func TestReplayIdleTime_HandChecked(t *testing.T) {
	for _, tc := range []struct {
		name             string
		suspend, resume  time.Duration
		total            int
		active           []int
		wantOn, wantLack []int
	}{
		// The 2 nodes never used are off after their third idle minute
		// (minute 2); the 2 freed at minute 3 after minute 5. The rise to 3
		// at minute 7 finds nothing usable: 3 resume, usable 2 minutes
		// later, so minutes 7 and 8 lack 3 each.
		{"each node's own idle clock, resume delay", 3 * time.Minute, 2 * time.Minute, 4,
			[]int{0, 2, 2, 0, 0, 0, 0, 3, 3, 3, 1},
			[]int{4, 4, 4, 2, 2, 2, 0, 3, 3, 3, 3}, []int{0, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0}},
		// A rise takes the most recently idled node: the one freed at minute
		// 2 serves minute 3, the 2 idle since minute 0 go off after minute
		// 2, the other one freed at minute 2 after minute 4.
		{"last idled is first taken", 3 * time.Minute, time.Minute, 4,
			[]int{0, 2, 0, 1, 1, 1},
			[]int{4, 4, 4, 2, 2, 1}, []int{0, 0, 0, 0, 0, 0}},
		// A resume already under way covers a later rise's lack only up to
		// its own nodes: minute 1 resumes 1 (usable at 4), minute 2 one more
		// (usable at 5).
		{"resuming nodes count against the lack", time.Minute, 3 * time.Minute, 4,
			[]int{0, 1, 2, 2, 2, 2},
			[]int{4, 1, 2, 2, 2, 2}, []int{0, 1, 2, 2, 1, 0}},
		// ResumeTimeout 60 s: the minute that asks is short, the next is not.
		{"resume of a minute", time.Minute, time.Minute, 2,
			[]int{0, 1, 1},
			[]int{2, 1, 1}, []int{0, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []Step
			m := replayIdleTime(tc.suspend, minuteSeries(tc.total, tc.active...), tc.resume, &steps, nil)
			on, lack := onAndLack(steps)
			if diff := cmp.Diff(tc.wantOn, on); diff != "" {
				t.Errorf("powered (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLack, lack); diff != "" {
				t.Errorf("lack (-want +got)\n%s", diff)
			}
			if want := Summarise(m.Rule, steps, time.Minute); m != want {
				t.Errorf("metrics %+v, want the trace's %+v", m, want)
			}
		})
	}
}

func TestReplayRule_HandChecked(t *testing.T) {
	// Decisions every 2 minutes on 6 nodes, resume 1 minute. After step 0
	// the plan is 3: 3 idle nodes off. After step 1, 2: one more. Minute 4
	// wants 4 with 2 usable: 2 resume at once, usable at minute 5. Step
	// 2's maximum 4 raises the script's 2 to 4: nothing changes. After
	// step 3 the plan is 2 again (after the last minute, not recorded).
	demand := minuteSeries(6, 1, 2, 2, 2, 4, 1, 1, 1)
	var steps []Step
	m, err := replayRule(scripted{3, 2, 2, 2}, coarsen(demand, 2), demand, time.Minute, &steps, nil)
	if err != nil {
		t.Fatal(err)
	}
	on, lack := onAndLack(steps)
	if diff := cmp.Diff([]int{6, 6, 3, 3, 4, 4, 4, 4}, on); diff != "" {
		t.Errorf("powered (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 0, 2, 0, 0, 0}, lack); diff != "" {
		t.Errorf("lack (-want +got)\n%s", diff)
	}
	if m.LackNodeMinutes != 2 || m.LackEvents != 1 {
		t.Errorf("lack %v node-min in %d events, want 2 in 1", m.LackNodeMinutes, m.LackEvents)
	}

	// A plan raised ahead of the rise: resumed at the end of step 1,
	// powered from minute 4, usable from minute 6 (resume 2 minutes), so
	// the rise at minute 6 finds them.
	demand = minuteSeries(6, 1, 1, 1, 1, 1, 1, 3, 3)
	steps = nil
	if _, err := replayRule(scripted{1, 3, 3, 3}, coarsen(demand, 2), demand, 2*time.Minute, &steps, nil); err != nil {
		t.Fatal(err)
	}
	on, lack = onAndLack(steps)
	if diff := cmp.Diff([]int{6, 6, 1, 1, 3, 3, 3, 3}, on); diff != "" {
		t.Errorf("planned: powered (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 0, 0, 0, 0, 0}, lack); diff != "" {
		t.Errorf("planned: lack (-want +got)\n%s", diff)
	}
}

// TestReplay_LackSameForEveryRule: both rules meet a rise of 3 with
// nothing powered and are charged the same 3 nodes × the 5-minute resume.
func TestReplay_LackSameForEveryRule(t *testing.T) {
	active := make([]int, 40)
	for m := 20; m < 30; m++ {
		active[m] = 3
	}
	demand := minuteSeries(10, active...)
	idle := ReplayIdleTime(10*time.Minute, demand, 5*time.Minute)
	pred, err := ReplayRule(&Envelope{Buffer: 0}, coarsen(demand, 10), demand, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Metrics{idle, pred} {
		if m.LackNodeMinutes != 15 || m.LackEvents != 1 {
			t.Errorf("%s: lack %v node-min in %d events, want 15 in 1", m.Rule, m.LackNodeMinutes, m.LackEvents)
		}
	}
}

// TestReplayIdleTime_FinerThanTheStep: demand that peaks for one minute
// in every ten keeps the nodes of the peak busy under SuspendTime 10m, so
// the idle-time rule keeps fewer node-hours off than powering the demand
// of each minute would: on 10-minute maxima it powered exactly the
// demand, the most any rule can keep off.
func TestReplayIdleTime_FinerThanTheStep(t *testing.T) {
	var active []int
	for range 30 {
		active = append(active, 8, 2, 2, 2, 2, 2, 2, 2, 2, 2)
	}
	demand := minuteSeries(10, active...)
	m := ReplayIdleTime(10*time.Minute, demand, 5*time.Minute)
	var bound float64
	for _, a := range active {
		bound += float64(10-a) / 60
	}
	if m.NodeHoursOff >= bound-1 || m.LackNodeMinutes != 0 {
		t.Errorf("idle-time 10m: %.2f node-hours off, %.0f lack node-min; want well below the demand's %.2f and no lack", m.NodeHoursOff, m.LackNodeMinutes, bound)
	}
}

func TestReplayRule_Errors(t *testing.T) {
	demand := minuteSeries(4, 1, 1, 1, 1)
	late := coarsen(demand, 2)
	late.Start = late.Start.Add(time.Minute)
	odd := coarsen(demand, 2)
	odd.Step = 90 * time.Second
	long := coarsen(minuteSeries(4, 1, 1, 1, 1, 1, 1), 2)
	for _, tc := range []struct {
		name   string
		decide *Series
		want   string
	}{
		{"not aligned", late, "decisions start at"},
		{"not a whole number of steps", odd, "not a whole number"},
		{"demand too short", long, "4 demand steps, want 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReplayRule(scripted{1, 1, 1}, tc.decide, demand, time.Minute)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestFleet_Resize: nodes added come up idle; nodes removed leave the off
// ones first, then idle, resuming and busy ones; the books stay within
// the cluster.
func TestFleet_Resize(t *testing.T) {
	var steps []Step
	demand := &Series{Start: time.Date(2017, 12, 1, 0, 0, 0, 0, time.UTC), Step: time.Minute,
		Active: []int{2, 2, 2, 5, 3, 1}, Total: []int{4, 4, 8, 8, 3, 3}}
	replayIdleTime(time.Minute, demand, 3*time.Minute, &steps, nil)
	// 0: 2 busy, 2 idle, off after the minute. 2: 4 nodes join idle (6
	// powered), off after the minute. 3: 5 wanted, 2 usable: 3 resume (5
	// powered). 4: the cluster shrinks to 3: its 3 off nodes go, then 2
	// of the 3 resuming; 3 wanted, 2 usable, the one resuming covers the
	// lack of 1. 5: demand falls to 1: 1 busy, 1 idle, 1 resuming.
	on, lack := onAndLack(steps)
	if diff := cmp.Diff([]int{4, 2, 6, 5, 3, 3}, on); diff != "" {
		t.Errorf("powered (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 0, 0, 3, 1, 0}, lack); diff != "" {
		t.Errorf("lack (-want +got)\n%s", diff)
	}
	for i, x := range steps {
		if x.Powered > x.Total || x.Powered < 0 {
			t.Errorf("minute %d: %d powered of %d", i, x.Powered, x.Total)
		}
	}
}

// stepForecast is a forecast that wants v nodes in decision step at and
// none in any other: the forecast issued at step i, lead h, is for step
// i+h.
func stepForecast(at, v, n int) func(int) []float64 {
	return func(i int) []float64 {
		out := make([]float64, n)
		if h := at - i; h >= 1 && h <= n {
			out[h-1] = float64(v)
		}
		return out
	}
}

func TestReplayHybrid_HandChecked(t *testing.T) {
	// Decisions every 5 minutes on 5 nodes, resume 2 minutes, idle time 1
	// minute. Demand 5 in minutes 0–4 and 10–14, none between; the
	// forecast wants 5 nodes in step 2 (minutes 10–14) and is first issued
	// at the end of minute 4.
	demand := minuteSeries(5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5)
	for _, tc := range []struct {
		name             string
		h                Hybrid
		want             int // the forecast for step 2
		wantOn, wantLack []int
	}{
		// Slurm's rule alone (no forecast wants anything): the 5 idle nodes
		// go off after minute 5; minute 10 finds none and waits 2 minutes.
		{"idle time alone", Hybrid{Lookahead: 10 * time.Minute}, 0,
			[]int{5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 5, 5, 5, 5, 5}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 5, 0, 0, 0}},
		// The forecast over the next 10 minutes wants 5: nothing goes off.
		{"the forecast holds idle nodes", Hybrid{Lookahead: 10 * time.Minute, NoAhead: true}, 5,
			[]int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, make([]int, 15)},
		// Off after minute 5 as Slurm's; at the end of minute 7 a node
		// resumed is usable at minute 10, inside step 2: 5 resume then.
		{"resumed ahead of the rise", Hybrid{}, 5,
			[]int{5, 5, 5, 5, 5, 5, 0, 0, 5, 5, 5, 5, 5, 5, 5}, make([]int, 15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			h.IdleAfter, h.Forecast = time.Minute, stepForecast(2, tc.want, 4)
			checkHybrid(t, &h, demand, tc.wantOn, tc.wantLack)
		})
	}
}

// TestReplayHybrid_NothingForecastIsIdleTime: with a forecast that wants
// no node and no buffer, the hybrid at idle time T is Slurm's rule at
// SuspendTime T, minute for minute.
func TestReplayHybrid_NothingForecastIsIdleTime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 20 {
		active := make([]int, 300)
		for i := range active {
			active[i] = r.IntN(13)
		}
		demand := minuteSeries(12, active...)
		for _, T := range []time.Duration{time.Minute, 3 * time.Minute, 10 * time.Minute} {
			var idle, hyb []Step
			replayIdleTime(T, demand, 2*time.Minute, &idle, nil)
			h := &Hybrid{IdleAfter: T, Lookahead: 20 * time.Minute, Forecast: stepForecast(-1, 0, 5)}
			if _, err := replayHybrid(h, coarsen(demand, 10), demand, 2*time.Minute, &hyb, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(idle, hyb); diff != "" {
				t.Fatalf("trial %d, T %v: (-idle-time +hybrid)\n%s", trial, T, diff)
			}
		}
	}
}

// TestReplayHybrid_NeverReadsTheFuture: deciding every minute, the hybrid
// reads only the demand up to the minute and the forecasts issued by then
// (at the end of each 10-minute step): changing every later minute and
// every later forecast leaves its trace up to the minute unchanged.
func TestReplayHybrid_NeverReadsTheFuture(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const minutes, k, horizon = 200, 10, 6
	active := make([]int, minutes)
	for i := range active {
		active[i] = r.IntN(21)
	}
	fc := make([][]float64, minutes/k)
	for i := range fc {
		fc[i] = make([]float64, horizon)
		for h := range fc[i] {
			fc[i][h] = r.Float64() * 20
		}
	}
	run := func(active []int, fc [][]float64, mode string) []Step {
		var steps []Step
		h := &Hybrid{IdleAfter: 2 * time.Minute, Lookahead: 15 * time.Minute, Buffer: 1, Margin: []float64{0.5, 1},
			Forecast: func(i int) []float64 { return fc[i] }}
		switch mode {
		case "early": // the early test reads until the idle clock, and a resume
			h.IdleAfter, h.EarlyAfter, h.EarlyMargin = 20*time.Minute, 5*time.Minute, []float64{1, 2}
		case "ramp": // the trend nowcast reads the demand of the last minutes
			h.IdleAfter, h.RampWindow, h.RampGain, h.RampExpire, h.RampAfter = 20*time.Minute, 3*time.Minute, 0.5, 2*time.Minute, 2*time.Minute
		}
		demand := minuteSeries(30, active...)
		if _, err := replayHybrid(h, coarsen(demand, k), demand, 3*time.Minute, &steps, nil); err != nil {
			t.Fatal(err)
		}
		return steps
	}
	for _, mode := range []string{"", "early", "ramp"} {
		before := run(active, fc, mode)
		for _, m := range []int{0, 9, 10, 57, 99, 150, 198} {
			a := append([]int(nil), active...)
			for j := m + 1; j < minutes; j++ {
				a[j] = 30 - a[j]
			}
			f := make([][]float64, len(fc))
			for i := range fc {
				f[i] = fc[i]
				if (i+1)*k-1 > m { // issued after minute m
					f[i] = []float64{30, 30, 30, 30, 30, 30}
				}
			}
			after := run(a, f, mode)
			if diff := cmp.Diff(before[:m+1], after[:m+1]); diff != "" {
				t.Errorf("%q: minutes 0–%d changed with what came after them (-before +after)\n%s", mode, m, diff)
			}
		}
	}
}

func TestReplayHybrid_Errors(t *testing.T) {
	demand := minuteSeries(4, 1, 1, 1, 1)
	for _, tc := range []struct {
		name string
		h    Hybrid
		want string
	}{
		{"no idle time", Hybrid{Forecast: stepForecast(0, 0, 5)}, "want a positive idle time"},
		{"forecast too short", Hybrid{IdleAfter: time.Minute, Lookahead: 10 * time.Minute, Forecast: stepForecast(0, 0, 1)}, "forecast of 1 steps at step 0, want"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReplayHybrid(&tc.h, coarsen(demand, 2), demand, time.Minute)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestReplayHybrid_Early: 5 nodes idle from minute 5, idle time 6
// minutes, decisions every 5, resume 2. Slurm's clock alone powers them
// down at the end of minute 10; with the early power-down at 2 minutes
// they go at the end of minute 6 where the forecast leaves them surplus
// until their clock would run out and a resume after it (minutes 7–12),
// and only down to what it wants there.
func TestReplayHybrid_Early(t *testing.T) {
	demand := minuteSeries(5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	rep := func(n int) []int { return slices.Repeat([]int{0}, n) }
	fill := func(v, n int) []int {
		out := rep(n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		early  time.Duration
		want   int // the forecast for step 2 (minutes 10–14)
		wantOn []int
	}{
		{"no early power-down: Slurm's clock", 0, 0, append(fill(5, 11), fill(0, 9)...)},
		{"early, the forecast wants nothing", 2 * time.Minute, 0, append(fill(5, 7), fill(0, 13)...)},
		// Early down to the 3 the forecast wants in step 2; the idle clock's
		// hold (the step after the minute) keeps them to its end.
		{"early, down to what the forecast wants", 2 * time.Minute, 3, append(append(fill(5, 7), fill(3, 8)...), fill(0, 5)...)},
		{"early at the idle time is off", 6 * time.Minute, 0, append(fill(5, 11), fill(0, 9)...)},
		// The forecasts issued at the end of minutes 4 and 9 are not
		// trusted: the early power-down waits for the one issued at the
		// end of minute 14, and Slurm's clock comes first.
		{"early, the forecast not trusted: Slurm's clock", 2 * time.Minute, -1, append(fill(5, 11), fill(0, 9)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Hybrid{IdleAfter: 6 * time.Minute, EarlyAfter: tc.early, NoAhead: true, Forecast: stepForecast(2, max(tc.want, 0), 4)}
			if tc.want < 0 {
				h.EarlyTrust = func(i int) bool { return i >= 2 }
			}
			checkHybrid(t, &h, demand, tc.wantOn, rep(20))
		})
	}
}

// TestReplayHybrid_Ramp: 20 nodes, all off after their 10 idle minutes
// (minutes 0–9), resume 2 minutes, decisions every 5, a forecast that
// wants nothing. Demand rises by 2 a minute in minutes 10–13 to 8 and
// stays. Slurm's resume covers only the nodes lacking in the minute, so
// each minute of the rise lacks the rise of the last two (16
// node-minutes); the trend nowcast resumes the last minute's rise again
// beyond the demand, the rise finds them usable a minute earlier (10),
// and the 2 resumed for a rise that had stopped (usable at minute 15) go
// down 2 minutes after, or, expiring later than the idle clock, at the
// idle clock (minute 24).
func TestReplayHybrid_Ramp(t *testing.T) {
	active := append(append(make([]int, 10), 2, 4, 6, 8), slices.Repeat([]int{8}, 16)...)
	demand := minuteSeries(20, active...)
	fill := func(v, n int) []int { return slices.Repeat([]int{v}, n) }
	cat := func(parts ...[]int) []int { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name             string
		window, expire   time.Duration
		after            time.Duration
		gain             float64
		wantOn, wantLack []int
	}{
		{"no nowcast: Slurm's resume", 0, 0, 0, 0,
			cat(fill(20, 10), []int{2, 4, 6}, fill(8, 17)), cat(fill(0, 10), []int{2, 4, 4, 4, 2}, fill(0, 15))},
		{"the rise again, unused ones down after 2 minutes", time.Minute, 2 * time.Minute, 0, 1,
			cat(fill(20, 10), []int{2, 4, 6, 8}, fill(10, 4), fill(8, 12)), cat(fill(0, 10), []int{2, 4, 2, 2}, fill(0, 16))},
		// Waiting for the second lacking minute: the first minute of the
		// rise lacks as under Slurm's rule.
		{"after 2 lacking minutes", time.Minute, 2 * time.Minute, 2 * time.Minute, 1,
			cat(fill(20, 10), []int{2, 4, 6, 8}, fill(10, 4), fill(8, 12)), cat(fill(0, 10), []int{2, 4, 4, 2}, fill(0, 16))},
		{"expiring after the idle clock: the clock", time.Minute, 20 * time.Minute, 0, 1,
			cat(fill(20, 10), []int{2, 4, 6, 8}, fill(10, 11), fill(8, 5)), cat(fill(0, 10), []int{2, 4, 2, 2}, fill(0, 16))},
		{"no gain: no nowcast", time.Minute, 2 * time.Minute, 0, 0,
			cat(fill(20, 10), []int{2, 4, 6}, fill(8, 17)), cat(fill(0, 10), []int{2, 4, 4, 4, 2}, fill(0, 15))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Hybrid{IdleAfter: 10 * time.Minute, NoAhead: true, Forecast: stepForecast(-1, 0, 5),
				RampWindow: tc.window, RampExpire: tc.expire, RampAfter: tc.after, RampGain: tc.gain}
			checkHybrid(t, &h, demand, tc.wantOn, tc.wantLack)
		})
	}
}

// TestDriverTrust: the early power-down's guard trusts an anchored
// forecast whose first lead is as near the plain forecast's as the
// validation days ever saw (trustLimit), and guards only anchored
// settings with the early power-down.
func TestDriverTrust(t *testing.T) {
	fc := func(first ...float64) *Forecasts {
		f := &Forecasts{Lo: 10, Hi: 10 + len(first), Horizon: 2, v: make([]float64, 2*len(first))}
		for i, v := range first {
			f.At(10 + i)[0] = v
		}
		return f
	}
	d := driver{plain: fc(280, 280, 280, 280), anchored: fc(280, 250, 249, 0), lo: 10, trustLimit: 30}
	early := Setting{Hybrid: true, Lookahead: 10, NoAhead: true, Anchored: true, EarlyFrac: 1.0 / 3, EarlyK: 4}
	trust := d.trust(early)
	if trust == nil {
		t.Fatal("no guard for an anchored setting with the early power-down")
	}
	for i, want := range []bool{true, true, false, false} {
		if got := trust(i); got != want {
			t.Errorf("step %d (anchored %v, plain %v, limit 30): trusted %v, want %v", i, d.anchored.At(10 + i)[0], d.plain.At(10 + i)[0], got, want)
		}
	}
	plain := early
	plain.Anchored = false
	noEarly := early
	noEarly.EarlyFrac = 0
	for _, st := range []Setting{plain, noEarly} {
		if d.trust(st) != nil {
			t.Errorf("%s: a guard, want none (it reads the plain forecast or makes no early power-down)", st)
		}
	}
	d.trustLimit = -1
	if d.trust(early) != nil {
		t.Error("a guard with no limit, want none")
	}
}

// checkHybrid replays h on demand (one-minute steps coarsened to 5, resume
// 2m) and compares the powered nodes and the lack, minute by minute.
func checkHybrid(t *testing.T, h *Hybrid, demand *Series, wantOn, wantLack []int) {
	t.Helper()
	var steps []Step
	if _, err := replayHybrid(h, coarsen(demand, 5), demand, 2*time.Minute, &steps, nil); err != nil {
		t.Fatal(err)
	}
	on, lack := onAndLack(steps)
	if diff := cmp.Diff(wantOn, on); diff != "" {
		t.Errorf("powered (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(wantLack, lack); diff != "" {
		t.Errorf("lack (-want +got)\n%s", diff)
	}
}

// TestReplayHybrid_Pending: a sequence's pending column is the queue
// serve reads. A 6-node job queued from minute 3 starts at minute 12
// (the sequence's active); the idle clock of 2 minutes has powered every
// node down by then. Without the column the hybrid with nothing forecast
// is Slurm's rule and the job finds no node for a resume (3 minutes × 6
// nodes); with it, the nodes the queue asks for resume at minute 3 (the
// same count Decide powers up, pendingShort) and are held until the job
// takes them: no lack, and the other 4 nodes still power down. A hybrid
// without Queue does not read the column.
func TestReplayHybrid_Pending(t *testing.T) {
	active := make([]int, 20)
	pending := make([]int, 20)
	for m := range active {
		switch {
		case m >= 12:
			active[m] = 6
		case m >= 3:
			pending[m] = 6
		}
	}
	for _, tc := range []struct {
		name     string
		pending  []int
		queue    bool
		lack     int
		offAfter int // nodes off in minute 19
	}{
		{"no pending column", nil, true, 18, 4},
		{"pending column not read", pending, false, 18, 4},
		{"pending column", pending, true, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demand := minuteSeries(10, active...)
			demand.Pending = tc.pending
			var tr []Step
			h := &Hybrid{IdleAfter: 2 * time.Minute, Lookahead: 10 * time.Minute, Forecast: stepForecast(-1, 0, 5), Queue: tc.queue}
			m, err := replayHybrid(h, coarsen(demand, 10), demand, 3*time.Minute, &tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.LackNodeMinutes != float64(tc.lack) {
				t.Errorf("lack %v node-minutes, want %d", m.LackNodeMinutes, tc.lack)
			}
			if off := tr[19].Total - tr[19].Powered; off != tc.offAfter {
				t.Errorf("minute 19: %d nodes off, want %d", off, tc.offAfter)
			}
			// Between the queue's power-up and the job's start the 6 nodes stay up.
			if tc.pending != nil && tc.queue {
				for m := 6; m < 12; m++ {
					if tr[m].Powered < 6 {
						t.Errorf("minute %d: %d powered while 6 are queued for", m, tr[m].Powered)
					}
				}
			}
		})
	}
}
