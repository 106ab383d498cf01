package policy

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// enChurn drives an Engine through n cycles of a random queue: jobs arrive,
// start (some between two cycles, never seen pending), finish, are
// requeued, stop without being reported, change account, appear twice, the
// running list is sometimes shuffled, and new users keep coming: what the
// runningIndex and the shareSumCache must follow. After each cycle, check gets the cycle's
// ranking and the Snapshot.
//
// In the cycles before appendedUntil the observations keep the promise of
// Observation.RunningAppended, as the simulator's do, and say so: every
// job that stops is reported, the running list keeps its order and only
// gains jobs at its end, and a running job's fields do not change.
func enChurn(t *testing.T, e *Engine, seed int64, n, appendedUntil int, check func(cycle int, s *Snapshot, ranking []Score)) {
	t.Helper()
	enChurnWith(t, e.Cycle, seed, n, appendedUntil, check)
}

// enChurnWith is enChurn ranking each cycle's observation with cycle.
func enChurnWith(t *testing.T, cycle func(*Observation) (*Snapshot, []Score, error), seed int64, n, appendedUntil int,
	check func(cycle int, s *Snapshot, ranking []Score)) {
	t.Helper()
	enChurnModes(t, cycle, seed, n, func(c int) bool { return c < appendedUntil }, check)
}

// enChurnModes is enChurnWith with the cycles whose observations keep the
// promise of RunningAppended chosen by appendedAt.
func enChurnModes(t *testing.T, cycle func(*Observation) (*Snapshot, []Score, error), seed int64, n int, appendedAt func(int) bool,
	check func(cycle int, s *Snapshot, ranking []Score)) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	users := []string{"u0", "u1", "u2", "u3", "u4", "u5"}
	accounts := []string{"a", "b", "c"}
	var pending, running []Job
	nextID := int64(1)
	for c := range n {
		now := rkAt(float64(c) * 2)
		appended := appendedAt(c)
		var stopped []Job
		if c%40 == 39 {
			users = append(users, fmt.Sprint("new", c))
		}
		// Arrivals.
		for range r.Intn(4) {
			u := r.Intn(len(users))
			j := Job{ID: nextID, User: users[u], Account: accounts[u%len(accounts)], GPUs: 1 + r.Intn(4),
				Submit: now, State: StatePending, Name: fmt.Sprint("n", r.Intn(3))}
			if r.Intn(4) > 0 {
				j.TimeLimit = time.Duration(10+r.Intn(120)) * time.Minute
			}
			nextID++
			pending = append(pending, j)
		}
		// Finishes, requeues and silent disappearances.
		for i := 0; i < len(running); {
			j := running[i]
			switch x := r.Intn(20); {
			case x < 3 && now.After(j.Start): // finished
				j.End, j.State = now, StateCompleted
				stopped = append(stopped, j)
			case x == 3 && now.After(j.Start): // requeued
				j.End, j.State = now, StatePending
				stopped = append(stopped, j)
				j.Start, j.End = time.Time{}, time.Time{}
				pending = append(pending, j)
			case x == 4 && !appended: // gone without a word
			default:
				if x == 5 && !appended { // moved to another account
					running[i].Account = accounts[r.Intn(len(accounts))]
				}
				i++
				continue
			}
			running = slices.Delete(running, i, i+1)
		}
		// Starts.
		for range r.Intn(4) {
			if len(pending) == 0 {
				break
			}
			i := r.Intn(len(pending))
			j := pending[i]
			pending = slices.Delete(pending, i, i+1)
			j.Start, j.State = now, StateRunning
			running = append(running, j)
		}
		if r.Intn(15) == 0 { // submitted and started between two cycles
			u := fmt.Sprint("quick", r.Intn(c+1))
			running = append(running, Job{ID: nextID, User: u, Account: accounts[r.Intn(len(accounts))], GPUs: 1,
				Submit: now, Start: now, State: StateRunning, TimeLimit: time.Hour})
			nextID++
		}
		obsRunning := running
		switch x := r.Intn(10); {
		case appended:
		case x == 0: // another order
			obsRunning = slices.Clone(running)
			r.Shuffle(len(obsRunning), func(i, k int) { obsRunning[i], obsRunning[k] = obsRunning[k], obsRunning[i] })
		case x == 1: // a job listed twice
			if len(running) > 0 {
				obsRunning = append(slices.Clone(running), running[r.Intn(len(running))])
			}
		}
		s, ranking, err := cycle(&Observation{Now: now, Pending: pending, Running: obsRunning, Stopped: stopped,
			RunningAppended: appended})
		if err != nil {
			t.Fatal(err)
		}
		check(c, s, ranking)
	}
}

