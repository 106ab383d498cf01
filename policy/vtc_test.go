package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rkCharge charges user's association in acct with gpuSeconds of service
// (one GPU), as the cycle owner would for a finished job.
func rkCharge(l *Ledger, id int64, acct, user string, gpuSeconds float64) {
	j := &Job{ID: id, Account: acct, User: user, GPUs: 1}
	l.Charge(j, rkT0, rkT0.Add(time.Duration(gpuSeconds*float64(time.Second))), Service{})
	l.Finish(j)
}

func TestVTC_Rank(t *testing.T) {
	min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	tests := []struct {
		name    string
		shares  *Shares
		history map[Assoc]float64 // GPU-seconds already received
		jobs    []rkJob
		want    []int64
		tags    map[int64]float64
	}{{
		// alice has had 6000 GPU-s, bob none: bob's four 40-minute jobs
		// (2400 each) take user tags 0, 2400, 4800, 7200 and interleave
		// with alice's 6000; the account tags then count on from the
		// account's 6000.
		name:    "least served first, interleaved",
		history: map[Assoc]float64{{"lab", "alice"}: 6000},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "alice", submit: 0, run: min(40)},
			{id: 2, acct: "lab", user: "bob", submit: 1, run: min(40)},
			{id: 3, acct: "lab", user: "bob", submit: 2, run: min(40)},
			{id: 4, acct: "lab", user: "bob", submit: 3, run: min(40)},
			{id: 5, acct: "lab", user: "bob", submit: 4, run: min(40)},
		},
		want: []int64{2, 3, 4, 1, 5},
		tags: map[int64]float64{2: 6000, 3: 8400, 4: 10800, 1: 13200, 5: 15600},
	}, {
		// Equal counters and costs: tags tie, the older job wins, then
		// the lower id; within a user VTC is FIFO whatever the cost.
		name: "ties fall to submit time then id",
		jobs: []rkJob{
			{id: 8, acct: "lab", user: "x", submit: 5, run: min(60)},
			{id: 7, acct: "lab", user: "y", submit: 5, run: min(10)},
			{id: 6, acct: "lab", user: "y", submit: 6, run: min(1)},
		},
		want: []int64{7, 8, 6},
	}, {
		// Weighted: carol has 3 shares, so her counter and her charges
		// count a third: 9000/3 = 3000 < dan's 4000.
		name:    "shares weigh the counters",
		shares:  &Shares{Users: map[Assoc]float64{{"lab", "carol"}: 3}},
		history: map[Assoc]float64{{"lab", "carol"}: 9000, {"lab", "dan"}: 4000},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "dan", submit: 0, run: min(60)},
			{id: 2, acct: "lab", user: "carol", submit: 1, run: min(60)},
			{id: 3, acct: "lab", user: "carol", submit: 2, run: min(30)},
		},
		want: []int64{2, 1, 3},
	}, {
		// A zero-share user, and every user of a zero-share account, is a
		// scavenger: last, FIFO among scavengers, however little used.
		name:    "zero shares rank last",
		shares:  &Shares{Accounts: map[string]float64{"guest": 0}, Users: map[Assoc]float64{{"lab", "zed"}: 0}},
		history: map[Assoc]float64{{"lab", "busy"}: 1e6},
		jobs: []rkJob{
			{id: 1, acct: "guest", user: "g", submit: 0, run: min(1)},
			{id: 2, acct: "lab", user: "zed", submit: 1, run: min(1)},
			{id: 3, acct: "lab", user: "busy", submit: 2, run: min(600)},
			{id: 4, acct: "guest", user: "h", submit: 3, run: min(1)},
		},
		want: []int64{3, 1, 2, 4},
	}, {
		// Hierarchical: phys and chem share the cluster 1:1 by account
		// counters (phys 6000, chem 0); users share their account. chem's
		// single user gets 0, 3600, 7200; phys' jobs follow from 6000.
		name:    "accounts first, then users",
		history: map[Assoc]float64{{"phys", "p1"}: 3000, {"phys", "p2"}: 3000},
		jobs: []rkJob{
			{id: 1, acct: "phys", user: "p1", submit: 0, run: min(60)},
			{id: 2, acct: "phys", user: "p2", submit: 1, run: min(60)},
			{id: 3, acct: "chem", user: "c1", submit: 2, run: min(60)},
			{id: 4, acct: "chem", user: "c1", submit: 3, run: min(60)},
			{id: 5, acct: "chem", user: "c1", submit: 4, run: min(60)},
		},
		want: []int64{3, 4, 1, 5, 2},
		tags: map[int64]float64{3: 0, 4: 3600, 1: 6000, 5: 7200, 2: 9600},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := rkLedger(t, LedgerParams{})
			id := int64(1000)
			for a, gs := range tc.history {
				id++
				rkCharge(l, id, a.Account, a.User, gs)
			}
			s := rkSnap(10, tc.jobs...)
			s.Shares, s.Ledger = tc.shares, l
			got, by := rkRank(t, "vtc", nil, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, tag := range tc.tags {
				if by[id].Parts.Get("vtc_tag") != tag || by[id].Value != -tag {
					t.Errorf("job %d: tag %v value %v, want tag %v", id, by[id].Parts.Get("vtc_tag"), by[id].Value, tag)
				}
			}
		})
	}
}

