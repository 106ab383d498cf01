package serve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// handBackWriter is a fakeWriter that also hands priorities back, failing
// the jobs in refuse.
type handBackWriter struct {
	fakeWriter
	refuse  map[int64]bool
	handed  []int64
	adopted map[int64]slurmctl.Frozen
}

func (w *handBackWriter) HandBack(_ context.Context, jobs []slurmctl.Job, frozen map[int64]slurmctl.Frozen) (slurmctl.HandBackReport, error) {
	var rep slurmctl.HandBackReport
	var err error
	for _, j := range jobs {
		f, ok := frozen[j.ID]
		if !ok {
			continue
		}
		one := slurmctl.HandBackOne{JobID: j.ID, Target: j.Target(), Frozen: f}
		if w.refuse[j.ID] {
			one.Err = errors.New("refused")
			rep.Failed, err = append(rep.Failed, one), one.Err
			continue
		}
		rep.Applied = append(rep.Applied, one)
		w.handed = append(w.handed, j.ID)
	}
	return rep, err
}

func (w *handBackWriter) Adopt(frozen map[int64]slurmctl.Frozen) { w.adopted = frozen }

// frozenStore is a fakeStore whose decision log holds priorities.
type frozenStore struct {
	fakeStore
	logged map[int64]accounting.FrozenPriority
}

func (s *frozenStore) FrozenPriorities(_ context.Context, _ string, ids []int64) (map[int64]accounting.FrozenPriority, error) {
	out := map[int64]accounting.FrozenPriority{}
	for _, id := range ids {
		if f, ok := s.logged[id]; ok {
			out[id] = f
		}
	}
	return out, nil
}

func handOverRig(t *testing.T, field string) (*Runner, *handBackWriter, *frozenStore, *time.Time) {
	t.Helper()
	eng := fifoEngine(t)
	rng := policy.SiteFactorRange()
	if field == "priority" {
		rng = policy.PriorityRange()
	}
	w := &handBackWriter{refuse: map[int64]bool{}}
	st := &frozenStore{logged: map[int64]accounting.FrozenPriority{
		1: {Priority: 500000, Nice: 100}, // still frozen: Slurm holds 500000
		2: {Priority: 600000, Nice: 0},   // since given another priority by someone
	}}
	clock := t0.Add(time.Minute)
	r := New(Config{Cluster: "c", Policy: "fifo", Field: field, Range: rng},
		Parts{Source: &fakeReader{}, Sink: &Live{Values: w, Recorder: st}, Leader: &fakeLeader{leader: true}, Engine: eng}, quietLogger())
	r.now = func() time.Time { return clock }
	return r, w, st, &clock
}

func frozenQueue() []slurmctl.Job {
	a, b, c := job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second), job(3, "c", policy.StatePending, 2*time.Second)
	a.Priority, b.Priority, c.Priority = 500000, 700000, 1234
	return []slurmctl.Job{a, b, c}
}

// TestRunner_SiteFactorServeHandsBackFrozenPriorities: a site-factor serve
// started after a rest-priority one finds job 1 still holding the admin
// priority the decision log says Fairway wrote. It hands that back
// (restoring nice 100) before writing site factors; while Slurm refuses
// the hand-back, job 1 gets no site factor and is reported skipped, never
// applied. Job 2's priority is no longer the one written: not Fairway's to
// hand back.
func TestRunner_SiteFactorServeHandsBackFrozenPriorities(t *testing.T) {
	r, w, st, clock := handOverRig(t, "site_factor")
	w.refuse[1] = true
	reader := r.slurm.(*fakeReader)
	cycle := func() *CycleResult {
		t.Helper()
		*clock = clock.Add(30 * time.Second)
		reader.cl = &slurmctl.Cluster{Jobs: frozenQueue()}
		res, err := r.RunCycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := cycle()
	if res.HandBack == nil || len(res.HandBack.Failed) != 1 || res.HandBack.Failed[0].Frozen != (slurmctl.Frozen{Priority: 500000, Nice: 100}) {
		t.Fatalf("hand-back: %+v, want job 1 (priority 500000, nice 100) tried", res.HandBack)
	}
	for _, a := range res.Report.Applied {
		if a.JobID == 1 {
			t.Errorf("job 1's site factor reported applied while its priority is frozen")
		}
	}
	if _, ok := w.wrote[1]; ok {
		t.Error("a site factor was written to job 1 while its priority is frozen")
	}
	if got := skipReason(res.Report, 1); got != "admin priority of an earlier rest-priority serve not handed back yet" {
		t.Errorf("job 1 skip reason %q", got)
	}
	for _, d := range st.decisions {
		if d.JobID == 1 {
			t.Errorf("decision logged for job 1, whose value was not written: %+v", d)
		}
	}
	// Slurm takes the hand-back next cycle: job 1 then gets its site factor.
	w.refuse[1] = false
	if res = cycle(); res.HandBack == nil || len(res.HandBack.Failed) != 0 {
		t.Errorf("second cycle's hand-back: %+v, want job 1 handed back without failures", res.HandBack)
	}
	if diff := cmp.Diff([]int64{1}, w.handed); diff != "" {
		t.Errorf("handed back (-want +got):\n%s", diff)
	}
	if _, ok := w.wrote[1]; !ok {
		t.Error("job 1 got no site factor after its hand-back")
	}
	// Nothing left to hand back.
	if res = cycle(); res.HandBack != nil {
		t.Errorf("third cycle handed back again: %+v", res.HandBack)
	}
}

// TestRunner_PriorityServeAdoptsFrozenNice: a rest-priority serve started
// after another one adopts the admin priorities still held, with the nice
// each job had (Slurm now reads 0), and logs that nice with every new
// priority it writes.
func TestRunner_PriorityServeAdoptsFrozenNice(t *testing.T) {
	r, w, st, _ := handOverRig(t, "priority")
	r.slurm.(*fakeReader).cl = &slurmctl.Cluster{Jobs: frozenQueue()}
	if _, err := r.RunCycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int64]slurmctl.Frozen{1: {Priority: 500000, Nice: 100}}, w.adopted); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if len(w.handed) != 0 {
		t.Errorf("a priority serve handed back %v", w.handed)
	}
	if len(st.decisions) == 0 {
		t.Fatal("no decision logged")
	}
	for _, d := range st.decisions {
		if d.Field != "priority" || d.Nice == nil {
			t.Errorf("priority decision without the nice: %+v", d)
		}
	}
}

func skipReason(rep slurmctl.Report, id int64) string {
	for _, s := range rep.Skipped {
		if s.JobID == id {
			return s.Reason
		}
	}
	return ""
}
