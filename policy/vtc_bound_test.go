package policy

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestVTC_FairnessBound runs vtc, as shipped, through the Ledger contract
// on a toy 8-GPU cluster: two users, always backlogged, whose jobs (1–4
// GPUs, 1–60 min, predicted exactly) start in ranking order as GPUs free
// up. VTC's bound, in the form the batch adaptation keeps it: the users'
// weighted service counted at dispatch (received plus the committed
// remainder of running jobs) never differs by more than twice the largest
// job's weighted GPU-seconds. fair-qssf is not checked: as shipped, its ρ
// and starvation guards lift jobs out of VTC order, and on this loop the
// difference passes the bound at step 135 (31,920 GPU-s against 28,800).
func TestVTC_FairnessBound(t *testing.T) {
	for _, tc := range []struct {
		policy string
		shares map[Assoc]float64
	}{
		{"vtc", nil},
		{"vtc", map[Assoc]float64{{"lab", "a"}: 2}},
	} {
		t.Run(fmt.Sprintf("%s/shares=%v", tc.policy, tc.shares), func(t *testing.T) {
			rkRunBound(t, tc.policy, &Shares{Users: tc.shares})
		})
	}
}

func rkRunBound(t *testing.T, policy string, shares *Shares) {
	pol, err := New(policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	maxJob := 4 * 3600.0 // the largest job: 4 GPUs × 60 min
	worst := 0.0
	check := func(step int, now time.Time, l *Ledger, running []Job, predicted map[int64]time.Duration) {
		// The bound, on counters charged at dispatch.
		eff := map[string]float64{}
		for _, u := range []string{"a", "b"} {
			eff[u] = l.Counter(Assoc{"lab", u})
		}
		for _, r := range running {
			eff[r.User] += float64(r.GPUs) * (predicted[r.ID] - now.Sub(r.Start)).Seconds()
		}
		wa, wb := shares.User(Assoc{"lab", "a"}), shares.User(Assoc{"lab", "b"})
		diff := math.Abs(eff["a"]/wa - eff["b"]/wb)
		worst = max(worst, diff)
		if bound := 2 * maxJob / min(wa, wb); diff > bound {
			t.Fatalf("step %d: weighted service a %.0f, b %.0f: differ by %.0f > %.0f", step, eff["a"]/wa, eff["b"]/wb, diff, bound)
		}
	}
	rkLoop{Policy: pol, Shares: shares, Queue: map[string]int{"a": 5, "b": 5}, Seed: 3, Steps: 2000, Check: check}.run(t, rkLedger(t, LedgerParams{}))
	if worst == 0 {
		t.Fatal("the two users' service never differed: the run exercised nothing")
	}
	t.Logf("largest weighted difference %.0f GPU-s, bound %.0f", worst, 2*maxJob)
}