// TestEngine_IndexMatchesSnapshot checks, at every cycle of a churning
// queue, with and without a predictor, for every charging cadence and share
// tree, with observations that make the promise of RunningAppended (all
// cycles, the first half, then the old match taking over, or none), that the index the Engine keeps from cycle to cycle equals the one
// built from the cycle's Snapshot alone and the sums a plain pass over the
// Snapshot makes, and that the Engine's ranking is the one the policy's Rank
// gives the Snapshot alone.
func TestEngine_IndexMatchesSnapshot(t *testing.T) {
	trees := map[string]*Shares{
		"none": nil,
		"whole": {Accounts: map[string]float64{"a": 3, "b": 1, "zero": 0},
			Users: map[Assoc]float64{{Account: "a", User: "u0"}: 5, {Account: "c", User: "u2"}: 0, {Account: "b", User: "absent"}: 2}},
		"fractional": {Accounts: map[string]float64{"a": 0.3, "b": 1.7},
			Users: map[Assoc]float64{{Account: "a", User: "u0"}: 0.1, {Account: "b", User: "u1"}: 2.35, {Account: "c", User: "absent"}: 0.7}},
	}
	for _, name := range []string{"vtc", "fair-qssf", "fairshare", "fair-sjf", "themis"} {
		for _, every := range []time.Duration{0, -1, 7 * time.Minute} {
			for _, withPred := range []bool{false, true} {
				for _, tree := range []string{"none", "whole", "fractional"} {
					for _, appended := range []int{0, 300, 600} {
						t.Run(fmt.Sprintf("%s/every=%v/predictor=%v/shares=%s/appended=%d", name, every, withPred, tree, appended), func(t *testing.T) {
							var pred Predictor
							if withPred {
								pred = newEnFake()
							}
							pol, err := New(name, nil)
							if err != nil {
								t.Fatal(err)
							}
							// The Snapshot is ranked again by a policy of its
							// own: what the Engine's keeps from cycle to cycle
							// (its memos) must not be reset by that ranking.
							alone, err := New(name, nil)
							if err != nil {
								t.Fatal(err)
							}
							e, err := NewEngine(EngineParams{Policy: pol, Predictor: pred, GPUs: 8, ChargeEvery: every, Shares: trees[tree]})
							if err != nil {
								t.Fatal(err)
							}
							compared, unknown := 0, 0
							enChurn(t, e, 3, 600, appended, func(c int, s *Snapshot, ranking []Score) {
								enCheckIndex(t, c, s, e)
								again, err := alone.Rank(s)
								if err != nil {
									t.Fatal(err)
								}
								if len(again) != len(ranking) {
									t.Fatalf("cycle %d: %d scores, again %d", c, len(ranking), len(again))
								}
								for i := range ranking {
									a, b := ranking[i], again[i]
									if a.JobID != b.JobID || math.Float64bits(a.Value) != math.Float64bits(b.Value) ||
										!slices.EqualFunc(a.Parts.values(), b.Parts.values(), sameBits) {
										t.Fatalf("cycle %d, rank %d: engine %d %v %v, from the snapshot %d %v %v",
											c, i, a.JobID, a.Value, a.Parts, b.JobID, b.Value, b.Parts)
									}
								}
								if name == "themis" {
									enCheckThemisN(t, c, s, ranking)
								}
								if len(s.Running) > 0 && len(ranking) > 0 {
									compared++
								}
								if e.running.unknown > 0 {
									unknown++
								}
							})
							if compared < 300 || unknown == 0 {
								t.Fatalf("%d cycles ranked running and pending jobs, %d had running jobs of associations the Ledger did not know: the test checks too little", compared, unknown)
							}
						})
					}
				}
			}
		}
	}
}

