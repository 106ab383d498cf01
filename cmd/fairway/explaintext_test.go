package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/internal/texttest"
	"github.com/fairway-hpc/fairway/policy"
)

func TestWriteExplanation(t *testing.T) {
	at := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	base := func() *serve.Explanation {
		return &serve.Explanation{Policy: "fair-sjf", JobID: 7, User: "bob", Account: "physics", Rank: 2, Of: 3, Score: 0.25,
			Parts: map[string]float64{"wait": 0.1, "fairshare": 0.15}, WaitingS: 90, PredictedS: ptr(3600.0), LimitS: 7200,
			AcctUsage: 250, TotalUsage: 1000, AcctShare: 60, UserCounter: 40}
	}
	for _, tc := range []struct {
		name       string
		edit       func(*serve.Explanation)
		want, none []string
	}{
		{"next in line", func(*serve.Explanation) {}, []string{
			"job 7 (user bob, account physics): rank 2 of 3 pending under fair-sjf\n",
			"  waiting 1m30s, predicted run 1h0m0s (time limit 2h0m0s)\n",
			"  score 0.25, made of:\n    fairshare          0.15\n    wait               0.1\n",
			"account physics has 250 decayed GPU-s (25.0% of the cluster's), raw share 60; physics/bob has 0 decayed GPU-s, VTC counter 40 GPU-s\n",
			"  nothing is ahead of it: it is next when resources allow\n"},
			[]string{"just ahead", "expected start", "last logged decision", "usage_ratio"}},
		{"behind a job, never starts, logged", func(ex *serve.Explanation) {
			ex.Ahead = &serve.Neighbour{JobID: 3, User: "alice", Account: "chem", Score: 0.5}
			ex.AheadByParts = map[string]float64{"wait": -0.05, "fairshare": 0.3}
			ex.Start = &serve.StartForecast{}
			ex.Last = &accounting.LoggedDecision{At: at, Rank: 2, Field: "site_factor", Value: 900, Planned: true}
		}, []string{
			"  just ahead: job 3 (user alice, account chem), score 0.5; it leads by:\n    fairshare          +0.3\n    wait               -0.05\n",
			"  what moves it: its user's fair-share usage decaying",
			"  expected start: never: it asks for more than the ranked partitions have\n",
			"  last logged decision: 2026-11-02T09:30:00Z, rank 2, site_factor=900 (dry run)\n"},
			[]string{"nothing is ahead"}},
		{"forecast lists at most ten", func(ex *serve.Explanation) {
			lb := at.Add(time.Hour)
			ex.Start = &serve.StartForecast{Expected: &at, LimitBound: &lb}
			for i := range 12 {
				ex.Start.MustEnd = append(ex.Start.MustEnd, serve.Event{JobID: int64(100 + i), At: at})
			}
		}, []string{"with time limits, as squeue --start plans: 2026-11-02T10:30:00Z\n",
			"  12 running jobs must end first: 100 (09:30)", " 109 (09:30) and 2 more\n"},
			[]string{"110 (09:30)", "must start", "backfill"}},
		// A prediction of 0 s is shown: it is what ranked the job.
		{"zero prediction", func(ex *serve.Explanation) { ex.PredictedS = ptr(0.0) },
			[]string{"  waiting 1m30s, predicted run 0s (time limit 2h0m0s)\n"}, []string{"no predicted run time"}},
		{"no prediction", func(ex *serve.Explanation) { ex.PredictedS = nil },
			[]string{"  waiting 1m30s, no predicted run time (no history to predict from: ranked by its time limit) (time limit 2h0m0s)\n"},
			[]string{"predicted run 0s"}},
		// usage_ratio 1 beside no usage is explained, not left to look
		// like a mistake.
		{"usage ratio 1 with no usage", func(ex *serve.Explanation) {
			ex.Parts["usage_ratio"], ex.AcctUsage, ex.TotalUsage = 1, 0, 0
		}, []string{"account physics has 0 decayed GPU-s (0.0% of the cluster's)",
			"  usage_ratio 1: its fair-share usage is exactly its share (Slurm's classic UE/S);\n" +
				"  with no usage of its own it takes its account's ratio, which is 1 for an account that has used nothing\n"}, nil},
		{"usage ratio above 1", func(ex *serve.Explanation) { ex.Parts["usage_ratio"], ex.UserUsage = 2.5, 100 },
			[]string{"  usage_ratio 2.5: its fair-share usage is 2.5 times its share (Slurm's classic UE/S), which stretches its key\n"},
			[]string{"no usage of its own"}},
		// A learned policy from a policy file: the file, and the key
		// feature by feature instead of the raw parts.
		{"learned from a policy file", func(ex *serve.Explanation) {
			ex.Policy = "learned"
			ex.PolicyFile = &serve.PolicyFileInfo{Path: "/etc/fairway/policy.json", TrainedOn: policy.TrainedOn{Cluster: "lab", Jobs: 1200}}
			ex.Parts = map[string]float64{"key": 1800, "log_run": math.Log(3600), "log_age": -math.Log(2), "predicted_run_s": 3600, "limit_s": 7200, "size": 1, "age_factor": 2}
			ex.Score = -1800
			v := func(x float64) *float64 { return &x }
			ex.Contributions = []policy.Contribution{{Feature: "run", Value: v(3600), Exponent: 1, LogKey: math.Log(3600)},
				{Feature: "limit", Value: v(7200)}, {Feature: "size", Value: v(1)}, {Feature: "usage"}, {Feature: "counter"},
				{Feature: "age", Value: v(2), Exponent: -1, LogKey: -math.Log(2)}}
		}, []string{
			"job 7 (user bob, account physics): rank 2 of 3 pending under learned\n  from policy file /etc/fairway/policy.json (trained on cluster lab, 1200 jobs)\n",
			"  score -1800 = -key (the smallest key ranks first); key 1800, feature by feature:\n" +
				"    FEATURE  VALUE  EXPONENT  CONTRIBUTION TO LOG KEY\n" +
				"    run      3600   1         +8.189\n" +
				"    limit    7200   0         0\n" +
				"    size     1      0         0\n" +
				"    usage    -      0         0\n" +
				"    counter  -      0         0\n" +
				"    age      2      -1        -0.6931\n" +
				"    log key                   +7.496\n",
			"(contribution = exponent · ln value; "},
			[]string{"made of", "predicted_run_s"}},
		// Rank 1 with a lower-ranked job that backfills before it: nothing
		// is ahead, and the backfilling job is not said to start first.
		{"first, with a job backfilling before it", func(ex *serve.Explanation) {
			lb := at.Add(time.Hour)
			ex.Rank = 1
			ex.Start = &serve.StartForecast{Expected: &at, LimitBound: &lb, MustEnd: []serve.Event{{JobID: 130, At: at}},
				Backfill: []serve.Event{{JobID: 132, At: at.Add(-time.Hour)}}}
		}, []string{"  nothing is ahead of it: it is next when resources allow\n",
			"  1 running job must end first: 130 (09:30)\n",
			"  1 job ranked below backfills before it, in room it cannot use yet: 132 (08:30)\n"},
			[]string{"must start first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := base()
			tc.edit(ex)
			var b strings.Builder
			if err := writeExplanation(&b, ex); err != nil {
				t.Fatal(err)
			}
			texttest.Check(t, b.String(), tc.want, tc.none)
		})
	}
}

func ptr[T any](v T) *T { return &v }
