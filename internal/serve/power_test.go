package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fakePower plays scontrol and squeue for power saving.
type fakePower struct {
	calls []string
	sched map[int64][]string
	// comingUp are nodes Slurm resumed since the cycle's read: a power-up
	// of one is not sent (slurmctl.PowerWriter.SetPower).
	comingUp map[string]bool
	// refuse, when set, is scontrol's answer to every change.
	refuse error
}

func (f *fakePower) SetPower(_ context.Context, node string, up bool) error {
	op := "down"
	if up {
		op = "up"
		if f.comingUp[node] {
			return fmt.Errorf("node %s is MIXED+POWERING_UP: %w", node, slurmctl.ErrPowerUpNotSent)
		}
	}
	f.calls = append(f.calls, op+" "+node)
	return f.refuse
}

func (f *fakePower) ScheduledNodes(context.Context) (map[int64][]string, error) { return f.sched, nil }

type fakePowerRec struct{ got []accounting.PowerAction }

func (f *fakePowerRec) RecordPowerActions(_ context.Context, as []accounting.PowerAction) (int, error) {
	f.got = append(f.got, as...)
	return len(as), nil
}

func powerCluster(jobs ...slurmctl.Job) *slurmctl.Cluster {
	node := func(name string, state ...string) slurmctl.Node {
		return slurmctl.Node{Name: name, State: state, Partitions: []string{"gpu"}}
	}
	return &slurmctl.Cluster{Version: slurmctl.V0038, Jobs: jobs, Nodes: []slurmctl.Node{
		node("gpu1", "MIXED"), node("gpu2", "IDLE"), node("gpu3", "IDLE"), node("gpu4", "IDLE"),
	}}
}

