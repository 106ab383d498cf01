package policy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func rkLedger(t *testing.T, p LedgerParams) *Ledger {
	t.Helper()
	l, err := NewLedger(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func rkClose(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestLedger_DecayIsExactAndCadenceFree(t *testing.T) {
	const h = 3600.0 // half-life, seconds
	j := &Job{ID: 1, Account: "phys", User: "alice", GPUs: 2}
	a := AssocOf(j)
	// 2 GPUs for one half-life: ∫0^h 2·2^(-(h-s)/h) ds = 2·h/ln2·(1 − 1/2).
	want := 2 * h / math.Ln2 * 0.5

	whole := rkLedger(t, LedgerParams{HalfLife: time.Hour})
	whole.Charge(j, rkAt(0), rkAt(60), Service{})
	split := rkLedger(t, LedgerParams{HalfLife: time.Hour})
	for m := 0.0; m < 60; m += 7.5 {
		split.Charge(j, rkAt(m), rkAt(m+7.5), Service{})
	}
	for _, tc := range []struct {
		name string
		l    *Ledger
	}{{"one charge", whole}, {"eight charges", split}} {
		if got := tc.l.Usage(a, rkAt(60)); !rkClose(got, want) {
			t.Errorf("%s: usage after one half-life = %v, want %v", tc.name, got, want)
		}
		if got := tc.l.Usage(a, rkAt(120)); !rkClose(got, want/2) {
			t.Errorf("%s: usage a half-life later = %v, want %v", tc.name, got, want/2)
		}
		if got := tc.l.AccountUsage("phys", rkAt(120)); !rkClose(got, want/2) {
			t.Errorf("%s: account usage = %v, want %v", tc.name, got, want/2)
		}
		if got := tc.l.TotalUsage(rkAt(120)); !rkClose(got, want/2) {
			t.Errorf("%s: total usage = %v, want %v", tc.name, got, want/2)
		}
		// VTC counters and attained service do not decay.
		if got := tc.l.Counter(a); !rkClose(got, 2*h) {
			t.Errorf("%s: VTC counter = %v, want %v", tc.name, got, 2*h)
		}
		if got := tc.l.Attained(1); !rkClose(got, 2*h) {
			t.Errorf("%s: attained = %v, want %v", tc.name, got, 2*h)
		}
	}
}

func TestLedger_NoDecayAndRebase(t *testing.T) {
	j := &Job{ID: 1, Account: "a", User: "u", GPUs: 1}
	flat := rkLedger(t, LedgerParams{HalfLife: -1})
	flat.Charge(j, rkAt(0), rkAt(60), Service{})
	if got := flat.Usage(AssocOf(j), rkAt(60*24*365)); got != 3600 {
		t.Errorf("usage without decay a year later = %v, want 3600", got)
	}

	// 200 half-lives apart forces a renormalisation; the old charge has
	// decayed to nothing and the new one is exact.
	l := rkLedger(t, LedgerParams{HalfLife: time.Hour})
	l.Charge(j, rkAt(0), rkAt(60), Service{})
	l.Charge(j, rkAt(200*60), rkAt(201*60), Service{})
	want := 3600 / math.Ln2 * 0.5
	if got := l.Usage(AssocOf(j), rkAt(201*60)); !rkClose(got, want) {
		t.Errorf("usage after rebase = %v, want %v", got, want)
	}
}

func TestLedger_ServiceUnits(t *testing.T) {
	svc := Service{TypeWeight: map[string]float64{"h100": 2}, ShardsPerGPU: 4, CPUsPerGPU: 8}
	tests := []struct {
		name string
		job  Job
		want float64 // GPU-seconds for one hour
	}{
		{"two untyped GPUs", Job{GPUs: 2}, 7200},
		{"one weighted h100", Job{GPUs: 1, GPUType: "h100"}, 7200},
		{"two shards of four", Job{Shards: 2}, 1800},
		{"CPU-only job", Job{CPUs: 4}, 1800},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := rkLedger(t, LedgerParams{})
			j := tc.job
			j.ID, j.Account, j.User = 7, "a", "u"
			l.Charge(&j, rkAt(0), rkAt(60), svc)
			if got := l.Attained(7); got != tc.want {
				t.Errorf("attained = %v, want %v", got, tc.want)
			}
		})
	}
	if got := (Service{}).Rate(&Job{CPUs: 64}); got != 0 {
		t.Errorf("zero Service rates a CPU-only job %v, want 0", got)
	}
}

// TestLedger_BacklogLift walks VTC's lift: users who stay backlogged keep
// their counters, a user returning after idling is lifted to the smallest
// counter among those backlogged, and never lowered.
func TestLedger_BacklogLift(t *testing.T) {
	l := rkLedger(t, LedgerParams{})
	alice := &Job{ID: 1, Account: "lab", User: "alice", GPUs: 1}
	bob := &Job{ID: 2, Account: "lab", User: "bob", GPUs: 1}
	carol := &Job{ID: 3, Account: "lab", User: "carol", GPUs: 2}
	dave := &Job{ID: 4, Account: "lab", User: "dave", GPUs: 1}
	shares := &Shares{Users: map[Assoc]float64{AssocOf(carol): 2, AssocOf(dave): 0}}

	// carol ran long ago, then went idle.
	l.Charge(carol, rkAt(-600), rkAt(-595), Service{}) // 2 GPUs × 300 s = 600
	l.Backlog([]Job{*alice, *bob}, shares)
	l.Charge(alice, rkAt(0), rkAt(50), Service{}) // 3000
	l.Charge(bob, rkAt(0), rkAt(20), Service{})   // 1200
	l.Backlog([]Job{*alice, *bob}, shares)
	if got := l.Counter(AssocOf(bob)); got != 1200 {
		t.Fatalf("bob stayed backlogged: counter %v, want 1200 (no lift)", got)
	}

	// carol and dave come back: carol (2 shares) is lifted to bob's
	// weighted counter 1200/1, i.e. 2400 GPU-seconds; dave has no shares
	// and is left alone.
	l.Backlog([]Job{*alice, *bob, *carol, *dave}, shares)
	if got := l.Counter(AssocOf(carol)); got != 2400 {
		t.Errorf("carol returning: counter %v, want 2400 (lifted to min 1200 × 2 shares)", got)
	}
	if got := l.Counter(AssocOf(dave)); got != 0 {
		t.Errorf("zero-share dave: counter %v, want 0", got)
	}
	if got := l.AccountCounter("lab"); got != 4800 {
		t.Errorf("the only account stayed backlogged: counter %v, want 4800 unchanged", got)
	}

	// A lift never lowers: alice leaves and comes back while bob waits.
	l.Backlog([]Job{*bob, *carol}, shares)
	l.Backlog([]Job{*alice, *bob, *carol}, shares)
	if got := l.Counter(AssocOf(alice)); got != 3000 {
		t.Errorf("alice returning above the minimum: counter %v, want 3000", got)
	}
}

// TestLedger_BacklogLiftAfterEmptyQueue: when nobody else is backlogged, a
// returning user is lifted to the user who most recently left the
// backlog, so a gap in the whole queue cannot be banked either.
func TestLedger_BacklogLiftAfterEmptyQueue(t *testing.T) {
	l := rkLedger(t, LedgerParams{})
	alice := &Job{ID: 1, Account: "lab", User: "alice", GPUs: 1}
	bob := &Job{ID: 2, Account: "lab", User: "bob", GPUs: 1}
	l.Backlog([]Job{*alice}, nil)
	l.Charge(alice, rkAt(0), rkAt(100), Service{}) // 6000
	l.Backlog(nil, nil)                            // queue empty: alice left last
	l.Backlog([]Job{*bob}, nil)
	if got := l.Counter(AssocOf(bob)); got != 6000 {
		t.Errorf("bob after an empty queue: counter %v, want 6000 (alice's)", got)
	}
}

// TestLedger_BacklogAccounts: accounts are lifted among accounts, users
// among the users of their own account.
func TestLedger_BacklogAccounts(t *testing.T) {
	l := rkLedger(t, LedgerParams{})
	a1 := &Job{ID: 1, Account: "phys", User: "a1", GPUs: 1}
	a2 := &Job{ID: 2, Account: "phys", User: "a2", GPUs: 1}
	b1 := &Job{ID: 3, Account: "chem", User: "b1", GPUs: 1}
	shares := &Shares{Accounts: map[string]float64{"phys": 2, "chem": 1}}
	l.Backlog([]Job{*a1}, shares)
	l.Charge(a1, rkAt(0), rkAt(100), Service{}) // phys 6000, a1 6000
	l.Backlog([]Job{*a1, *a2, *b1}, shares)
	if got := l.AccountCounter("chem"); got != 3000 {
		t.Errorf("chem: counter %v, want 3000 (phys 6000 / 2 shares × 1 share)", got)
	}
	if got := l.Counter(AssocOf(a2)); got != 6000 {
		t.Errorf("a2: counter %v, want 6000 (a1's, same account)", got)
	}
	if got := l.Counter(AssocOf(b1)); got != 0 {
		t.Errorf("b1: counter %v, want 0 (alone in chem, nobody to lift to)", got)
	}
}

func TestLedger_FinishAndClone(t *testing.T) {
	l := rkLedger(t, LedgerParams{Samples: 2})
	for id := int64(1); id <= 3; id++ {
		j := &Job{ID: id, Account: "a", User: "u", GPUs: int(id)}
		l.Charge(j, rkAt(0), rkAt(1), Service{})
		l.Finish(j)
		if l.Attained(id) != 0 {
			t.Errorf("job %d still has attained service after Finish", id)
		}
	}
	// The ring keeps the last two: 120 and 180 GPU-seconds.
	if diff := cmp.Diff([]float64{120, 180}, l.sortedSamples()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}

	c := l.Clone()
	j := &Job{ID: 9, Account: "a", User: "u", GPUs: 1}
	c.Charge(j, rkAt(0), rkAt(10), Service{})
	c.Backlog([]Job{*j}, nil)
	if l.Counter(AssocOf(j)) != 360 || c.Counter(AssocOf(j)) != 960 {
		t.Errorf("clone shares state: original %v, clone %v, want 360 and 960", l.Counter(AssocOf(j)), c.Counter(AssocOf(j)))
	}
	if l.Attained(9) != 0 {
		t.Error("charging the clone charged the original")
	}
	var nilLedger *Ledger
	if nilLedger.Usage(Assoc{}, rkT0) != 0 || nilLedger.Counter(Assoc{}) != 0 || nilLedger.Assocs() != nil {
		t.Error("a nil ledger does not read as empty")
	}
}

// TestService_BillCPUs: Slurm's default billing charges a job its CPUs,
// whatever GPUs or shards it holds; without it a GPU job is charged its
// GPUs and a CPU job nothing (on a GPU cluster).
func TestService_BillCPUs(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Service
		j    Job
		want float64
	}{
		{"GPUs, billed by CPUs", Service{BillCPUs: true}, Job{GPUs: 4, CPUs: 2}, 2},
		{"shards, billed by CPUs", Service{BillCPUs: true, ShardsPerGPU: 4}, Job{Shards: 2, CPUs: 6}, 6},
		{"CPU job, billed by CPUs", Service{BillCPUs: true}, Job{CPUs: 3}, 3},
		{"GPUs", Service{}, Job{GPUs: 4, CPUs: 2}, 4},
		{"CPU job on a GPU cluster", Service{}, Job{CPUs: 3}, 0},
	} {
		if got := tc.s.Rate(&tc.j); got != tc.want {
			t.Errorf("%s: rate %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLedger_CloneOfChargedJob: a job charged before a Clone and charged
// again on the clone charges the clone's association, not the original's
// (a job's record keeps its association's for the next charge).
func TestLedger_CloneOfChargedJob(t *testing.T) {
	l := rkLedger(t, LedgerParams{})
	j := &Job{ID: 8, Account: "a", User: "u", GPUs: 1}
	l.Charge(j, rkAt(0), rkAt(1), Service{})
	c := l.Clone()
	c.Charge(j, rkAt(1), rkAt(3), Service{})
	l.Charge(j, rkAt(1), rkAt(2), Service{})
	if got, want := l.Counter(AssocOf(j)), 120.0; got != want {
		t.Errorf("original: counter %v, want %v", got, want)
	}
	if got, want := c.Counter(AssocOf(j)), 180.0; got != want {
		t.Errorf("clone: counter %v, want %v", got, want)
	}
	if got, want := l.AccountCounter("a"), 120.0; got != want {
		t.Errorf("original: account counter %v, want %v", got, want)
	}
}
