package slurmctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{in: "", want: nil},
		{in: "None assigned", want: nil},
		{in: "gpu1", want: []string{"gpu1"}},
		{in: "gpu[1-2]", want: []string{"gpu1", "gpu2"}},
		{in: "gpu[1-3,7],cpu1", want: []string{"gpu1", "gpu2", "gpu3", "gpu7", "cpu1"}},
		{in: "n[08-10]", want: []string{"n08", "n09", "n10"}},
		{in: "r[1-2]n[1-2]", want: []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{in: "gpu[2-1]", err: "want N or N-M"},
		{in: "gpu[1-2", err: "unbalanced"},
		{in: "gpu1]", err: "unbalanced"},
		{in: "a,,b", err: "empty host name"},
		{in: "n[1-999999999]", err: "more than"},
	}
	for _, tc := range tests {
		got, err := ExpandHostlist(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ExpandHostlist(%q): err %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ExpandHostlist(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestNode_Power(t *testing.T) {
	tests := []struct {
		state  []string
		power  NodePower
		busy   bool
		usable bool
	}{
		{[]string{"IDLE"}, NodeOn, false, true},
		{[]string{"IDLE", "POWERED_DOWN"}, NodeOff, false, true},
		{[]string{"IDLE", "POWER_DOWN"}, NodePoweringDown, false, true},
		{[]string{"IDLE", "POWERING_DOWN"}, NodePoweringDown, false, true},
		{[]string{"IDLE", "NOT_RESPONDING", "POWERING_UP"}, NodePoweringUp, false, false},
		{[]string{"MIXED"}, NodeOn, true, true},
		{[]string{"ALLOCATED", "POWERING_UP"}, NodePoweringUp, true, true},
		// POWER_UP asked (scontrol), before the power-save thread resumes it.
		{[]string{"IDLE", "POWERED_DOWN", "POWER_UP"}, NodePoweringUp, false, true},
		{[]string{"IDLE", "DRAIN", "POWERED_DOWN"}, NodeOff, false, false},
		{[]string{"DOWN", "POWERED_DOWN"}, NodeOff, false, false},
	}
	for _, tc := range tests {
		n := Node{Name: "n", State: tc.state}
		if p, b, u := n.Power(), n.Busy(), n.UsableWhenPowered(); p != tc.power || b != tc.busy || u != tc.usable {
			t.Errorf("%v: power %d busy %v usable %v, want %d %v %v", tc.state, p, b, u, tc.power, tc.busy, tc.usable)
		}
	}
}

// TestJobs_NodeList reads the nodes of running jobs (22.05 and newer) and
// the backfill plan's nodes of pending ones (scheduled_nodes, v0.0.40+)
// from captured answers.
func TestJobs_NodeList(t *testing.T) {
	jobs, _, err := parseJobs(fixture(t, "jobs.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, j := range jobs {
		if j.State == policy.StateRunning {
			running++
			if len(j.NodeList) == 0 {
				t.Errorf("22.05 running job %d: no nodes", j.ID)
			}
		}
		if j.Pending() && len(j.NodeList) != 0 {
			t.Errorf("22.05 pending job %d: nodes %v, want none (v0.0.38 has no scheduled_nodes)", j.ID, j.NodeList)
		}
	}
	if running == 0 {
		t.Fatal("no running job in the 22.05 capture")
	}
	checkHosts(t, jobs)
	b, err := os.ReadFile(filepath.Join(shareddata.Captures(t), "slurm-24.11.7", "v0.0.42", "jobs.json"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err = parseJobs(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][]string{}
	for _, j := range jobs {
		if j.ID == 6 || j.ID == 8 || j.ID == 13 || j.ID == 14 || j.ID == 16 {
			got[j.ID] = j.NodeList
		}
	}
	want := map[int64][]string{6: {"gpu1"}, 8: {"gpu2"}, 13: {"gpu2"}, 14: {"gpu1"}, 16: nil}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("24.11 node lists (-want +got):\n%s", d)
	}
	checkHosts(t, jobs)
	for _, v := range []string{"v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"} {
		b, err := os.ReadFile(filepath.Join(shareddata.Captures(t), "slurm-26.05.3", v, "jobs.json"))
		if err != nil {
			t.Fatal(err)
		}
		jobs, _, err := parseJobs(b)
		if err != nil {
			t.Fatalf("26.05.3 %s: %v", v, err)
		}
		checkHosts(t, jobs)
	}
}

// checkHosts: a job that started keeps Slurm's host list as it came
// (policy.Job.Hosts, what the accounting database stores), naming its
// NodeList; a pending one, whose nodes are only the backfill plan's, none.
func checkHosts(t *testing.T, jobs []Job) {
	t.Helper()
	started := 0
	for _, j := range jobs {
		if j.Pending() || len(j.NodeList) == 0 {
			if j.Hosts != "" {
				t.Errorf("job %d (%s, nodes %v): hosts %q, want none", j.ID, j.State, j.NodeList, j.Hosts)
			}
			continue
		}
		started++
		h, err := ExpandHostlist(j.Hosts)
		if err != nil || !slices.Equal(h, j.NodeList) {
			t.Errorf("job %d: hosts %q expand to %v (%v), want its nodes %v", j.ID, j.Hosts, h, err, j.NodeList)
		}
	}
	if started == 0 {
		t.Error("no started job in the capture")
	}
}

func TestParseScheduledNodes(t *testing.T) {
	got, err := parseScheduledNodes([]byte("12 gpu[1-2]\n13 (null)\n14 N/A\n15\n16 gpu2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[int64][]string{12: {"gpu1", "gpu2"}, 16: {"gpu2"}}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"x gpu1\n", "12 gpu1 extra\n", "12 gpu[1\n"} {
		if _, err := parseScheduledNodes([]byte(bad)); err == nil {
			t.Errorf("parseScheduledNodes(%q): no error", bad)
		}
	}
}

// showNodeRunner answers `scontrol show node -o N` with show and records
// every command; other commands print nothing.
type showNodeRunner struct {
	show  string
	calls []string
}

func (r *showNodeRunner) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, []byte, error) {
	r.calls = append(r.calls, strings.Join(append([]string{name}, args...), " "))
	if len(args) > 1 && args[0] == "show" {
		return []byte(r.show), nil, nil
	}
	return nil, nil, nil
}

func TestPowerWriter_SetPower(t *testing.T) {
	r := &fakeRunner{}
	w, err := NewPowerWriter(PowerConfig{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPower(t.Context(), "gpu2", false); err != nil {
		t.Fatal(err)
	}
	want := []string{"scontrol update nodename=gpu2 state=POWER_DOWN"}
	if d := cmp.Diff(want, r.calls); d != "" {
		t.Errorf("commands (-want +got):\n%s", d)
	}
	// A host list, an injected setting or a name scontrol would read as an
	// option (show node -o NAME) is refused before any command runs.
	for _, bad := range []string{"gpu[1-2]", "gpu1 state=DOWN", "gpu1,gpu2", "", "-Mother", "--local"} {
		for _, up := range []bool{false, true} {
			if err := w.SetPower(t.Context(), bad, up); err == nil {
				t.Errorf("SetPower(%q, %v): no error", bad, up)
			}
		}
	}
	if len(r.calls) != 1 {
		t.Errorf("%d commands run, want 1", len(r.calls))
	}
	// scontrol's refusal is the error, as 22.05 says it with power saving off.
	r.stderr, r.err = []byte("slurm_update error: Invalid node state specified\n"), exitError(t)
	err = w.SetPower(t.Context(), "gpu2", false)
	if err == nil || !strings.Contains(err.Error(), "Invalid node state specified") {
		t.Errorf("refused power-down: err %v, want scontrol's message", err)
	}
}

// A power-up goes only to a node still powered down and not yet resuming:
// slurmctld takes POWER_UP on a node powering up as a new request and
// waits for a later boot (see SetPower).
func TestPowerWriter_SetPowerUp(t *testing.T) {
	const up = "scontrol update nodename=gpu2 state=POWER_UP"
	const show = "scontrol show node -o gpu2"
	line := func(state string) string {
		return "NodeName=gpu2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=8 CPUTot=8 State=" + state +
			" ThreadsPerCore=1 Partitions=gpu,gpuhi Reason=State=IDLE+POWERED_DOWN [root@2026-11-26T21:00:00]\n"
	}
	for _, tc := range []struct {
		name, show string
		sent       bool   // POWER_UP sent
		err        string // "" none; ErrPowerUpNotSent is checked by notSent
		notSent    bool
	}{
		{name: "powered down", show: line("IDLE+POWERED_DOWN"), sent: true},
		{name: "cloud node powered down", show: line("IDLE+CLOUD+POWERED_DOWN"), sent: true},
		{name: "powering up for a job", show: line("MIXED+POWERING_UP"), notSent: true},
		{name: "asked already", show: line("IDLE+POWERED_DOWN+POWER_UP"), notSent: true},
		{name: "up", show: line("IDLE"), notSent: true},
		// Reason (free text) says POWERED_DOWN; the node's State does not.
		{name: "reason not state", show: line("ALLOCATED"), notSent: true},
		{name: "another node only", show: strings.Replace(line("IDLE+POWERED_DOWN"), "gpu2", "gpu21", 1), err: "not in the output"},
		{name: "no state", show: "NodeName=gpu2 Arch=x86_64\n", err: "no State field"},
		{name: "nothing", show: "", err: "not in the output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &showNodeRunner{show: tc.show}
			w, err := NewPowerWriter(PowerConfig{Runner: r})
			if err != nil {
				t.Fatal(err)
			}
			err = w.SetPower(t.Context(), "gpu2", true)
			want := []string{show}
			if tc.sent {
				want = append(want, up)
			}
			if d := cmp.Diff(want, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			switch {
			case tc.sent:
				if err != nil {
					t.Errorf("err %v, want none", err)
				}
			case tc.notSent:
				if !errors.Is(err, ErrPowerUpNotSent) {
					t.Errorf("err %v, want ErrPowerUpNotSent", err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), tc.err) || errors.Is(err, ErrPowerUpNotSent) {
					t.Errorf("err %v, want one saying %q", err, tc.err)
				}
			}
		})
	}
}