func TestPowerSaver_Cycle(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cfg := PowerConfig{Buffer: 1, MaxChangesPerHour: 10, Step: 10 * time.Minute, Horizon: time.Hour}
	running := slurmctl.Job{Job: policy.Job{ID: 1, State: policy.StateRunning, Nodes: 1}, NodeList: []string{"gpu1"}}
	pending := slurmctl.Job{Job: policy.Job{ID: 2, State: policy.StatePending, Nodes: 1}, Reason: "Priority"}

	t.Run("on: idle nodes above the buffer go down, not the one the plan holds", func(t *testing.T) {
		live, rec := &fakePower{sched: map[int64][]string{2: {"gpu4"}}}, &fakePowerRec{}
		ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		rep := ps.Cycle(t.Context(), 1, now, powerCluster(running, pending), &Live{}, true)
		// busy 1 + pending 1 + buffer 1 = 3 powered: one of gpu2, gpu3 goes (gpu3, the highest not held)
		if d := cmp.Diff([]string{"down gpu3"}, live.calls); d != "" {
			t.Errorf("scontrol calls (-want +got):\n%s", d)
		}
		if rep.Planned || len(rec.got) != 1 || rec.got[0].Node != "gpu3" || rec.got[0].Action != "power-down" || rec.got[0].Planned {
			t.Errorf("records %+v, dry run %v: want one live power-down of gpu3", rec.got, rep.Planned)
		}
		var b bytes.Buffer
		if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "gpu3  power-down  done") {
			t.Errorf("text %q, %v: want gpu3's power-down", b.String(), err)
		}
	})

	t.Run("dry run: nothing reaches scontrol, the plan converges", func(t *testing.T) {
		live, rec := &fakePower{}, &fakePowerRec{}
		ps, err := NewPowerSaver(cfg, "c", &PowerPlanner{Reader: live}, rec, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		first := ps.Cycle(t.Context(), 1, now, powerCluster(running), &Live{}, true)
		second := ps.Cycle(t.Context(), 2, now.Add(30*time.Second), powerCluster(running), &Live{}, true)
		if len(live.calls) != 0 {
			t.Errorf("dry run ran %v", live.calls)
		}
		if got := len(first.Decision.Actions); got != 2 || !first.Planned {
			t.Errorf("first cycle: %d actions (dry run %v), want 2 planned power-downs", got, first.Planned)
		}
		if got := len(second.Decision.Actions); got != 0 {
			t.Errorf("second cycle: %d actions, want none (the planned ones stand)", got)
		}
		if len(rec.got) != 2 || !rec.got[0].Planned {
			t.Errorf("records %+v: want two dry-run power-downs", rec.got)
		}
	})

	t.Run("a follower only plans", func(t *testing.T) {
		live := &fakePower{}
		rec := &fakePowerRec{}
		ps, _ := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
		if rep := ps.Cycle(t.Context(), 1, now, powerCluster(running), NewPlanner(nil, nil), false); !rep.Planned || len(live.calls) != 0 {
			t.Errorf("plan-only cycle: planned %v, calls %v", rep.Planned, live.calls)
		}
		if len(rec.got) != 0 {
			t.Errorf("records %+v: want none (the leader records what it does or plans)", rec.got)
		}
		// The plan carries to the next plan-only cycle, as in a dry run.
		if rep := ps.Cycle(t.Context(), 2, now.Add(30*time.Second), powerCluster(running), NewPlanner(nil, nil), false); len(rep.Decision.Actions) != 0 {
			t.Errorf("second plan-only cycle: %d actions, want none (the planned ones stand)", len(rep.Decision.Actions))
		}
	})

	t.Run("lack powers up at once and is recorded", func(t *testing.T) {
		live, rec := &fakePower{}, &fakePowerRec{}
		ps, _ := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
		cl := powerCluster(running, slurmctl.Job{Job: policy.Job{ID: 3, State: policy.StatePending, Nodes: 3}, Reason: "Resources"})
		for i := 1; i < 4; i++ {
			cl.Nodes[i].State = []string{"IDLE", "POWERED_DOWN"}
		}
		ps.Cycle(t.Context(), 1, now, cl, &Live{}, true)
		if d := cmp.Diff([]string{"up gpu2", "up gpu3", "up gpu4"}, live.calls); d != "" {
			t.Errorf("scontrol calls (-want +got):\n%s", d)
		}
		var lack *accounting.PowerAction
		for i := range rec.got {
			if rec.got[i].Action == "lack" {
				lack = &rec.got[i]
			}
		}
		if lack == nil || lack.LackNodes != 3 {
			t.Errorf("records %+v: want a lack row of 3 nodes", rec.got)
		}
	})

	t.Run("a node Slurm resumed meanwhile gets no power-up, and it is no error", func(t *testing.T) {
		live, rec := &fakePower{comingUp: map[string]bool{"gpu2": true}}, &fakePowerRec{}
		ps, _ := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
		cl := powerCluster(running, slurmctl.Job{Job: policy.Job{ID: 3, State: policy.StatePending, Nodes: 2}, Reason: "Resources"})
		for i := 1; i < 4; i++ {
			cl.Nodes[i].State = []string{"IDLE", "POWERED_DOWN"}
		}
		rep := ps.Cycle(t.Context(), 1, now, cl, &Live{}, true)
		// 2 pending nodes + buffer 1: gpu2, gpu3 for the job, gpu4 the buffer.
		if d := cmp.Diff([]string{"up gpu3", "up gpu4"}, live.calls); d != "" {
			t.Errorf("power-ups sent (-want +got):\n%s", d)
		}
		if len(rep.Failed) != 0 || !strings.Contains(rep.Skipped["gpu2"], "no POWER_UP sent") {
			t.Errorf("failed %v, skipped %v: want gpu2 skipped, nothing failed", rep.Failed, rep.Skipped)
		}
		if len(rep.Applied) != 2 || rep.Applied[0].Node != "gpu3" || rep.Applied[1].Node != "gpu4" {
			t.Errorf("applied %+v, want gpu3's and gpu4's power-ups", rep.Applied)
		}
		var gpu2 *accounting.PowerAction
		for i := range rec.got {
			if rec.got[i].Node == "gpu2" {
				gpu2 = &rec.got[i]
			}
		}
		if gpu2 == nil || gpu2.Action != "power-up" || !strings.Contains(gpu2.Error, "POWERING_UP") {
			t.Errorf("records %+v: want gpu2's power-up recorded with why it was not sent", rec.got)
		}
		var b bytes.Buffer
		if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "gpu2  power-up  not sent: node gpu2 is MIXED+POWERING_UP") {
			t.Errorf("text %q, %v: want gpu2's power-up not sent", b.String(), err)
		}
	})
}

