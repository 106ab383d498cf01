package power

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ops renders a decision's actions as "power-down gpu3" lines, in order.
func ops(d Decision) []string {
	var out []string
	for _, a := range d.Actions {
		out = append(out, string(a.Op)+" "+a.Node)
	}
	return out
}

func idle(names ...string) []Node {
	var out []Node
	for _, n := range names {
		out = append(out, Node{Name: n, Power: On, Usable: true})
	}
	return out
}

func TestDecide_Actions(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	off := func(n string) Node { return Node{Name: n, Power: Off, Usable: true} }
	busy := func(n string) Node { return Node{Name: n, Power: On, Usable: true, Busy: true} }
	tests := []struct {
		name string
		in   Inputs
		want []string
		lack int
	}{{
		name: "idle nodes above the buffer go down, highest names first",
		in:   Inputs{Nodes: idle("n1", "n2", "n3", "n4"), Settings: Settings{Buffer: 1}},
		want: []string{"power-down n4", "power-down n3", "power-down n2"},
	}, {
		name: "never below the buffer of idle powered nodes",
		in:   Inputs{Nodes: append(idle("n1", "n2"), busy("n3")), Settings: Settings{Buffer: 2}},
		want: nil,
	}, {
		name: "a node with a job is never touched, even one Slurm lists as idle but a job names",
		in: Inputs{Nodes: idle("n1", "n2", "n3"), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 7, Nodes: 1, NodeList: []string{"n3"}}}},
		want: []string{"power-down n2", "power-down n1"},
	}, {
		name: "a node a pending job is scheduled on is never powered down",
		in: Inputs{Nodes: idle("n1", "n2", "n3"), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 8, Pending: true, Nodes: 1, NodeList: []string{"n3"}}}},
		// nothing else needs a node: n1 and n2 go, n3 stays for the job
		want: []string{"power-down n2", "power-down n1"},
	}, {
		name: "an off node a pending job is scheduled on is powered up at once",
		in: Inputs{Now: now, Nodes: []Node{off("n1"), off("n2")}, Settings: Settings{Buffer: 0, MaxChangesPerHour: 1},
			Changes: []time.Time{now.Add(-time.Minute)},
			Jobs:    []Job{{ID: 9, Pending: true, Nodes: 1, NodeList: []string{"n2"}, WaitsForNodes: true}}},
		want: []string{"power-up n2"},
		lack: 1,
	}, {
		name: "pending demand above powered capacity powers up at once, whatever the cap",
		in: Inputs{Now: now, Nodes: []Node{busy("n1"), off("n2"), off("n3"), off("n4")}, Settings: Settings{Buffer: 0, MaxChangesPerHour: 1},
			Changes: []time.Time{now.Add(-time.Minute), now.Add(-2 * time.Minute)},
			Jobs:    []Job{{ID: 10, Pending: true, Nodes: 2, WaitsForNodes: true}}},
		want: []string{"power-up n2", "power-up n3"},
		lack: 2,
	}, {
		name: "a job held by a limit is no demand",
		in: Inputs{Nodes: []Node{busy("n1"), off("n2")}, Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 11, Pending: true, Nodes: 1, WaitsForNodes: false}}},
		want: nil,
	}, {
		name: "nodes powering up count as capacity",
		in: Inputs{Nodes: []Node{{Name: "n1", Power: PoweringUp, Usable: true}, off("n2")}, Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 12, Pending: true, Nodes: 1, WaitsForNodes: true}}},
		want: nil,
	}, {
		name: "the buffer powers nodes up when too few idle are on",
		in:   Inputs{Nodes: []Node{busy("n1"), off("n2"), off("n3"), off("n4")}, Settings: Settings{Buffer: 2}},
		want: []string{"power-up n2", "power-up n3"},
	}, {
		name: "the forecast peak within the horizon keeps nodes on",
		in: Inputs{Nodes: append(idle("n1", "n2", "n3", "n4"), busy("n0")), Settings: Settings{Buffer: 0, Horizon: 20 * time.Minute},
			Forecast: []float64{1, 2.2, 4}, Step: 10 * time.Minute},
		// peak over two steps is 2.2 → 3 nodes; 5 powered → 2 down
		want: []string{"power-down n4", "power-down n3"},
	}, {
		name: "the hourly cap holds power-downs back",
		in: Inputs{Now: now, Nodes: idle("n1", "n2", "n3", "n4"), Settings: Settings{Buffer: 0, MaxChangesPerHour: 3},
			Changes: []time.Time{now.Add(-10 * time.Minute), now.Add(-2 * time.Hour)}},
		want: []string{"power-down n4", "power-down n3"},
	}, {
		// Stamped by a clock ahead of Now's (an earlier serve's), or
		// before Now's stepped back: made in the last hour all the same.
		name: "changes stamped after now count against the cap",
		in: Inputs{Now: now, Nodes: idle("n1", "n2", "n3", "n4"), Settings: Settings{Buffer: 0, MaxChangesPerHour: 3},
			Changes: []time.Time{now.Add(time.Minute), now.Add(5 * time.Minute)}},
		want: []string{"power-down n4"},
	}, {
		// A stamp more than an hour ahead is a clock gone wrong: counted,
		// it would hold the cap spent until Now reached it.
		name: "changes stamped over an hour after now do not count",
		in: Inputs{Now: now, Nodes: idle("n1", "n2", "n3", "n4"), Settings: Settings{Buffer: 0, MaxChangesPerHour: 3},
			Changes: []time.Time{now.Add(2 * time.Hour), now.Add(365 * 24 * time.Hour)}},
		want: []string{"power-down n4", "power-down n3", "power-down n2"},
	}, {
		name: "excluded, unusable and powering-down nodes are never touched",
		in: Inputs{Nodes: []Node{{Name: "n1", Power: On, Usable: true}, {Name: "n2", Power: On, Usable: false},
			{Name: "n3", Power: PoweringDown, Usable: true}, {Name: "n4", Power: Off, Usable: true}},
			Settings: Settings{Buffer: 0, Exclude: []string{"n1", "n4"}}},
		want: nil,
	}, {
		name: "an excluded idle node is capacity for pending jobs",
		in: Inputs{Nodes: []Node{{Name: "n1", Power: On, Usable: true}, off("n2")},
			Settings: Settings{Buffer: 0, Exclude: []string{"n1"}},
			Jobs:     []Job{{ID: 13, Pending: true, Nodes: 1, WaitsForNodes: true}}},
		want: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.Now.IsZero() {
				tc.in.Now = now
			}
			d, err := Decide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ops(d)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if d.Lack != tc.lack {
				t.Errorf("lack %d, want %d", d.Lack, tc.lack)
			}
			for _, a := range d.Actions {
				if a.Reason == "" || a.Parts["target"] != float64(d.Target) {
					t.Errorf("action %s %s: reason %q, parts %v: want a reason and the target among the parts", a.Op, a.Node, a.Reason, a.Parts)
				}
			}
		})
	}
}

