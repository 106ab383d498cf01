package policy

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// TestGroupMemo_GroupsAsReset checks, at every step of random churn,
// that grouping a queue through the slot memo gives the grouping reset
// gives: the same groups in the same order, accounts, chains of one
// user's groups and members. The churn: arrivals, swap and shift
// removals, a job's user or account changed under its id, shuffles, runs
// of one user's jobs, and users in several accounts.
func TestGroupMemo_GroupsAsReset(t *testing.T) {
	for _, tc := range []struct {
		name            string
		users, accounts int
		queue           int
	}{
		{"one-account", 30, 1, 200},
		{"users-in-several-accounts", 8, 4, 60},
		{"tiny", 2, 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.queue)))
			job := func(id int64) Job {
				return Job{ID: id, User: fmt.Sprint("u", r.Intn(tc.users)), Account: fmt.Sprint("a", r.Intn(tc.accounts))}
			}
			var pending []Job
			var m groupMemo
			var got, want assocGroups
			nextID, hits := int64(1), 0
			for step := range 3000 {
				switch k := r.Intn(12); {
				case k < 3 || len(pending) == 0:
					for range 1 + r.Intn(3) { // sometimes a run of one user's jobs
						j := job(nextID)
						if n := len(pending); n > 0 && r.Intn(2) == 0 {
							j.User, j.Account = pending[n-1].User, pending[n-1].Account
						}
						pending = append(pending, j)
						nextID++
					}
				case k < 6 && len(pending) > tc.queue/2:
					pending = dropRandom(r, pending)
				case k == 6:
					i := r.Intn(len(pending))
					c := job(pending[i].ID)
					pending[i].User = c.User
				case k == 7:
					i := r.Intn(len(pending))
					c := job(pending[i].ID)
					pending[i].Account = c.Account
				case k == 8:
					r.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
				}
				before := m.calls
				got.resetWith(pending, &m)
				want.reset(pending)
				if m.calls != before+1 {
					t.Fatalf("step %d: the memo was not used", step)
				}
				if !slices.Equal(got.of, want.of) || !slices.Equal(got.keys, want.keys) || !slices.Equal(got.acct, want.acct) ||
					!slices.Equal(got.accounts, want.accounts) || !slices.Equal(got.sameUser, want.sameUser) ||
					!maps.Equal(got.byUser, want.byUser) || !maps.Equal(got.byAcct, want.byAcct) ||
					!slices.Equal(got.members, want.members) || !slices.Equal(got.start, want.start) {
					t.Fatalf("step %d: with the memo %+v, reset %+v", step, got, want)
				}
				if len(pending) > 1 && len(got.keys) > 1 {
					hits++
				}
			}
			if hits < 1000 {
				t.Fatalf("%d steps grouped several associations: the test checks too little", hits)
			}
		})
	}
}