// TestVTC_ReturningUserIsLifted: alice and bob have been backlogged and
// served; carol was idle. Without the lift her old low counter would put
// all her jobs first; lifted to bob's counter she takes turns.
func TestVTC_ReturningUserIsLifted(t *testing.T) {
	hour := time.Hour
	jobs := []rkJob{
		{id: 1, acct: "lab", user: "alice", submit: 0, run: hour},
		{id: 2, acct: "lab", user: "bob", submit: 1, run: hour},
		{id: 3, acct: "lab", user: "carol", submit: 100, run: hour},
		{id: 4, acct: "lab", user: "carol", submit: 101, run: hour},
		{id: 5, acct: "lab", user: "carol", submit: 102, run: hour},
	}
	build := func(lift bool) *Snapshot {
		l := rkLedger(t, LedgerParams{})
		s := rkSnap(120, jobs...)
		l.Backlog(s.Pending[:2], nil)
		rkCharge(l, 10, "lab", "alice", 9000)
		rkCharge(l, 11, "lab", "bob", 7200)
		if lift {
			l.Backlog(s.Pending, nil)
		}
		s.Ledger = l
		return s
	}
	// Not lifted: carol 0, 3600, 7200 (ties bob, who is older); alice 9000.
	got, _ := rkRank(t, "vtc", nil, build(false))
	if diff := cmp.Diff([]int64{3, 4, 2, 5, 1}, got); diff != "" {
		t.Errorf("without the lift (-want +got):\n%s", diff)
	}
	// Lifted to 7200: carol 7200 (ties bob, who is older), 10800, 14400;
	// alice 9000.
	s := build(true)
	if c := s.Ledger.Counter(Assoc{"lab", "carol"}); c != 7200 {
		t.Fatalf("carol's counter after the lift = %v, want 7200", c)
	}
	got, _ = rkRank(t, "vtc", nil, s)
	if diff := cmp.Diff([]int64{2, 3, 1, 4, 5}, got); diff != "" {
		t.Errorf("with the lift (-want +got):\n%s", diff)
	}
}

// TestVTC_CommittedRunningService: bob's running job is predicted to use
// 3600 GPU-s and has been charged 600: the 3000 left count unless
// IgnoreRunning, whenever the job was last charged.
func TestVTC_CommittedRunningService(t *testing.T) {
	s := rkSnap(60,
		rkJob{id: 1, acct: "lab", user: "alice", submit: 10, run: time.Hour},
		rkJob{id: 2, acct: "lab", user: "bob", submit: 20, run: time.Hour})
	l := rkLedger(t, LedgerParams{})
	rkCharge(l, 10, "lab", "alice", 2000)
	running := Job{ID: 3, Account: "lab", User: "bob", GPUs: 1, Start: rkAt(50), State: StateRunning}
	l.Charge(&running, running.Start, s.Now, Service{}) // 600 received
	s.Running = []Job{running}
	s.Predicted[3] = time.Hour
	s.Ledger = l

	got, by := rkRank(t, "vtc", nil, s)
	if diff := cmp.Diff([]int64{1, 2}, got); diff != "" {
		t.Errorf("committed counted (-want +got):\n%s", diff)
	}
	if c := by[2].Parts.Get("user_counter"); c != 3600 {
		t.Errorf("bob's counter = %v, want 600 received + 3000 committed", c)
	}
	got, _ = rkRank(t, "vtc", VTCParams{IgnoreRunning: true}, s)
	if diff := cmp.Diff([]int64{2, 1}, got); diff != "" {
		t.Errorf("received service only (-want +got):\n%s", diff)
	}

	// Charged only up to minute 55 (the cycle owner charges every few
	// minutes): received 300, committed 3300, the same counter.
	stale := rkLedger(t, LedgerParams{})
	rkCharge(stale, 10, "lab", "alice", 2000)
	stale.Charge(&running, running.Start, rkAt(55), Service{})
	s.Ledger = stale
	_, by = rkRank(t, "vtc", nil, s)
	if c := by[2].Parts.Get("user_counter"); c != 3600 {
		t.Errorf("bob's counter with stale charging = %v, want 300 received + 3300 committed", c)
	}
}