// enCheckThemisN checks that themis' N (Parts active_users), which it
// counts from the pending users and the index's running ones, is the
// number of distinct users with a pending or running job in s.
func enCheckThemisN(t *testing.T, c int, s *Snapshot, ranking []Score) {
	t.Helper()
	users := map[string]bool{}
	for _, jobs := range [][]Job{s.Pending, s.Running} {
		for i := range jobs {
			users[jobs[i].User] = true
		}
	}
	for _, sc := range ranking {
		if n := sc.Parts.Get("active_users"); n != float64(len(users)) {
			t.Fatalf("cycle %d: job %d: active_users %v, want %d", c, sc.JobID, n, len(users))
		}
	}
}

// enCheckIndex checks what e kept for s, its last Snapshot, against the
// index built from s alone and against sums made in one plain pass over s.
func enCheckIndex(t *testing.T, c int, s *Snapshot, e *Engine) {
	t.Helper()
	fresh := indexRunning(s)
	wantU, wantA, wantUsers := enCommitted(s)
	for _, idx := range []struct {
		name string
		x    *runningIndex
	}{{"engine", e.running}, {"from the snapshot", fresh}} {
		gotU := map[Assoc]float64{}
		for a := range idx.x.assocs {
			gotU[a] = idx.x.committedUser(a)
		}
		gotA := map[string]float64{}
		for name := range idx.x.accounts {
			gotA[name] = idx.x.committedAccount(name)
		}
		if !maps.EqualFunc(gotU, wantU, sameBits) || !maps.EqualFunc(gotA, wantA, sameBits) || !maps.Equal(idx.x.users, wantUsers) {
			t.Fatalf("cycle %d: index %s: committed by association %v, by account %v, users %v; want %v, %v, %v",
				c, idx.name, gotU, gotA, idx.x.users, wantU, wantA, wantUsers)
		}
	}
	p, ok := e.Policy().(indexedPolicy)
	if !ok {
		return
	}
	x := &e.index
	if x.running != e.running {
		t.Fatalf("cycle %d: the Engine passed another running index", c)
	}
	if !p.readsShares() {
		return
	}
	var pending []Assoc
	for i := range s.Pending {
		if a := AssocOf(&s.Pending[i]); !slices.Contains(pending, a) {
			pending = append(pending, a)
		}
	}
	want := shareSums(s, pending)
	if !maps.EqualFunc(x.shares.accounts, want.accounts, sameBits) || !sameBits(x.shares.sum, want.sum) {
		t.Fatalf("cycle %d: the Engine's sums of shares %v %v, from the snapshot %v %v", c, x.shares.accounts, x.shares.sum, want.accounts, want.sum)
	}
}

