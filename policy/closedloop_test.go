package policy

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// rkLoop is a closed loop on a toy 8-GPU cluster for the policies' bound
// tests: users keep queue[user] jobs pending (1–4 GPUs, 1–60 min, predicted
// exactly, from a generator seeded with seed); every step the running jobs
// are charged to the Ledger up to now and retired when they end, the queues
// are topped up, check sees the state, the policy ranks, jobs start in
// ranking order while they fit, and time moves to the next completion.
type rkLoop struct {
	Policy Policy
	Shares *Shares
	Queue  map[string]int
	Seed   int64
	Steps  int
	// Check, when set, sees the state after charging, before ranking.
	Check func(step int, now time.Time, l *Ledger, running []Job, predicted map[int64]time.Duration)
}

// rkLoopResult is what a loop measured.
type rkLoopResult struct {
	Service map[string]float64 // GPU-seconds received, by user
	MaxWait float64            // the longest wait of a started job, seconds
}

func (lp rkLoop) run(t *testing.T, l *Ledger) rkLoopResult {
	t.Helper()
	const gpus = 8
	rng := rand.New(rand.NewSource(lp.Seed))
	users := make([]string, 0, len(lp.Queue))
	for u := range lp.Queue {
		users = append(users, u)
	}
	slices.Sort(users)
	now := rkT0
	nextID := int64(1)
	predicted := map[int64]time.Duration{}
	newJob := func(user string) Job {
		j := Job{ID: nextID, Account: "lab", User: user, GPUs: 1 + rng.Intn(4), Submit: now, State: StatePending}
		predicted[j.ID] = time.Duration(1+rng.Intn(60)) * time.Minute
		nextID++
		return j
	}
	res := rkLoopResult{Service: map[string]float64{}}
	var pending, running []Job
	lastCharge := map[int64]time.Time{}
	free := gpus
	for step := 0; step < lp.Steps; step++ {
		kept := running[:0]
		for _, r := range running {
			end := r.Start.Add(predicted[r.ID])
			to := now
			if !end.After(now) {
				to = end
			}
			l.Charge(&r, lastCharge[r.ID], to, Service{})
			res.Service[r.User] += float64(r.GPUs) * to.Sub(lastCharge[r.ID]).Seconds()
			lastCharge[r.ID] = to
			if !end.After(now) {
				l.Finish(&r)
				free += r.GPUs
				continue
			}
			kept = append(kept, r)
		}
		running = kept
		count := map[string]int{}
		for _, p := range pending {
			count[p.User]++
		}
		for _, u := range users {
			for range lp.Queue[u] - count[u] {
				pending = append(pending, newJob(u))
			}
		}
		l.Backlog(pending, lp.Shares)
		if lp.Check != nil {
			lp.Check(step, now, l, running, predicted)
		}
		s := &Snapshot{Now: now, Pending: pending, Running: running, Predicted: predicted, Shares: lp.Shares, Ledger: l}
		scores, err := lp.Policy.Rank(s)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int64]Job{}
		for _, p := range pending {
			byID[p.ID] = p
		}
		started := map[int64]bool{}
		for _, sc := range scores {
			j := byID[sc.JobID]
			if j.GPUs > free {
				break
			}
			free -= j.GPUs
			res.MaxWait = max(res.MaxWait, now.Sub(j.Submit).Seconds())
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
		next := time.Time{}
		for _, r := range running {
			if end := r.Start.Add(predicted[r.ID]); next.IsZero() || end.Before(next) {
				next = end
			}
		}
		now = next
	}
	return res
}