// TestDecide_NeverTouchesBusyOrReserved checks the safety rules over many
// random clusters: no action on a busy, reserved-and-on, excluded or
// unusable node, never fewer idle powered nodes than the buffer after a
// power-down, and every lacking job node met when off nodes remain.
// TestDecide_Partitions: a job waiting in one partition is served only by
// that partition's nodes. Idle nodes of another partition used to count
// as capacity for it, so the GPU nodes it waited for stayed off and the
// cycle reported no lack.
func TestDecide_Partitions(t *testing.T) {
	in := func(parts []string, names ...string) []Node {
		var out []Node
		for _, n := range names {
			out = append(out, Node{Name: n, Power: On, Usable: true, Partitions: parts})
		}
		return out
	}
	off := func(parts []string, names ...string) []Node {
		out := in(parts, names...)
		for i := range out {
			out[i].Power = Off
		}
		return out
	}
	gpu, cpu, both := []string{"gpu"}, []string{"cpu"}, []string{"gpu", "gpuhi"}
	for _, tc := range []struct {
		name string
		in   Inputs
		want []string
		lack int
	}{{
		name: "idle CPU nodes do not serve a job waiting for GPU nodes",
		in: Inputs{Nodes: slices.Concat(in(cpu, "c1", "c2", "c3"), off(gpu, "g1", "g2", "g3")), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 1, Pending: true, Nodes: 2, WaitsForNodes: true, Partitions: gpu}}},
		want: []string{"power-up g1", "power-up g2"},
		lack: 2,
	}, {
		name: "a job submitted to two partitions takes the nodes of either",
		in: Inputs{Nodes: slices.Concat(in(cpu, "c1"), off(gpu, "g1")), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 2, Pending: true, Nodes: 1, WaitsForNodes: true, Partitions: []string{"gpu", "cpu"}}}},
		want: nil,
	}, {
		name: "each job takes its own partition's idle nodes, in queue order",
		in: Inputs{Nodes: slices.Concat(in(gpu, "g1"), off(gpu, "g2", "g3"), in(cpu, "c1", "c2")), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 3, Pending: true, Nodes: 1, WaitsForNodes: true, Partitions: gpu}, {ID: 4, Pending: true, Nodes: 2, WaitsForNodes: true, Partitions: gpu},
				{ID: 5, Pending: true, Nodes: 1, WaitsForNodes: true, Partitions: cpu}}},
		want: []string{"power-up g2", "power-up g3"},
		lack: 2,
	}, {
		name: "nodes in several partitions serve a job of any of them",
		in: Inputs{Nodes: slices.Concat(in(both, "n1"), off(both, "n2")), Settings: Settings{Buffer: 0},
			Jobs: []Job{{ID: 6, Pending: true, Nodes: 1, WaitsForNodes: true, Partitions: []string{"gpuhi"}}}},
		want: nil,
	}, {
		name: "no partition named on either side: the whole cluster, as before",
		in: Inputs{Nodes: slices.Concat(in(nil, "c1"), off(nil, "g1")), Settings: Settings{Buffer: 1},
			Jobs: []Job{{ID: 7, Pending: true, Nodes: 2, WaitsForNodes: true}}},
		want: []string{"power-up g1"},
		lack: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ops(d)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if d.Lack != tc.lack {
				t.Errorf("lack %d, want %d", d.Lack, tc.lack)
			}
		})
	}
}

