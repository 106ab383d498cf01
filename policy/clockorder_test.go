package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestClockOrder_Policies checks which registered policies get a
// ClockOrder: wfp3 and unicep, whose keys grow with the wait alone, and
// themis, whose keys also read N and the job's prediction (ReadsUsers);
// none whose order is static, and none but themis that reads anything
// but the job and the clock.
func TestClockOrder_Policies(t *testing.T) {
	for _, e := range registry {
		p, err := e.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := NewClockOrder(p)
		want := e.Name == "wfp3" || e.Name == "unicep" || e.Name == "themis"
		if ok != want {
			t.Errorf("%s: NewClockOrder ok = %v, want %v", e.Name, ok, want)
		}
		o, _ := NewClockOrder(p)
		if users := ok && o.ReadsUsers(); users != (e.Name == "themis") {
			t.Errorf("%s: ReadsUsers %v", e.Name, users)
		}
		if ok && (!e.Traits.PredictionBlind && !o.ReadsUsers() || e.Traits.StaticOrder) {
			t.Errorf("%s: a ClockOrder, but traits %+v: its keys read only the job and the clock", e.Name, e.Traits)
		}
	}
}

// clockCase is one way of drawing the jobs of TestClockOrder_SameAsRank.
type clockCase struct {
	name string
	// step draws the time between two instants.
	step func(r *rand.Rand) time.Duration
	// job fills a job's submit, eligible, limit and size.
	job func(r *rand.Rand, now time.Time, j *Job)
	// adds is one more than the most jobs that arrive at an instant; 0
	// means the tests' own.
	adds int
}

// arrivals is c's count of jobs arriving at an instant, up to def-1
// unless c says otherwise.
func (c *clockCase) arrivals(r *rand.Rand, def int) int {
	if c.adds > 0 {
		def = c.adds
	}
	return r.IntN(def)
}

func clockCases() []clockCase {
	pick := func(r *rand.Rand, xs ...int) int { return xs[r.IntN(len(xs))] }
	return []clockCase{
		{
			// Few distinct limits, sizes and submit instants: many jobs
			// with equal keys at every instant (the tie-break decides)
			// and pairs whose keys cross.
			name: "ties",
			step: func(r *rand.Rand) time.Duration { return time.Duration(pick(r, 0, 1, 60, 600)) * time.Second },
			job: func(r *rand.Rand, now time.Time, j *Job) {
				j.Submit = now.Add(-time.Duration(pick(r, 0, 0, 60, 3600)) * time.Second)
				j.TimeLimit = time.Duration(pick(r, 0, 60, 3600, 7200)) * time.Second
				j.CPUs = pick(r, 0, 1, 2, 8)
			},
		},
		{
			// Nanosecond submit times and limits, eligible times ahead
			// of now and behind the submit, GPU and shard jobs.
			name: "ragged",
			step: func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(20 * time.Minute))) },
			job: func(r *rand.Rand, now time.Time, j *Job) {
				j.Submit = now.Add(-time.Duration(r.Int64N(int64(48 * time.Hour))))
				switch r.IntN(4) {
				case 0:
					j.Eligible = now.Add(time.Duration(r.Int64N(int64(time.Hour))))
				case 1:
					j.Eligible = j.Submit.Add(time.Duration(r.Int64N(int64(time.Hour))))
				}
				j.TimeLimit = time.Duration(1 + r.Int64N(int64(24*time.Hour)))
				switch r.IntN(3) {
				case 0:
					j.GPUs = r.IntN(9)
				case 1:
					j.Shards = r.IntN(20)
				default:
					j.CPUs = 1 + r.IntN(2048)
				}
			},
		},
		{
			// Arrivals at the instant, as the simulator's: every new key
			// is 0, behind the queue, and the clock moves in seconds.
			name: "arrivals",
			step: func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(300)) * time.Second },
			job: func(r *rand.Rand, now time.Time, j *Job) {
				j.Submit = now
				j.TimeLimit = time.Duration(60+r.IntN(12*3600)) * time.Second
				j.CPUs = 1 + r.IntN(64)
			},
		},
		{
			// A queue of hundreds to thousands of jobs in a few slope
			// classes (two limits, two sizes): classes of several full
			// blocks, whose bounds are near one another's and near the
			// keys found, blocks emptied by the best jobs leaving and
			// taken again, and waits from nanoseconds to days.
			name: "crowd",
			step: func(r *rand.Rand) time.Duration {
				return time.Duration(pick(r, 0, 1, 1000, int(time.Second), int(time.Minute), int(time.Hour)))
			},
			job: func(r *rand.Rand, now time.Time, j *Job) {
				j.Submit = now.Add(-time.Duration(pick(r, 0, 0, 1, 999, int(time.Second), int(time.Hour), int(30*time.Hour))))
				if r.IntN(4) == 0 {
					j.Submit = j.Submit.Add(-time.Duration(r.Int64N(int64(time.Hour))))
				}
				j.TimeLimit = time.Duration(pick(r, 3600, 7200)) * time.Second
				j.CPUs = pick(r, 1, 8)
			},
			adds: 14,
		},
	}
}

