package policy

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// enFakePredictor predicts the mean run time of the user's observed jobs
// (none: Source "none") and counts its calls.
type enFakePredictor struct {
	sum      map[string]time.Duration
	n        map[string]int
	observed []int64
	predicts int
}

func newEnFake() *enFakePredictor {
	return &enFakePredictor{sum: map[string]time.Duration{}, n: map[string]int{}}
}

func (f *enFakePredictor) Name() string { return "fake" }
func (f *enFakePredictor) Observe(j *Job) {
	f.sum[j.User] += j.RunTime()
	f.n[j.User]++
	f.observed = append(f.observed, j.ID)
}
func (f *enFakePredictor) Predict(j *Job) Prediction {
	f.predicts++
	if f.n[j.User] == 0 {
		return Prediction{Source: sourceNone}
	}
	return Prediction{Run: f.sum[j.User] / time.Duration(f.n[j.User]), Source: "user-mean"}
}

func enEngine(t *testing.T, pol string, pred Predictor, every time.Duration) *Engine {
	t.Helper()
	p, err := New(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineParams{Policy: p, Predictor: pred, GPUs: 8, ChargeEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func enJob(id int64, user string, submit float64) Job {
	return Job{ID: id, Account: "lab", User: user, GPUs: 1, Submit: rkAt(submit), State: StatePending, TimeLimit: time.Hour}
}

func TestEngine_CycleFollowsLedgerContract(t *testing.T) {
	pred := newEnFake()
	e := enEngine(t, "qssf", pred, 10*time.Minute)

	// Minute 0: alice's job 1 runs, bob's job 2 waits.
	run1 := enJob(1, "alice", 0)
	run1.Start, run1.State = rkAt(0), StateRunning
	p2 := enJob(2, "bob", 0)
	s, ranking, err := e.Cycle(&Observation{Now: rkAt(0), Pending: []Job{p2}, Running: []Job{run1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ranking) != 1 || ranking[0].JobID != 2 || s.Ledger != e.Ledger() || s.GPUs != 8 {
		t.Fatalf("cycle 0: ranking %v, snapshot %+v", ranking, s)
	}
	if len(s.Predicted) != 0 {
		t.Errorf("cycle 0: predicted %v, want none (the predictor knows nothing yet)", s.Predicted)
	}

	// Minute 5: within the charging period, nothing is charged yet.
	if _, _, err := e.Cycle(&Observation{Now: rkAt(5), Pending: []Job{p2}, Running: []Job{run1}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Ledger().Attained(1); got != 0 {
		t.Errorf("minute 5: attained %v, want 0 before the charging period", got)
	}
	// Minute 10: the sweep charges job 1 for its ten minutes.
	if _, _, err := e.Cycle(&Observation{Now: rkAt(10), Pending: []Job{p2}, Running: []Job{run1}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Ledger().Attained(1); got != 600 {
		t.Errorf("minute 10: attained %v, want 600 GPU-s", got)
	}

	// Minute 12: job 1 ended at minute 12; alice submits job 3. The end is
	// charged from the last sweep, the ledger forgets the job, the
	// predictor learns it, and job 3 gets alice's 12-minute mean.
	done1 := run1
	done1.End, done1.State = rkAt(12), StateCompleted
	p3 := enJob(3, "alice", 12)
	s, ranking, err = e.Cycle(&Observation{Now: rkAt(12), Pending: []Job{p2, p3}, Stopped: []Job{done1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Ledger().Counter(Assoc{"lab", "alice"}); got != 720 {
		t.Errorf("alice's counter = %v, want 720 GPU-s (12 minutes)", got)
	}
	if got := e.Ledger().Attained(1); got != 0 {
		t.Errorf("attained of finished job 1 = %v, want 0 (forgotten)", got)
	}
	if diff := cmp.Diff([]int64{1}, pred.observed); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int64]time.Duration{3: 12 * time.Minute}, s.Predicted); diff != "" {
		t.Errorf("predicted (-want +got):\n%s", diff)
	}
	// qssf: alice's 12-minute job before bob's, costed by its hour limit.
	if got := []int64{ranking[0].JobID, ranking[1].JobID}; !cmp.Equal(got, []int64{3, 2}) {
		t.Errorf("ranking %v, want [3 2]", got)
	}

	// Minute 13: nobody finished, so nothing is predicted again.
	before := pred.predicts
	if _, _, err := e.Cycle(&Observation{Now: rkAt(13), Pending: []Job{p2, p3}}); err != nil {
		t.Fatal(err)
	}
	if pred.predicts != before {
		t.Errorf("minute 13: %d new predictions, want 0 (cached)", pred.predicts-before)
	}

	// A requeued job is charged but not finished nor learnt from.
	run3 := p3
	run3.Start, run3.State = rkAt(13), StateRunning
	if _, _, err := e.Cycle(&Observation{Now: rkAt(14), Pending: []Job{p2}, Running: []Job{run3}}); err != nil {
		t.Fatal(err)
	}
	req3 := run3
	req3.End, req3.State = rkAt(20), StatePending
	back3 := p3
	if _, _, err := e.Cycle(&Observation{Now: rkAt(20), Pending: []Job{p2, back3}, Stopped: []Job{req3}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Ledger().Attained(3); got != 420 {
		t.Errorf("requeued job 3 attained %v, want 420 GPU-s", got)
	}
	if len(pred.observed) != 1 {
		t.Errorf("predictor observed %v, want only job 1", pred.observed)
	}
}

// TestEngine_PredictionRefresh checks when a pending job is predicted
// again: after its user has a job finish, but not within ChargeEvery of
// its last prediction.
func TestEngine_PredictionRefresh(t *testing.T) {
	pred := newEnFake()
	e := enEngine(t, "qssf", pred, 10*time.Minute)
	done := func(id int64, user string, start, end float64) Job {
		j := enJob(id, user, start)
		j.Start, j.End, j.State = rkAt(start), rkAt(end), StateCompleted
		return j
	}
	wait := enJob(9, "alice", 0)
	steps := []struct {
		at      float64
		stopped []Job
		want    time.Duration // job 9's prediction, 0 for none
	}{
		{0, nil, 0},                                       // first sight: alice has no history
		{1, []Job{done(1, "alice", 0, 1)}, 0},             // alice's first finish, within 10 min of the prediction
		{10, nil, time.Minute},                            // 10 min later: predicted again from it
		{12, []Job{done(2, "alice", 1, 12)}, time.Minute}, // a second finish, too soon
		{15, []Job{done(3, "bob", 0, 15)}, time.Minute},   // bob's finish does not concern alice
		{20, nil, 6 * time.Minute},                        // 10 min after the last prediction: mean of 1 and 11 minutes
	}
	for _, st := range steps {
		s, _, err := e.Cycle(&Observation{Now: rkAt(st.at), Pending: []Job{wait}, Stopped: st.stopped})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Predicted[9]; got != st.want {
			t.Errorf("minute %v: job 9 predicted %v, want %v", st.at, got, st.want)
		}
	}
}

// TestEngine_PredictOnce: with PredictOnce a pending job keeps its first
// prediction however many of its user's jobs finish while it waits, as
// the Helios artifact's QSSF keeps a job's estimate; a job first seen
// later is predicted from everything finished by then.
func TestEngine_PredictOnce(t *testing.T) {
	pred := newEnFake()
	p, err := New("qssf", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineParams{Policy: p, Predictor: pred, GPUs: 8, ChargeEvery: time.Minute, PredictOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	done := func(id int64, start, end float64) Job {
		j := enJob(id, "alice", start)
		j.Start, j.End, j.State = rkAt(start), rkAt(end), StateCompleted
		return j
	}
	first, late := enJob(8, "alice", 1), enJob(9, "alice", 30)
	steps := []struct {
		at      float64
		pending []Job
		stopped []Job
		want    map[int64]time.Duration // predictions, absent for none
	}{
		{1, []Job{first}, []Job{done(1, 0, 1)}, map[int64]time.Duration{8: time.Minute}},
		{20, []Job{first}, []Job{done(2, 1, 20)}, map[int64]time.Duration{8: time.Minute}},          // not 10 min
		{30, []Job{first, late}, nil, map[int64]time.Duration{8: time.Minute, 9: 10 * time.Minute}}, // 9: mean of 1 and 19 min
		{60, []Job{first, late}, []Job{done(3, 30, 60)}, map[int64]time.Duration{8: time.Minute, 9: 10 * time.Minute}},
	}
	for _, st := range steps {
		s, _, err := e.Cycle(&Observation{Now: rkAt(st.at), Pending: st.pending, Stopped: st.stopped})
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range st.want {
			if got := s.Predicted[id]; got != want {
				t.Errorf("minute %v: job %d predicted %v, want %v (its first prediction)", st.at, id, got, want)
			}
		}
	}
}

func TestEngine_ClockBackwards(t *testing.T) {
	e := enEngine(t, "fifo", nil, 0)
	if _, _, err := e.Cycle(&Observation{Now: rkAt(10)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Cycle(&Observation{Now: rkAt(5)}); !errors.Is(err, ErrClockBackwards) {
		t.Errorf("cycle at minute 5 after 10: err %v, want ErrClockBackwards", err)
	}
}

// TestEngine_SetPolicy: after SetPolicy the next cycle ranks with the new
// policy, and the usage the engine charged under the old one carries over
// (alice ran, so fair-share puts bob first, where FIFO put alice's older
// job first). A nil policy is refused and the old one kept.
func TestEngine_SetPolicy(t *testing.T) {
	e := enEngine(t, "fifo", nil, -1)
	ran := enJob(1, "alice", 0)
	ran.State, ran.Start = StateRunning, rkAt(0)
	pending := []Job{enJob(2, "alice", 1), enJob(3, "bob", 2)}
	_, scores, err := e.Cycle(&Observation{Now: rkAt(30), Pending: pending, Running: []Job{ran}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lnOrder(scores); !cmp.Equal(got, []int64{2, 3}) {
		t.Fatalf("fifo ranks %v, want [2 3]", got)
	}
	if err := e.SetPolicy(nil); err == nil || e.Policy().Name() != "fifo" {
		t.Fatalf("SetPolicy(nil) = %v, policy %s: want an error and fifo kept", err, e.Policy().Name())
	}
	fs, err := New("fairshare", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetPolicy(fs); err != nil {
		t.Fatal(err)
	}
	_, scores, err = e.Cycle(&Observation{Now: rkAt(60), Pending: pending, Running: []Job{ran}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lnOrder(scores); !cmp.Equal(got, []int64{3, 2}) {
		t.Errorf("fairshare after SetPolicy ranks %v, want [3 2]: bob has used nothing", got)
	}
}

func TestNewEngine_Errors(t *testing.T) {
	fifo, _ := NewFIFO(FIFOParams{})
	for _, tc := range []struct {
		name string
		p    EngineParams
	}{
		{"no policy", EngineParams{}},
		{"negative capacity", EngineParams{Policy: fifo, GPUs: -1}},
		{"bad ledger", EngineParams{Policy: fifo, Ledger: LedgerParams{Samples: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewEngine(tc.p); err == nil {
				t.Error("want an error")
			}
		})
	}
}

// enEffPredictor predicts an hour for every job, with the effective run
// time eff[user] (0: none), and counts the effective run times asked.
type enEffPredictor struct {
	eff   map[string]time.Duration
	asked *int
}

func (enEffPredictor) Name() string   { return "eff" }
func (enEffPredictor) Observe(j *Job) {}
func (enEffPredictor) Predict(j *Job) Prediction {
	return Prediction{Run: time.Hour, Source: "fixed"}
}
func (p enEffPredictor) Effective(j *Job, run time.Duration) time.Duration {
	*p.asked++
	return p.eff[j.User]
}

// TestEngine_Effective: the predictor's effective run times reach the
// Snapshot only while the policy reads them, are asked once per
// prediction, are dropped when a new prediction has none, and the learned
// family ranks by them.
func TestEngine_Effective(t *testing.T) {
	asked := 0
	pred := enEffPredictor{eff: map[string]time.Duration{"alice": 10 * time.Minute}, asked: &asked}
	e := enEngine(t, "fair-sjf", pred, time.Minute)
	// bob's job is older and alike in all else: without alice's effective
	// run it ranks first.
	pending := []Job{enJob(1, "bob", 0), enJob(2, "alice", 1)}
	s, _, err := e.Cycle(&Observation{Now: rkAt(2), Pending: pending})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 0 || len(s.Effective) != 0 {
		t.Fatalf("fair-sjf, which reads none: %d effective run times asked, Snapshot has %v; want none", asked, s.Effective)
	}
	pol, err := NewLearned(LearnedParams{Run: 1, Effective: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	for _, at := range []float64{3, 4} {
		s, scores, err := e.Cycle(&Observation{Now: rkAt(at), Pending: pending})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[int64]time.Duration{2: 10 * time.Minute}, s.Effective); diff != "" {
			t.Errorf("minute %v: Effective (-want +got):\n%s", at, diff)
		}
		if len(scores) != 2 || scores[0].JobID != 2 {
			t.Errorf("minute %v: ranking %v: want alice's job 2 first (effective 10 min against bob's hour)", at, scores)
		}
	}
	if asked != 2 {
		t.Errorf("%d effective run times asked over two cycles, want one per pending job (2): the jobs were not predicted again", asked)
	}
	// alice's job is predicted again (a finish of hers, a period later)
	// and now has no effective run time: its entry goes.
	delete(pred.eff, "alice")
	done := enJob(3, "alice", 0)
	done.Start, done.End, done.State = rkAt(0), rkAt(3), StateCompleted
	s, scores, err := e.Cycle(&Observation{Now: rkAt(6), Pending: pending, Stopped: []Job{done}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Effective) != 0 {
		t.Errorf("Effective = %v after a prediction without one, want none", s.Effective)
	}
	if len(scores) != 2 || scores[0].JobID != 1 {
		t.Errorf("ranking %v: want bob's older job 1 first once the keys are alike", scores)
	}
}
