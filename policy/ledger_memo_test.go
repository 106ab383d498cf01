package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestLedger_BacklogMemo drives Backlog through a churning queue (jobs
// arrive, often in runs of one user's, leave, swap places, change
// account, new users come) and checks
// at every call that a ledger that kept its memo of the queue ends in the
// state of its clone, which has none: same counters, backlog marks and
// association set.
func TestLedger_BacklogMemo(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	shares := &Shares{Accounts: map[string]float64{"a": 2, "b": 1},
		Users: map[Assoc]float64{{Account: "a", User: "u1"}: 3, {Account: "b", User: "u2"}: 0}}
	l := rkLedger(t, LedgerParams{})
	users := []string{"u0", "u1", "u2", "u3"}
	accounts := []string{"a", "b", "c"}
	var pending []Job
	id := int64(1)
	for c := range 400 {
		if c%50 == 49 {
			users = append(users, fmt.Sprint("new", c))
		}
		for range r.Intn(5) {
			u := r.Intn(len(users))
			j := Job{ID: id, User: users[u], Account: accounts[u%len(accounts)], GPUs: 1 + r.Intn(3)}
			if n := len(pending); n > 0 && r.Intn(2) == 0 {
				// Runs of one user's jobs, as queues hold them.
				j.User, j.Account = pending[n-1].User, pending[n-1].Account
			}
			pending = append(pending, j)
			id++
		}
		for range r.Intn(4) {
			if len(pending) > 0 {
				i := r.Intn(len(pending))
				pending[i] = pending[len(pending)-1]
				pending = pending[:len(pending)-1]
			}
		}
		if len(pending) > 1 && r.Intn(5) == 0 {
			i, k := r.Intn(len(pending)), r.Intn(len(pending))
			pending[i], pending[k] = pending[k], pending[i]
		}
		if len(pending) > 0 && r.Intn(10) == 0 {
			pending[r.Intn(len(pending))].Account = accounts[r.Intn(len(accounts))]
		}
		for range r.Intn(3) {
			if len(pending) > 0 {
				j := &pending[r.Intn(len(pending))]
				l.Charge(j, rkAt(float64(c)), rkAt(float64(c)+1+float64(r.Intn(30))), Service{})
			}
		}
		fresh := l.Clone()
		l.Backlog(pending, shares)
		fresh.Backlog(pending, shares)
		if !slices.Equal(l.Assocs(), fresh.Assocs()) || l.keys != fresh.keys {
			t.Fatalf("call %d: associations %v (keys %d), without the memo %v (keys %d)", c, l.Assocs(), l.keys, fresh.Assocs(), fresh.keys)
		}
		for a, u := range l.assocs {
			if f := fresh.assocs[a]; u.vtc != f.vtc || u.backlog != f.backlog {
				t.Fatalf("call %d: %v: counter %v backlogged %v, without the memo %v %v", c, a, u.vtc, u.backlog, f.vtc, f.backlog)
			}
		}
		for name, u := range l.accounts {
			if f := fresh.accounts[name]; u.vtc != f.vtc || u.backlog != f.backlog {
				t.Fatalf("call %d: account %s: counter %v backlogged %v, without the memo %v %v", c, name, u.vtc, u.backlog, f.vtc, f.backlog)
			}
		}
	}
}

// TestLedger_BacklogLooksUpOnlyWhatChanged: a queue of many users'
// interleaved jobs told again, unchanged or with a few jobs gone, costs no
// association lookup; a new job costs one.
func TestLedger_BacklogLooksUpOnlyWhatChanged(t *testing.T) {
	l := rkLedger(t, LedgerParams{})
	var pending []Job
	for i := range 1000 {
		pending = append(pending, Job{ID: int64(i + 1), User: fmt.Sprint("u", i%50), Account: "a", GPUs: 1})
	}
	l.Backlog(pending, nil)
	before := l.lookups
	l.Backlog(pending, nil)
	l.Backlog(pending[:900], nil)
	if n := l.lookups - before; n != 0 {
		t.Fatalf("the same queue told again made %d association lookups, want 0", n)
	}
	pending = append(pending[:900], Job{ID: 5000, User: "u7", Account: "a", GPUs: 1})
	before = l.lookups
	l.Backlog(pending, nil)
	if n := l.lookups - before; n != 1 {
		t.Fatalf("one new job made %d association lookups, want 1", n)
	}
}

// TestLedger_ChargeMemo charges many jobs, in sweeps over one interval as
// the Engine makes them, with a job's first charge from its start and some
// charged up to an instant within the interval (a job that stops and is
// requeued), through Charge and, once a job's record holds
// its association, chargeListed (the sweep's path), and checks after every
// sweep that the ledger ends in the state, to the bit, of one whose
// interval memo is cleared before every charge: the memo's seconds and
// decay factors are those the interval gives afresh, across rebases too.
func TestLedger_ChargeMemo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		halfLife time.Duration
		step     time.Duration
	}{
		{"no-decay", -1, 5 * time.Minute},
		{"decay", 7 * 24 * time.Hour, 5 * time.Minute},
		{"rebasing", time.Hour, 97 * time.Minute}, // a rebase every ~37 sweeps
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(5))
			kept, fresh := rkLedger(t, LedgerParams{HalfLife: tc.halfLife}), rkLedger(t, LedgerParams{HalfLife: tc.halfLife})
			type running struct {
				j    Job
				from time.Time
				en   startEnt // as the Engine's byStart keeps it
			}
			var jobs []running
			id := int64(1)
			now := rkAt(0)
			rebased := 0
			for c := range 300 {
				prev := now
				now = now.Add(tc.step)
				for range r.Intn(4) {
					start := prev.Add(time.Duration(r.Intn(int(tc.step/time.Second))) * time.Second)
					jobs = append(jobs, running{j: Job{ID: id, User: fmt.Sprint("u", r.Intn(5)), Account: fmt.Sprint("a", r.Intn(2)),
						GPUs: r.Intn(5)}, from: start})
					id++
				}
				base := kept.base
				for i := range jobs {
					rj := &jobs[i]
					if !now.After(rj.from) {
						continue
					}
					// Some stop within the interval: the same start, another end.
					to := now
					if r.Intn(10) == 0 {
						to = rj.from.Add(time.Duration(1+r.Int63n(int64(now.Sub(rj.from)/time.Second))) * time.Second)
					}
					rj.en.rate = float64(rj.j.GPUs)
					if !rj.en.known || r.Intn(4) == 0 || !kept.chargeListed(&rj.en, rj.from, to) {
						kept.Charge(&rj.j, rj.from, to, Service{})
						rj.en.keep(kept.jobs[rj.j.ID], rj.j.User, rj.j.Account)
					}
					fresh.memo = chargeMemo{}
					fresh.Charge(&rj.j, rj.from, to, Service{})
					rj.from = to
				}
				if kept.base != base {
					rebased++
				}
				for i := 0; i < len(jobs); {
					if r.Intn(8) == 0 {
						kept.Finish(&jobs[i].j)
						fresh.Finish(&jobs[i].j)
						jobs = slices.Delete(jobs, i, i+1)
						continue
					}
					i++
				}
				if msg := ledgerDiff(kept, fresh, now); msg != "" {
					t.Fatalf("sweep %d: %s", c, msg)
				}
			}
			if tc.name == "rebasing" && rebased < 3 {
				t.Fatalf("%d rebases: the test checks too little", rebased)
			}
		})
	}
}

