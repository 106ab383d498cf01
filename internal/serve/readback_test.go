package serve

import (
	"context"
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// readBackWriter plays a REST writer whose read-back found Slurm holding
// something else: it reports the mismatch and slurmctl.ErrReadBack.
type readBackWriter struct{ fakeWriter }

func (w *readBackWriter) Write(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	rep, _ := w.fakeWriter.Write(ctx, jobs, want)
	if len(rep.Applied) == 0 {
		return rep, nil
	}
	c := rep.Applied[0]
	rep.ReadBack = slurmctl.ReadBack{Checked: len(rep.Applied), Mismatches: []slurmctl.Mismatch{{JobID: c.JobID, Wrote: c.To, Priority: 1,
		Why: "priority 1 read back after writing site factor"}}}
	return rep, fmt.Errorf("%w: job %d", slurmctl.ErrReadBack, c.JobID)
}

// metricValue is the value of the unlabelled gauge or counter name in m.
func metricValue(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name || len(f.GetMetric()) != 1 {
			continue
		}
		if c := f.GetMetric()[0].GetCounter(); c != nil {
			return c.GetValue()
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestRunner_ReadBackAndSkippedRecordMetrics: a write whose read-back
// found a mismatch raises fairway_write_readback_mismatches_total and sets
// fairway_writer_stopped; a read that skipped an untranslatable record
// counts it in fairway_slurm_records_skipped_total.
func TestRunner_ReadBackAndSkippedRecordMetrics(t *testing.T) {
	g := newRig(t, Config{}, false)
	w := &readBackWriter{}
	g.r.sink = &Live{Values: w, Recorder: g.store}
	m := g.r.Metrics()
	if v := gauge(t, m, "fairway_writer_stopped"); v != 0 {
		t.Fatalf("writer stopped = %v before any write", v)
	}
	g.reader.cl = &slurmctl.Cluster{Jobs: []slurmctl.Job{job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, 1)},
		Skipped: []slurmctl.SkippedRecord{{JobID: 3, Err: fmt.Errorf("gres %q: unbalanced parenthesis", "gpu:2(IDX:0")}}}
	if _, err := g.r.RunCycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := gauge(t, m, "fairway_writer_stopped"); v != 1 {
		t.Errorf("fairway_writer_stopped = %v, want 1", v)
	}
	if v := metricValue(t, m, "fairway_write_readback_mismatches_total"); v != 1 {
		t.Errorf("fairway_write_readback_mismatches_total = %v, want 1", v)
	}
	if v := metricValue(t, m, "fairway_slurm_records_skipped_total"); v != 1 {
		t.Errorf("fairway_slurm_records_skipped_total = %v, want 1", v)
	}
}