func TestDecide_NeverTouchesBusyOrReserved(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	seed := uint64(42)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % uint64(n))
	}
	fired := 0 // trials where the nowcast powered a node up
	for trial := 0; trial < 20000; trial++ {
		var in Inputs
		in.Now = now
		in.Settings = Settings{Buffer: rnd(3), MaxChangesPerHour: rnd(4)}
		nn := 1 + rnd(8)
		for i := 0; i < nn; i++ {
			n := Node{Name: fmt.Sprintf("n%d", i), Power: Power(rnd(4)), Usable: rnd(6) > 0, Busy: rnd(3) == 0}
			in.Nodes = append(in.Nodes, n)
			if rnd(5) == 0 {
				in.Settings.Exclude = append(in.Settings.Exclude, n.Name)
			}
		}
		for j := 0; j < rnd(4); j++ {
			job := Job{ID: int64(j + 1), Pending: rnd(2) == 0, Nodes: 1 + rnd(2), WaitsForNodes: rnd(3) > 0}
			if rnd(2) == 0 {
				job.NodeList = []string{fmt.Sprintf("n%d", rnd(nn))}
			}
			in.Jobs = append(in.Jobs, job)
		}
		// Half the trials with the trend nowcast primed on a rise, some
		// nodes it holds, and changes already made in the last hour.
		if rnd(2) == 0 {
			in.Nowcast = primedNowcast(now, 0, 0)
			in.Jobs = append(in.Jobs, Job{ID: 99, Pending: true, Nodes: 1 + rnd(4), WaitsForNodes: true}) // a rise that lacks
			for i := 0; i < nn; i++ {
				if rnd(4) == 0 {
					in.RampHeld = append(in.RampHeld, fmt.Sprintf("n%d", i))
				}
			}
		}
		for range rnd(3) {
			in.Changes = append(in.Changes, now.Add(-time.Duration(rnd(90))*time.Minute))
		}
		d, err := Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		busy, reserved := map[string]bool{}, map[string]bool{}
		for _, j := range in.Jobs {
			for _, n := range j.NodeList {
				if j.Pending {
					reserved[n] = true
				} else {
					busy[n] = true
				}
			}
		}
		byName := map[string]Node{}
		for _, n := range in.Nodes {
			byName[n.Name] = n
		}
		downs, urgent, other := 0, 0, 0
		for _, a := range d.Actions {
			if strings.HasPrefix(a.Reason, "trend nowcast") && other == 0 {
				fired++
			}
			if strings.HasPrefix(a.Reason, "pending job") || strings.HasPrefix(a.Reason, "jobs waiting for nodes") {
				urgent++
			} else {
				other++
			}
			if a.Op == PowerDown && slices.Contains(in.RampHeld, a.Node) {
				t.Fatalf("trial %d: power-down of %s, which the nowcast holds", trial, a.Node)
			}
			n := byName[a.Node]
			ex := strings.Contains(","+strings.Join(in.Settings.Exclude, ",")+",", ","+a.Node+",")
			switch {
			case n.Busy || busy[a.Node]:
				t.Fatalf("trial %d: %s on busy node %s (%+v)", trial, a.Op, a.Node, in)
			case !n.Usable || ex:
				t.Fatalf("trial %d: %s on unusable or excluded node %s (%+v)", trial, a.Op, a.Node, in)
			case a.Op == PowerDown && (reserved[a.Node] || n.Power != On):
				t.Fatalf("trial %d: power-down of %s (reserved %v, %s) (%+v)", trial, a.Node, reserved[a.Node], n.Power, in)
			case a.Op == PowerUp && n.Power != Off:
				t.Fatalf("trial %d: power-up of %s, which is %s", trial, a.Node, n.Power)
			}
			if a.Op == PowerDown {
				downs++
			}
		}
		if downs > 0 && d.IdleOn+d.PoweringUp-downs < in.Settings.Buffer+d.PendingNodes {
			t.Fatalf("trial %d: %d down leaves %d idle powered, below buffer %d + pending %d", trial, downs,
				d.IdleOn+d.PoweringUp-downs, in.Settings.Buffer, d.PendingNodes)
		}
		if in.Settings.MaxChangesPerHour > 0 && downs > in.Settings.MaxChangesPerHour {
			t.Fatalf("trial %d: %d power-downs over a cap of %d", trial, downs, in.Settings.MaxChangesPerHour)
		}
		// Every change but the power-ups for jobs waiting now fits in what
		// the cap leaves after the last hour's changes and those.
		if c := in.Settings.MaxChangesPerHour; c > 0 {
			recent := 0
			for _, at := range in.Changes {
				if now.Sub(at) < time.Hour {
					recent++
				}
			}
			if other > max(0, c-recent-urgent) {
				t.Fatalf("trial %d: %d capped changes (nowcast %v) with cap %d, %d made in the last hour, %d urgent", trial, other, d.Ramp, c, recent, urgent)
			}
		}
	}
	if fired == 0 {
		t.Error("the nowcast powered no node up in any trial: the property is untested for it")
	}
	t.Logf("the nowcast powered nodes up in %d trials", fired)
}

