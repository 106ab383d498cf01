package policy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFairshare_Rank checks the classic factor against values worked out
// by hand from the formulas of Slurm's "Classic Fairshare Algorithm" page.
//
// Shares: phys 2, chem 1; alice, bob in phys (1 each); carol (1) and dave
// (0) in chem. Usage without decay: alice 3000, carol 1000, total 4000.
//
//	UE_phys = .75 + (1−.75)·2/3 = .916667   UE_chem = .25 + (1−.25)·1/3 = .5
//	alice: UE = .75 + (.916667−.75)/2 = .833333, S = 1/2·2/3: F = 2^−2.5
//	bob:   UE = 0 + .916667/2 = .458333,     S = 1/3:      F = 2^−1.375
//	carol: UE = .25 + (.5−.25)·1 = .5,       S = 1·1/3:    F = 2^−1.5
//	dave:  S = 0: F = 0
func TestFairshare_Rank(t *testing.T) {
	shares := &Shares{
		Accounts: map[string]float64{"phys": 2, "chem": 1},
		Users:    map[Assoc]float64{{"chem", "dave"}: 0},
	}
	l := rkLedger(t, LedgerParams{HalfLife: -1})
	l.Charge(&Job{ID: 100, Account: "phys", User: "alice", GPUs: 1}, rkAt(0), rkAt(50), Service{})
	l.Charge(&Job{ID: 101, Account: "chem", User: "carol", GPUs: 1}, rkAt(0), rkAt(1000.0/60), Service{})

	jobs := []rkJob{
		{id: 1, acct: "phys", user: "alice", submit: 10},
		{id: 2, acct: "phys", user: "bob", submit: 30},
		{id: 3, acct: "phys", user: "bob", submit: 20},
		{id: 4, acct: "chem", user: "carol", submit: 40},
		{id: 5, acct: "chem", user: "dave", submit: 0},
		{id: 6, acct: "chem", user: "dave", submit: 5},
	}
	wantF := map[int64]float64{1: math.Exp2(-2.5), 2: math.Exp2(-1.375), 3: math.Exp2(-1.375), 4: math.Exp2(-1.5), 5: 0, 6: 0}

	tests := []struct {
		name   string
		params FairshareParams
		want   []int64
	}{
		// bob's two jobs tie: the older first. dave's zero shares put him
		// last, FIFO.
		{"fair share only", FairshareParams{}, []int64{3, 2, 4, 1, 5, 6}},
		// At minute 60, with MaxAge 1 h, age adds (60−submit)/60:
		// 3: .3856+.6667=1.052, 1: .1768+.8333=1.010, 5: 0+1, 6: .9167,
		// 2: .3856+.5=.886, 4: .3536+.3333=.687. dave's zero shares no
		// longer starve him.
		{"with age", FairshareParams{AgeWeight: 1, MaxAge: time.Hour}, []int64{3, 1, 5, 6, 2, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := rkSnap(60, jobs...)
			s.Shares, s.Ledger = shares, l
			got, by := rkRank(t, "fairshare", tc.params, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, f := range wantF {
				if p := by[id].Parts.Get("fairshare"); !rkClose(p, f) {
					t.Errorf("job %d: fairshare %v, want %v", id, p, f)
				}
			}
		})
	}
}

// TestFairshare_NoHistory: on a fresh cluster every positive-share user has
// UE = S (the parent's 1 scaled by the share), so F = 1/2 for everyone and
// the order is FIFO.
func TestFairshare_NoHistory(t *testing.T) {
	s := rkSnap(60, rkJob{id: 1, acct: "a", user: "x", submit: 30}, rkJob{id: 2, acct: "b", user: "y", submit: 10})
	got, by := rkRank(t, "fairshare", nil, s)
	if diff := cmp.Diff([]int64{2, 1}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if by[1].Value != 0.5 || by[2].Value != 0.5 {
		t.Errorf("values %v, %v, want 0.5 each", by[1].Value, by[2].Value)
	}
}
