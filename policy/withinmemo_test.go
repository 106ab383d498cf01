package policy

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestComputeVTC_MemoAsScratch checks, at every step of random churn,
// that computeVTC through a policy's memo (the within orders kept per
// association, the segment sorts started from the last orders, the
// grouping by slot) gives what it gives with no memo, from scratch: the
// same groups and members in the same within order, tags, counters and
// zero-share flags. The churn: arrivals (sometimes a run of one user's
// jobs), swap and shift removals, a job's within key, submit, user or
// account changed under its id, shuffles, duplicate ids, and a NaN key.
// Keys and submits come from few values, so that ties fall to the submit
// and the id, and duplicate ids make equal entries.
func TestComputeVTC_MemoAsScratch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		users, accounts int
		queue           int
		dups, noZero    bool
	}{
		{"one-account", 40, 1, 300, false, false},
		{"one-account-none-zero", 40, 1, 300, false, true}, // one segment in slot order
		{"one-account-past-radix", 40, 1, 1200, false, true},
		{"several-accounts", 12, 4, 120, false, false},
		{"duplicate-ids", 6, 2, 80, true, false},
		{"duplicate-ids-one-account", 6, 1, 80, true, true},
		{"tiny", 2, 2, 6, false, false},
		{"past-radix", 30, 2, 1200, false, false}, // segments and queue of 512 jobs and more
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.queue) + int64(tc.users)))
			shares := &Shares{
				Accounts: map[string]float64{"a0": 2, "a3": 0},
				Users:    map[Assoc]float64{{Account: "a0", User: "u1"}: 0, {Account: "a1", User: "u2"}: 3},
			}
			if tc.noZero {
				shares = &Shares{Users: map[Assoc]float64{{Account: "a0", User: "u2"}: 3}}
			}
			l, err := NewLedger(LedgerParams{})
			if err != nil {
				t.Fatal(err)
			}
			for u := range tc.users {
				for a := range tc.accounts {
					if r.Intn(2) == 0 {
						rkCharge(l, int64(-1-u*tc.accounts-a), fmt.Sprint("a", a), fmt.Sprint("u", u), float64(r.Intn(5000)))
					}
				}
			}
			type key struct {
				within float64
				cost   float64
			}
			keys := map[int64]key{} // by id; a duplicate id shares its key
			newKey := func() key {
				return key{within: float64(r.Intn(6)), cost: float64(r.Intn(4) * 600)}
			}
			job := func(id int64) Job {
				return Job{ID: id, User: fmt.Sprint("u", r.Intn(tc.users)), Account: fmt.Sprint("a", r.Intn(tc.accounts)),
					Submit: rkT0.Add(time.Duration(r.Intn(8)) * time.Minute)}
			}
			var pending []Job
			var memo vtcMemo
			var bufGot, bufWant rankScratch
			nextID, nan, kept := int64(1), false, 0
			for step := range 2500 {
				switch k := r.Intn(14); {
				case k < 3 || len(pending) == 0:
					for range 1 + r.Intn(3) {
						j := job(nextID)
						if n := len(pending); n > 0 && r.Intn(2) == 0 {
							j.User, j.Account = pending[n-1].User, pending[n-1].Account
						}
						if tc.dups && len(pending) > 0 && r.Intn(3) == 0 {
							j.ID = pending[r.Intn(len(pending))].ID
						} else {
							keys[j.ID] = newKey()
						}
						pending = append(pending, j)
						nextID++
					}
				case k < 6 && len(pending) > tc.queue/2:
					pending = dropRandom(r, pending)
				case k == 6:
					keys[pending[r.Intn(len(pending))].ID] = newKey()
				case k == 7:
					i := r.Intn(len(pending))
					pending[i].User = job(0).User
				case k == 8:
					i := r.Intn(len(pending))
					pending[i].Account = job(0).Account
				case k == 9:
					i := r.Intn(len(pending))
					pending[i].Submit = job(0).Submit
				case k == 10 && r.Intn(20) == 0:
					r.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
				case k == 11 && r.Intn(10) == 0:
					// A NaN key for one step.
					nan = true
				}
				n := len(pending)
				cost, sub, within := make([]float64, n), make([]int64, n), make([]float64, n)
				for i := range pending {
					k := keys[pending[i].ID]
					cost[i], sub[i], within[i] = k.cost, unixNanoOrMin(pending[i].Submit), k.within
				}
				s := &Snapshot{Now: rkT0, Pending: pending, Shares: shares, Ledger: l}
				if nan {
					// A NaN key makes the ranking fail (its tags are NaN)
					// whatever the order; the memo must start over after.
					within[r.Intn(n)] = math.NaN()
					nan = false
					computeVTC(s, cost, sub, within, nil, &bufGot, &memo)
					if memo.orders.n != 0 {
						t.Fatalf("step %d: the within orders kept %d slots past a NaN key", step, memo.orders.n)
					}
					continue
				}
				got := computeVTC(s, cost, sub, within, nil, &bufGot, &memo)
				want := computeVTC(s, cost, sub, within, nil, &bufWant, nil)
				if !slices.Equal(got.g.of, want.g.of) || !slices.Equal(got.g.keys, want.g.keys) ||
					!slices.Equal(got.g.members, want.g.members) || !slices.Equal(got.g.start, want.g.start) {
					for x := range got.g.keys {
						a, b := got.g.group(x), want.g.group(x)
						if !slices.Equal(a, b) {
							for _, i := range a {
								t.Logf("got  slot %d: %v %v %v", i, -within[i], sub[i], pending[i].ID)
							}
							for _, i := range b {
								t.Logf("want slot %d: %v %v %v", i, -within[i], sub[i], pending[i].ID)
							}
						}
					}
					t.Fatalf("step %d: groups with the memo %+v, from scratch %+v", step, got.g, want.g)
				}
				if !sameFloats(got.tag, want.tag) || !sameFloats(got.userC, want.userC) || !sameFloats(got.acctC, want.acctC) ||
					!slices.Equal(got.zero, want.zero) {
					t.Fatalf("step %d: tags with the memo %+v, from scratch %+v", step, *got, *want)
				}
				for i := range pending {
					if x := got.g.of[i]; !got.zero[x] && math.Float64bits(got.userTag[i]) != math.Float64bits(want.userTag[i]) {
						t.Fatalf("step %d: job %d's user tag %g with the memo, %g from scratch", step, i, got.userTag[i], want.userTag[i])
					}
				}
				// The orders served (a lost job would make them start over).
				if memo.orders.n != n {
					t.Fatalf("step %d: the within orders hold %d slots, the queue %d", step, memo.orders.n, n)
				}
				kept++
			}
			if kept < 2000 {
				t.Fatalf("the within orders served %d steps: the test checks too little", kept)
			}
		})
	}
}

