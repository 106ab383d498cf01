package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// Fakes for the runner's four small interfaces.

type fakeReader struct {
	cl  *slurmctl.Cluster
	err error
}

func (f *fakeReader) Read(context.Context) (*slurmctl.Cluster, error) { return f.cl, f.err }

type fakeWriter struct {
	calls int
	wrote map[int64]int64
}

func (f *fakeWriter) Write(_ context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	f.calls++
	if f.wrote == nil {
		f.wrote = map[int64]int64{}
	}
	rep := slurmctl.Report{Planned: changes(jobs, want, f.wrote)}
	rep.Applied = rep.Planned
	for _, ch := range rep.Applied {
		f.wrote[ch.JobID] = ch.To
	}
	if len(rep.Planned) > 0 {
		rep.Calls = 1
	}
	return rep, nil
}
func (f *fakeWriter) Prime(context.Context) (int, error) { return len(f.wrote), nil }

type fakeStore struct {
	down bool
	// downAfter, when above 0, makes every call after that many fail
	// as down.
	downAfter int
	// refuse, when set, is asked about each record of a call; an error
	// refuses the whole call, which then stores nothing, as a
	// transaction would.
	refuse    func(rec any) error
	calls     int
	finished  []policy.Job
	decisions []accounting.Decision
	cycles    []accounting.Cycle
	preds     []accounting.Prediction
}

var errDown = errors.New("connection refused")

// take counts a call of rs and says whether f stores it.
func take[T any](f *fakeStore, rs ...T) error {
	f.calls++
	if f.down || f.downAfter > 0 && f.calls > f.downAfter {
		return errDown
	}
	for _, r := range rs {
		if f.refuse == nil {
			break
		}
		if err := f.refuse(r); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeStore) RecordFinished(_ context.Context, _ string, jobs []policy.Job) (accounting.Summary, error) {
	if err := take(f, jobs...); err != nil {
		return accounting.Summary{}, err
	}
	f.finished = append(f.finished, jobs...)
	return accounting.Summary{}, nil
}
func (f *fakeStore) RecordDecisions(_ context.Context, ds []accounting.Decision) (int, error) {
	if err := take(f, ds...); err != nil {
		return 0, err
	}
	f.decisions = append(f.decisions, ds...)
	return len(ds), nil
}
func (f *fakeStore) RecordCycle(_ context.Context, c accounting.Cycle) error {
	if err := take(f, c); err != nil {
		return err
	}
	f.cycles = append(f.cycles, c)
	return nil
}
func (f *fakeStore) RecordPredictions(_ context.Context, ps []accounting.Prediction) error {
	if err := take(f, ps...); err != nil {
		return err
	}
	f.preds = append(f.preds, ps...)
	return nil
}

type fakeLeader struct{ leader bool }

func (f *fakeLeader) Leader(context.Context) bool { return f.leader }
func (f *fakeLeader) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func job(id int64, user string, st policy.State, submit time.Duration) slurmctl.Job {
	return slurmctl.Job{Job: policy.Job{ID: id, ArrayTask: -1, User: user, Account: "acct-" + user, Partition: "gpu",
		Submit: t0.Add(submit), State: st, GPUs: 1, TimeLimit: time.Hour}}
}

type rig struct {
	r      *Runner
	reader *fakeReader
	writer *fakeWriter
	store  *fakeStore
	leader *fakeLeader
	clock  time.Time
}

// newRig is a runner on fakes; plan makes its sink a Planner (a dry run)
// that records to the fake store.
func newRig(t *testing.T, cfg Config, plan bool) *rig {
	t.Helper()
	eng := fifoEngine(t)
	if cfg.Range == (policy.SlurmRange{}) {
		cfg.Range = policy.SiteFactorRange()
	}
	cfg.Cluster, cfg.Policy, cfg.Field = "c", "fifo", "site_factor"
	g := &rig{reader: &fakeReader{}, writer: &fakeWriter{}, store: &fakeStore{}, leader: &fakeLeader{leader: true}, clock: t0.Add(time.Minute)}
	var sink Sink = &Live{Values: g.writer, Recorder: g.store}
	if plan {
		sink = NewPlanner(g.store, nil)
	}
	g.r = New(cfg, Parts{Source: g.reader, Sink: sink, Leader: g.leader, Engine: eng}, quietLogger())
	g.r.now = func() time.Time { return g.clock }
	return g
}

func (g *rig) cycle(t *testing.T, jobs ...slurmctl.Job) *CycleResult {
	t.Helper()
	g.clock = g.clock.Add(30 * time.Second)
	g.reader.cl, g.reader.err = &slurmctl.Cluster{Jobs: jobs}, nil
	res, err := g.r.RunCycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunner_SlurmDownWritesNothingKeepsState(t *testing.T) {
	g := newRig(t, Config{}, false)
	g.cycle(t, job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second))
	calls := g.writer.calls
	g.reader.err = errors.New("connection refused")
	_, err := g.r.RunCycle(context.Background())
	if !errors.Is(err, ErrSlurmRead) {
		t.Fatalf("err = %v, want ErrSlurmRead", err)
	}
	if g.writer.calls != calls {
		t.Fatal("a cycle that could not read Slurm wrote to it")
	}
	if got := g.store.cycles[len(g.store.cycles)-1]; got.Error == "" {
		t.Error("the failed cycle was recorded without its error")
	}
	// Back: the same queue writes nothing new.
	res := g.cycle(t, job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second))
	if len(res.Report.Planned) != 0 {
		t.Errorf("after the outage %d values changed, want 0", len(res.Report.Planned))
	}
}

