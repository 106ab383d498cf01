package serve

import (
	"context"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// losableLease is a Leadership whose lease the test ends at will: Hold's
// context ends the moment lose is called, as accounting.Lease's does when
// its session is found dead.
type losableLease struct {
	lost   bool
	cancel context.CancelFunc
}

func (l *losableLease) Leader(context.Context) bool { return !l.lost }

func (l *losableLease) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	l.cancel = cancel
	return ctx, cancel
}

func (l *losableLease) lose() {
	l.lost = true
	if l.cancel != nil {
		l.cancel()
	}
}

// oneByOneWriter writes job by job as the REST writers do, each write under
// ctx (a write whose context has ended is not made), and calls after once
// the first value is written.
type oneByOneWriter struct {
	wrote []int64
	after func()
}

func (w *oneByOneWriter) Write(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	rep := slurmctl.Report{Planned: changes(jobs, want, nil)}
	for _, ch := range rep.Planned {
		if err := ctx.Err(); err != nil {
			rep.Failed = append(rep.Failed, slurmctl.Failure{Change: ch, Err: err})
			continue
		}
		rep.Applied = append(rep.Applied, ch)
		w.wrote = append(w.wrote, ch.JobID)
		if len(w.wrote) == 1 && w.after != nil {
			w.after()
		}
	}
	return rep, nil
}

func (w *oneByOneWriter) Prime(context.Context) (int, error) { return 0, nil }

// TestRunner_LeaseLostMidCycleStopsWriting: the leader's lease ends while
// it writes (its database session was killed, the database restarted):
// the other serve may take the lease at once, so this one makes no
// further write in that cycle, and none in the next.
func TestRunner_LeaseLostMidCycleStopsWriting(t *testing.T) {
	eng := fifoEngine(t)
	lease := &losableLease{}
	w := &oneByOneWriter{after: lease.lose}
	reader := &fakeReader{}
	r := New(Config{Cluster: "c", Policy: "fifo", Field: "site_factor", Range: policy.SiteFactorRange()},
		Parts{Source: reader, Sink: &Live{Values: w, Recorder: &fakeStore{}}, Leader: lease, Engine: eng}, quietLogger())
	clock := t0.Add(time.Minute)
	r.now = func() time.Time { return clock }
	jobs := []slurmctl.Job{job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second),
		job(3, "c", policy.StatePending, 2*time.Second)}

	reader.cl = &slurmctl.Cluster{Jobs: jobs}
	res, err := r.RunCycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.wrote) != 1 {
		t.Fatalf("wrote jobs %v; want only the first, written before the lease was lost", w.wrote)
	}
	if len(res.Report.Applied) != 1 {
		t.Errorf("report applied %d values, want 1", len(res.Report.Applied))
	}
	if got := gauge(t, r.metrics, "fairway_leader"); got != 0 {
		t.Errorf("fairway_leader = %v after the lease was lost, want 0", got)
	}

	clock = clock.Add(30 * time.Second)
	if _, err := r.RunCycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(w.wrote) != 1 {
		t.Errorf("the cycle after the lease was lost wrote jobs %v", w.wrote[1:])
	}
}