// TestPowerConfig_Validate: a bad setting is a FieldError naming its
// field, for cmd to name by its flag.
// TestPowerSaver_Partitions: on a cluster of CPU and GPU partitions, a job
// waiting in the GPU partition gets a GPU node powered up although CPU
// nodes sit idle, and one submitted to both (-p cpu,gpu) does not.
func TestPowerSaver_Partitions(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cfg := PowerConfig{Buffer: 0, MaxChangesPerHour: 10, Step: 10 * time.Minute, Horizon: time.Hour}
	cluster := func(partition string) *slurmctl.Cluster {
		node := func(name, part string, state ...string) slurmctl.Node {
			return slurmctl.Node{Name: name, State: state, Partitions: []string{part}}
		}
		return &slurmctl.Cluster{Version: slurmctl.V0038,
			Jobs: []slurmctl.Job{{Job: policy.Job{ID: 5, State: policy.StatePending, Nodes: 1, Partition: partition}, Reason: "Resources"}},
			Nodes: []slurmctl.Node{node("cpu1", "cpu", "IDLE"), node("cpu2", "cpu", "IDLE"),
				node("gpu1", "gpu", "IDLE", "POWERED_DOWN"), node("gpu2", "gpu", "IDLE", "POWERED_DOWN")}}
	}
	for _, tc := range []struct {
		partition string
		want      []string
	}{
		{"gpu", []string{"up gpu1"}},
		{"cpu,gpu", []string{"down cpu2"}}, // cpu1 serves it; cpu2 is idle above need
	} {
		live, rec := &fakePower{}, &fakePowerRec{}
		ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ps.Cycle(t.Context(), 1, now, cluster(tc.partition), &Live{}, true)
		if d := cmp.Diff(tc.want, live.calls); d != "" {
			t.Errorf("job in %q: scontrol calls (-want +got):\n%s", tc.partition, d)
		}
	}
}

func TestPowerConfig_Validate(t *testing.T) {
	ok := PowerConfig{Buffer: 1, MaxChangesPerHour: 5, Step: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, value string
		mod          func(*PowerConfig)
	}{
		{"PowerConfig.Buffer", "-1", func(c *PowerConfig) { c.Buffer = -1 }},
		{"PowerConfig.MaxChangesPerHour", "0", func(c *PowerConfig) { c.MaxChangesPerHour = 0 }},
		{"PowerConfig.IdleWatts", "-3", func(c *PowerConfig) { c.IdleWatts = -3 }},
		{"PowerConfig.Exclude", "", func(c *PowerConfig) { c.Exclude = []string{"gpu[1-2]"} }},
	} {
		c := ok
		tc.mod(&c)
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field || fe.Value != tc.value {
			t.Errorf("%s: err %v, want a FieldError for it (value %q)", tc.field, err, tc.value)
		}
	}
	c := ok
	c.Step = 0
	if err := c.Validate(); err == nil {
		t.Error("a zero forecast step passed")
	}
}