// TestClockOrder_SameAsRank plays random queues through wfp3 and unicep:
// jobs arrive and leave, the clock moves, and after every step the kept
// order's best job and then its whole order must be exactly those of the
// policy's Rank of the same pending jobs.
func TestClockOrder_SameAsRank(t *testing.T) {
	for _, name := range []string{"wfp3", "unicep", "themis"} {
		for _, c := range clockCases() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				p, o := clockOrderFor(t, name)
				rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
				s := &Snapshot{Now: rkT0, Service: Service{ShardsPerGPU: 4}}
				nextID := int64(1)
				for step := range 600 {
					s.Now = s.Now.Add(c.step(rng))
					o.Advance(s.Now)
					gone := map[int64]bool{}
					for _, i := range rng.Perm(len(s.Pending))[:rng.IntN(min(len(s.Pending), 4)+1)] {
						o.Remove(int32(s.Pending[i].ID))
						gone[s.Pending[i].ID] = true
					}
					s.Pending = slices.DeleteFunc(s.Pending, func(j Job) bool { return gone[j.ID] })
					for range c.arrivals(rng, 6) {
						j := Job{ID: nextID, User: "u"}
						c.job(rng, s.Now, &j)
						if rng.IntN(5) == 0 && len(s.Pending) > 0 {
							// Same submit as another job.
							j.Submit = s.Pending[rng.IntN(len(s.Pending))].Submit
						}
						nextID++
						if err := o.Add(s, &j, int32(j.ID)); err != nil {
							t.Fatal(err)
						}
						s.Pending = append(s.Pending, j)
					}
					checkKeptOrder(t, p, o, s, fmt.Sprintf("step %d", step))
				}
			})
		}
	}
}

// TestClockOrder_Instants checks the instants off Advance's fast path: a
// clock going back, a now with a monotonic reading, and instants outside
// inFastRange (the zero time, the year 2300). The order is still Rank's.
func TestClockOrder_Instants(t *testing.T) {
	p, o := clockOrderFor(t, "wfp3")
	rng := rand.New(rand.NewPCG(1, 2))
	mono := time.Now()
	s := &Snapshot{Now: mono}
	for i := range 60 {
		j := Job{ID: int64(i), Submit: mono.Add(-time.Duration(rng.Int64N(int64(10 * time.Hour)))), TimeLimit: time.Duration(1+rng.IntN(5)) * time.Hour, CPUs: 1 + rng.IntN(4)}
		if i%7 == 0 {
			j.Submit = time.Time{}
		}
		if err := o.Add(s, &j, int32(i)); err != nil {
			t.Fatal(err)
		}
		s.Pending = append(s.Pending, j)
	}
	wall := mono.Round(0)
	for _, now := range []time.Time{mono, wall.Add(time.Hour), wall.Add(30 * time.Minute), wall.Add(3 * time.Hour), mono.Add(4 * time.Hour),
		wall.Add(5 * time.Hour), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), wall.Add(6 * time.Hour)} {
		s.Now = now
		o.Advance(now)
		scores, err := p.Rank(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, sc := range scores {
			if got := o.AppendTags(nil)[i]; int64(got) != sc.JobID {
				t.Fatalf("at %v: place %d holds job %d, Rank's %d", now, i, got, sc.JobID)
			}
		}
	}
}