func TestRunner_DatabaseDownBuffersThenShipsEverything(t *testing.T) {
	g := newRig(t, Config{}, false)
	run := job(1, "a", policy.StateRunning, 0)
	run.Start = t0.Add(10 * time.Second)
	g.cycle(t, run, job(2, "b", policy.StatePending, time.Second))
	g.store.down = true
	done := run
	done.State, done.End = policy.StateCompleted, g.clock.Add(10*time.Second)
	res := g.cycle(t, done, job(2, "b", policy.StatePending, time.Second), job(3, "c", policy.StatePending, 2*time.Second))
	if res.Recorded {
		t.Fatal("cycle says it recorded while the database is down")
	}
	if len(res.Report.Applied) == 0 {
		t.Fatal("ranking stopped while the database was down (no leadership doubt with this fake)")
	}
	if g.r.buffer.len() == 0 {
		t.Fatal("nothing buffered")
	}
	g.store.down = false
	res = g.cycle(t, done, job(2, "b", policy.StatePending, time.Second), job(3, "c", policy.StatePending, 2*time.Second))
	if !res.Recorded || g.r.buffer.len() != 0 {
		t.Fatalf("buffer not drained: recorded=%v, %d left", res.Recorded, g.r.buffer.len())
	}
	if len(g.store.finished) != 1 || g.store.finished[0].ID != 1 {
		t.Fatalf("finished jobs recorded: %+v, want job 1 once", g.store.finished)
	}
	if len(g.store.cycles) != 3 {
		t.Errorf("%d cycle rows, want 3", len(g.store.cycles))
	}
}

func TestRunner_FollowerAndDryRunWriteNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader bool
		dry    bool
	}{{"follower", false, false}, {"dry-run-leader", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{}, tc.dry)
			g.leader.leader = tc.leader
			res := g.cycle(t, job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second))
			if g.writer.calls != 0 {
				t.Fatal("wrote to Slurm")
			}
			if len(res.Changed) != 2 {
				t.Fatalf("planned %d changes, want 2 (reported, not written)", len(res.Changed))
			}
			for _, d := range g.store.decisions {
				if !d.Planned {
					t.Errorf("decision for job %d not marked dry run", d.JobID)
				}
			}
		})
	}
}