// enCommitted is the committed service of s's running jobs per association
// and per account, summed in job id order, and their count per user: a job
// listed twice counts once.
func enCommitted(s *Snapshot) (map[Assoc]float64, map[string]float64, map[string]int32) {
	var jobs []*Job
	for i := range s.Running {
		if !slices.ContainsFunc(jobs, func(j *Job) bool { return j.ID == s.Running[i].ID }) {
			jobs = append(jobs, &s.Running[i])
		}
	}
	slices.SortFunc(jobs, func(a, b *Job) int { return cmp.Compare(a.ID, b.ID) })
	byAssoc, byAccount, users := map[Assoc]float64{}, map[string]float64{}, map[string]int32{}
	for _, j := range jobs {
		d, ok := s.Predicted[j.ID]
		u := committed(s.Service.Rate(j), predictedRunOf(j, d, ok).Seconds(), s.Ledger.Attained(j.ID))
		byAssoc[AssocOf(j)] += u
		byAccount[j.Account] += u
		users[j.User]++
	}
	return byAssoc, byAccount, users
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// TestEngine_PredictsJobFirstSeenRunning checks that a job the Engine first
// sees running (it started between two cycles) is predicted once, and that
// a job seen pending keeps the prediction it had when it starts.
func TestEngine_PredictsJobFirstSeenRunning(t *testing.T) {
	pred := newEnFake()
	e := enEngine(t, "fair-qssf", pred, 0)
	done := enJob(1, "alice", 0)
	done.Start, done.End, done.State = rkAt(0), rkAt(30), StateCompleted
	waiting := enJob(3, "bob", 0)
	if _, _, err := e.Cycle(&Observation{Now: rkAt(30), Pending: []Job{waiting}, Stopped: []Job{done}}); err != nil {
		t.Fatal(err)
	}
	quick := enJob(2, "alice", 31)
	quick.Start, quick.State = rkAt(31), StateRunning
	before := pred.predicts
	s, _, err := e.Cycle(&Observation{Now: rkAt(32), Pending: []Job{waiting}, Running: []Job{quick}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Predicted[2]; !ok || got != 30*time.Minute {
		t.Errorf("job first seen running: predicted %v (%v), want alice's mean 30m", got, ok)
	}
	if pred.predicts != before+1 {
		t.Errorf("%d predictions in the cycle, want 1 (the new running job; bob's is cached)", pred.predicts-before)
	}
	before = pred.predicts
	if _, _, err := e.Cycle(&Observation{Now: rkAt(33), Pending: []Job{waiting}, Running: []Job{quick}}); err != nil {
		t.Fatal(err)
	}
	if pred.predicts != before {
		t.Errorf("%d predictions for a job still running, want 0", pred.predicts-before)
	}
}

// TestEngine_RanksAsSnapshot checks, for every policy, that an Engine's
// steady cycles on rkRandomSnapshot's messy queue (the one BenchmarkRank
// times) rank exactly as the policy's Rank ranks each cycle's Snapshot
// alone, charging cycles included.
func TestEngine_RanksAsSnapshot(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s := rkRandomSnapshot(2, 3000, 150)
			p, err := New(name, rkParams[name])
			if err != nil {
				t.Fatal(err)
			}
			e, _ := rkEngine(t, p, s)
			o := Observation{Now: s.Now, Pending: s.Pending, Running: s.Running, TrueRun: s.TrueRun}
			for c := range 12 {
				o.Now = o.Now.Add(rkServeInterval)
				snap, ranking, err := e.Cycle(&o)
				if err != nil {
					t.Fatal(err)
				}
				enCheckIndex(t, c, snap, e)
				again, err := p.Rank(snap)
				if err != nil {
					t.Fatal(err)
				}
				if len(ranking) != len(s.Pending) || len(again) != len(ranking) {
					t.Fatalf("cycle %d: %d scores, again %d, want %d", c, len(ranking), len(again), len(s.Pending))
				}
				for i := range ranking {
					a, b := ranking[i], again[i]
					if a.JobID != b.JobID || !sameBits(a.Value, b.Value) || !slices.EqualFunc(a.Parts.values(), b.Parts.values(), sameBits) {
						t.Fatalf("cycle %d, rank %d: engine %d %v %v, from the snapshot %d %v %v", c, i, a.JobID, a.Value, a.Parts, b.JobID, b.Value, b.Parts)
					}
				}
			}
		})
	}
}

