package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// golden compares got with testdata/name, or rewrites the file under
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test -update:\n%s", path, diff)
	}
}

// TestGolden_SmallSynthetic simulates the small synthetic workload under
// every policy and compares the metrics, and the default policy's whole schedule,
// with the golden files. It predicts with tsafrir, a published method that
// will not change, so the files move only when the simulator or a policy
// does.
func TestGolden_SmallSynthetic(t *testing.T) {
	jobs, cluster := smSynth(t)
	var metrics bytes.Buffer
	fmt.Fprintln(&metrics, "policy jobs avg_jct_s median_jct_s p95_jct_s avg_wait_s p95_wait_s avg_bsld makespan_s utilization jain jain_windows max_rho p95_rho user_p95_wait_spread_s preemptions cycles")
	for _, name := range policy.Compared() {
		res, err := Run(jobs, smConfig(t, cluster, name, "tsafrir"))
		if err != nil {
			t.Fatal(err)
		}
		m := Measure(res, MetricsParams{})
		fmt.Fprintf(&metrics, "%s %d %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %d %.6g %.6g %.6g %d %d\n", m.Name, m.Jobs, m.AvgJCT, m.MedianJCT, m.P95JCT,
			m.AvgWait, m.P95Wait, m.AvgBSLD, m.Makespan, m.Utilization, m.Jain, m.JainWindows, m.MaxRho, m.P95Rho, m.UserP95WaitSpread, m.Preemptions, m.Cycles)
		if name != policy.Default {
			continue
		}
		var sched bytes.Buffer
		fmt.Fprintln(&sched, "id user gpus submit_s start_s end_s run_s limit_s")
		for _, j := range res.Jobs {
			fmt.Fprintf(&sched, "%d %s %d %.0f %.0f %.0f %.0f %.0f\n", j.ID, j.User, j.Units, j.Submit.Sub(res.Jobs[0].Submit).Seconds(),
				j.Start.Sub(res.Jobs[0].Submit).Seconds(), j.End.Sub(res.Jobs[0].Submit).Seconds(), j.Run.Seconds(), j.Limit.Seconds())
		}
		golden(t, "synth300_"+policy.Default+"_schedule.golden", sched.Bytes())
	}
	golden(t, "synth300_metrics.golden", metrics.Bytes())
}

// TestLearned_DefaultReplaysFairSJF checks that the learned family with
// its defaults (fair-sjf's point) schedules the small synthetic workload
// exactly as fair-sjf does: same metrics, same start of every job.
func TestLearned_DefaultReplaysFairSJF(t *testing.T) {
	jobs, cluster := smSynth(t)
	run := func(name string) *Result {
		res, err := Run(jobs, smConfig(t, cluster, name, "tsafrir"))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want, got := run("fair-sjf"), run("learned")
	if len(want.Jobs) != len(got.Jobs) {
		t.Fatalf("%d jobs, fair-sjf %d", len(got.Jobs), len(want.Jobs))
	}
	for i := range want.Jobs {
		if w, g := want.Jobs[i], got.Jobs[i]; w.ID != g.ID || !w.Start.Equal(g.Start) {
			t.Fatalf("job %d starts at %v under learned, %v under fair-sjf", g.ID, g.Start, w.Start)
		}
	}
	wm, gm := Measure(want, MetricsParams{}), Measure(got, MetricsParams{})
	wm.Name = gm.Name
	if diff := cmp.Diff(wm, gm); diff != "" {
		t.Errorf("metrics (-fair-sjf +learned):\n%s", diff)
	}
}