// TestPowerSaver_Nowcast: serve's trend nowcast over minute cycles. gpu1
// runs a job throughout; gpu2–gpu7 are off. A job waits at minute 1 (the
// lack powers gpu2 up), a second at minute 2 while gpu2 is still coming
// up: demand rose 1 → 3 and lacked two minutes, so the nowcast (gain 1
// over 2 minutes) wants 3 + 2 = 5 powered and powers gpu4 and gpu5 up
// ahead, each a record whose reason explains it. At minute 3 both jobs
// run (gpu2, gpu3): gpu4 and gpu5 are idle above need but held; 5 minutes
// after they came up they go down like any idle node. gpu1 is never
// touched, and no cycle exceeds the hourly cap.
func TestPowerSaver_Nowcast(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	nc := power.Nowcast{Window: 2 * time.Minute, After: 2 * time.Minute, Expire: 5 * time.Minute, Gain: 1}
	cfg := PowerConfig{Buffer: 0, MaxChangesPerHour: 10, Step: 10 * time.Minute, Nowcast: nc}
	running := slurmctl.Job{Job: policy.Job{ID: 1, State: policy.StateRunning, Nodes: 1}, NodeList: []string{"gpu1"}}
	pend := func(id int64) slurmctl.Job {
		return slurmctl.Job{Job: policy.Job{ID: id, State: policy.StatePending, Nodes: 1}, Reason: "Resources"}
	}
	run := func(id int64, node string) slurmctl.Job {
		return slurmctl.Job{Job: policy.Job{ID: id, State: policy.StateRunning, Nodes: 1}, NodeList: []string{node}}
	}
	// cluster: gpu1 busy, the nodes named in on idle and powered, those
	// in up powering up, those in busy busy, the rest of gpu2–gpu7 off.
	cluster := func(on, up, busy []string, jobs ...slurmctl.Job) *slurmctl.Cluster {
		cl := &slurmctl.Cluster{Version: slurmctl.V0041, Jobs: append([]slurmctl.Job{running}, jobs...)}
		cl.Nodes = append(cl.Nodes, slurmctl.Node{Name: "gpu1", State: []string{"MIXED"}})
		for i := 2; i <= 7; i++ {
			name := fmt.Sprintf("gpu%d", i)
			st := []string{"IDLE", "POWERED_DOWN"}
			switch {
			case slices.Contains(on, name):
				st = []string{"IDLE"}
			case slices.Contains(up, name):
				st = []string{"IDLE", "POWERING_UP"}
			case slices.Contains(busy, name):
				st = []string{"ALLOCATED"}
			}
			cl.Nodes = append(cl.Nodes, slurmctl.Node{Name: name, State: st})
		}
		return cl
	}
	live, rec := &fakePower{}, &fakePowerRec{}
	ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cycles := []struct {
		at   time.Duration
		cl   *slurmctl.Cluster
		want []string
	}{
		{0, cluster(nil, nil, nil), nil},
		{time.Minute, cluster(nil, nil, nil, pend(2)), []string{"up gpu2"}},
		{2 * time.Minute, cluster(nil, []string{"gpu2"}, nil, pend(2), pend(3)), []string{"up gpu3", "up gpu4", "up gpu5"}},
		{3 * time.Minute, cluster([]string{"gpu4", "gpu5"}, nil, []string{"gpu2", "gpu3"}, run(2, "gpu2"), run(3, "gpu3")), nil},
		{7 * time.Minute, cluster([]string{"gpu4", "gpu5"}, nil, []string{"gpu2", "gpu3"}, run(2, "gpu2"), run(3, "gpu3")), nil},
		{8 * time.Minute, cluster([]string{"gpu4", "gpu5"}, nil, []string{"gpu2", "gpu3"}, run(2, "gpu2"), run(3, "gpu3")), []string{"down gpu5", "down gpu4"}},
	}
	for i, c := range cycles {
		before := len(live.calls)
		rep := ps.Cycle(t.Context(), int64(i), t0.Add(c.at), c.cl, &Live{}, true)
		if diff := cmp.Diff(c.want, live.calls[before:], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("cycle at %v: scontrol calls (-want +got):\n%s", c.at, diff)
		}
		if i == 2 && (rep.Decision.Ramp == nil || rep.Decision.Ramp.Want != 5) {
			t.Errorf("cycle at %v: nowcast %+v, want one wanting 5 powered", c.at, rep.Decision.Ramp)
		}
		if i == 3 && rep.Decision.RampHeld != 2 {
			t.Errorf("cycle at %v: %d nodes held by the nowcast, want 2", c.at, rep.Decision.RampHeld)
		}
	}
	ahead := 0
	for _, r := range rec.got {
		if r.Node == "gpu1" {
			t.Errorf("record %+v: gpu1 runs a job and was touched", r)
		}
		if r.Action == string(power.PowerUp) && strings.HasPrefix(r.Reason, "trend nowcast: demand rose 1 → 3") {
			ahead++
			if r.Parts["nowcast_want"] != 5 || r.Parts["nowcast_low"] != 1 || r.Parts["nowcast_demand"] != 3 {
				t.Errorf("record %+v: want the nowcast's parts (want 5, low 1, demand 3)", r)
			}
		}
	}
	if ahead != 2 {
		t.Errorf("%d power-up records explained by the nowcast, want 2 (gpu4, gpu5): %+v", ahead, rec.got)
	}
	if n := len(live.calls); n > cfg.MaxChangesPerHour {
		t.Errorf("%d changes in 8 minutes, over the cap of %d", n, cfg.MaxChangesPerHour)
	}
}

// TestPowerConfig_BadNowcast: a negative nowcast setting is refused,
// naming its field.
func TestPowerConfig_BadNowcast(t *testing.T) {
	cfg := PowerConfig{MaxChangesPerHour: 1, Step: 10 * time.Minute, Nowcast: power.Nowcast{Window: time.Minute, Gain: -1}}
	var fe *FieldError
	if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != "PowerConfig.Nowcast" {
		t.Errorf("Validate = %v, want a FieldError for PowerConfig.Nowcast", err)
	}
}