// ledgerDiff says how a and b differ in their charges (usage, counters,
// total, jobs' service and spans), to the bit, or "" when they do not.
func ledgerDiff(a, b *Ledger, now time.Time) string {
	if !sameBits(a.TotalUsage(now), b.TotalUsage(now)) {
		return fmt.Sprintf("total usage %b, want %b", a.TotalUsage(now), b.TotalUsage(now))
	}
	if !slices.Equal(a.Assocs(), b.Assocs()) {
		return fmt.Sprintf("associations %v, want %v", a.Assocs(), b.Assocs())
	}
	for _, as := range a.Assocs() {
		if !sameBits(a.Usage(as, now), b.Usage(as, now)) || !sameBits(a.Counter(as), b.Counter(as)) ||
			!sameBits(a.AccountUsage(as.Account, now), b.AccountUsage(as.Account, now)) ||
			!sameBits(a.AccountCounter(as.Account), b.AccountCounter(as.Account)) {
			return fmt.Sprintf("%v: usage %b counter %b account %b %b, want %b %b %b %b", as,
				a.Usage(as, now), a.Counter(as), a.AccountUsage(as.Account, now), a.AccountCounter(as.Account),
				b.Usage(as, now), b.Counter(as), b.AccountUsage(as.Account, now), b.AccountCounter(as.Account))
		}
	}
	if len(a.jobs) != len(b.jobs) {
		return fmt.Sprintf("%d jobs, want %d", len(a.jobs), len(b.jobs))
	}
	for id, ja := range a.jobs {
		jb := b.jobs[id]
		if jb == nil || !sameBits(ja.service, jb.service) || !sameBits(ja.rate, jb.rate) || !slices.Equal(ja.runs, jb.runs) {
			return fmt.Sprintf("job %d: %+v, want %+v", id, ja, jb)
		}
	}
	return ""
}
