package sim

import (
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/texttest"
)

func TestReport_WriteText(t *testing.T) {
	rep := &Report{Trace: "KTH", Format: "swf", Jobs: 10, Cluster: ClusterInfo{Nodes: 1, PerNode: 100, Unit: "cpus"},
		Backfill: NoBackfill, Predictor: "tsafrir", Load: 1, OwnLoad: 0.7, OfferedLoad: 0.7,
		LeftOut: map[string]int{"no run time": 2}, Skipped: map[string]int{"no run time": 1, "too wide": 1},
		Policies: []Metrics{{Name: "fifo", AvgJCT: 100, Utilization: 0.5, Jain: 0.9}, {Name: "fair-qssf", AvgJCT: 80, Preemptions: 4}}}
	for _, tc := range []struct {
		name       string
		edit       func(*Report)
		preempt    map[string]bool
		want, none []string
	}{
		{"trace, no preemption", func(*Report) {}, nil, []string{
			"KTH (swf): 10 jobs on 1 × 100 cpus, no backfill, predictor tsafrir\n",
			"offered load 0.70 (the trace's own)\n",
			"left out: ", "3 no run time", "1 too wide",
			"fifo          100",
			"fair-qssf           80"},
			[]string{"*"}},
		{"preemptive, scaled load", func(r *Report) { r.Backfill, r.Load, r.OfferedLoad = EASY, 1.5, 1.05 }, map[string]bool{"fair-qssf": true},
			[]string{"EASY backfill", "offered load 1.05: 1.5 × the trace's own 0.70\n", "fair-qssf*",
				"* preemptive: requeued and resumed from a checkpoint at no cost, 4 preemptions\n"},
			[]string{"fifo*"}},
		{"synthetic with nothing left out", func(r *Report) { r.Format, r.LeftOut, r.Skipped = "synthetic", nil, nil }, nil,
			nil, []string{"left out", "without a time limit"}},
		{"jobs without a limit cut", func(r *Report) { r.CutAtLimit = 3 }, nil,
			[]string{"warning: 3 jobs without a time limit ran longer than 7 days; the replay cuts them there (as timeouts), where Slurm let them run\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *rep
			tc.edit(&r)
			var b strings.Builder
			if err := r.WriteText(&b, tc.preempt); err != nil {
				t.Fatal(err)
			}
			texttest.Check(t, b.String(), tc.want, tc.none)
		})
	}
}