func TestRunner_MaxWritesTakesBestRankedFirst(t *testing.T) {
	g := newRig(t, Config{MaxWrites: 2}, false)
	jobs := []slurmctl.Job{job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second),
		job(3, "c", policy.StatePending, 2*time.Second), job(4, "d", policy.StatePending, 3*time.Second)}
	res := g.cycle(t, jobs...)
	if len(res.Report.Applied) != 2 {
		t.Fatalf("wrote %d values, want the cap 2", len(res.Report.Applied))
	}
	for _, c := range res.Report.Applied {
		if c.JobID != 1 && c.JobID != 2 {
			t.Errorf("wrote job %d, want the two best ranked (1, 2)", c.JobID)
		}
	}
	res = g.cycle(t, jobs...)
	if len(res.Report.Applied) != 2 {
		t.Fatalf("second cycle wrote %d, want the remaining 2", len(res.Report.Applied))
	}
	if len(g.writer.wrote) != 4 {
		t.Errorf("after two capped cycles %d jobs have values, want 4", len(g.writer.wrote))
	}
}

func TestRunner_NeverRanksHeldHetExemptOrExcluded(t *testing.T) {
	g := newRig(t, Config{ExemptQOS: []string{"urgent"}, ExcludePartitions: []string{"debug"}}, false)
	held := job(2, "b", policy.StatePending, 0)
	held.Held = true
	het := job(3, "c", policy.StatePending, 0)
	het.HetJob = true
	urgent := job(4, "d", policy.StatePending, 0)
	urgent.QOS = "urgent"
	dbg := job(5, "e", policy.StatePending, 0)
	dbg.Partition = "debug,gpu"
	running := job(6, "f", policy.StateRunning, 0)
	running.Start = t0
	res := g.cycle(t, job(1, "a", policy.StatePending, 0), held, het, urgent, dbg, running)
	if len(res.Ranked) != 1 || res.Ranked[0].JobID != 1 {
		t.Fatalf("ranked %+v, want only job 1", res.Ranked)
	}
	for id := range g.writer.wrote {
		if id != 1 {
			t.Errorf("wrote job %d", id)
		}
	}
}

func TestRunner_StoppedJobs(t *testing.T) {
	g := newRig(t, Config{}, false)
	a, b := job(1, "a", policy.StateRunning, 0), job(2, "b", policy.StateRunning, 0)
	a.Start, b.Start = t0, t0
	g.cycle(t, a, b)
	// a finished and is still listed; b vanished (MinJobAge passed).
	af := a
	af.State, af.End = policy.StateFailed, g.clock.Add(5*time.Second)
	st, fin, _ := g.r.stopped(&slurmctl.Cluster{Jobs: []slurmctl.Job{af}}, nil, g.clock.Add(30*time.Second))
	if len(st) != 2 {
		t.Fatalf("stopped %d jobs, want 2", len(st))
	}
	if st[0].ID != 1 || st[0].State != policy.StateFailed || st[1].ID != 2 || st[1].State != policy.StateCompleted {
		t.Errorf("stopped = %+v", st)
	}
	if len(fin) != 1 || fin[0].ID != 1 {
		t.Errorf("finished to record = %+v, want job 1 (job 2 comes from slurmdbd)", fin)
	}
}

// TestRunner_StoppedEndsNotBeforeStart: serve gives the end of a job
// Slurm forgot, requeued or finished without an end by its own clock,
// which can read earlier than the start slurmctld stamped (a clock behind
// slurmctld's, or stepped back): the end is then the start, never before
// it, so the history never holds a job that ended before it began.
func TestRunner_StoppedEndsNotBeforeStart(t *testing.T) {
	g := newRig(t, Config{}, false)
	ahead := g.clock.Add(10 * time.Minute) // slurmctld's clock, ahead of serve's
	gone, requeued, noEnd := job(1, "a", policy.StateRunning, 0), job(2, "b", policy.StateRunning, 0), job(3, "c", policy.StateRunning, 0)
	gone.Start, requeued.Start, noEnd.Start = ahead, ahead, ahead
	g.cycle(t, gone, requeued, noEnd)
	rq := requeued
	rq.State, rq.Start = policy.StatePending, time.Time{}
	ne := noEnd
	ne.State = policy.StateCancelled
	st, fin, _ := g.r.stopped(&slurmctl.Cluster{Jobs: []slurmctl.Job{rq, ne}}, nil, g.clock.Add(30*time.Second))
	if len(st) != 3 || len(fin) != 1 {
		t.Fatalf("stopped %d, finished %d; want 3, 1", len(st), len(fin))
	}
	for _, j := range append(st, fin...) {
		if !j.End.Equal(ahead) {
			t.Errorf("job %d: start %v, end %v; want the end at the start, %v", j.ID, j.Start, j.End, ahead)
		}
	}
}

