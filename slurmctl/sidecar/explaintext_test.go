package sidecar

import (
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/texttest"
)

func TestWhatMovesIt_NamesOnlyThePolicysOwnLevers(t *testing.T) {
	for _, tc := range []struct {
		policy      string
		want, never string
	}{
		{"fair-sjf", "fair-share usage decaying", "starvation guard"},
		{"fair-qssf", "starvation guard (24 h)", "overtakes fresher jobs"},
		{"fifo", "score parts above", "starvation guard"},
	} {
		got := WhatMovesIt(tc.policy)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.never) {
			t.Errorf("%s: %q, want it to say %q and never %q", tc.policy, got, tc.want, tc.never)
		}
	}
}

func TestExplanation_WriteText(t *testing.T) {
	at := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	base := func() *Explanation {
		return &Explanation{Policy: "fair-sjf", JobID: 7, User: "bob", Account: "physics", Rank: 2, Of: 3, Score: 0.25,
			Parts: map[string]float64{"wait": 0.1, "fairshare": 0.15}, WaitingS: 90, PredictedS: 3600, LimitS: 7200,
			AcctUsage: 250, TotalUsage: 1000, AcctShare: 60, UserCounter: 40}
	}
	for _, tc := range []struct {
		name       string
		edit       func(*Explanation)
		want, none []string
	}{
		{"next in line", func(*Explanation) {}, []string{
			"job 7 (user bob, account physics): rank 2 of 3 pending under fair-sjf\n",
			"  waiting 1m30s, predicted run 1h0m0s (time limit 2h0m0s)\n",
			"  score 0.25, made of:\n    fairshare          0.15\n    wait               0.1\n",
			"account physics has 250 decayed GPU-s (25.0% of the cluster's), raw share 60; physics/bob VTC counter 40 GPU-s\n",
			"  nothing is ahead of it: it is next when resources allow\n"},
			[]string{"just ahead", "expected start", "last logged decision"}},
		{"behind a job, never starts, logged", func(ex *Explanation) {
			ex.Ahead = &Neighbour{JobID: 3, User: "alice", Account: "chem", Score: 0.5}
			ex.AheadByParts = map[string]float64{"wait": -0.05, "fairshare": 0.3}
			ex.Start = &StartForecast{}
			ex.Last = &accounting.LoggedDecision{At: at, Rank: 2, Field: "site_factor", Value: 900, DryRun: true}
		}, []string{
			"  just ahead: job 3 (user alice, account chem), score 0.5; it leads by:\n    fairshare          +0.3\n    wait               -0.05\n",
			"  what moves it: its user's fair-share usage decaying",
			"  expected start: never: it asks for more than the ranked partitions have\n",
			"  last logged decision: 2026-11-02T09:30:00Z, rank 2, site_factor=900 (dry run)\n"},
			[]string{"nothing is ahead"}},
		{"forecast lists at most ten", func(ex *Explanation) {
			lb := at.Add(time.Hour)
			ex.Start = &StartForecast{Expected: &at, LimitBound: &lb}
			for i := range 12 {
				ex.Start.MustEnd = append(ex.Start.MustEnd, Event{JobID: int64(100 + i), At: at})
			}
		}, []string{"with time limits, as squeue --start plans: 2026-11-02T10:30:00Z\n",
			"  12 jobs must end first: 100 (09:30)", " 109 (09:30) and 2 more\n"},
			[]string{"110 (09:30)", "must start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := base()
			tc.edit(ex)
			var b strings.Builder
			if err := ex.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			texttest.Check(t, b.String(), tc.want, tc.none)
		})
	}
}
