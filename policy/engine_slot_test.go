package policy

import (
	"fmt"
	"maps"
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
	var pending []Job
	for i := range 1000 {
		pending = append(pending, Job{ID: int64(i + 1), User: fmt.Sprint("u", i%50), Account: "a", GPUs: 1,
			Submit: rkAt(0), State: StatePending, TimeLimit: time.Hour})
	}
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