// TestClockOrder_Errors checks the tags Add refuses and that Remove of a
// tag not held changes nothing.
func TestClockOrder_Errors(t *testing.T) {
	_, o := clockOrderFor(t, "unicep")
	s := &Snapshot{Now: rkT0}
	j := Job{ID: 1, Submit: rkT0.Add(-time.Hour), CPUs: 4}
	if err := o.Add(s, &j, -1); err == nil {
		t.Error("Add with tag -1: no error")
	}
	if err := o.Add(s, &j, 3); err != nil {
		t.Fatal(err)
	}
	if err := o.Add(s, &j, 3); err == nil {
		t.Error("Add of a tag held: no error")
	}
	o.Remove(5)
	o.Remove(-2)
	if got := o.AppendTags(nil); !slices.Equal(got, []int32{3}) {
		t.Errorf("Tags = %v, want [3]", got)
	}
	o.Remove(3)
	if o.Len() != 0 {
		t.Errorf("Len after removing the only job = %d", o.Len())
	}
}

// TestClockKeyed_Values checks the keys a ClockOrder computes for each
// clock-keyed policy, bit for bit: clockValues gives each entry
// clockValue of its wait, and clockValue of a job's wait is the Value
// Rank gives the job, over random limits, sizes and waits.
func TestClockKeyed_Values(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, name := range []string{"wfp3", "unicep", "themis"} {
		p, err := New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		cp := p.(clockKeyed)
		for range 5000 {
			j := Job{ID: 1, Submit: rkT0, TimeLimit: time.Duration(rng.Int64N(int64(48 * time.Hour))), CPUs: rng.IntN(5000)}
			if rng.IntN(3) == 0 {
				j.GPUs, j.Shards = rng.IntN(9), rng.IntN(9)
			}
			s := &Snapshot{Now: rkT0.Add(time.Duration(rng.Int64N(int64(30 * 24 * time.Hour)))), Pending: []Job{j}, Service: Service{ShardsPerGPU: 4}}
			if rng.IntN(2) == 0 {
				// themis' prediction, capacity and N (1 here).
				s.Predicted = map[int64]time.Duration{1: time.Duration(rng.Int64N(int64(48 * time.Hour)))}
				s.GPUs = float64(rng.IntN(20))
			}
			if rng.IntN(4) == 0 {
				s.Now = rkT0.Add(-time.Duration(rng.Int64N(int64(time.Hour)))) // before the submit
			}
			scores, err := p.Rank(s)
			if err != nil {
				t.Fatal(err)
			}
			a, b := cp.clockConsts(s, &j, 0, 1)
			since, signed := cp.clockSince(&j)
			clock := newSecondsClock(s.Now)
			w := clock.since(since)
			if !signed {
				w = waited(s, &j)
			}
			now := clockNow{clock: newSecondsClock(s.Now), fast: true, ns: s.Now.UnixNano()}
			keys, jobs := []clockKey{{slot: 1}}, []clockJob{{}, {a: a, b: b, fast: true, signed: signed, sinceNS: since.UnixNano(), since: since}}
			cp.clockValues(keys, jobs, &now)
			if v := cp.clockValue(w, a, b); math.Float64bits(v) != math.Float64bits(scores[0].Value) || math.Float64bits(keys[0].value) != math.Float64bits(v) {
				t.Fatalf("%s: job %+v at %v: clockValue %v, clockValues %v, Rank's Value %v", name, j, s.Now, v, keys[0].value, scores[0].Value)
			}
		}
	}
}

