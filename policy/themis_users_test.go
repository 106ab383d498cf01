package policy

import "testing"

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