// sameFloats compares bit for bit, NaN included.
func sameFloats(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestVTCFamily_RankAsFresh checks that vtc and fair-qssf, ranking one
// queue point after point with the orders they keep (within orders, the
// account sort's memo, the ranking sorted from the tag order), rank as a
// fresh policy does at every point: the same jobs in the same order with
// the same values. The queue churns as the simulator's does (arrivals,
// swap removals), predictions change, the clock moves (fair-qssf's guards
// lift long-waiting jobs out of the tag order), running jobs come and go,
// and the Ledger charges users between points; the queue is one account
// (the ranking sorted from the tag order), or several.
func TestVTCFamily_RankAsFresh(t *testing.T) {
	makers := map[string]func() Policy{
		"vtc": func() Policy { p, _ := NewVTC(VTCParams{}); return p },
		"fair-qssf": func() Policy {
			p, _ := NewFairQSSF(FairQSSFParams{MaxWait: 6 * time.Hour, RhoMax: 3})
			return p
		},
	}
	for name, mk := range makers {
		for _, accounts := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/accounts=%d", name, accounts), func(t *testing.T) {
				r := rand.New(rand.NewSource(int64(accounts) + int64(len(name))))
				l, err := NewLedger(LedgerParams{})
				if err != nil {
					t.Fatal(err)
				}
				kept := mk()
				pred := map[int64]time.Duration{}
				var pending, running []Job
				now, nextID := rkT0, int64(1)
				hinted := 0
				for point := range 400 {
					now = now.Add(time.Duration(r.Intn(600)) * time.Second)
					for range r.Intn(4) {
						j := Job{ID: nextID, User: fmt.Sprint("u", r.Intn(25)), Account: fmt.Sprint("a", r.Intn(accounts)),
							GPUs: 1 + r.Intn(4), Submit: now.Add(-time.Duration(r.Intn(3600)) * time.Second),
							TimeLimit: time.Duration(1+r.Intn(24)) * time.Hour}
						if r.Intn(3) > 0 {
							pred[j.ID] = time.Duration(1+r.Intn(40)) * 10 * time.Minute
						}
						pending = append(pending, j)
						nextID++
					}
					for range r.Intn(3) {
						if len(pending) == 0 {
							break
						}
						i := r.Intn(len(pending))
						j := pending[i]
						pending[i] = pending[len(pending)-1]
						pending = pending[:len(pending)-1]
						j.Start = now
						running = append(running, j)
					}
					if len(running) > 0 && r.Intn(2) == 0 {
						i := r.Intn(len(running))
						j := running[i]
						running = slices.Delete(running, i, i+1)
						l.Charge(&j, j.Start, now, Service{})
						l.Finish(&j)
					}
					if len(pending) > 0 && r.Intn(4) == 0 {
						pred[pending[r.Intn(len(pending))].ID] = time.Duration(1+r.Intn(40)) * 10 * time.Minute
					}
					l.Backlog(pending, nil)
					s := &Snapshot{Now: now, Pending: pending, Running: running, Predicted: pred, Ledger: l}
					got, err := kept.Rank(s)
					if err != nil {
						t.Fatal(err)
					}
					want, err := mk().Rank(s)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("point %d: %d scores, fresh %d", point, len(got), len(want))
					}
					for k := range got {
						if got[k].JobID != want[k].JobID || math.Float64bits(got[k].Value) != math.Float64bits(want[k].Value) {
							t.Fatalf("point %d, rank %d: job %d (%g), fresh job %d (%g)", point, k,
								got[k].JobID, got[k].Value, want[k].JobID, want[k].Value)
						}
					}
					if len(pending) >= memoMin {
						hinted++
					}
				}
				if hinted < 200 {
					t.Fatalf("%d points ranked %d jobs or more: the test checks too little", hinted, memoMin)
				}
			})
		}
	}
}

