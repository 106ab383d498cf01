package policy

import (
	"fmt"
	"math"
	"math/rand"
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
// difference reaches 33,740 GPU-s against the bound's 28,800.
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
	const gpus = 8
	rng := rand.New(rand.NewSource(3))
	pol, err := NewPolicy(policy, PolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	l := rkLedger(t, LedgerParams{})
	nextID := int64(1)
	now := rkT0
	predicted := map[int64]time.Duration{}
	newJob := func(user string) Job {
		j := Job{ID: nextID, Account: "lab", User: user, GPUs: 1 + rng.Intn(4), Submit: now, State: StatePending}
		predicted[j.ID] = time.Duration(1+rng.Intn(60)) * time.Minute
		nextID++
		return j
	}
	var pending, running []Job
	for _, u := range []string{"a", "b"} {
		for range 5 {
			pending = append(pending, newJob(u))
		}
	}
	maxJob := 4 * 3600.0 // the largest job: 4 GPUs × 60 min
	lastCharge := map[int64]time.Time{}
	free := gpus
	worst := 0.0
	for step := 0; step < 2000; step++ {
		// Charge running jobs up to now; retire those that ended.
		kept := running[:0]
		for _, r := range running {
			end := r.Start.Add(predicted[r.ID])
			to := now
			if !end.After(now) {
				to = end
			}
			l.Charge(&r, lastCharge[r.ID], to, Service{})
			lastCharge[r.ID] = to
			if !end.After(now) {
				l.Finish(&r)
				free += r.GPUs
				continue
			}
			kept = append(kept, r)
		}
		running = kept
		// Both users stay backlogged: top their queues up to five jobs.
		count := map[string]int{}
		for _, p := range pending {
			count[p.User]++
		}
		for _, u := range []string{"a", "b"} {
			for range 5 - count[u] {
				pending = append(pending, newJob(u))
			}
		}
		l.Backlog(pending, shares)

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

		// Rank and start jobs in order while they fit.
		s := &Snapshot{Now: now, Pending: pending, Running: running, Predicted: predicted, Shares: shares, Ledger: l}
		scores, err := pol.Rank(s)
		if err != nil {
			t.Fatal(err)
		}
		started := map[int64]bool{}
		byID := map[int64]Job{}
		for _, p := range pending {
			byID[p.ID] = p
		}
		for _, sc := range scores {
			j := byID[sc.JobID]
			if j.GPUs > free {
				break
			}
			free -= j.GPUs
			j.Start, j.State = now, StateRunning
			lastCharge[j.ID] = now
			running = append(running, j)
			started[j.ID] = true
		}
		rest := pending[:0]
		for _, p := range pending {
			if !started[p.ID] {
				rest = append(rest, p)
			}
		}
		pending = rest
		// Advance to the next completion.
		next := time.Time{}
		for _, r := range running {
			if end := r.Start.Add(predicted[r.ID]); next.IsZero() || end.Before(next) {
				next = end
			}
		}
		now = next
	}
	if worst == 0 {
		t.Fatal("the two users' service never differed: the run exercised nothing")
	}
	t.Logf("largest weighted difference %.0f GPU-s, bound %.0f", worst, 2*maxJob)
}
