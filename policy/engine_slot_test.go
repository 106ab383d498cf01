package policy

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestEngine_DueSlots runs two Engines through the same churning queue
// (arrivals, starts, finishes, requeues, jobs dropped from the cache), one
// keeping the cache entries it found per queue slot, the other made to look
// every pending job up again at every cycle, and checks that both predict
// the same jobs at the same cycles and hold the same predictions.
func TestEngine_DueSlots(t *testing.T) {
	for _, every := range []time.Duration{0, 7 * time.Minute} {
		t.Run(fmt.Sprint("every=", every), func(t *testing.T) {
			type state struct {
				predicted   map[int64]time.Duration
				repredicted []int64
				predicts    int
			}
			run := func(forgetSlots bool) ([]state, int) {
				pol, err := New("fair-sjf", nil)
				if err != nil {
					t.Fatal(err)
				}
				pred := newEnFake()
				e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: every})
				if err != nil {
					t.Fatal(err)
				}
				var out []state
				enChurn(t, e, 21, 600, 300, func(_ int, s *Snapshot, _ []Score) {
					out = append(out, state{maps.Clone(s.Predicted), slices.Clone(e.Repredicted()), pred.predicts})
					if forgetSlots {
						clear(e.pendSlot[:cap(e.pendSlot)])
					}
				})
				return out, e.cacheLookups
			}
			kept, keptLookups := run(false)
			fresh, freshLookups := run(true)
			for c := range kept {
				a, b := kept[c], fresh[c]
				if !maps.Equal(a.predicted, b.predicted) || !slices.Equal(a.repredicted, b.repredicted) || a.predicts != b.predicts {
					t.Fatalf("cycle %d: with slots predicted %v, repredicted %v, %d predictions; without %v, %v, %d",
						c, a.predicted, a.repredicted, a.predicts, b.predicted, b.repredicted, b.predicts)
				}
			}
			// enChurn shifts its queue when a job leaves, so most slots
			// change; the two runs must still differ, or they compared one path.
			if keptLookups >= freshLookups {
				t.Fatalf("with slots %d cache lookups, without %d: the slots were never used", keptLookups, freshLookups)
			}
		})
	}
}

