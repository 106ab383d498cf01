package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// TestLoad_MonthBoundaries stores jobs around October 2026's ends in the
// lab's PostgreSQL and checks the figures that come back through Load's
// SQL against values worked out by hand (4 GPUs):
//
//	1 alice/a 2 GPUs submit 09-30 20h, ran 22h–10-01 02h  4 GPU-h in October, wait 2 h, ended
//	2 bob/b   1 GPU  submit 10-31 20h, ran 22h–11-01 04h  2 GPU-h in October, ends in November
//	3 carol/c 1 GPU  submit 10-31 23h, ran 11-01 01h–03h  not October's: started in November
//	4 bob/b   1 GPU  submit 10-05 00h, cancelled pending at 01h: ended, no wait
//	5 alice/a 1 GPU  submit 09-01 00h, ran 00h–09-02 00h  September's
//
// Jobs ended 2 (1, 4), started 1, 6 GPU-hours, median wait 2 h. The
// counterfactual replays job 2 alone: job 1 was submitted in September and
// job 3 started in November, as the definition of jobs replayed says.
func TestLoad_MonthBoundaries(t *testing.T) {
	pool, store := freshDB(t)
	ctx := t.Context()
	day := func(m time.Month, d, h int) time.Time { return time.Date(2026, m, d, h, 0, 0, 0, time.UTC) }
	job := func(id int64, user, acct string, gpus int, submit, start, end time.Time, st policy.State) policy.Job {
		return policy.Job{Cluster: "edge", ID: id, ArrayTask: -1, User: user, Account: acct, Partition: "gpu", GPUs: gpus,
			Submit: submit, Start: start, End: end, State: st, TimeLimit: 12 * time.Hour}
	}
	jobs := []policy.Job{
		job(1, "alice", "a", 2, day(9, 30, 20), day(9, 30, 22), day(10, 1, 2), policy.StateCompleted),
		job(2, "bob", "b", 1, day(10, 31, 20), day(10, 31, 22), day(11, 1, 4), policy.StateCompleted),
		job(3, "carol", "c", 1, day(10, 31, 23), day(11, 1, 1), day(11, 1, 3), policy.StateCompleted),
		job(4, "bob", "b", 1, day(10, 5, 0), time.Time{}, day(10, 5, 1), policy.StateCancelled),
		job(5, "alice", "a", 1, day(9, 1, 0), day(9, 1, 0), day(9, 2, 0), policy.StateCompleted),
	}
	if sum, err := store.RecordFinished(ctx, "serve", jobs); err != nil || sum.Inserted != len(jobs) {
		t.Fatalf("record jobs: %+v, %v; want %d inserted", sum, err, len(jobs))
	}
	m := report.Month{Year: 2026, Month: time.October}
	d, err := report.NewSource(pool, store).Load(ctx, "edge", m, true)
	if err != nil {
		t.Fatal(err)
	}
	opt := handOptions()
	opt.Counterfactual, opt.SimPolicy, opt.SimPredictor = true, "fifo", "none"
	r, err := report.Build(d, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	type figures struct {
		Loaded, Jobs, Started int
		Hours, MedianWait     float64
		Replayed              int
	}
	want := figures{Loaded: 3, Jobs: 2, Started: 1, Hours: 6, MedianWait: 7200, Replayed: 1}
	got := figures{len(d.Jobs), r.Summary.Jobs, r.Summary.Started, float64(r.Summary.Hours), float64(r.Summary.MedianWait), -1}
	if r.Counterfactual != nil {
		got.Replayed = r.Counterfactual.Jobs
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(approx)); diff != "" {
		t.Errorf("October (-want +got):\n%s", diff)
	}
	for _, term := range report.Glossary(r) {
		if term.Key == "jobsreplayed" && !strings.Contains(term.Definition, "started only next month") {
			t.Errorf("jobs replayed: %q does not say that a job started next month is not replayed", term.Definition)
		}
	}
}
