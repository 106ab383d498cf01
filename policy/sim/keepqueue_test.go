package sim

import (
	"reflect"
	"testing"
)

// TestRun_KeepsTheStaticQueue: under a static order the EASY queue is kept
// from one scheduling point to the next, arrivals appended, rather than
// built afresh at each (a pass over every pending job, thousands on a big
// machine), and the kept queue schedules every job as a fresh one would.
func TestRun_KeepsTheStaticQueue(t *testing.T) {
	jobs, cluster := bigWorkload(t, 3000, 2000, 1.3, 7)
	for _, tc := range []struct {
		policy string
		// kept is whether arrivals rank behind the queue, so the queue is
		// kept at most points.
		kept bool
	}{
		{"fifo", true},
		{"sjf-limit", false},
		{"f1", false},
		{"slurm", true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			var builds, fresh int
			cfg := smConfig(t, cluster, tc.policy, "fairway")
			cfg.queueBuilds = &builds
			got, err := Run(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg = smConfig(t, cluster, tc.policy, "fairway")
			cfg.rebuildQueue, cfg.queueBuilds = true, &fresh
			want, err := Run(jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Jobs, want.Jobs) || got.Cycles != want.Cycles {
				t.Fatalf("the kept queue scheduled differently from a fresh one (%d cycles, want %d)", got.Cycles, want.Cycles)
			}
			if fresh != want.Cycles || fresh < 500 {
				t.Fatalf("built %d fresh queues in %d cycles: want one per cycle, and at least 500 cycles to judge by", fresh, want.Cycles)
			}
			t.Logf("%d queues built in %d cycles", builds, got.Cycles)
			if tc.kept && builds*10 > got.Cycles {
				t.Fatalf("built the queue afresh at %d of %d cycles: the static queue should be kept at most", builds, got.Cycles)
			}
		})
	}
}
