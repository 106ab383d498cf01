package power

import (
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
			m := replayIdleTime(tc.suspend, minuteSeries(tc.total, tc.active...), tc.resume, &steps)
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
	m, err := replayRule(scripted{3, 2, 2, 2}, coarsen(demand, 2), demand, time.Minute, &steps)
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
	if _, err := replayRule(scripted{1, 3, 3, 3}, coarsen(demand, 2), demand, 2*time.Minute, &steps); err != nil {
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
	replayIdleTime(time.Minute, demand, 3*time.Minute, &steps)
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