func TestDecide_BadSettings(t *testing.T) {
	for _, in := range []Inputs{
		{Settings: Settings{Buffer: -1}},
		{Settings: Settings{MaxChangesPerHour: -2}},
		{Forecast: []float64{1}},
	} {
		if _, err := Decide(in); err == nil {
			t.Errorf("Decide(%+v): no error", in)
		}
	}
}

func TestWaitsForNodes(t *testing.T) {
	for reason, want := range map[string]bool{
		"Resources": true, "Priority": true, "None": true, "": true, "ReqNodeNotAvail,_UnavailableNodes:gpu2": true,
		"Dependency": false, "BeginTime": false, "QOSMaxGRESPerUser": false, "AssocGrpGRES": false, "JobHeldUser": false,
	} {
		if got := WaitsForNodes(reason); got != want {
			t.Errorf("WaitsForNodes(%q) = %v, want %v", reason, got, want)
		}
	}
}

// TestDecide_ExplainsTheForecaster: each action's reason says which
// forecaster made the forecast it kept, so `fairway explain --node` shows
// whether serve had the GBT or fell back to the seasonal-naive forecast.
func TestDecide_ExplainsTheForecaster(t *testing.T) {
	in := Inputs{Now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Nodes: idle("n1", "n2", "n3"), Step: 10 * time.Minute,
		Forecast: []float64{1, 1}, ForecastBy: "seasonal naive (same time yesterday): 3.0 days of node-use history, the GBT needs 14",
		Settings: Settings{Horizon: 20 * time.Minute}}
	d, err := Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Actions) != 2 {
		t.Fatalf("actions %v, want two power-downs (the forecast keeps one node)", ops(d))
	}
	for _, a := range d.Actions {
		if !strings.HasSuffix(a.Reason, "; forecast: "+in.ForecastBy) {
			t.Errorf("reason %q does not name the forecaster", a.Reason)
		}
	}
}

// primedNowcast is a nowcast (gain 1 over 2 minutes, after 2 lacking
// minutes) that saw demand d0 without lack two minutes before now and d1
// lacking the minute before: a rise now that still lacks fires it.
func primedNowcast(now time.Time, d0, d1 int) *NowcastState {
	s := Nowcast{Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute, Gain: 1}.Start(NowcastStep)
	m := now.Unix() / 60
	s.Observe(m-2, d0, 0)
	s.Observe(m-1, d1, 1)
	return s
}