// TestRunner_RequeuedJobThatLeavesIsForgotten: a job that ran, was
// requeued and then left without running again (cancelled while pending:
// Slurm gives it no start; or forgotten) never stops again, and the
// engine must not keep its attained service for the life of the process.
// One requeued and left each cycle must not add to what it keeps.
func TestRunner_RequeuedJobThatLeavesIsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancelled bool // listed cancelled with no start; else Slurm forgot it
	}{{"cancelled while pending", true}, {"forgotten while pending", false}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{}, false)
			led := g.r.engine.Ledger()
			for id := int64(1); id <= 50; id++ {
				ran := job(id, "a", policy.StateRunning, 0)
				ran.Start = g.clock
				g.cycle(t, ran)
				g.cycle(t, ran) // charged up to now
				requeued := job(id, "a", policy.StatePending, 0)
				g.cycle(t, requeued)
				if led.Attained(id) <= 0 {
					t.Fatalf("job %d: no attained service after it ran and was requeued", id)
				}
				var gone []slurmctl.Job
				if tc.cancelled {
					c := job(id, "a", policy.StateCancelled, 0)
					c.End = g.clock
					gone = append(gone, c)
				}
				g.cycle(t, gone...)
				if a := led.Attained(id); a != 0 {
					t.Fatalf("job %d: attained service %g kept after it left", id, a)
				}
				if len(g.r.requeued) != 0 {
					t.Fatalf("job %d: %d requeued jobs still tracked after it left", id, len(g.r.requeued))
				}
			}
		})
	}
}

