package policy

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStaticOrder_Traits checks that the registry's StaticOrder and
// PredictionBlind traits say what the policies do: a default instance of a
// policy with StaticOrder gets a StaticOrder, every other does not, and f1
// gets one with a fixed origin; ReadsPredictions is false exactly for the
// policies with PredictionBlind.
func TestStaticOrder_Traits(t *testing.T) {
	for _, e := range registry {
		p, err := e.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := NewStaticOrder(p); ok != e.Traits.StaticOrder {
			t.Errorf("%s: NewStaticOrder ok = %v, trait StaticOrder = %v", e.Name, ok, e.Traits.StaticOrder)
		}
	}
	for _, e := range registry {
		p, err := e.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if blind := !ReadsPredictions(p); blind != e.Traits.PredictionBlind {
			t.Errorf("%s: ReadsPredictions = %v, trait PredictionBlind = %v", e.Name, !blind, e.Traits.PredictionBlind)
		}
	}
	p, err := New("f1", F1Params{Origin: rkT0})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := NewStaticOrder(p); !ok {
		t.Error("f1 with a fixed origin: no StaticOrder")
	}
	for _, params := range []MultifactorParams{{WeightAge: 1}, {WeightFairshare: 1}, {WeightFairshare: 1, FairTree: true}} {
		p, err := New("slurm", params)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := NewStaticOrder(p); ok {
			t.Errorf("slurm with %+v: a StaticOrder, though its order moves with time", params)
		}
	}
}

// TestStaticOrder_SameAsRank plays random queues (many equal submit times,
// limits and predictions, so that ties are common) through every policy
// with static keys: jobs arrive, start and are predicted anew, the clock
// moves, and after every step the kept order must be the order Rank gives
// the same pending jobs.
func TestStaticOrder_SameAsRank(t *testing.T) {
	policies := map[string]any{"fifo": nil, "qssf": nil, "sjf-limit": nil, "sjf-oracle": nil, "slurm": nil,
		"slurm/size":            MultifactorParams{WeightJobSize: 1000, ClusterNodes: 4, ClusterCPUs: 16, WeightQOS: 10},
		"slurm/small":           MultifactorParams{WeightJobSize: 1000, ClusterNodes: 4, ClusterCPUs: 16, FavorSmall: true},
		"sjf-oracle/by-service": SJFOracleParams{ByService: true}, "f1/origin": F1Params{Origin: rkT0}, "f1": nil}
	for label, params := range policies {
		name, _, _ := strings.Cut(label, "/")
		t.Run(label, func(t *testing.T) {
			p, err := New(name, params)
			if err != nil {
				t.Fatal(err)
			}
			o, ok := NewStaticOrder(p)
			if !ok {
				t.Fatalf("%s: no StaticOrder", label)
			}
			rng := rand.New(rand.NewPCG(3, 5))
			s := &Snapshot{Now: rkT0, Predicted: map[int64]time.Duration{}, TrueRun: map[int64]time.Duration{}}
			nextID := int64(100)
			steps, moved := 0, 0
			for step := range 400 {
				s.Now = s.Now.Add(time.Duration(rng.IntN(3)) * time.Minute)
				for range rng.IntN(4) { // arrivals
					// Ids out of submit order, submit times and sizes
					// from a few values: ties at every level.
					nextID += int64(1 + rng.IntN(3))
					id := nextID
					if rng.IntN(4) == 0 {
						id = 1_000_000 - nextID
					}
					j := Job{ID: id, User: "u", Account: "a", Submit: s.Now.Add(-time.Duration(rng.IntN(3)) * time.Minute),
						GPUs: rng.IntN(3), CPUs: 1 + rng.IntN(4), TimeLimit: time.Duration(rng.IntN(3)) * time.Hour, State: StatePending}
					s.Pending = append(s.Pending, j)
					if rng.IntN(3) > 0 {
						s.Predicted[id] = time.Duration(rng.IntN(4)) * 30 * time.Minute
					}
					s.TrueRun[id] = time.Duration(rng.IntN(4)) * 20 * time.Minute
					if err := o.Add(s, &s.Pending[len(s.Pending)-1], int32(id)); err != nil {
						t.Fatal(err)
					}
				}
				for range rng.IntN(3) { // starts
					if len(s.Pending) == 0 {
						break
					}
					i := rng.IntN(len(s.Pending))
					o.Remove(s.Pending[i].ID)
					s.Pending = slices.Delete(s.Pending, i, i+1)
				}
				if len(s.Pending) > 0 && rng.IntN(2) == 0 { // a new prediction
					j := &s.Pending[rng.IntN(len(s.Pending))]
					if rng.IntN(3) == 0 {
						delete(s.Predicted, j.ID)
					} else {
						s.Predicted[j.ID] = time.Duration(rng.IntN(4)) * 30 * time.Minute
					}
					if err := o.Add(s, j, int32(j.ID)); err != nil {
						t.Fatal(err)
					}
				}
				if o.Moved(s) { // f1's origin, the oldest job, left
					tags := make([]int32, len(s.Pending))
					for i := range s.Pending {
						tags[i] = int32(s.Pending[i].ID)
					}
					if err := o.AddAll(s, s.Pending, tags); err != nil {
						t.Fatal(err)
					}
					moved++
				}
				// Rank sees the queue in another order than the kept one.
				shuffled := slices.Clone(s.Pending)
				rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
				rs := *s
				rs.Pending = shuffled
				scores, err := p.Rank(&rs)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]int64, len(scores))
				for i, sc := range scores {
					want[i] = sc.JobID
				}
				var got []int64
				for _, tag := range o.Tags() {
					got = append(got, int64(tag))
				}
				if o.Len() != len(s.Pending) || !slices.Equal(got, want) {
					t.Fatalf("step %d: kept order %v, Rank's %v", step, got, want)
				}
				from := rng.IntN(o.Len() + 1)
				var tail []int64
				for _, tag := range o.TagsFrom(from) {
					tail = append(tail, int64(tag))
				}
				if !slices.Equal(tail, want[from:]) {
					t.Fatalf("step %d: TagsFrom(%d) %v, want %v", step, from, tail, want[from:])
				}
				steps++
			}
			if steps == 0 || label == "f1" && moved == 0 {
				t.Fatalf("%d steps compared, the origin moved %d times", steps, moved)
			}
		})
	}
}

// TestStaticOrder_Errors checks that a job Rank cannot rank is refused
// with Rank's error and left out.
func TestStaticOrder_Errors(t *testing.T) {
	p, err := New("sjf-oracle", nil)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := NewStaticOrder(p)
	s := rkSnap(0, rkJob{id: 1})
	if err := o.Add(s, &s.Pending[0], 1); err == nil || o.Has(1) {
		t.Fatalf("job without a true run time: error %v, held %v", err, o.Has(1))
	}
	_, rerr := p.Rank(s)
	if err := o.Add(s, &s.Pending[0], 1); rerr == nil || err.Error() != rerr.Error() {
		t.Errorf("error %v, Rank's %v", err, rerr)
	}
}