// TestEngine_AppendedAnyOrder checks the promise of RunningAppended as the
// simulator keeps it on a big machine: the jobs that did not stop may come
// in any order (the simulator moves the last of them into the place of a
// job that stops), and the Engine computes exactly what it computes from the
// same jobs kept in start order. Two Engines see the same churning cluster,
// one in start order, one in the simulator's swapped order; after every
// cycle their fair-share usage, VTC counters, attained service and ranking
// must be the same bits. Many jobs of differing rates run at once, so
// charging them in another order would round the sums differently.
func TestEngine_AppendedAnyOrder(t *testing.T) {
	for _, name := range []string{"fairshare", "vtc", "fair-qssf"} {
		t.Run(name, func(t *testing.T) {
			var engines [2]*Engine
			for i := range engines {
				p, err := New(name, nil)
				if err != nil {
					t.Fatal(err)
				}
				if engines[i], err = NewEngine(EngineParams{Policy: p, GPUs: 512, ChargeEvery: -1}); err != nil {
					t.Fatal(err)
				}
			}
			r := rand.New(rand.NewSource(7))
			users := []string{"u0", "u1", "u2", "u3"}
			var pending, ordered, swapped []Job
			base := 0 // swapped[:base]: the jobs the Engine saw running
			nextID := int64(1)
			swaps := 0
			for c := range 300 {
				now := rkAt(float64(c) * 3)
				for range 1 + r.Intn(6) {
					u := r.Intn(len(users))
					pending = append(pending, Job{ID: nextID, User: users[u], Account: fmt.Sprint("a", u%2),
						GPUs: 1 + r.Intn(7), Submit: now, State: StatePending, TimeLimit: time.Duration(5+r.Intn(300)) * time.Minute})
					nextID++
				}
				var stopped []Job
				for i := 0; i < len(ordered); {
					if j := ordered[i]; r.Intn(10) == 0 && now.After(j.Start) {
						j.End, j.State = now, StateCompleted
						stopped = append(stopped, j)
						ordered = slices.Delete(ordered, i, i+1)
						p := slices.IndexFunc(swapped, func(s Job) bool { return s.ID == j.ID })
						if p < base {
							base--
							if p != base {
								swaps++
							}
							swapped[p] = swapped[base]
							p = base
						}
						swapped = slices.Delete(swapped, p, p+1)
						continue
					}
					i++
				}
				var want []Score
				for i := range engines {
					running := ordered
					if i == 1 {
						running = swapped
						base = len(swapped)
					}
					_, ranking, err := engines[i].Cycle(&Observation{Now: now, Pending: pending, Running: running,
						Stopped: stopped, RunningAppended: true})
					if err != nil {
						t.Fatal(err)
					}
					if i == 1 {
						enSameState(t, c, engines[0], engines[1], now, want, ranking)
					} else {
						want = slices.Clone(ranking)
					}
				}
				for range r.Intn(5) {
					if len(pending) == 0 {
						break
					}
					i := r.Intn(len(pending))
					j := pending[i]
					pending = slices.Delete(pending, i, i+1)
					j.Start, j.State = now, StateRunning
					ordered, swapped = append(ordered, j), append(swapped, j)
				}
			}
			if swaps < 100 || len(ordered) < 20 {
				t.Fatalf("%d swaps, %d jobs running at the end: the test checks too little", swaps, len(ordered))
			}
		})
	}
}

