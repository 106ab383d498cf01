package sidecar

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
)

// WriteText writes for people what the cycle decided under policy, best
// first: each ranked job with its prediction, score and the value of field
// decided, then the rewriting (RewriteReport.WriteText).
func (res *CycleResult) WriteText(w io.Writer, policyName, field string) error {
	jobs := make(map[int64]*policy.Job, len(res.Snapshot.Pending))
	for i := range res.Snapshot.Pending {
		jobs[res.Snapshot.Pending[i].ID] = &res.Snapshot.Pending[i]
	}
	changed := make(map[int64]bool, len(res.Changed))
	for _, ch := range res.Changed {
		changed[ch.JobID] = true
	}
	mode := fmt.Sprintf("written: %d applied, %d failed", len(res.Report.Applied), len(res.Report.Failed))
	if res.DryRun {
		mode = "dry run: nothing written"
	}
	fmt.Fprintf(w, "policy %s, %d pending jobs ranked, %d values changed (%s)\n", policyName, res.Pending, len(res.Changed), mode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RANK\tJOB\tUSER\tACCOUNT\tGPUS\tPREDICTED\tSCORE\t%s\tCHANGED\n", strings.ToUpper(field))
	for i, s := range res.Ranked {
		j := jobs[s.JobID]
		pred := "-"
		if d, ok := res.Snapshot.Predicted[s.JobID]; ok {
			pred = d.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%.4g\t%d\t%v\n", i+1, s.JobID, j.User, j.Account, j.GPUs, pred, s.Value, res.Values[s.JobID], changed[s.JobID])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := res.Rewrite.WriteText(w); err != nil {
		return err
	}
	return res.Power.WriteText(w)
}

// WriteText writes a cycle's rewriting for people: the share rules of the
// job_submit table and the job changes planned, applied or skipped. A nil
// report (rewriting off) writes nothing.
func (rep *RewriteReport) WriteText(w io.Writer) error {
	if rep == nil {
		return nil
	}
	mode := "written"
	if rep.DryRun {
		mode = "dry run: nothing written"
	}
	fmt.Fprintf(w, "\nrewrite: %d share rules (table %s), %d job changes planned, %d applied, %d failed, %d withheld under Slurm limits (%s)\n",
		len(rep.Rules), map[bool]string{true: "written", false: "not written"}[rep.TableWritten],
		len(rep.Resize.Planned), len(rep.Resize.Applied), len(rep.Resize.Failed), len(rep.Withheld), mode)
	if len(rep.Rules) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tJOB NAME\tSHARDS\tREASON")
		for _, r := range rep.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.User, r.Name, r.Shards, r.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.Proposals) > 0 || len(rep.Withheld) > 0 {
		fmt.Fprintln(tw, "JOB\tRULE\tFROM\tTO\tREASON")
		for _, p := range rep.Proposals {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\n", p.JobID, p.Rule, p.From, proposedValue(p), p.Reason)
		}
		for _, h := range rep.Withheld {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\tnot changed: %s\n", h.JobID, h.Rule, h.From, proposedValue(h.Proposal), h.Why)
		}
		for _, sk := range rep.Resize.Skipped {
			fmt.Fprintf(tw, "%d\t-\t\t\tnot changed: %s\n", sk.JobID, sk.Reason)
		}
	}
	return tw.Flush()
}

// proposedValue is the value a proposal asks for: CPUs, MB or GPUs by rule.
func proposedValue(p rewrite.Proposal) int64 {
	switch p.Rule {
	case rewrite.RuleMemory:
		return p.MemoryMB
	case rewrite.RuleElastic:
		return int64(p.GPUs)
	}
	return int64(p.CPUs)
}
