package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/fairway-hpc/fairway/internal/trace"
)

// WriteText writes the comparison for people: the workload and cluster,
// the offered load, what was left out, and one row of metrics per policy,
// those in preempt (simulated preemptively) starred.
func (rep *Report) WriteText(w io.Writer, preempt map[string]bool) error {
	backfill := "EASY backfill"
	if rep.Backfill == NoBackfill {
		backfill = "no backfill"
	} else if rep.BackfillInterval > 0 {
		backfill = fmt.Sprintf("EASY backfill every %gs (bf_interval)", rep.BackfillInterval)
	}
	fmt.Fprintf(w, "%s (%s): %d jobs on %s, %s, predictor %s\n", rep.Trace, rep.Format, rep.Jobs,
		rep.Cluster, backfill, rep.Predictor)
	if sh := rep.Share; sh != nil {
		fmt.Fprintf(w, "GPU sharing: %d shards per GPU, interference β %g; GPU use drawn by the usage model (seed %d, %g of job templates light)\n",
			sh.ShardsPerGPU, sh.Interference, sh.UsageSeed, sh.LightFraction)
	}
	if rep.Load != 1 {
		fmt.Fprintf(w, "offered load %.2f: %g × the trace's own %.2f\n", rep.OfferedLoad, rep.Load, rep.OwnLoad)
	} else {
		fmt.Fprintf(w, "offered load %.2f (the trace's own)\n", rep.OfferedLoad)
	}
	left := trace.MergeLeftOut(rep.LeftOut, rep.Skipped)
	if len(left) > 0 || rep.Format != "synthetic" {
		fmt.Fprintf(w, "left out: %s\n", trace.FormatLeftOut(left))
	}
	for _, r := range slices.Sorted(maps.Keys(rep.Skipped)) {
		switch r {
		case SkipNoRun, SkipNoUnits, SkipTooLarge, SkipDuplicate:
			continue
		}
		fmt.Fprintln(w, SkipWarning(rep.Skipped[r], r))
	}
	if rep.CutAtLimit > 0 {
		fmt.Fprintln(w, CutWarning(rep.CutAtLimit))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tavg JCT (s)\tmedian JCT\tp95 JCT\tavg wait (s)\tp95 wait\tavg bsld\tmakespan (s)\tutil\tJain\tmax ρ\tp95 ρ\tuser p95 wait spread (s)\t")
	for _, m := range rep.Policies {
		name := m.Name
		if preempt[name] {
			name += "*"
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t%.0f\t%.3f\t%.3f\t%.1f\t%.1f\t%.0f\t\n", name, m.AvgJCT, m.MedianJCT, m.P95JCT,
			m.AvgWait, m.P95Wait, m.AvgBSLD, m.Makespan, m.Utilization, m.Jain, m.MaxRho, m.P95Rho, m.UserP95WaitSpread)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range rep.Policies {
		if preempt[m.Name] {
			n := "preemptions"
			if m.Preemptions == 1 {
				n = "preemption"
			}
			fmt.Fprintf(w, "* preemptive: requeued and resumed from a checkpoint at no cost, %d %s\n", m.Preemptions, n)
		}
	}
	if rep.Share != nil {
		return rep.writeShareText(w)
	}
	return nil
}

// writeShareText writes what GPU sharing did under each policy.
func (rep *Report) writeShareText(w io.Writer) error {
	fmt.Fprintln(w, "\nGPU sharing (util above counts a shard job as one GPU; these count GPU time):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tshared jobs\tco-located\tslowdown\talloc util\tcompute util\tmax jobs/GPU\tmem oversub\t")
	for _, m := range rep.Policies {
		if s := m.Share; s != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\t\n", m.Name, s.Shared, s.CoLocated, s.Slowdown,
				s.AllocUtilization, s.ComputeUtilization, s.MaxPerGPU, s.MemOversubscribed)
		}
	}
	return tw.Flush()
}