// enSameState fails unless engines a and b hold the same Ledger, to the
// bit, and b's ranking is a's (want).
func enSameState(t *testing.T, c int, a, b *Engine, now time.Time, want, ranking []Score) {
	t.Helper()
	la, lb := a.Ledger(), b.Ledger()
	if !sameBits(la.TotalUsage(now), lb.TotalUsage(now)) {
		t.Fatalf("cycle %d: total usage %v in start order, %v in swapped order", c, la.TotalUsage(now), lb.TotalUsage(now))
	}
	for _, as := range la.Assocs() {
		if !sameBits(la.Usage(as, now), lb.Usage(as, now)) || !sameBits(la.Counter(as), lb.Counter(as)) ||
			!sameBits(la.AccountUsage(as.Account, now), lb.AccountUsage(as.Account, now)) {
			t.Fatalf("cycle %d: %v: usage %b, counter %b, account usage %b in start order; %b, %b, %b in swapped order",
				c, as, la.Usage(as, now), la.Counter(as), la.AccountUsage(as.Account, now),
				lb.Usage(as, now), lb.Counter(as), lb.AccountUsage(as.Account, now))
		}
	}
	for id := range la.jobs {
		if !sameBits(la.Attained(id), lb.Attained(id)) {
			t.Fatalf("cycle %d: job %d attained %v in start order, %v in swapped order", c, id, la.Attained(id), lb.Attained(id))
		}
	}
	if len(want) != len(ranking) {
		t.Fatalf("cycle %d: %d scores in swapped order, want %d", c, len(ranking), len(want))
	}
	for i := range want {
		if want[i].JobID != ranking[i].JobID || !sameBits(want[i].Value, ranking[i].Value) {
			t.Fatalf("cycle %d, rank %d: job %d %v in swapped order, want %d %v", c, i, ranking[i].JobID, ranking[i].Value, want[i].JobID, want[i].Value)
		}
	}
}