// TestClockOrder_BoundsCoverKeys checks the bound of each block of a
// ClockOrder against the keys of the jobs it holds, as Rank computes them
// (clockValue of the wait): at least each, over random queues and
// instants, the clock also going back and jobs leaving; and that the
// bound is worth having, near the block's best key for most blocks.
func TestClockOrder_BoundsCoverKeys(t *testing.T) {
	for _, name := range []string{"wfp3", "unicep", "themis"} {
		for _, c := range clockCases() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				_, o := clockOrderFor(t, name)
				rng := rand.New(rand.NewPCG(3, uint64(len(c.name))))
				s := &Snapshot{Now: rkT0, Service: Service{ShardsPerGPU: 4}}
				var held []int32
				nextID, checked, near := int64(1), 0, 0
				for step := range 300 {
					s.Now = s.Now.Add(c.step(rng))
					if rng.IntN(10) == 0 {
						s.Now = s.Now.Add(-c.step(rng)) // back
					}
					o.Advance(s.Now)
					for range c.arrivals(rng, 6) {
						j := Job{ID: nextID, User: "u"}
						c.job(rng, s.Now, &j)
						nextID++
						if err := o.Add(s, &j, int32(j.ID)); err != nil {
							t.Fatal(err)
						}
						held = append(held, int32(j.ID))
					}
					for range rng.IntN(min(len(held), 4) + 1) {
						i := rng.IntN(len(held))
						o.Remove(held[i])
						held = slices.Delete(held, i, i+1)
					}
					for _, i := range o.active {
						b := &o.blocks[i]
						bound, best := o.bound(b), 0.0
						for _, k := range b.keys {
							j := &o.jobs[k.slot]
							v := o.p.clockValue(o.at.wait(j), j.a, j.b)
							if !(v <= bound) {
								t.Fatalf("step %d at %s: block of %d jobs, slope %v from %d: bound %v below job %d's key %v (slope %v, since %d)",
									step, s.Now.Format(time.RFC3339Nano), len(b.keys), b.slope, b.sinceNS, bound, j.id, v, j.slope, j.sinceNS)
							}
							best = max(best, v)
							checked++
						}
						if bound <= 2*best {
							near++
						}
					}
				}
				if checked < 1000 {
					t.Fatalf("%d keys checked against their bounds: the test checks too little", checked)
				}
				if near == 0 {
					t.Fatal("no block's bound within twice its best key")
				}
			})
		}
	}
}

// TestClockOrder_BestAndBehind plays random queues through wfp3 and
// unicep as the simulator's pass reads them: Best, asked again after
// each job it returns is removed (started), must give the jobs in Rank's
// order, and NextBehind, after Behind, exactly the jobs behind the head
// within the bounds, in Rank's order, the bounds shrinking as the walk
// goes, whether the keys were sorted at the last instant or not, and
// with needs few or more than Behind has heaps for.
func TestClockOrder_BestAndBehind(t *testing.T) {
	for _, name := range []string{"wfp3", "unicep", "themis"} {
		for _, c := range clockCases() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				p, o := clockOrderFor(t, name)
				rng := rand.New(rand.NewPCG(9, uint64(len(c.name))))
				s := &Snapshot{Now: rkT0, Service: Service{ShardsPerGPU: 4}}
				need, limit := map[int64]int32{}, map[int64]int64{}
				nextID, walked := int64(1), 0
				// Needs of 1-6 on even steps, of 1-80 on odd ones (more
				// than clockHeaps, so that some share a heap).
				needs := func(step int) int { return 6 + step%2*74 }
				for step := range 400 {
					s.Now = s.Now.Add(c.step(rng))
					o.Advance(s.Now)
					if step%5 == 0 {
						o.AppendTags(nil) // the keys sorted at this instant
					}
					add := func() {
						j := Job{ID: nextID, User: "u"}
						c.job(rng, s.Now, &j)
						nextID++
						need[j.ID], limit[j.ID] = int32(1+rng.IntN(needs(step))), int64(rng.IntN(100))
						if err := o.AddSized(s, &j, int32(j.ID), need[j.ID], limit[j.ID]); err != nil {
							t.Fatal(err)
						}
						s.Pending = append(s.Pending, j)
					}
					rank := func() []int32 {
						scores, err := p.Rank(s)
						if err != nil {
							t.Fatal(err)
						}
						var want []int32
						for _, sc := range scores {
							want = append(want, int32(sc.JobID))
						}
						return want
					}
					for range c.arrivals(rng, 8) {
						add()
					}
					want := rank()
					// Start a few in order, as the pass does while they
					// fit; now and then a job arrives between two, after
					// Best has passed over some of its top.
					starts := rng.IntN(min(len(want), 7) + 1)
					for i := range starts {
						got, ok := o.Best()
						if !ok || got != want[0] {
							t.Fatalf("step %d: Best %d, %v after %d started; want %d", step, got, ok, i, want[0])
						}
						o.Remove(got)
						s.Pending = slices.DeleteFunc(s.Pending, func(j Job) bool { return j.ID == int64(got) })
						if want = want[1:]; rng.IntN(4) == 0 {
							add()
							want = rank()
						}
					}
					head, ok := o.Best()
					if ok != (len(want) > 0) || ok && head != want[0] {
						t.Fatalf("step %d: head %d, %v; want the first of %v", step, head, ok, want)
					}
					if !ok {
						continue
					}
					fitCap, heldCap, until := rng.IntN(needs(step)+1), rng.IntN(needs(step)+1), int64(rng.IntN(100))
					o.Behind(head, fitCap, heldCap, until)
					// The walk's bounds shrink after each job, as a pass's
					// do when it starts one: each job given must be the
					// next of Rank's order within the bounds then.
					rest := want[1:]
					for {
						k, ok := o.NextBehind(fitCap, heldCap)
						for len(rest) > 0 {
							if n := int(need[int64(rest[0])]); n <= fitCap && (limit[int64(rest[0])] <= until || n <= heldCap) {
								break
							}
							rest = rest[1:]
						}
						if !ok {
							if len(rest) > 0 {
								t.Fatalf("step %d: behind %d within %d, %d, %d: none left; want %d", step, head, fitCap, heldCap, until, rest[0])
							}
							break
						}
						if len(rest) == 0 || k != rest[0] {
							t.Fatalf("step %d: behind %d within %d, %d, %d: %d; want the next of %v", step, head, fitCap, heldCap, until, k, rest)
						}
						rest = rest[1:]
						walked++
						fitCap -= rng.IntN(3)
						heldCap -= rng.IntN(3)
					}
				}
				if walked < 200 {
					t.Fatalf("the walks behind the head gave %d jobs in all: the test checks too little", walked)
				}
			})
		}
	}
}