// TestRunner_FirstCycleDoesNotChargeOldJobs: jobs that finished before
// serve's first cycle are recorded but not charged again (the engine was
// warmed from the history that holds them); jobs that finish between two
// cycles are charged.
func TestRunner_FirstCycleDoesNotChargeOldJobs(t *testing.T) {
	g := newRig(t, Config{}, false)
	old := job(1, "a", policy.StateCompleted, 0)
	old.Start, old.End = t0, t0.Add(20*time.Second)
	st, fin, _ := g.r.stopped(&slurmctl.Cluster{Jobs: []slurmctl.Job{old}}, nil, g.clock)
	if len(st) != 0 || len(fin) != 1 {
		t.Fatalf("first cycle: stopped %d, finished %d; want 0, 1", len(st), len(fin))
	}
	quick := job(2, "b", policy.StateCompleted, 0)
	quick.Start, quick.End = g.clock, g.clock.Add(5*time.Second)
	st, fin, _ = g.r.stopped(&slurmctl.Cluster{Jobs: []slurmctl.Job{old, quick}}, nil, g.clock.Add(30*time.Second))
	if len(st) != 1 || st[0].ID != 2 || len(fin) != 1 || fin[0].ID != 2 {
		t.Fatalf("second cycle: stopped %+v, finished %+v; want job 2 in both", st, fin)
	}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// TestRunner_BufferSpillsPastBoundNothingLost fills the record buffer past
// its bound while the database is down: memory never holds more than the
// bound, the rest goes to spill files, and once the database is back every
// decision, finished job and cycle row reaches it exactly once. A second
// runner on the same directory (a restart) ships what the first left.
func TestRunner_BufferSpillsPastBoundNothingLost(t *testing.T) {
	const limit = 10
	dir := t.TempDir()
	g := newRig(t, Config{BufferLimit: limit, BufferDir: dir}, false)
	g.store.down = true

	var jobs []slurmctl.Job
	wantDecisions, wantFinished, cycles := 0, 0, 0
	for c := range 12 {
		// Three new pending jobs a cycle (new decisions), and one job
		// that ran during the previous cycle finishes.
		for k := range 3 {
			id := int64(100*c + k + 1)
			jobs = append(jobs, job(id, fmt.Sprintf("u%d", k), policy.StatePending, time.Duration(id)*time.Second))
		}
		if c > 0 {
			run := job(int64(100*c+50), "r", policy.StateRunning, 0)
			run.Start = g.clock
			res := g.cycle(t, append(jobs, run)...)
			wantDecisions += len(res.Changed)
			cycles++
			run.State, run.End = policy.StateCompleted, g.clock.Add(time.Second)
			jobs = append(jobs, run)
			wantFinished++
		}
		res := g.cycle(t, jobs...)
		wantDecisions += len(res.Changed)
		cycles++
		jobs = slices.DeleteFunc(jobs, func(j slurmctl.Job) bool { return j.State.Finished() })
		if res.Recorded {
			t.Fatal("recorded while the database is down")
		}
		if n := g.r.buffer.mem.len(); n > limit {
			t.Fatalf("cycle %d: %d records in memory, bound %d", c, n, limit)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix))
	if len(files) == 0 || g.r.buffer.spilled == 0 {
		t.Fatalf("nothing spilled past a bound of %d (%d buffered)", limit, g.r.buffer.len())
	}
	if got := gauge(t, g.r.metrics, "fairway_buffer_spilled_records"); got != float64(g.r.buffer.spilled) || got == 0 {
		t.Errorf("fairway_buffer_spilled_records = %v, want %d", got, g.r.buffer.spilled)
	}
	if wantDecisions == 0 || wantFinished == 0 {
		t.Fatal("the workload made no decisions or finished no job: the test proves nothing")
	}

	// The database is back: everything reaches it exactly once, oldest
	// first, and the spill files are gone.
	g.store.down = false
	g.cycle(t, jobs...)
	if g.r.buffer.len() != 0 {
		t.Fatalf("%d records still buffered", g.r.buffer.len())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix)); len(left) != 0 {
		t.Errorf("%d spill files left after the database came back", len(left))
	}
	seen := map[[2]int64]bool{}
	for _, d := range g.store.decisions {
		k := [2]int64{d.Cycle, d.JobID}
		if seen[k] {
			t.Errorf("decision for job %d in cycle %d recorded twice", d.JobID, d.Cycle)
		}
		seen[k] = true
	}
	if len(seen) != wantDecisions {
		t.Errorf("%d distinct decisions recorded, want %d", len(seen), wantDecisions)
	}
	if !slices.IsSortedFunc(g.store.cycles, func(a, b accounting.Cycle) int { return int(a.Cycle - b.Cycle) }) {
		t.Error("cycle rows shipped out of order")
	}
	if got := len(g.store.finished); got != wantFinished {
		t.Errorf("%d finished jobs recorded, want %d", got, wantFinished)
	}
	if got := len(g.store.cycles); got != cycles+1 {
		t.Errorf("%d cycle rows, want %d", got, cycles+1)
	}
	if got := gauge(t, g.r.metrics, "fairway_buffered_records"); got != 0 {
		t.Errorf("fairway_buffered_records = %v after the outage, want 0", got)
	}
}

// TestRunner_SpilledRecordsShipAfterRestart: records a runner spilled
// before it died are shipped by the next runner on the same directory.
func TestRunner_SpilledRecordsShipAfterRestart(t *testing.T) {
	dir := t.TempDir()
	g := newRig(t, Config{BufferLimit: 2, BufferDir: dir}, false)
	g.store.down = true
	var jobs []slurmctl.Job
	for c := range 4 {
		jobs = append(jobs, job(int64(c+1), "a", policy.StatePending, time.Duration(c)*time.Second))
		g.cycle(t, jobs...)
	}
	spilled := g.r.buffer.spilled
	if spilled == 0 {
		t.Fatal("nothing spilled")
	}
	// g dies here; its memory is lost, its spill files are not.
	g2 := newRig(t, Config{BufferLimit: 2, BufferDir: dir}, false)
	g2.cycle(t)
	got := len(g2.store.decisions) + len(g2.store.cycles) + len(g2.store.finished) + len(g2.store.preds)
	if got != spilled+1 { // + the new runner's own cycle row
		t.Errorf("new runner recorded %d records, want the %d spilled + 1", got, spilled)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+spillSuffix)); len(left) != 0 {
		t.Errorf("%d spill files left", len(left))
	}
}

