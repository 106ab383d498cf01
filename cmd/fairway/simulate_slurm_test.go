package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy/sim"
)

// labConfig is the lab's scontrol show config, captured for slurmctl's
// parser tests.
const labConfig = "../../slurmctl/testdata/config/scontrol-show-config-22.05.8.txt"

// TestSimulate_SlurmConfig: --slurm-config replays the slurm policy with
// the saved config's weights beside --policies; with the lab's fair-share
// weight it schedules otherwise than fifo (the slurm policy with no
// weights is fifo).
func TestSimulate_SlurmConfig(t *testing.T) {
	out, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", labConfig, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Policies) != 2 || rep.Policies[0].Name != "fifo" || rep.Policies[1].Name != "slurm" {
		t.Fatalf("policies %+v: want fifo, then slurm", rep.Policies)
	}
	if f, s := rep.Policies[0], rep.Policies[1]; f.Jobs != s.Jobs || f.AvgWait == s.AvgWait {
		t.Errorf("fifo %+v, slurm %+v: want the same jobs, waited for differently", f, s)
	}
	// The lab's SchedulerParameters bf_interval=5: every policy is
	// backfilled every 5 s, and the header says so.
	if rep.BackfillInterval != 5 {
		t.Errorf("backfill interval %v s, want the config's bf_interval, 5", rep.BackfillInterval)
	}
	text, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", labConfig)
	if err != nil || !strings.Contains(text, ", EASY backfill every 5s (bf_interval), predictor none") {
		t.Errorf("err %v; the header does not name the backfill interval:\n%s", err, text)
	}
	plain, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1")
	if err != nil || !strings.Contains(plain, ", EASY backfill, predictor none") {
		t.Errorf("err %v; without --slurm-config, backfill at every point:\n%s", err, plain)
	}
}

func TestSimulate_SlurmConfigRefused(t *testing.T) {
	dir := t.TempDir()
	basic := filepath.Join(dir, "basic.txt")
	if err := os.WriteFile(basic, []byte("PriorityType            = priority/basic\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("PriorityType            = priority/multifactor\nPriorityMaxAge = soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.txt"), "--slurm-config"},
		{basic, "priority/basic"},
		{bad, "PriorityMaxAge"},
	} {
		_, err := runApp(t, "simulate", "--policies", "fifo", "--slurm-config", tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.path, err, tc.want)
		}
	}
	// The modes that would replay the slurm row without the site's
	// settings refuse it instead of printing a fifo row named slurm.
	for _, mode := range [][]string{{"--split", "0.7"}, {"--sequences", "2"}, {"--power"}, {"--forecast"}} {
		_, err := runApp(t, append([]string{"simulate", "--policies", "fifo", "--slurm-config", labConfig}, mode...)...)
		if err == nil || !strings.Contains(err.Error(), "--slurm-config: not with "+mode[0]) {
			t.Errorf("%s: err %v, want --slurm-config refused", mode[0], err)
		}
	}
}

// TestSimulate_SlurmConfigUnmodelled: a config with settings the slurm
// policy does not replay (PriorityWeightAssoc, a TRES the simulated GPU
// cluster has no total of) still replays, and says what its slurm row
// leaves out; its GPU weight, which the cluster counts, changes the
// slurm row; the lab's config says nothing.
func TestSimulate_SlurmConfigUnmodelled(t *testing.T) {
	lab, err := os.ReadFile(labConfig)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, old, new string) string {
		t.Helper()
		changed := strings.Replace(string(lab), old, new, 1)
		if changed == string(lab) {
			t.Fatalf("the lab's config has no %q line to change", old)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tres := write("tres.txt", "PriorityWeightTRES      = GRES/gpu=0", "PriorityWeightTRES      = CPU=1000,GRES/gpu=30000,Billing=5")
	assoc := write("assoc.txt", "PriorityWeightAssoc     = 0", "PriorityWeightAssoc     = 100")
	run := func(config string) (sim.Metrics, string) {
		t.Helper()
		args := []string{"simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", config}
		out, err := runApp(t, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var rep sim.Report
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil || len(rep.Policies) != 2 {
			t.Fatalf("not the JSON report of two policies (%v):\n%s", err, out)
		}
		text, err := runApp(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Policies[1], text
	}
	base, text := run(labConfig)
	if strings.Contains(text, "note:") {
		t.Errorf("the lab's config (no TRES weight) gives a note:\n%s", text)
	}
	withTRES, text := run(tres)
	const note = ": the slurm policy does not replay PriorityWeightTRES Billing=5; PriorityWeightTRES cpu=1000 (the simulated cluster has no total of it): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+tres+note) {
		t.Errorf("want the note %q:\n%s", note, text)
	}
	if withTRES.AvgWait == base.AvgWait {
		t.Errorf("slurm with GRES/gpu=30000 waits %v s on average, as without: the GPU weight is not replayed", withTRES.AvgWait)
	}
	_, text = run(assoc)
	if !strings.Contains(text, "note: --slurm-config "+assoc+": the slurm policy does not replay PriorityWeightAssoc = 100: its row leaves them out") {
		t.Errorf("no note of PriorityWeightAssoc:\n%s", text)
	}
}