// checkKeptOrder fails t unless o's Best, from the blocks' bounds before
// the whole order is sorted, and then its whole order are those of p's
// Rank of s computed from scratch.
func checkKeptOrder(t *testing.T, p Policy, o *ClockOrder, s *Snapshot, at string) {
	t.Helper()
	scores, err := p.Rank(s)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int32, len(scores))
	for i, sc := range scores {
		want[i] = int32(sc.JobID)
	}
	if best, ok := o.Best(); ok != (len(want) > 0) || ok && best != want[0] {
		t.Fatalf("%s: Best %d, %v; want the first of %v", at, best, ok, want)
	}
	if got := o.AppendTags(nil); !slices.Equal(got, want) {
		t.Fatalf("%s at %s: %d jobs: kept order %v, Rank's %v", at, s.Now.Format(time.RFC3339Nano), len(want), got, want)
	}
}

// clockOrderFor is the registered policy of that name and its ClockOrder.
func clockOrderFor(t *testing.T, name string) (Policy, *ClockOrder) {
	t.Helper()
	p, err := New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := NewClockOrder(p)
	if !ok {
		t.Fatalf("%s: no ClockOrder", name)
	}
	return p, o
}

// TestClockOrder_ThemisHistory plays random histories through themis'
// ClockOrder as the simulator keeps it: jobs of a few users arrive, start
// (leave the queue and run for a while) and end, the clock moves, the
// capacity makes large jobs slower on a user's share, predictions change
// (Rekey of the jobs predicted anew) and with them N, the users with a
// pending or running job (SetUsers, then Rekey of every job held). After
// every step Best and then the whole order must be exactly those of
// themis' Rank of the same Snapshot, computed from scratch.
func TestClockOrder_ThemisHistory(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			p, o := clockOrderFor(t, "themis")
			rng := rand.New(rand.NewPCG(seed, 11))
			s := &Snapshot{Now: rkT0, GPUs: float64(8 + rng.IntN(24)), Predicted: map[int64]time.Duration{}}
			users := 3 + int(seed)*2
			nextID, nChanges, rekeyed := int64(1), 0, 0
			for step := range 500 {
				s.Now = s.Now.Add(time.Duration(rng.Int64N(int64(pick(rng, 1, 90, 3600)) * int64(time.Second))))
				o.Advance(s.Now)
				// Running jobs end.
				s.Running = slices.DeleteFunc(s.Running, func(Job) bool { return rng.IntN(3) == 0 })
				// Pending jobs start.
				for range rng.IntN(min(len(s.Pending), 5) + 1) {
					i := rng.IntN(len(s.Pending))
					o.Remove(int32(s.Pending[i].ID))
					s.Running = append(s.Running, s.Pending[i])
					s.Pending = slices.Delete(s.Pending, i, i+1)
				}
				// Arrivals, now or a while ago, some of the same submit:
				// the queue grows for 50 steps, then drains.
				var added []Job
				for range rng.IntN(3 + step/50%2*6) {
					j := Job{ID: nextID, User: fmt.Sprint("u", rng.IntN(users)), Submit: s.Now.Add(-time.Duration(pick(rng, 0, 0, 1, int(time.Minute), int(time.Hour)))),
						TimeLimit: time.Duration(pick(rng, 0, 60, 3600)) * time.Second, GPUs: pick(rng, 0, 1, 4, 8, 16)}
					if rng.IntN(4) == 0 && len(s.Pending) > 0 {
						j.Submit = s.Pending[rng.IntN(len(s.Pending))].Submit
					}
					nextID++
					if rng.IntN(3) > 0 {
						s.Predicted[j.ID] = time.Duration(rng.Int64N(int64(pick(rng, 5, 600, 7200)) * int64(time.Second)))
					}
					added = append(added, j)
				}
				// Predictions made anew, or dropped.
				var repred []int
				for i := range s.Pending {
					if rng.IntN(8) == 0 {
						if id := s.Pending[i].ID; rng.IntN(5) == 0 {
							delete(s.Predicted, id)
						} else {
							s.Predicted[id] = time.Duration(pick(rng, 1, 30, 1800, 9000)) * time.Second
						}
						repred = append(repred, i)
					}
				}
				// N as themis counts it, from scratch.
				seen := map[string]bool{}
				for _, js := range [][]Job{s.Pending, s.Running, added} {
					for _, j := range js {
						seen[j.User] = true
					}
				}
				if o.SetUsers(float64(len(seen))) {
					nChanges++
					repred = repred[:0]
					for i := range s.Pending {
						repred = append(repred, i)
					}
				}
				for _, i := range repred {
					if err := o.Rekey(s, i, int32(s.Pending[i].ID)); err != nil {
						t.Fatal(err)
					}
					rekeyed++
				}
				for _, j := range added {
					if err := o.Add(s, &j, int32(j.ID)); err != nil {
						t.Fatal(err)
					}
					s.Pending = append(s.Pending, j)
				}
				checkKeptOrder(t, p, o, s, fmt.Sprintf("step %d, N %d", step, len(seen)))
			}
			if nChanges < 10 || rekeyed < 1000 {
				t.Fatalf("N changed %d times, %d jobs keyed again: the test checks too little", nChanges, rekeyed)
			}
		})
	}
}

// TestClockOrder_RekeyErrors checks that Rekey refuses a tag not held and
// a tag held for another job.
func TestClockOrder_RekeyErrors(t *testing.T) {
	_, o := clockOrderFor(t, "themis")
	s := &Snapshot{Now: rkT0, Pending: []Job{{ID: 1, Submit: rkT0}, {ID: 2, Submit: rkT0}}}
	if err := o.Add(s, &s.Pending[0], 1); err != nil {
		t.Fatal(err)
	}
	if err := o.Rekey(s, 1, 2); err == nil {
		t.Error("Rekey of a tag not held: no error")
	}
	if err := o.Rekey(s, 1, 1); err == nil {
		t.Error("Rekey of tag 1 with job 2: no error")
	}
	if err := o.Rekey(s, 0, 1); err != nil {
		t.Errorf("Rekey of the job held: %v", err)
	}
}

func pick(r *rand.Rand, xs ...int) int { return xs[r.IntN(len(xs))] }
