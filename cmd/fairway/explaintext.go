package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
)

// writeExplanation writes ex for people: the job's place and score parts (for a
// learned policy, a table of each feature's contribution to its key), its
// association's fair-share state, what the job ahead leads by and what
// would move it (WhatMovesIt), its start forecast and the last decision
// serve logged for it.
func writeExplanation(w io.Writer, ex *serve.Explanation) error {
	fmt.Fprintf(w, "job %d (user %s, account %s): rank %d of %d pending under %s\n", ex.JobID, shown(ex.User), shown(ex.Account), ex.Rank, ex.Of, ex.Policy)
	if ex.PolicyFile != nil {
		fmt.Fprintf(w, "  from %s\n", ex.PolicyFile)
	}
	fmt.Fprintf(w, "  waiting %s", time.Duration(ex.WaitingS*float64(time.Second)).Round(time.Second))
	if ex.PredictedS != nil {
		fmt.Fprintf(w, ", predicted run %s", time.Duration(*ex.PredictedS*float64(time.Second)).Round(time.Second))
	} else {
		fmt.Fprint(w, ", no predicted run time (no history to predict from: ranked by its time limit)")
	}
	if ex.LimitS > 0 {
		fmt.Fprintf(w, " (time limit %s)", time.Duration(ex.LimitS*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintln(w)
	if len(ex.Contributions) > 0 {
		if err := writeContributions(w, ex.Score, ex.Parts["key"], ex.Contributions); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "  score %.6g, made of:\n", ex.Score)
		for _, k := range sortedKeys(ex.Parts) {
			fmt.Fprintf(w, "    %-18s %.6g\n", k, ex.Parts[k])
		}
	}
	share := 0.0
	if ex.TotalUsage > 0 {
		share = ex.AcctUsage / ex.TotalUsage
	}
	fmt.Fprintf(w, "  fair-share state: account %s has %.0f decayed GPU-s (%.1f%% of the cluster's), raw share %g; %s/%s has %.0f decayed GPU-s, VTC counter %.0f GPU-s\n",
		shown(ex.Account), ex.AcctUsage, 100*share, ex.AcctShare, shown(ex.Account), shown(ex.User), ex.UserUsage, ex.UserCounter)
	if r, ok := ex.Parts["usage_ratio"]; ok {
		fmt.Fprintln(w, "  "+usageRatio(r, ex.UserUsage))
	}
	if ex.Ahead == nil {
		fmt.Fprintln(w, "  nothing is ahead of it: it is next when resources allow")
	} else {
		fmt.Fprintf(w, "  just ahead: job %d (user %s, account %s), score %.6g; it leads by:\n", ex.Ahead.JobID, shown(ex.Ahead.User), shown(ex.Ahead.Account), ex.Ahead.Score)
		for _, k := range sortedKeys(ex.AheadByParts) {
			fmt.Fprintf(w, "    %-18s %+.6g\n", k, ex.AheadByParts[k])
		}
		fmt.Fprintln(w, "  what moves it: "+serve.WhatMovesIt(ex.Ranker(), ex.Parts))
	}
	if st := ex.Start; st != nil {
		writeStart(w, st)
	}
	if ex.Last != nil {
		mode := "written"
		if ex.Last.Planned {
			mode = "dry run"
		}
		fmt.Fprintf(w, "  last logged decision: %s, rank %d, %s=%d (%s)\n", ex.Last.At.Format(time.RFC3339), ex.Last.Rank, ex.Last.Field, ex.Last.Value, mode)
	}
	return nil
}

func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// usageRatio says what the usage_ratio part means. It is Slurm's classic
// fair-share UE/S, whose effective usage inherits the parent's: a user who
// has used nothing gets the account's ratio, and an account that has used
// nothing gets 1. So 1 beside zero usage is "exactly at its share".
func usageRatio(r, userUsage float64) string {
	var s string
	switch {
	case r == 1:
		s = fmt.Sprintf("usage_ratio %.4g: its fair-share usage is exactly its share (Slurm's classic UE/S)", r)
	case r > 1:
		s = fmt.Sprintf("usage_ratio %.4g: its fair-share usage is %.4g times its share (Slurm's classic UE/S), which stretches its key", r, r)
	default:
		s = fmt.Sprintf("usage_ratio %.4g: its fair-share usage is %.4g times its share (Slurm's classic UE/S), which shortens its key", r, r)
	}
	if userUsage == 0 {
		s += ";\n  with no usage of its own it takes its account's ratio, which is 1 for an account that has used nothing"
	}
	return s
}

// writeStart writes a job's start-time forecast and what must happen
// before it, the nearest first (at most 10 of each): running jobs that
// end, jobs ranked ahead that start, and jobs ranked below that backfill
// before it (they start earlier but are not waited for).
func writeStart(w io.Writer, st *serve.StartForecast) {
	if st.Expected == nil {
		fmt.Fprintln(w, "  expected start: never: it asks for more than the ranked partitions have")
		return
	}
	fmt.Fprintf(w, "  expected start: %s (in %s), from predicted run times; with time limits, as squeue --start plans: %s\n",
		st.Expected.Format(time.RFC3339), time.Until(*st.Expected).Round(time.Second), st.LimitBound.Format(time.RFC3339))
	list := func(head string, evs []serve.Event) {
		if len(evs) == 0 {
			return
		}
		fmt.Fprintf(w, "  %s:", head)
		for i, e := range evs {
			if i == 10 {
				fmt.Fprintf(w, " and %d more", len(evs)-10)
				break
			}
			fmt.Fprintf(w, " %d (%s)", e.JobID, e.At.Format("15:04"))
		}
		fmt.Fprintln(w)
	}
	n := len(st.MustEnd)
	list(plural.N(n, "running job", "running jobs")+" must end first", st.MustEnd)
	n = len(st.MustStart)
	list(plural.N(n, "job", "jobs")+" ranked ahead must start first", st.MustStart)
	n = len(st.Backfill)
	list(plural.N(n, "job", "jobs")+" ranked below "+pick(n == 1, "backfills", "backfill")+" before it, in room it cannot use yet", st.Backfill)
}

// pick is one when b, else other.
func pick(b bool, one, other string) string {
	if b {
		return one
	}
	return other
}

// writeContributions writes a key that is a product of powers feature by
// feature: the factor, its exponent and its term of log key, which add up
// to log key; a feature the policy does not use shows "-" for its value.
func writeContributions(w io.Writer, score, key float64, cs []policy.Contribution) error {
	fmt.Fprintf(w, "  score %.6g = -key (the smallest key ranks first); key %.6g, feature by feature:\n", score, key)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    FEATURE\tVALUE\tEXPONENT\tCONTRIBUTION TO LOG KEY")
	sum := 0.0
	for _, c := range cs {
		val := "-"
		if c.Value != nil {
			val = fmt.Sprintf("%.6g", *c.Value)
		}
		term := "0"
		if c.LogKey != 0 {
			term = fmt.Sprintf("%+.4g", c.LogKey)
		}
		sum += c.LogKey
		fmt.Fprintf(tw, "    %s\t%s\t%g\t%s\n", c.Feature, val, c.Exponent, term)
	}
	fmt.Fprintf(tw, "    log key\t\t\t%+.4g\n", sum)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "    (contribution = exponent · ln value; the value of a feature this policy does not use is not computed: -)")
	return err
}
