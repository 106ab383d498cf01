package policy

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestActiveUsersOf_MatchesGroups checks themis' N without grouping
// against assocGroups.activeUsers, which it replaces: users pending in
// runs and scattered, in several accounts, running only, both, neither.
func TestActiveUsersOf_MatchesGroups(t *testing.T) {
	job := func(user, account string) Job { return Job{User: user, Account: account, CPUs: 1} }
	tests := []struct {
		name             string
		pending, running []Job
		want             float64
	}{
		{name: "empty", want: 0},
		{name: "pending only, in runs", pending: []Job{job("a", "x"), job("a", "x"), job("b", "x")}, want: 2},
		{name: "pending scattered", pending: []Job{job("a", "x"), job("b", "x"), job("a", "x"), job("b", "y")}, want: 2},
		{name: "running only", running: []Job{job("a", "x"), job("c", "x"), job("c", "y")}, want: 2},
		{name: "overlap", pending: []Job{job("a", "x"), job("b", "y"), job("d", "x")}, running: []Job{job("a", "y"), job("c", "x")}, want: 4},
		{name: "all running", pending: []Job{job("a", "x"), job("a", "y")}, running: []Job{job("a", "x")}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.pending {
				tt.pending[i].ID = int64(i + 1)
			}
			for i := range tt.running {
				tt.running[i].ID = int64(100 + i)
			}
			s := &Snapshot{Pending: tt.pending, Running: tt.running}
			x := indexRunning(s)
			var seen map[string]struct{}
			for range 2 { // the second call reuses seen
				if got := activeUsersOf(s.Pending, x, &seen); got != tt.want {
					t.Errorf("activeUsersOf = %v, want %v", got, tt.want)
				}
			}
			if got := groupByAssoc(s.Pending).activeUsers(x); got != tt.want {
				t.Errorf("assocGroups.activeUsers = %v, want %v (the table is wrong)", got, tt.want)
			}
		})
	}
}

// TestActiveMemo_CountsAsActiveUsersOf checks themis' memo of queue slots
// and user cells against activeUsersOf at every step of random churn:
// jobs arriving, leaving (the last moved into their slot, as the
// simulator does, or the queue shifted), a slot's job changing user under
// the same id, the queue shuffled, users starting and stopping running
// jobs, and the memo switched between two running indexes.
func TestActiveMemo_CountsAsActiveUsersOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		users   int
		queue   int
		switchX bool // alternate between two indexes now and then
	}{
		{"few-users", 4, 30, false},
		{"many-users", 200, 300, false},
		{"two-indexes", 20, 60, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.users)))
			user := func() string { return fmt.Sprint("u", r.Intn(tc.users)) }
			xs := []*runningIndex{newRunningIndex(), newRunningIndex()}
			live := [2][]*runRec{}
			var pending []Job
			var m activeMemo
			nextID, counted := int64(1), 0
			for step := range 3000 {
				switch k := r.Intn(12); {
				case k < 3 || len(pending) == 0:
					pending = append(pending, Job{ID: nextID, User: user(), Account: "a"})
					nextID++
				case k < 5 && len(pending) > tc.queue/2:
					pending = dropRandom(r, pending)
				case k == 5:
					pending[r.Intn(len(pending))].User = user()
				case k == 6:
					r.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
				case k < 9: // a job of some user starts in one index
					w := r.Intn(2)
					rec := xs[w].newRec()
					rec.id = nextID
					nextID++
					xs[w].jobs[rec.id] = rec
					xs[w].attach(rec, &Job{ID: rec.id, User: user(), Account: "a"}, nil, nil)
					live[w] = append(live[w], rec)
				default: // one stops
					w := r.Intn(2)
					if n := len(live[w]); n > 0 {
						i := r.Intn(n)
						xs[w].remove(live[w][i])
						live[w] = slices.Delete(live[w], i, i+1)
					}
				}
				x := xs[0]
				if tc.switchX && step/50%2 == 1 {
					x = xs[1]
				}
				var seen map[string]struct{}
				want := activeUsersOf(pending, x, &seen)
				got, ok := m.count(pending, x)
				if !ok || got != want {
					t.Fatalf("step %d: memo counted %v (ok %v), want %v", step, got, ok, want)
				}
				if want > float64(len(x.users)) && len(x.users) > 0 {
					counted++
				}
			}
			if counted < 500 {
				t.Fatalf("%d steps had users both pending only and running: the test checks too little", counted)
			}
		})
	}
}

// dropRandom removes a random job of pending, half the time by moving the
// last job into its place (as the simulator's queue does) and half by
// shifting the rest, so that memos keyed by queue slot see both moves.
func dropRandom(r *rand.Rand, pending []Job) []Job {
	i := r.Intn(len(pending))
	if r.Intn(2) == 0 {
		pending[i] = pending[len(pending)-1]
		return pending[:len(pending)-1]
	}
	return slices.Delete(pending, i, i+1)
}