// TestDecide_Nowcast: two busy nodes and two pending jobs lacking nodes
// after a rise: the urgent power-ups cover the jobs, the nowcast resumes
// ceil(1 × (4 − 1)) more ahead, each an action whose reason and parts
// say what it read, within the hourly cap; the nodes it holds are not
// powered down.
func TestDecide_Nowcast(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	nodes := []Node{{Name: "n1", Power: On, Usable: true, Busy: true}, {Name: "n2", Power: On, Usable: true, Busy: true}}
	for i := 3; i <= 8; i++ {
		nodes = append(nodes, Node{Name: fmt.Sprintf("n%d", i), Power: Off, Usable: true})
	}
	jobs := []Job{{ID: 1, Pending: true, Nodes: 1, WaitsForNodes: true}, {ID: 2, Pending: true, Nodes: 1, WaitsForNodes: true}}
	for _, tc := range []struct {
		name    string
		cap     int
		nowcast bool
		want    []string
		held    int
	}{
		{"off: the lack alone", 10, false, []string{"power-up n3", "power-up n4"}, 0},
		{"on: three more ahead", 10, true, []string{"power-up n3", "power-up n4", "power-up n5", "power-up n6", "power-up n7"}, 0},
		{"on, within the cap", 3, true, []string{"power-up n3", "power-up n4", "power-up n5"}, 2},
		{"on, the cap spent on the lack", 2, true, []string{"power-up n3", "power-up n4"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Now: now, Nodes: nodes, Jobs: jobs, Settings: Settings{MaxChangesPerHour: tc.cap}}
			if tc.nowcast {
				in.Nowcast = primedNowcast(now, 1, 2)
			}
			d, err := Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ops(d)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if d.HeldByCap != tc.held {
				t.Errorf("held by cap %d, want %d", d.HeldByCap, tc.held)
			}
			if !tc.nowcast {
				return
			}
			if d.Ramp == nil || d.Ramp.Want != 7 {
				t.Fatalf("ramp %+v, want one wanting 7", d.Ramp)
			}
			for _, a := range d.Actions[2:] {
				if !strings.HasPrefix(a.Reason, "trend nowcast: demand rose 1 → 4") || a.Parts["nowcast_want"] != 7 || a.Parts["nowcast_gain"] != 1 {
					t.Errorf("%s: reason %q, parts %v; want the nowcast's", a.Node, a.Reason, a.Parts)
				}
			}
		})
	}
	t.Run("held nodes are not powered down", func(t *testing.T) {
		in := Inputs{Now: now, Nodes: idle("n1", "n2", "n3"), Settings: Settings{MaxChangesPerHour: 10},
			Nowcast: Nowcast{Window: time.Minute, Gain: 1}.Start(NowcastStep), RampHeld: []string{"n3"}}
		d, err := Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"power-down n2", "power-down n1"}, ops(d)); diff != "" || d.RampHeld != 1 {
			t.Errorf("actions (-want +got):\n%s; held %d, want 1", diff, d.RampHeld)
		}
	})
}

// TestRampHold: a node the nowcast resumed is held until it has been up
// its expiry, let go at once when a job takes it, and after an hour when
// it never comes up.
func TestRampHold(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	h := RampHold{Expire: 5 * time.Minute}
	h.Add(t0, "a", "b", "c")
	state := func(a, b, c Power, bBusy bool) []Node {
		return []Node{{Name: "a", Power: a, Usable: true}, {Name: "b", Power: b, Usable: true, Busy: bBusy}, {Name: "c", Power: c, Usable: true}}
	}
	steps := []struct {
		at    time.Duration
		nodes []Node
		want  []string
	}{
		{time.Minute, state(PoweringUp, PoweringUp, Off, false), []string{"a", "b", "c"}},
		{5 * time.Minute, state(On, On, Off, true), []string{"a", "c"}},     // b taken by a job
		{9 * time.Minute, state(On, On, Off, false), []string{"a", "c"}},    // a up 4 minutes
		{10 * time.Minute, state(On, On, PoweringUp, false), []string{"c"}}, // a up 5: expired
		{61 * time.Minute, state(On, On, Off, false), nil},                  // c never came up
	}
	for _, s := range steps {
		if got := h.Held(t0.Add(s.at), s.nodes); !cmp.Equal(s.want, got) {
			t.Errorf("at %v: held %v, want %v", s.at, got, s.want)
		}
	}
}
