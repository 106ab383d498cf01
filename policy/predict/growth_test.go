package predict

import (
	"fmt"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// TestFairway_NamesBoundedByHistory runs the engine serve runs for
// thousands of cycles over jobs whose names are unique (a sweep's
// run-<hash>, a script that stamps the date): 50,000 jobs, about 200
// pending or running at once, in turn finished and learned from. The
// names the predictor interns must be bounded by the jobs it keeps (users
// × History), not by every job it has seen.
func TestFairway_NamesBoundedByHistory(t *testing.T) {
	const (
		cycles  = 5_000
		perStep = 10 // jobs submitted per cycle, each pending 10 cycles and running 10
		users   = 40
		history = 16
	)
	pred, err := NewFairwayPredictor(FairwayParams{History: history, Window: 2_000, RetrainEvery: 2_000})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, Predictor: pred, GPUs: 256})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	at := func(c int) time.Time { return t0.Add(time.Duration(c) * 30 * time.Second) }
	jobOf := func(s, i int) policy.Job {
		id := int64(1000 + s*perStep + i)
		return policy.Job{ID: id, ArrayTask: -1, User: fmt.Sprintf("u%d", (s*perStep+i)%users), Account: "a",
			Name: fmt.Sprintf("run-%d", id), Submit: at(s), GPUs: 1, CPUs: 4, TimeLimit: time.Hour}
	}
	for k := range cycles {
		o := policy.Observation{Now: at(k)}
		for s := max(0, k-20); s <= k; s++ {
			for i := range perStep {
				j := jobOf(s, i)
				switch age := k - s; {
				case age < 10:
					j.State = policy.StatePending
					o.Pending = append(o.Pending, j)
				case age < 20:
					j.State, j.Start = policy.StateRunning, at(s+10)
					o.Running = append(o.Running, j)
				default:
					j.State, j.Start, j.End = policy.StateCompleted, at(s+10), at(k)
					o.Stopped = append(o.Stopped, j)
				}
			}
		}
		if _, _, err := eng.Cycle(&o); err != nil {
			t.Fatal(err)
		}
	}
	f := pred.(*fairwayPredictor)
	if f.observed < cycles*perStep*9/10 {
		t.Fatalf("%d jobs observed: the test proves nothing", f.observed)
	}
	if got, most := len(f.names), users*history; got > most {
		t.Errorf("%d job names interned after %d jobs observed; want at most %d (users × History)", got, f.observed, most)
	}
}
