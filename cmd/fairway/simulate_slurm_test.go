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

// labPartitions is the lab's scontrol show partition -o, captured beside it.
const labPartitions = "../../slurmctl/testdata/config/scontrol-show-partition-o-22.05.8.txt"

// TestSimulate_SlurmConfig: --slurm-config replays the slurm policy with
// the saved config's weights beside --policies; with the lab's fair-share
// weight it schedules otherwise than fifo (the slurm policy with no
// weights is fifo).
func TestSimulate_SlurmConfig(t *testing.T) {
	out, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", labConfig, "--slurm-partitions", labPartitions, "--json")
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
	text, err := runApp(t, "simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", labConfig, "--slurm-partitions", labPartitions)
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
	// The site's partitions and QOS: only with --slurm-config, and a file
	// that is not what it should be is named.
	badPart := filepath.Join(dir, "part.txt")
	if err := os.WriteFile(badPart, []byte("PartitionName=gpu TRES=cpu=many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badQOS := filepath.Join(dir, "qos.txt")
	if err := os.WriteFile(badQOS, []byte("normal|high\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--slurm-partitions", labPartitions}, "--slurm-partitions: only with --slurm-config"},
		{[]string{"--slurm-qos", badQOS}, "--slurm-qos: only with --slurm-config"},
		{[]string{"--slurm-assoc", badQOS}, "--slurm-assoc: only with --slurm-config"},
		{[]string{"--slurm-config", labConfig, "--slurm-assoc", badQOS}, "--slurm-assoc " + badQOS + ": sacctmgr show associations"},
		{[]string{"--slurm-config", labConfig, "--slurm-partitions", badPart}, "--slurm-partitions " + badPart + ": scontrol show partition -o: partition gpu: TRES cpu"},
		{[]string{"--slurm-config", labConfig, "--slurm-partitions", filepath.Join(dir, "none.txt")}, "--slurm-partitions: open"},
		{[]string{"--slurm-config", labConfig, "--slurm-qos", badQOS}, "--slurm-qos " + badQOS + ": sacctmgr show qos: QOS normal Priority \"high\""},
	} {
		_, err := runApp(t, append([]string{"simulate", "--policies", "fifo"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one with %q", tc.args, err, tc.want)
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
// policy does not replay (PriorityWeightAssoc without --slurm-assoc, a TRES the simulated GPU
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
	assoc := write("assoc.txt", "PriorityWeightAssoc     = 0", "PriorityWeightAssoc     = 100000")
	run := func(config string, more ...string) (sim.Metrics, string) {
		t.Helper()
		args := append([]string{"simulate", "--policies", "fifo", "--predictor", "none", "--parallel", "1", "--slurm-config", config}, more...)
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
	// The lab weighs partitions (gpuhi has PriorityJobFactor 2), which
	// scontrol show config does not show: without its partitions the
	// note says so, with them (--slurm-partitions) nothing is left out.
	_, text := run(labConfig)
	const partNote = ": the slurm policy does not replay PriorityWeightPartition = 2000 with the partitions' PriorityJobFactor (every partition counts as 1; give --slurm-partitions): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+labConfig+partNote) {
		t.Errorf("want the note %q:\n%s", partNote, text)
	}
	base, text := run(labConfig, "--slurm-partitions", labPartitions)
	if strings.Contains(text, "note:") {
		t.Errorf("the lab's config and partitions (no TRES weight) give a note:\n%s", text)
	}
	withTRES, text := run(tres, "--slurm-partitions", labPartitions)
	// With the lab's partitions, their totals are what a request is
	// divided by (cpu=16, gres/gpu=8), CPUs included: only billing is
	// left out.
	const note = ": the slurm policy does not replay PriorityWeightTRES Billing=5: its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+tres+note) {
		t.Errorf("want the note %q:\n%s", note, text)
	}
	// Without them, the totals are the simulated cluster's, 8 × 8 GPUs:
	// it has no CPU total, so the CPU weight is named too.
	_, text = run(tres)
	const gpuOnly = ": the slurm policy does not replay PriorityWeightTRES Billing=5; PriorityWeightPartition = 2000 with the partitions' PriorityJobFactor (every partition counts as 1; give --slurm-partitions); PriorityWeightTRES cpu=1000 (no partition has a total of it): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+tres+gpuOnly) {
		t.Errorf("want the note %q:\n%s", gpuOnly, text)
	}
	if withTRES.AvgWait == base.AvgWait {
		t.Errorf("slurm with GRES/gpu=30000 waits %v s on average, as without: the GPU weight is not replayed", withTRES.AvgWait)
	}
	// A QOS weight needs the QOS priorities (sacctmgr), which the config
	// does not show.
	qosConfig := write("qos.txt", "PriorityWeightQOS       = 0", "PriorityWeightQOS       = 500")
	_, text = run(qosConfig, "--slurm-partitions", labPartitions)
	const qosNote = ": the slurm policy does not replay PriorityWeightQOS = 500 with the QOS priorities (every QOS counts as 0; give --slurm-qos): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+qosConfig+qosNote) {
		t.Errorf("want the note %q:\n%s", qosNote, text)
	}
	qos := filepath.Join(t.TempDir(), "qos.txt")
	if err := os.WriteFile(qos, []byte("normal|0\nhigh|10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, text = run(qosConfig, "--slurm-partitions", labPartitions, "--slurm-qos", qos); strings.Contains(text, "note:") {
		t.Errorf("with the QOS priorities, a note:\n%s", text)
	}
	// An association weight needs the associations' priorities
	// (sacctmgr) too. With them, the synthetic workload's jobs, which name
	// no account, take their user's one association, and u001's head
	// start changes the slurm row.
	noAssoc, text := run(assoc, "--slurm-partitions", labPartitions)
	const assocNote = ": the slurm policy does not replay PriorityWeightAssoc = 100000 with the associations' priorities (every association counts as 0; give --slurm-assoc): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+assoc+assocNote) {
		t.Errorf("want the note %q:\n%s", assocNote, text)
	}
	assocs := filepath.Join(t.TempDir(), "assoc.txt")
	if err := os.WriteFile(assocs, []byte("root|||\nlab|||\nlab|u001||1000\nlab|u002||\nlab|u001|gpuhi|2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withAssoc, text := run(assoc, "--slurm-partitions", labPartitions, "--slurm-assoc", assocs)
	const perPartition = ": the slurm policy does not replay the priorities of 1 partition-specific association (their jobs take their user's association's): its row leaves them out"
	if !strings.Contains(text, "note: --slurm-config "+assoc+perPartition) {
		t.Errorf("want the note %q:\n%s", perPartition, text)
	}
	if withAssoc.AvgWait == noAssoc.AvgWait {
		t.Errorf("slurm with u001's association at priority 1000 waits %v s on average, as without: the association factor is not replayed", withAssoc.AvgWait)
	}
}