func TestFairQSSF_Rank(t *testing.T) {
	min := func(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
	tests := []struct {
		name    string
		params  FairQSSFParams
		gpus    float64 // the snapshot's capacity, 0 for unknown
		now     float64
		history map[Assoc]float64
		jobs    []rkJob
		want    []int64
	}{{
		// Within a user, shortest predicted GPU time first (a 2-GPU
		// 10-minute job costs 1200, more than a 1-GPU 15-minute one);
		// across users VTC interleaves: alice 0 (job 3), 900 (job 2),
		// 2100 (job 1); bob 1000.
		name:    "shortest service first within a user",
		params:  FairQSSFParams{RhoMax: -1},
		now:     30,
		history: map[Assoc]float64{{"lab", "bob"}: 1000},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "alice", submit: 0, run: min(30)},
			{id: 2, acct: "lab", user: "alice", submit: 1, run: min(10), gpus: 2},
			{id: 3, acct: "lab", user: "alice", submit: 2, run: min(15)},
			{id: 4, acct: "lab", user: "bob", submit: 3, run: min(5)},
		},
		want: []int64{3, 2, 4, 1},
	}, {
		// A heavy user's short jobs do not jump a light user: the light
		// user's later, longer job still gets the next turn.
		name:    "heavy user's short jobs wait their turn",
		params:  FairQSSFParams{RhoMax: -1},
		now:     30,
		history: map[Assoc]float64{{"lab", "heavy"}: 36000},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "heavy", submit: 0, run: min(1)},
			{id: 2, acct: "lab", user: "heavy", submit: 1, run: min(1)},
			{id: 3, acct: "lab", user: "light", submit: 20, run: min(120)},
		},
		want: []int64{3, 1, 2},
	}, {
		// Starvation guard: at minute 1500 (25 h) with MaxWait 24 h, jobs
		// 1 (overdue 60 min) and 2 (overdue 30 min) jump everyone, most
		// overdue first, though their user has used far more.
		name:    "starved jobs first, most overdue first",
		params:  FairQSSFParams{RhoMax: -1},
		now:     1500,
		history: map[Assoc]float64{{"lab", "hog"}: 1e7},
		jobs: []rkJob{
			{id: 2, acct: "lab", user: "hog", submit: 30, run: min(600)},
			{id: 1, acct: "lab", user: "hog", submit: 0, run: min(600)},
			{id: 3, acct: "lab", user: "hog", submit: 1400, run: min(1)},
			{id: 4, acct: "lab", user: "new", submit: 1490, run: min(60)},
		},
		want: []int64{1, 2, 4, 3},
	}, {
		name:    "guard off",
		params:  FairQSSFParams{MaxWait: -1, RhoMax: -1},
		now:     1500,
		history: map[Assoc]float64{{"lab", "hog"}: 1e7},
		jobs: []rkJob{
			{id: 2, acct: "lab", user: "hog", submit: 30, run: min(600)},
			{id: 1, acct: "lab", user: "hog", submit: 0, run: min(600)},
			{id: 3, acct: "lab", user: "hog", submit: 1400, run: min(1)},
			{id: 4, acct: "lab", user: "new", submit: 1490, run: min(60)},
		},
		want: []int64{4, 3, 1, 2},
	}, {
		// The ρ guard (default 5): heavy's 1-minute job has waited 30
		// minutes, ρ = (30 + 1) / 1 = 31, and jumps light's job, which
		// VTC alone would run first; heavy's hour-long job (ρ ≈ 1.02)
		// still waits its turn.
		name:    "a short job past its rho bound goes first",
		now:     30,
		history: map[Assoc]float64{{"lab", "heavy"}: 36000},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "heavy", submit: 0, run: min(1)},
			{id: 2, acct: "lab", user: "heavy", submit: 29, run: min(60)},
			{id: 3, acct: "lab", user: "light", submit: 20, run: min(120)},
		},
		want: []int64{1, 3, 2},
	}, {
		// Among jobs past the bound, the largest ρ first: job 2's
		// (60 + 2) / 2 = 31 before job 1's (10 + 1) / 1 = 11, whatever
		// the users' counters.
		name:    "largest rho first",
		now:     60,
		history: map[Assoc]float64{{"lab", "b"}: 1e6},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "a", submit: 50, run: min(1)},
			{id: 2, acct: "lab", user: "b", submit: 0, run: min(2)},
		},
		want: []int64{2, 1},
	}, {
		// Starved jobs rank above every job past the ρ bound (job 3,
		// ρ = 101), by their wait over their share slowdown: with 2
		// users on 8 GPUs, job 1's 8 GPUs are twice its owner's share,
		// so its 1,600 minutes count as 800 and job 2's 1,510 go first.
		name:    "starved before rho, larger than a share waits in proportion",
		gpus:    8,
		now:     1600,
		history: map[Assoc]float64{{"lab", "hog"}: 1e7},
		jobs: []rkJob{
			{id: 1, acct: "lab", user: "hog", submit: 0, run: min(600), gpus: 8},
			{id: 2, acct: "lab", user: "hog", submit: 90, run: min(600)},
			{id: 3, acct: "lab", user: "new", submit: 1500, run: min(1)},
		},
		want: []int64{2, 1, 3},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := rkLedger(t, LedgerParams{})
			id := int64(1000)
			for a, gs := range tc.history {
				id++
				rkCharge(l, id, a.Account, a.User, gs)
			}
			s := rkSnap(tc.now, tc.jobs...)
			s.Ledger, s.GPUs = l, tc.gpus
			got, by := rkRank(t, "fair-qssf", tc.params, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for _, sc := range by {
				if v := -sc.Parts.Get("vtc_tag") + sc.Parts.Get("starvation_boost"); v != sc.Value {
					t.Errorf("job %d: value %v is not −tag + boost = %v", sc.JobID, sc.Value, v)
				}
			}
		})
	}
}
