package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestSimulate_Share: `simulate --share` replays the bundled workload
// with shared GPUs through the one simulator, without backfill, says so,
// and prints what sharing did; sharing cuts the waits of the same replay
// without it.
func TestSimulate_Share(t *testing.T) {
	args := []string{"simulate", "--policies", "fifo,fair-qssf", "--predictor", "none", "--parallel", "1", "--json"}
	var with, without sim.Report
	for _, run := range []struct {
		extra []string
		rep   *sim.Report
	}{{[]string{"--share"}, &with}, {[]string{"--backfill", "none"}, &without}} {
		out, err := runApp(t, append(args, run.extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), run.rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	want := sim.ShareInfo{ShardsPerGPU: 4, Interference: 0.1, UsageSeed: 1, LightFraction: 0.4}
	if with.Share == nil || *with.Share != want || with.Backfill != sim.NoBackfill {
		t.Fatalf("share %+v, backfill %s; want %+v, none", with.Share, with.Backfill, want)
	}
	if without.Share != nil {
		t.Errorf("without --share the report has share settings %+v", without.Share)
	}
	for i, m := range with.Policies {
		s, base := m.Share, without.Policies[i]
		if s == nil || s.Shared == 0 || s.CoLocated == 0 || s.MaxPerGPU < 2 || s.MaxPerGPU > 4 || !(s.Slowdown > 1) || base.Share != nil {
			t.Errorf("%s: share metrics %+v (without --share: %+v)", m.Name, s, base.Share)
			continue
		}
		if !(m.AvgWait < base.AvgWait) {
			t.Errorf("%s: avg wait %.0f s with sharing, %.0f s without", m.Name, m.AvgWait, base.AvgWait)
		}
	}

	out, err := runApp(t, "simulate", "--share", "--share-shards", "2", "--share-interference", "0.3", "--share-seed", "7", "--share-light", "0.5",
		"--policies", "fifo", "--predictor", "none", "--parallel", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"8 × 8 gpus, no backfill, predictor none\n",
		"GPU sharing: 2 shards per GPU, interference β 0.3; GPU use drawn by the usage model (seed 7, 0.5 of job templates light)\n",
		"\nGPU sharing (util above counts a shard job as one GPU; these count GPU time):\n",
		"policy  shared jobs  co-located  slowdown  alloc util  compute util  max jobs/GPU  mem oversub"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(f) != 8 || f[0] != "fifo" || f[6] != "2" {
		t.Errorf("last line %q: want fifo's sharing, at most 2 jobs a GPU", lines[len(lines)-1])
	}
}

func TestSimulate_ShareBadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--share-shards", "8"}, "--share-shards: only with --share"},
		{[]string{"--share-interference", "0.2"}, "--share-interference: only with --share"},
		{[]string{"--share", "--share-shards", "1"}, "--share-shards 1: want at least 2"},
		{[]string{"--share", "--share-interference", "-0.5"}, "--share-interference -0.5: want a finite number >= 0"},
		{[]string{"--share", "--share-light", "1.5"}, "--share-light 1.5: want a fraction > 0 and <= 1"},
		{[]string{"--share", "--backfill", "easy"}, "--backfill easy: not with --share"},
		{[]string{"--share", "--preempt", "tiresias"}, "--share: not with --preempt"},
		{[]string{"--share", "--partitions", "a:nodes=8,per-node=8"}, "--share: not with --partitions"},
		{[]string{"--share", "--power"}, "--share: not with --power"},
		{[]string{"--share", "--forecast"}, "--share: not with --forecast"},
		{[]string{"--share", "--split", "0.7"}, "--share: not with --split"},
		{[]string{"--share", "--suite"}, "--share: not with --suite"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
