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
}

// TestSimulate_SlurmConfigUnmodelled: a config whose TRES weights (or
// another setting the slurm policy does not replay) are in effect still
// replays, and says what its slurm row leaves out; the lab's says nothing.
func TestSimulate_SlurmConfigUnmodelled(t *testing.T) {
	lab, err := os.ReadFile(labConfig)
	if err != nil {
		t.Fatal(err)
	}
	tres := strings.Replace(string(lab), "PriorityWeightTRES      = GRES/gpu=0", "PriorityWeightTRES      = CPU=1000,GRES/gpu=3000", 1)
	if tres == string(lab) {
		t.Fatal("the lab's config has no PriorityWeightTRES line to change")
	}
	path := filepath.Join(t.TempDir(), "tres.txt")
	if err := os.WriteFile(path, []byte(tres), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = ": the slurm policy does not replay PriorityWeightTRES = CPU=1000,GRES/gpu=3000: its row leaves them out"
	out, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", path)
	if err != nil || !strings.Contains(out, "note: --slurm-config "+path+note) || !strings.Contains(out, "slurm") {
		t.Errorf("err %v; want the slurm row and the note:\n%s", err, out)
	}
	out, err = runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", labConfig)
	if err != nil || strings.Contains(out, "note:") {
		t.Errorf("err %v; the lab's config (no TRES weight) gives a note:\n%s", err, out)
	}
}
