package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
)

// sinfoState is sinfo's compact state of one node ("idle", "idle~",
// "mix", ...). sinfo lists every node and the node's line is picked by
// name: `sinfo -n NODE`, which asks slurmctld for that node alone, is not
// to be trusted on the lab's Slurm 22.05 (two nodes of one host name): it
// said "mix" for gpu2 for a minute after its job had ended, while gpu1 ran
// a job and the full listing and scontrol said gpu2 was idle. sinfo -N
// prints a node once per partition it sits in (the lab's gpu and gpuhi
// hold both nodes), with the same state: the first line is the node's.
func sinfoState(e *lab.Env, node string) string {
	out, err := e.Try("", "sinfo", "-h", "-N", "-o", "%N %t")
	if err != nil {
		return ""
	}
	for l := range strings.SplitSeq(out, "\n") {
		if name, state, ok := strings.Cut(strings.TrimSpace(l), " "); ok && name == node {
			return state
		}
	}
	return ""
}

// powerDiagnosis is what a failed power test needs to be understood
// after the fact: the node and job as slurmctld has them, the lab's
// power programs' log and slurmctld's lines about the node.
func powerDiagnosis(e *lab.Env, node string, job int64) string {
	var b strings.Builder
	show := func(name string, args ...string) {
		out, err := e.Try("", name, args...)
		fmt.Fprintf(&b, "$ %s %s\n%s", name, strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	show("scontrol", "show", "node", "-o", node)
	show("squeue", "-h", "-t", "all", "-j", strconv.FormatInt(job, 10), "-o", "%i %T %r %N")
	for _, f := range []struct{ file, filter string }{{"power.log", ""}, {"slurmctld.log", node}} {
		data, err := os.ReadFile(filepath.Join(e.Dir, "log", f.file))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", f.file, err)
			continue
		}
		var lines []string
		for l := range strings.SplitSeq(string(data), "\n") {
			if l != "" && strings.Contains(l, f.filter) {
				lines = append(lines, l)
			}
		}
		fmt.Fprintf(&b, "%s, last lines:\n%s\n", f.file, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// powerUpAfter makes sure the test leaves node powered and idle for the
// other lab tests, whatever happened.
func powerUpAfter(t *testing.T, e *lab.Env, node string) {
	t.Cleanup(func() {
		// POWER_UP is taken only once a power-down has finished ("~"):
		// during one ("!", "%") it waits, so ask again when it has.
		var asked time.Time
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			s := sinfoState(e, node)
			if s == "idle" || s == "mix" || s == "alloc" {
				return
			}
			if strings.HasSuffix(s, "~") && time.Since(asked) > 5*time.Second {
				_, _ = e.Try("", "scontrol", "update", "nodename="+node, "state=POWER_UP")
				asked = time.Now()
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("node %s is %q 90s after the test, want it powered", node, sinfoState(e, node))
	})
}

// TestLab_ServePowerSaving is issue 30's lab scenario: with serve's power
// saving on, an idle node is powered down through Slurm (sinfo shows
// "idle~"), a pending job that needs it brings it back (Fairway powers it
// up, or Slurm's ResumeProgram does when it allocates the job there first),
// the job runs, and the node with a job is never touched. Every action is a
// record in power_action.
func TestLab_ServePowerSaving(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, _ := throwawayDB(t, e)
	tag := fmt.Sprintf("power%d", time.Now().UnixNano()%1e6)
	if out := e.Run(t, "", "scontrol", "show", "config"); !strings.Contains(out, "ResumeProgram") || strings.Contains(out, "ResumeProgram           = (null)") {
		t.Fatalf("the lab's slurm.conf has no ResumeProgram: restart it with this checkout's contrib/lab/lab up")
	}
	waitQueueEmpty(t, e)
	powerUpAfter(t, e, "gpu1")
	powerUpAfter(t, e, "gpu2")
	var states string
	if !waitUntil(90*time.Second, func() bool {
		states = sinfoState(e, "gpu1") + " " + sinfoState(e, "gpu2")
		return states == "idle idle"
	}) {
		out, _ := e.Try("", "squeue", "-h", "-t", "all", "-o", "%i %P %T %R %N")
		nodes, _ := e.Try("", "scontrol", "show", "node", "-o", "gpu1,gpu2")
		t.Fatalf("nodes still %q after 90s, want both idle and powered; queue:\n%s\nnodes:\n%s", states, out, nodes)
	}
	t.Logf("nodes before the test: %s", states)

	// gpu1 runs a job for the whole test.
	busy := e.Submit(t, "alice", "-J", tag+"-busy", "-p", e.Partition, "-w", "gpu1", "--gres=gpu:1", "-t", "10", "--wrap", "sleep 600")
	waitJobState(t, e, busy, 60*time.Second, "RUNNING")

	cfg := serveLabConfig(e, "fair-sjf", false)
	cfg.PowerMode = powerOn
	cfg.Power = serve.PowerConfig{Buffer: 0, MaxChangesPerHour: 10, Step: 10 * time.Minute}
	s, err := buildLabServe(ctx, cfg, dbURL, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	touched := func(res *serve.CycleResult) {
		t.Helper()
		if res.Power == nil {
			t.Fatal("power saving is on but the cycle has no power report")
		}
		for _, a := range res.Power.Decision.Actions {
			t.Logf("cycle action: %s %s: %s", a.Op, a.Node, a.Reason)
			if a.Node == "gpu1" {
				t.Fatalf("serve acted on gpu1, which runs job %d: %s %s", busy, a.Op, a.Reason)
			}
		}
		if st := sinfoState(e, "gpu1"); st != "mix" && st != "alloc" {
			t.Fatalf("gpu1 is %q, want it still running job %d (mix)", st, busy)
		}
	}

	// 1. The idle node goes down through Slurm.
	res, err := s.Runner.RunCycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	touched(res)
	if len(res.Power.Applied) != 1 || res.Power.Applied[0].Node != "gpu2" || res.Power.Applied[0].Op != "power-down" || res.Power.Planned {
		t.Fatalf("first cycle: applied %+v (planned %v, refused %v), want gpu2 powered down", res.Power.Applied, res.Power.Planned, res.Power.Failed)
	}
	waitFor(t, 60*time.Second, "sinfo to show gpu2 powered down (idle~)", func() bool { return sinfoState(e, "gpu2") == "idle~" })
	t.Logf("gpu2 after the power-down: sinfo %%t %q", sinfoState(e, "gpu2"))
	cl, err := s.Client.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes {
		if n.Name == "gpu2" {
			t.Logf("gpu2 as slurmrestd reports it: %v", n.State)
			if !strings.Contains(strings.Join(n.State, ","), "POWERED_DOWN") {
				t.Errorf("gpu2's REST state %v, want POWERED_DOWN", n.State)
			}
		}
	}
	// With the node off and nothing pending, the next cycle changes nothing.
	if res, err = s.Runner.RunCycle(ctx); err != nil {
		t.Fatal(err)
	}
	touched(res)
	if len(res.Power.Decision.Actions) != 0 {
		t.Fatalf("second cycle: actions %+v, want none", res.Power.Decision.Actions)
	}

	// 2. A job that needs gpu2 brings it back and runs.
	job := e.Submit(t, "bob", "-J", tag+"-needs-gpu2", "-p", e.Partition, "-w", "gpu2", "--gres=gpu:1", "-t", "2", "--wrap", "sleep 2")
	if res, err = s.Runner.RunCycle(ctx); err != nil {
		t.Fatal(err)
	}
	touched(res)
	by := "Slurm's ResumeProgram (slurmctld allocated the job to the powered-down node first)"
	for _, a := range res.Power.Applied {
		if a.Node == "gpu2" && a.Op == "power-up" {
			by = "Fairway: " + a.Reason
		}
	}
	t.Logf("job %d: gpu2 powered up by %s; the cycle saw %d pending node demand, lack %d", job, by,
		res.Power.Decision.PendingNodes, res.Power.Decision.Lack)
	// A job on a node slurmctld resumes is CONFIGURING until the node
	// registers (ResumeTimeout, 60s in the lab) and slurmctld's periodic
	// check (every 30s) sees it: the wait covers both, on a busy machine.
	if !waitUntil(3*time.Minute, func() bool {
		st := jobState(e, job)
		return st == "RUNNING" || st == "COMPLETING" || st == "COMPLETED" || st == ""
	}) {
		t.Fatalf("job %d did not run on gpu2 within 3m:\n%s", job, powerDiagnosis(e, "gpu2", job))
	}
	if st := e.WaitState(t, job, 90*time.Second, "COMPLETED", "FAILED"); st != "COMPLETED" {
		t.Fatalf("job %d ended %s, want COMPLETED", job, st)
	}
	var seen []string // each state gpu2 went through, with its time
	prev := "none"    // no state sinfo prints: the first reading is recorded
	if !waitUntil(60*time.Second, func() bool {
		st := sinfoState(e, "gpu2")
		if st != prev {
			seen, prev = append(seen, time.Now().Format("15:04:05")+" "+st), st
		}
		return st == "idle"
	}) {
		t.Fatalf("gpu2 not powered and idle 60s after job %d ended; its states: %s\n%s", job, strings.Join(seen, ", "), powerDiagnosis(e, "gpu2", job))
	}

	// 3. The decisions are on record, with their reasons.
	acts, err := s.Store.PowerActions(ctx, e.Cluster, "", time.Time{}, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	downs := 0
	for _, a := range acts {
		t.Logf("power_action: %s %s %q error=%q lack=%d dry_run=%v", a.Action, a.Node, a.Reason, a.Error, a.LackNodes, a.Planned)
		if a.Node == "gpu1" {
			t.Errorf("a power action names gpu1: %+v", a)
		}
		if a.Action == "power-down" && a.Node == "gpu2" && a.Error == "" && !a.Planned && a.Reason != "" {
			downs++
		}
	}
	if downs == 0 {
		t.Errorf("no recorded power-down of gpu2 among %d actions", len(acts))
	}
}
