package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
)

// writeCycleText writes for people what the cycle res decided under policy, best
// first: each ranked job with its prediction, score and the value of field
// decided, then the rewriting (writeRewriteText). dryRun says --dry-run
// asked for nothing to be written: a cycle that only planned without it did
// so because another serve holds the lease, and says that instead.
func writeCycleText(w io.Writer, res *serve.CycleResult, policyName, field string, dryRun bool) error {
	jobs := make(map[int64]*policy.Job, len(res.Snapshot.Pending))
	for i := range res.Snapshot.Pending {
		jobs[res.Snapshot.Pending[i].ID] = &res.Snapshot.Pending[i]
	}
	changed := make(map[int64]bool, len(res.Changed))
	for _, ch := range res.Changed {
		changed[ch.JobID] = true
	}
	planned := res.Record.Planned // the cycle's sink only planned: nothing reached Slurm
	mode := fmt.Sprintf("written: %d applied, %d failed", len(res.Report.Applied), len(res.Report.Failed))
	switch {
	case planned && !dryRun && !res.Leader:
		mode = "not the leader: another serve holds the lease, nothing written"
	case planned:
		mode = "dry run: nothing written"
	}
	fmt.Fprintf(w, "policy %s, %s ranked, %s changed (%s)\n", policyName, plural.N(res.Pending, "pending job", "pending jobs"),
		plural.N(len(res.Changed), "value", "values"), mode)
	if res.PolicyFile != nil {
		fmt.Fprintf(w, "ranked with %s\n", res.PolicyFile)
	}
	if hb := res.HandBack; hb != nil {
		if planned {
			fmt.Fprintf(w, "admin priorities of an earlier rest-priority serve: %d would be handed back to multifactor (nice restored)\n", len(hb.Planned))
		} else {
			fmt.Fprintf(w, "admin priorities of an earlier rest-priority serve: %d handed back to multifactor (nice restored), %d failed (no site factor for those until it succeeds), %d no longer Fairway's\n",
				len(hb.Applied), len(hb.Failed), len(hb.Skipped))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RANK\tJOB\tUSER\tACCOUNT\tGPUS\tPREDICTED\tSCORE\t%s\tCHANGED\n", strings.ToUpper(field))
	for i, s := range res.Ranked {
		j := jobs[s.JobID]
		pred := "-"
		if d, ok := res.Snapshot.Predicted[s.JobID]; ok {
			pred = d.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%.4g\t%d\t%v\n", i+1, s.JobID, shown(j.User), shown(j.Account), gpusText(j), pred, s.Value, res.Values[s.JobID], changed[s.JobID])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeRewriteText(w, res.Rewrite, planned); err != nil {
		return err
	}
	return res.Power.WriteText(w)
}

// writeRewriteText writes a cycle's rewriting for people: the share rules of the
// job_submit table and the job changes planned, applied or skipped;
// planned says the cycle's sink only planned them (a Planner reports its
// plan applied, and nothing of it reached Slurm or the disk). A nil report
// (rewriting off) writes nothing.
func writeRewriteText(w io.Writer, rep *serve.RewriteReport, planned bool) error {
	if rep == nil {
		return nil
	}
	mode, written, applied := "written", rep.TableWritten, len(rep.Resize.Applied)
	if planned {
		mode, written, applied = "dry run: nothing written", false, 0
	}
	fmt.Fprintf(w, "\nrewrite: %s (table %s), %s planned, %d applied, %d failed, %d withheld under Slurm limits (%s)\n",
		plural.N(len(rep.Rules), "share rule", "share rules"), map[bool]string{true: "written", false: "not written"}[written],
		plural.N(len(rep.Resize.Planned), "job change", "job changes"), applied, len(rep.Resize.Failed), len(rep.Withheld), mode)
	if len(rep.Rules) > 0 || len(rep.NoShare) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tJOB NAME\tSHARDS\tREASON")
		for _, r := range rep.Rules {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", shown(r.User), shown(r.Name), r.Shards, r.Reason)
		}
		// The names that got no rule, so an admin sees why a job was not shared.
		for _, r := range rep.NoShare {
			fmt.Fprintf(tw, "%s\t%s\t-\tnot shared: %s\n", shown(r.User), shown(r.Name), r.Reason)
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

// gpusText is a job's GPU request for a GPUS column: whole GPUs, then, in
// brackets, what the number alone hides: the shards of a shard job and
// the tasks of a pending array record, whose total it is.
//
//	2            two GPUs
//	0 (3 shards) three shards of a GPU
//	5 (5 tasks × 1) a pending array record of five one-GPU tasks
func gpusText(j *policy.Job) string {
	tasks := max(j.Tasks, 1)
	per := strconv.Itoa(j.GPUs)
	if j.Shards > 0 {
		per = fmt.Sprintf("%d shards", j.Shards)
		if j.GPUs > 0 {
			per = fmt.Sprintf("%d + %d shards", j.GPUs, j.Shards)
		}
	}
	switch {
	case tasks > 1:
		return fmt.Sprintf("%d (%d tasks × %s)", j.GPUs*tasks, tasks, per)
	case j.Shards > 0:
		return fmt.Sprintf("%d (%s)", j.GPUs, per)
	}
	return per
}