// gauge is the value of the unlabelled gauge name in m.
func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	return metricValue(t, m, name)
}

// TestRunner_PlannedCycleRecordsOneFlag: a cycle that only plans (a
// follower's, or a dry run's) records its cycle row and the leader's
// decisions as planned alike, and a leader's live cycle records neither
// as planned. A follower records its cycle row only (leader false): its
// decisions are the leader's to log.
func TestRunner_PlannedCycleRecordsOneFlag(t *testing.T) {
	for _, tc := range []struct {
		name        string
		leader, dry bool
		want        bool
	}{
		{"follower", false, false, true},
		{"dry-run-leader", true, true, true},
		{"dry-run-follower", false, true, true},
		{"live-leader", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, Config{}, tc.dry)
			g.leader.leader = tc.leader
			g.cycle(t, job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second))
			decisions := 2
			if !tc.leader {
				decisions = 0
			}
			if len(g.store.cycles) != 1 || len(g.store.decisions) != decisions {
				t.Fatalf("recorded %d cycle rows and %d decisions, want 1 and %d", len(g.store.cycles), len(g.store.decisions), decisions)
			}
			if g.store.cycles[0].Leader != tc.leader {
				t.Errorf("cycle row leader = %v, want %v", g.store.cycles[0].Leader, tc.leader)
			}
			if got := g.store.cycles[0].Planned; got != tc.want {
				t.Errorf("cycle row dry_run = %v, want %v", got, tc.want)
			}
			for _, d := range g.store.decisions {
				if d.Planned != tc.want {
					t.Errorf("decision for job %d dry_run = %v, want %v", d.JobID, d.Planned, tc.want)
				}
			}
		})
	}
}

// TestRunner_OneClockReadingPerCycle: a cycle reads the clock once, and
// its row, its snapshot and its decisions all carry that reading; every
// step is timed (a sample per step in fairway_cycle_duration_seconds).
func TestRunner_OneClockReadingPerCycle(t *testing.T) {
	g := newRig(t, Config{}, false)
	reads := 0
	g.r.now = func() time.Time { reads++; return g.clock }
	for n := 1; n <= 2; n++ {
		res := g.cycle(t, job(1, "a", policy.StatePending, 0), job(int64(1+n), "b", policy.StatePending, time.Second))
		if reads != n {
			t.Fatalf("after %d cycles the clock was read %d times, want %d", n, reads, n)
		}
		if !res.Record.Started.Equal(g.clock) || !res.Snapshot.Now.Equal(g.clock) {
			t.Errorf("cycle %d: row started %v, snapshot at %v, want both %v", n, res.Record.Started, res.Snapshot.Now, g.clock)
		}
	}
	for _, d := range g.store.decisions {
		if d.At.After(g.clock) || d.At.Before(g.clock.Add(-30*time.Second)) {
			t.Errorf("decision for job %d at %v: not a cycle's reading", d.JobID, d.At)
		}
	}
	fams, err := g.r.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "fairway_cycle_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					got[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	for _, step := range []string{"observe", "rank", "decide", "apply", "record", "total"} {
		if got[step] != 2 {
			t.Errorf("step %s timed %d times in 2 cycles, want 2 (got %v)", step, got[step], got)
		}
	}
}

// fifoEngine is an engine ranking by fifo on 8 GPUs, the tests' default.
func fifoEngine(t *testing.T) *policy.Engine {
	t.Helper()
	pol, err := policy.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}