// TestPowerSaver_RefusedChangesCountAgainstTheCap: a change Slurm refuses
// (power saving not set up in slurm.conf: "Invalid node state specified")
// takes its place under the hourly cap, so serve does not send the cap's
// worth of refused updates to slurmctld, and log and record them, at
// every cycle.
func TestPowerSaver_RefusedChangesCountAgainstTheCap(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cfg := PowerConfig{Buffer: 0, MaxChangesPerHour: 2, Step: 10 * time.Minute}
	running := slurmctl.Job{Job: policy.Job{ID: 1, State: policy.StateRunning, Nodes: 1}, NodeList: []string{"gpu1"}}
	live, rec := &fakePower{refuse: errors.New("slurm_update error: Invalid node state specified")}, &fakePowerRec{}
	ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, rec, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // five minutes of 30 s cycles
		ps.Cycle(t.Context(), int64(i+1), now.Add(time.Duration(i)*30*time.Second), powerCluster(running), &Live{}, true)
	}
	if len(live.calls) != cfg.MaxChangesPerHour {
		t.Errorf("%d refused changes sent in five minutes (%v), want %d: the hourly cap", len(live.calls), live.calls, cfg.MaxChangesPerHour)
	}
	ps.Cycle(t.Context(), 11, now.Add(time.Hour), powerCluster(running), &Live{}, true)
	if len(live.calls) != 2*cfg.MaxChangesPerHour {
		t.Errorf("an hour later: %d changes sent in all, want %d (tried again)", len(live.calls), 2*cfg.MaxChangesPerHour)
	}
}

// TestPowerSaver_SeededChangesAheadOfTheClock: the changes an earlier
// serve made, read back from the database at start-up, are stamped by
// that serve's clock. When this one's reads earlier (a standby on a host
// whose clock is behind the old leader's, or a wall clock stepped back
// since), they look a few minutes ahead of now: they were still made in
// the last hour, and the cap counts them.
func TestPowerSaver_SeededChangesAheadOfTheClock(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cfg := PowerConfig{Buffer: 0, MaxChangesPerHour: 2, Step: 10 * time.Minute}
	running := slurmctl.Job{Job: policy.Job{ID: 1, State: policy.StateRunning, Nodes: 1}, NodeList: []string{"gpu1"}}
	live := &fakePower{}
	ps, err := NewPowerSaver(cfg, "c", &PowerLive{PowerWriter: live}, &fakePowerRec{}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ps.SeedChanges([]time.Time{now.Add(4 * time.Minute), now.Add(5 * time.Minute)})
	rep := ps.Cycle(t.Context(), 1, now, powerCluster(running), &Live{}, true)
	if len(live.calls) != 0 {
		t.Errorf("changes sent with the hour's cap of %d spent by the earlier serve: %v", cfg.MaxChangesPerHour, live.calls)
	}
	if rep.Decision.HeldByCap != 3 {
		t.Errorf("%d changes held by the cap, want 3 (gpu2-gpu4 idle above need)", rep.Decision.HeldByCap)
	}
}

// TestRunner_PowerRecordedByLeaderOnly: the leader records its power
// actions, done or (in a dry run) planned; a follower plans the same
// ones and records none, so the report and explain count each once.
func TestRunner_PowerRecordedByLeaderOnly(t *testing.T) {
	cfg := PowerConfig{Buffer: 1, MaxChangesPerHour: 10, Step: 10 * time.Minute, Horizon: time.Hour}
	running := slurmctl.Job{Job: policy.Job{ID: 1, State: policy.StateRunning, Nodes: 1, User: "a", Account: "a"}, NodeList: []string{"gpu1"}}
	for _, tc := range []struct {
		name        string
		leader, dry bool
		records     int
	}{{"leader", true, false, 2}, {"dry-run leader", true, true, 2}, {"follower", false, false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{}, tc.dry)
			g.leader.leader = tc.leader
			live, rec := &fakePower{}, &fakePowerRec{}
			var to PowerSink = &PowerLive{PowerWriter: live}
			if tc.dry {
				to = &PowerPlanner{Reader: live}
			}
			ps, err := NewPowerSaver(cfg, "c", to, rec, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			g.r.power = ps
			g.reader.cl = powerCluster(running)
			res, err := g.r.RunCycle(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if res.Power == nil || len(res.Power.Decision.Actions) != 2 {
				t.Fatalf("power %+v: want two power-downs decided", res.Power)
			}
			if len(rec.got) != tc.records {
				t.Errorf("%d power rows recorded, want %d: %+v", len(rec.got), tc.records, rec.got)
			}
			if wrote := len(live.calls) > 0; wrote != (tc.leader && !tc.dry) {
				t.Errorf("scontrol calls %v", live.calls)
			}
		})
	}
}
