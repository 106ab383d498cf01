package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
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