// TestEngine_SumsAddedUpWhenRead checks that a cycle whose policy reads no
// committed sums (fair-sjf) leaves them to be added up at their next read,
// that the sums read after many such cycles are bit for bit those of an
// index built from the Snapshot alone, and that the sums waiting to be
// added up stay bounded however long nobody reads them.
func TestEngine_SumsAddedUpWhenRead(t *testing.T) {
	for _, readEvery := range []int{1, 7, 1000} {
		t.Run(fmt.Sprintf("read-every=%d", readEvery), func(t *testing.T) {
			pol, err := New("fair-sjf", nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := NewEngine(EngineParams{Policy: pol, Predictor: newEnFake(), GPUs: 8, ChargeEvery: 7 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			left, maxLeft := 0, 0
			enChurn(t, e, 11, 600, 400, func(c int, s *Snapshot, _ []Score) {
				x := e.running
				if n := len(x.dirty); n > 0 {
					left++
					maxLeft = max(maxLeft, n)
				}
				if bound := 2*(len(x.assocs)+len(x.accounts)) + 64; len(x.dirty) > bound {
					t.Fatalf("cycle %d: %d sums wait to be added up, above %d", c, len(x.dirty), bound)
				}
				if c%readEvery == readEvery-1 {
					enCheckIndex(t, c, s, e)
				}
			})
			if left < 100 {
				t.Fatalf("only %d of 600 fair-sjf cycles left sums to add up (at most %d): the cycles added up sums nobody read", left, maxLeft)
			}
		})
	}
}

// TestRunSum_IncrementalEqualsFold drives the index's sums through random
// starts, stops, changes of one job's committed service and sweeps that
// change every job's, many of them to +0 (the terms a start or stop does
// not add up again for), and checks at random reads that every sum and
// partial sum is bit for bit the fold of its jobs' committed service in id
// order, as an index built from scratch adds it up.
func TestRunSum_IncrementalEqualsFold(t *testing.T) {
	for _, tc := range []struct {
		name      string
		zeroEvery int // one committed value in zeroEvery is +0
		accounts  int
		running   int // jobs running at once, about
		readEvery int // ops between two reads
	}{
		{"mostly-zero/one-account", 2, 1, 300, 5},
		{"no-zero", 1 << 30, 2, 100, 3},
		{"all-zero", 1, 2, 100, 3},
		{"some-zero/read-rarely", 4, 3, 200, 40},
		{"some-zero/read-always", 3, 1, 50, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(len(tc.name))))
			value := func() float64 {
				if r.Intn(tc.zeroEvery) == 0 {
					return 0
				}
				return r.Float64() * math.Pow(10, float64(r.Intn(12)-3))
			}
			x := newRunningIndex()
			var live []*runRec
			nextID, reads, zeroStops, maxHoles := int64(1), 0, 0, 0
			lastStopped, rejoined := int64(0), 0
			for op := range 20000 {
				switch k := r.Intn(10); {
				case k < 4 && len(live) < 2*tc.running || len(live) == 0: // start
					// Ids mostly ascending, some out of order.
					id := nextID
					if r.Intn(5) == 0 {
						id = nextID + int64(r.Intn(50))
					}
					if lastStopped != 0 && r.Intn(6) == 0 {
						// Started again under its id (requeued): it joins
						// before the hole it left, if still there.
						id, lastStopped = lastStopped, 0
						rejoined++
					}
					if _, ok := x.jobs[id]; ok {
						continue
					}
					nextID++
					rec := x.newRec()
					rec.id = id
					x.jobs[id] = rec
					j := Job{ID: id, User: fmt.Sprint("u", r.Intn(7)), Account: fmt.Sprint("a", r.Intn(tc.accounts))}
					x.attach(rec, &j, nil, nil)
					x.setCommitted(rec, value(), false)
					live = append(live, rec)
				case k < 8 || len(live) > 2*tc.running: // stop
					i := r.Intn(len(live))
					if zeroTerm(live[i].committed) {
						zeroStops++
					}
					lastStopped = live[i].id
					x.remove(live[i])
					live = slices.Delete(live, i, i+1)
				case k == 8: // one job's prediction changed
					x.setCommitted(live[r.Intn(len(live))], value(), false)
				default: // a sweep
					if r.Intn(10) == 0 {
						for _, rec := range live {
							x.setCommitted(rec, value(), true)
						}
					}
				}
				if op%tc.readEvery == 0 {
					x.sumDirty()
					reads++
					for _, sums := range []map[string]*runSum{enSumsByName(x.assocs), x.accounts} {
						for name, s := range sums {
							if !slices.IsSorted(s.ids) || len(s.ids) != len(s.jobs) {
								t.Fatalf("op %d: sum %q: ids %v not in order", op, name, s.ids)
							}
							// The fold over the jobs that did not leave, in id
							// order: a hole (a job that left) adds nothing and
							// holds the partial sum before it.
							fold, live, holes := 0.0, 0, 0
							for k, rec := range s.jobs {
								c := 0.0
								if rec == nil {
									holes++
								} else {
									c = rec.committed
									fold += c
									live++
									if rec.id != s.ids[k] {
										t.Fatalf("op %d: sum %q, job %d has id %d, listed %d", op, name, k, rec.id, s.ids[k])
									}
								}
								if !sameBits(s.vals[k], c) || !sameBits(s.prefix[k], fold) {
									t.Fatalf("op %d: sum %q, job %d of %d: value %v, partial sum %v; want %v, %v",
										op, name, k, len(s.jobs), s.vals[k], s.prefix[k], c, fold)
								}
							}
							if !sameBits(s.sum, fold) || len(s.prefix) != len(s.jobs) || live != s.live || holes != s.holes || live == 0 {
								t.Fatalf("op %d: sum %q is %v over %d partial sums, %d live jobs (%d counted), %d holes (%d); want %v over %d jobs",
									op, name, s.sum, len(s.prefix), s.live, live, s.holes, holes, fold, len(s.jobs))
							}
							maxHoles = max(maxHoles, holes)
						}
					}
				}
			}
			if reads < 100 || (tc.zeroEvery < 10 && zeroStops < 100) || maxHoles < 32 || rejoined < 100 {
				t.Fatalf("%d reads, %d stops of a job with +0 committed, at most %d holes in a sum, %d ids started again: the test checks too little",
					reads, zeroStops, maxHoles, rejoined)
			}
		})
	}
}

// enSumsByName keys the association sums of an index by a printable name.
func enSumsByName(m map[Assoc]*runSum) map[string]*runSum {
	out := map[string]*runSum{}
	for a, s := range m {
		out[a.Account+"/"+a.User] = s
	}
	return out
}