// TestEngine_DueLooksUpOnlyWhatChanged: a queue of many users' jobs seen
// again costs no cache lookup; a new job costs one.
func TestEngine_DueLooksUpOnlyWhatChanged(t *testing.T) {
	pol, err := New("fair-sjf", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(EngineParams{Policy: pol, Predictor: newEnFake(), GPUs: 8, ChargeEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pending := slotPending(1000, 50)
	cycle := func(at float64) int {
		before := e.cacheLookups
		if _, _, err := e.Cycle(&Observation{Now: rkAt(at), Pending: pending}); err != nil {
			t.Fatal(err)
		}
		return e.cacheLookups - before
	}
	cycle(0)
	if n := cycle(10); n != 0 {
		t.Fatalf("the same queue seen again made %d cache lookups, want 0", n)
	}
	pending = append(pending, Job{ID: 5000, User: "u7", Account: "a", GPUs: 1, Submit: rkAt(20), State: StatePending, TimeLimit: time.Hour})
	if n := cycle(20); n != 1 {
		t.Fatalf("one new job made %d cache lookups, want 1", n)
	}
}

// TestEngine_PredictedAtIsPredicted checks, at every cycle of a churning
// queue (predictions made, changed and dropped, jobs requeued and dropped
// from the cache), that the prediction a policy reads through the Engine's
// cache entries is the one Snapshot.Predicted holds (a job that loses its
// prediction included), that a copy of a Snapshot kept past its cycle reads
// its own Predicted, and that the entries served most of the reads.
func TestEngine_PredictedAtIsPredicted(t *testing.T) {
	for _, every := range []time.Duration{0, 7 * time.Minute} {
		t.Run(fmt.Sprint("every=", every), func(t *testing.T) {
			e := enEngine(t, "fair-sjf", &enDropping{newEnFake()}, every)
			reads, fromSlot, predicted := 0, 0, 0
			var kept *Snapshot // the last cycle's, copied
			enChurn(t, e, 5, 600, 600, func(c int, s *Snapshot, _ []Score) {
				if len(s.pendPred) != len(s.Pending) {
					t.Fatalf("cycle %d: %d cache entries for %d pending jobs", c, len(s.pendPred), len(s.Pending))
				}
				if kept != nil {
					// A copy kept past its cycle reads its own Predicted.
					for i := range kept.Pending {
						if got, want := predictedAt(kept, i), predictedRun(kept, &kept.Pending[i]); got != want {
							t.Fatalf("cycle %d: the copy of the cycle before: job %d: predictedAt %v, its Predicted says %v",
								c, kept.Pending[i].ID, got, want)
						}
					}
				}
				cp := *s
				cp.Pending, cp.Predicted = slices.Clone(s.Pending), maps.Clone(s.Predicted)
				kept = &cp
				for i := range s.Pending {
					j := &s.Pending[i]
					got, want := predictedAt(s, i), predictedRun(s, j)
					if got != want {
						t.Fatalf("cycle %d, job %d: predictedAt %v, Predicted says %v", c, j.ID, got, want)
					}
					reads++
					if p := s.pendPred[i]; p != nil && p.id == j.ID && !p.gone {
						fromSlot++
					}
					if _, ok := s.Predicted[j.ID]; ok {
						predicted++
					}
				}
			})
			if fromSlot < reads*9/10 || predicted == 0 || predicted == reads {
				t.Fatalf("%d reads, %d from the cache entries, %d with a prediction: the test missed a path", reads, fromSlot, predicted)
			}
		})
	}
}

// enDropping is enFakePredictor with nothing to go on at every fifth
// prediction, so that jobs lose the prediction they had.
type enDropping struct{ *enFakePredictor }

func (f *enDropping) Predict(j *Job) Prediction {
	p := f.enFakePredictor.Predict(j)
	if f.predicts%5 == 0 {
		return Prediction{Source: sourceNone}
	}
	return p
}

// TestPredictedAt_WithoutEntries: a Snapshot that is not the Engine's,
// whose Engine has moved on, or whose Pending no longer matches the
// entries, reads Predicted.
func TestPredictedAt_WithoutEntries(t *testing.T) {
	s := rkSnap(0, rkJob{id: 1, run: time.Hour}, rkJob{id: 2, limit: 3 * time.Hour})
	if got := predictedAt(s, 0); got != time.Hour {
		t.Errorf("no entries: %v, want 1h", got)
	}
	s.pendPred = []*enginePred{{id: 2, run: time.Minute, has: true}, {id: 2, run: time.Minute, has: true}}
	s.predOf, s.predCycle = &Engine{cycle: 4}, 3
	if got := predictedAt(s, 1); got != 3*time.Hour {
		t.Errorf("an Engine past the Snapshot's cycle: %v, want the limit, 3h", got)
	}
	s.predCycle = 4
	if got := predictedAt(s, 0); got != time.Hour {
		t.Errorf("another job's entry: %v, want 1h", got)
	}
	if got := predictedAt(s, 1); got != time.Minute {
		t.Errorf("the job's entry: %v, want 1m", got)
	}
	s.pendPred[1].gone = true
	if got := predictedAt(s, 1); got != 3*time.Hour {
		t.Errorf("a gone entry: %v, want the limit, 3h", got)
	}
}

// TestEngine_SweepKeepsChargeCells runs two Engines through the same
// churning queue with running jobs appended (the simulator's way), one
// keeping each running job's charged cell and Ledger record in its byStart
// entry between sweeps, the other made to look them up again at every
// cycle, and checks after every cycle that both charged the same: every
// job's usage record and charged instant.
func TestEngine_SweepKeepsChargeCells(t *testing.T) {
	for _, every := range []time.Duration{0, 7 * time.Minute} {
		t.Run(fmt.Sprint("every=", every), func(t *testing.T) {
			type state struct {
				jobs    map[int64]jobUsage
				charged map[int64]time.Time
			}
			kept := 0
			run := func(forget bool) []state {
				e := enEngine(t, "vtc", newEnFake(), every)
				var out []state
				enChurn(t, e, 17, 600, 600, func(_ int, s *Snapshot, _ []Score) {
					st := state{jobs: map[int64]jobUsage{}, charged: map[int64]time.Time{}}
					for id, ju := range e.ledger.jobs {
						st.jobs[id] = *ju
					}
					for id, c := range e.charged {
						st.charged[id] = *c
					}
					out = append(out, st)
					for k := range e.running.byStart {
						en := &e.running.byStart[k]
						if en.cell != nil && !forget {
							kept++
						}
						if forget {
							en.cell, en.at, en.usage, en.known = nil, time.Time{}, nil, false
							if en.r != nil {
								en.r.usage = nil
							}
						}
					}
				})
				return out
			}
			a, b := run(false), run(true)
			for c := range a {
				if !reflect.DeepEqual(a[c], b[c]) {
					t.Fatalf("cycle %d: keeping the cells charged %v, looking them up %v", c, a[c], b[c])
				}
			}
			if kept == 0 {
				t.Fatal("no index record kept a cell: the test compared one path")
			}
		})
	}
}

// enRecPredictor is enFakePredictor recording the ids it predicts.
type enRecPredictor struct {
	*enFakePredictor
	ids []int64
}

func (p *enRecPredictor) Predict(j *Job) Prediction {
	p.ids = append(p.ids, j.ID)
	return p.enFakePredictor.Predict(j)
}

// TestEngine_DueFollowsRule checks, at every cycle of a churning queue,
// that the jobs the Engine predicts are those its rule names, played here
// from the observations alone: a job without a prediction (new, or first
// seen running), and a pending job (unless PredictOnce) whose user had a
// job finish since its last prediction, once a charging period has passed
// since that prediction.
func TestEngine_DueFollowsRule(t *testing.T) {
	for _, tc := range []struct {
		every time.Duration
		once  bool
	}{{0, false}, {-1, false}, {7 * time.Minute, false}, {30 * time.Minute, false}, {7 * time.Minute, true}} {
		t.Run(fmt.Sprintf("every=%v/once=%v", tc.every, tc.once), func(t *testing.T) {
			pol, err := New("fair-sjf", nil)
			if err != nil {
				t.Fatal(err)
			}
			pred := &enRecPredictor{enFakePredictor: newEnFake()}
			e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: tc.every, PredictOnce: tc.once})
			if err != nil {
				t.Fatal(err)
			}
			every := e.p.ChargeEvery // 0 is the default period
			type last struct {
				gen uint64
				at  time.Time
			}
			ref, gens := map[int64]*last{}, map[string]uint64{}
			again := 0
			cycle := func(o *Observation) (*Snapshot, []Score, error) {
				for i := range o.Stopped {
					if j := &o.Stopped[i]; j.State.Finished() {
						gens[j.User]++
						delete(ref, j.ID)
					}
				}
				var want []int64
				for i := range o.Pending {
					j := &o.Pending[i]
					l := ref[j.ID]
					switch {
					case l == nil:
						ref[j.ID] = &last{gens[j.User], o.Now}
					case !tc.once && l.gen != gens[j.User] && (every <= 0 || o.Now.Sub(l.at) >= every):
						*l = last{gens[j.User], o.Now}
						again++
					default:
						continue
					}
					want = append(want, j.ID)
				}
				for i := range o.Running {
					if j := &o.Running[i]; ref[j.ID] == nil {
						ref[j.ID] = &last{gens[j.User], o.Now}
						want = append(want, j.ID)
					}
				}
				pred.ids = pred.ids[:0]
				s, ranking, err := e.Cycle(o)
				slices.Sort(want)
				got := slices.Sorted(slices.Values(pred.ids))
				if !slices.Equal(got, slices.Compact(want)) {
					t.Fatalf("at %v: predicted %v, want %v", o.Now, got, want)
				}
				return s, ranking, err
			}
			enChurnWith(t, cycle, 5, 600, 300, func(int, *Snapshot, []Score) {})
			if again < 50 && !tc.once {
				t.Fatalf("%d predictions made again: the test checks too little", again)
			}
		})
	}
}

// TestEngine_SweepCacheKeepsPending: once the jobs that left without
// running fill the cache, sweepCache forgets them and keeps the entries
// (and predictions) of the jobs still pending, also those that kept their
// queue slot, whose entry due takes from the slot without a lookup.
func TestEngine_SweepCacheKeepsPending(t *testing.T) {
	pol, err := New("fair-sjf", nil)
	if err != nil {
		t.Fatal(err)
	}
	pred := newEnFake()
	for u := range 7 {
		pred.sum[fmt.Sprint("u", u)], pred.n[fmt.Sprint("u", u)] = time.Duration(u+1)*time.Minute, 1
	}
	e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pending := slotPending(1110, 7)
	for c, n := range []int{1110, 10, 10} {
		// The first 10 jobs stay in their slots; the others leave after
		// the first cycle without running.
		s, _, err := e.Cycle(&Observation{Now: rkAt(float64(10 * c)), Pending: pending[:n]})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range pending[:n] {
			if e.cache[j.ID] == nil {
				t.Fatalf("cycle %d: pending job %d has no cache entry", c, j.ID)
			}
			if _, ok := s.Predicted[j.ID]; !ok {
				t.Fatalf("cycle %d: pending job %d has no prediction", c, j.ID)
			}
		}
	}
	if len(e.cache) != 10 {
		t.Fatalf("%d cache entries for 10 pending jobs: the jobs that left were not forgotten", len(e.cache))
	}
}

// TestEngine_IDAgainInItsSlot: a job id that comes back to the queue
// slot it left, after its job finished (Slurm's ids start again after a
// reset), is predicted again from a new cache entry, not read from the
// entry the finish forgot, which the slot (pendSlot) still holds.
func TestEngine_IDAgainInItsSlot(t *testing.T) {
	pol, err := New("fair-sjf", nil)
	if err != nil {
		t.Fatal(err)
	}
	pred := newEnFake()
	pred.sum["u"], pred.n["u"] = time.Hour, 1
	// A day between two predictions of a job: the job is not due when
	// its id comes back, unless seen as new.
	e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	j := Job{ID: 1, User: "u", Account: "a", GPUs: 1, Submit: rkAt(0), State: StatePending, TimeLimit: 2 * time.Hour}
	run := j
	run.Start, run.State = rkAt(10), StateRunning
	done := run
	done.End, done.State = rkAt(70), StateCompleted
	again := j
	again.Submit = rkAt(60)
	for c, o := range []Observation{
		{Now: rkAt(0), Pending: []Job{j}},
		{Now: rkAt(10), Running: []Job{run}, RunningAppended: true},
		{Now: rkAt(70), Pending: []Job{again}, Stopped: []Job{done}, RunningAppended: true},
	} {
		s, _, err := e.Cycle(&o)
		if err != nil {
			t.Fatalf("cycle %d: %v", c, err)
		}
		if len(o.Pending) == 0 {
			continue
		}
		if en := e.cache[1]; en == nil || en.gone {
			t.Fatalf("cycle %d: the pending job has no live cache entry (%v)", c, en)
		}
		if got, want := predictedAt(s, 0), predictedRun(s, &s.Pending[0]); got != want {
			t.Fatalf("cycle %d: predicted %v, Predicted says %v", c, got, want)
		}
	}
	if pred.predicts != 2 {
		t.Fatalf("%d predictions, want 2: the job was not predicted again", pred.predicts)
	}
}

// slotPending is n pending jobs of one GPU and an hour's limit, ids 1 to
// n, all submitted at minute 0, spread in turn over users u0 to u<users-1>
// of account a.
func slotPending(n, users int) []Job {
	pending := make([]Job, 0, n)
	for i := range n {
		pending = append(pending, Job{ID: int64(i + 1), User: fmt.Sprint("u", i%users), Account: "a", GPUs: 1,
			Submit: rkAt(0), State: StatePending, TimeLimit: time.Hour})
	}
	return pending
}