// TestEngine_SweptAttainedAcrossModes checks the attained service a sweep
// leaves for the running index: noted on the records (swept), which the
// first read of a sum after the sweep takes instead of the Ledger's, or,
// once the policy has read the sums (readSums), worked into each job's
// committed service as the sweep charges it (fused). With observations
// that keep the promise of RunningAppended and others that do not, in
// turn (the first appended cycle after others sweeps without the index's
// order), and either way of sweeping, the Engine's committed sums equal
// those a plain pass over each cycle's Snapshot makes, for the policies
// that read them.
func TestEngine_SweptAttainedAcrossModes(t *testing.T) {
	for _, name := range []string{"vtc", "fair-qssf"} {
		for _, every := range []time.Duration{-1, 4 * time.Second} { // every cycle, every other one
			for _, period := range []int{2, 3, 7} {
				for _, fuse := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/every=%v/not-appended-every=%d/fused=%v", name, every, period, fuse), func(t *testing.T) {
						pol, err := New(name, nil)
						if err != nil {
							t.Fatal(err)
						}
						e, err := NewEngine(EngineParams{Policy: pol, Predictor: newEnFake(), GPUs: 8, ChargeEvery: every})
						if err != nil {
							t.Fatal(err)
						}
						swept := 0
						enChurnModes(t, e.Cycle, int64(period), 400, func(c int) bool { return c%period != 0 }, func(c int, s *Snapshot, _ []Score) {
							enCheckIndex(t, c, s, e)
							x := e.running
							for _, r := range x.jobs {
								if fuse && x.fused && r.listed || !fuse && r.sweptAt == x.sweeps && r.sweptAt > 0 {
									swept++
								}
							}
							if !fuse {
								// As if the sums had never been read.
								x.readSums = false
							}
						})
						// Every other cycle appended: each sweeps as the first
						// after a plain one, without the index's order.
						if period > 2 && swept < 500 {
							t.Fatalf("%d records took their attained service from a sweep: the test checks too little", swept)
						}
					})
				}
			}
		}
	}
}
