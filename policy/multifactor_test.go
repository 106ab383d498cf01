package policy

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMultifactor_Rank checks the "slurm" policy's priorities against
// values worked out by hand from priority_multifactor.c's formulas.
//
// Fair share as in TestFairshare_Rank: F alice = 2^−2.5 = .176777,
// bob = 2^−1.375 = .385553, carol = 2^−1.5 = .353553. The cluster: 4
// nodes, 32 CPUs. At minute 60, with PriorityMaxAge 1 h:
//
//	job 1 alice, submit 0 (age 1),    gpu   (¼), 1 node,  8 CPUs, limit 60 min, QOS normal (0)
//	job 2 bob,   submit 30 (age .5),  gpuhi (1), 2 nodes, 16 CPUs, limit 30 min, QOS normal
//	job 3 carol, submit 45 (age .25), gpu   (¼), 1 node,  4 CPUs, limit 10 min, QOS high (1)
//
// Weights: age 1000, fair share 10000, job size 1000, partition 2000, QOS 500.
func TestMultifactor_Rank(t *testing.T) {
	shares := &Shares{Accounts: map[string]float64{"phys": 2, "chem": 1}}
	l := rkLedger(t, LedgerParams{HalfLife: -1})
	l.Charge(&Job{ID: 100, Account: "phys", User: "alice", GPUs: 1}, rkAt(0), rkAt(50), Service{})
	l.Charge(&Job{ID: 101, Account: "chem", User: "carol", GPUs: 1}, rkAt(0), rkAt(1000.0/60), Service{})
	mk := func(id int64, user, acct, part, qos string, submit float64, nodes, cpus int, limit time.Duration) Job {
		return Job{ID: id, User: user, Account: acct, Partition: part, QOS: qos, Submit: rkAt(submit), Nodes: nodes, CPUs: cpus,
			GPUs: 1, TimeLimit: limit, State: StatePending, ArrayTask: -1}
	}
	jobs := []Job{
		mk(1, "alice", "phys", "gpu", "normal", 0, 1, 8, time.Hour),
		mk(2, "bob", "phys", "gpuhi", "normal", 30, 2, 16, 30*time.Minute),
		mk(3, "carol", "chem", "gpu", "high", 45, 1, 4, 10*time.Minute),
	}
	site := MultifactorParams{WeightAge: 1000, WeightFairshare: 10000, WeightJobSize: 1000, WeightPartition: 2000, WeightQOS: 500,
		MaxAge: time.Hour, PartitionFactor: map[string]float64{"gpu": 1, "gpuhi": 4}, QOSPriority: map[string]float64{"normal": 0, "high": 10},
		ClusterNodes: 4, ClusterCPUs: 32}
	favorSmall := site
	favorSmall.FavorSmall = true
	relative := site
	relative.SizeRelative = true
	noNormal := site
	noNormal.NoNormalPartition = true
	assoc := site
	assoc.WeightAssoc, assoc.AssocPriority = 3000, map[Assoc]float64{{Account: "phys", User: "alice"}: 10, {Account: "phys", User: "bob"}: 0,
		{Account: "chem", User: "carol"}: 5, {Account: "chem"}: 20}
	assocRaw := assoc
	assocRaw.NoNormalAssoc = true
	assocMax := assoc
	assocMax.AssocMax = 40 // a partition-specific association's
	tests := []struct {
		name   string
		params MultifactorParams
		want   []int64
		prio   map[int64]float64
	}{
		// 1: 1000 + 1767.77 + 1000·(¼+8/32)/2 = 250 + 500 + 0 = 3517.77
		// 2: 500 + 3855.53 + 1000·(½+½)/2 = 500 + 2000 + 0 = 6855.53
		// 3: 250 + 3535.53 + 1000·(¼+⅛)/2 = 187.5 + 500 + 500 = 4973.03
		{"favor large", site, []int64{2, 3, 1}, map[int64]float64{1: 3517, 2: 6855, 3: 4973}},
		// job size: 1: (¾+¾)/2 = .75, 2: (½+½)/2 = .5, 3: (¾+⅞)/2 = .8125
		{"favor small", favorSmall, []int64{2, 3, 1}, map[int64]float64{1: 4017, 2: 6855, 3: 5598}},
		// job size: max(nodes·32/4, cpus)/limit/32: 1: 8/60/32 = .0041667,
		// 2: 16/30/32 = .016667, 3: 8/10/32 = .025
		{"small relative to time", relative, []int64{2, 3, 1}, map[int64]float64{1: 3271, 2: 6372, 3: 4810}},
		// partition factors 1 and 4 themselves: 1: 3517.77 − 500 + 2000,
		// 3: 4973.03 − 500 + 2000, 2: 6855.53 − 2000 + 8000
		{"no normal partition", noNormal, []int64{2, 3, 1}, map[int64]float64{1: 5017, 2: 12855, 3: 6473}},
		// association factor over the highest, 20 (chem's own): alice
		// ½ (+1500), bob 0, carol ¼ (+750)
		{"association", assoc, []int64{2, 3, 1}, map[int64]float64{1: 5017, 2: 6855, 3: 5723}},
		// NO_NORMAL_ASSOC: the priorities themselves, alice +30000, carol +15000
		{"no normal association", assocRaw, []int64{1, 3, 2}, map[int64]float64{1: 33517, 2: 6855, 3: 19973}},
		// the highest of all given: alice ¼ (+750), carol ⅛ (+375)
		{"association, highest given", assocMax, []int64{2, 3, 1}, map[int64]float64{1: 4267, 2: 6855, 3: 5348}},
		// no weights: every priority is 1, oldest first
		{"no weights", MultifactorParams{}, []int64{1, 2, 3}, map[int64]float64{1: 1, 2: 1, 3: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Now: rkAt(60), Pending: jobs, Shares: shares, Ledger: l}
			got, by := rkRank(t, "slurm", tc.params, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, want := range tc.prio {
				if v := by[id].Value; v != want {
					t.Errorf("job %d: priority %v, want %v (parts %v)", id, v, want, by[id].Parts.Map())
				}
			}
		})
	}
}

// TestMultifactor_AssocWithoutAccount: a trace's job names no account;
// it takes its user's association when the user has exactly one.
func TestMultifactor_AssocWithoutAccount(t *testing.T) {
	p := MultifactorParams{WeightAssoc: 100, AssocPriority: map[Assoc]float64{{Account: "phys", User: "alice"}: 4,
		{Account: "phys", User: "bob"}: 2, {Account: "chem", User: "bob"}: 8}}
	s := rkSnap(60, rkJob{id: 1, user: "alice", submit: 10}, rkJob{id: 2, user: "bob", submit: 20}, rkJob{id: 3, acct: "chem", user: "bob", submit: 30})
	_, by := rkRank(t, "slurm", p, s)
	for id, want := range map[int64]float64{1: 0.5, 2: 0, 3: 1} {
		if got := by[id].Parts.Get("assoc"); got != want {
			t.Errorf("job %d: assoc factor %v, want %v", id, got, want)
		}
	}
}

// TestMultifactor_Truncates: Slurm keeps an integer priority, so jobs
// whose weighted sums differ by less than 1 tie and go oldest first.
// Fair share weight 10: carol 3.54 and bob 3.86 both make 3, and carol,
// submitted first, runs first although bob's sum is higher.
func TestMultifactor_Truncates(t *testing.T) {
	shares := &Shares{Accounts: map[string]float64{"phys": 2, "chem": 1}}
	l := rkLedger(t, LedgerParams{HalfLife: -1})
	l.Charge(&Job{ID: 100, Account: "phys", User: "alice", GPUs: 1}, rkAt(0), rkAt(50), Service{})
	l.Charge(&Job{ID: 101, Account: "chem", User: "carol", GPUs: 1}, rkAt(0), rkAt(1000.0/60), Service{})
	s := rkSnap(60, rkJob{id: 4, acct: "chem", user: "carol", submit: 40}, rkJob{id: 5, acct: "phys", user: "bob", submit: 50})
	s.Shares, s.Ledger = shares, l
	got, by := rkRank(t, "slurm", MultifactorParams{WeightFairshare: 10}, s)
	if diff := cmp.Diff([]int64{4, 5}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if f := by[5].Parts.Get("fairshare"); math.Abs(f-math.Exp2(-1.375)) > 1e-9 || by[5].Value != 3 {
		t.Errorf("bob: fairshare %v value %v, want 2^-1.375 and 3", f, by[5].Value)
	}
}

func TestMultifactor_Refuses(t *testing.T) {
	for _, p := range []MultifactorParams{
		{WeightAge: -1},
		{WeightFairshare: math.Inf(1)},
		{MaxAge: -time.Second},
		{WeightJobSize: 1}, // no cluster size
		{PartitionFactor: map[string]float64{"gpu": -1}},
		{QOSPriority: map[string]float64{"high": math.NaN()}},
		{WeightAssoc: math.NaN()},
		{AssocPriority: map[Assoc]float64{{Account: "phys"}: -1}},
		{AssocMax: math.Inf(1)},
		{WeightTRES: map[string]float64{"billing": 1}}, // not a count a Job has
		{WeightTRES: map[string]float64{"gres/gpu": -1}},
		{WeightTRES: map[string]float64{"cpu": math.NaN()}},
		{PartitionTRES: map[string]map[string]float64{"gpu": {"cpu": math.Inf(1)}}},
	} {
		if _, err := NewMultifactor(p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

// TestMultifactor_TRES checks the TRES term: each weight times the job's
// count over its partition's total (the cluster's, "", for a partition
// not listed), a typed GPU weight only for jobs of that type, and with
// NO_NORMAL_TRES the counts themselves. (slurmctl's
// TestSlurmPolicy_MatchesSprio checks it against a real slurmctld.)
func TestMultifactor_TRES(t *testing.T) {
	weights := map[string]float64{"cpu": 1000, "mem": 500, "node": 200, "gres/gpu": 3000, "gres/gpu:h100": 700, "gres/shard": 100}
	totals := map[string]map[string]float64{
		"":      {"cpu": 64, "mem": 256000, "node": 4, "gres/gpu": 16, "gres/gpu:h100": 8, "gres/shard": 64},
		"small": {"cpu": 16, "mem": 64000, "node": 1, "gres/gpu": 4, "gres/gpu:h100": 4, "gres/shard": 16},
	}
	jobs := []Job{
		{ID: 1, Partition: "small", CPUs: 4, MemoryMB: 8000, Nodes: 1, GPUs: 2, GPUType: "H100"},
		{ID: 2, Partition: "big", CPUs: 8, MemoryMB: 32000, Nodes: 2, GPUs: 4, GPUType: "a100"},
		{ID: 3, Partition: "small", CPUs: 1, Shards: 4},
	}
	for i := range jobs {
		jobs[i].State, jobs[i].ArrayTask, jobs[i].Submit = StatePending, -1, rkAt(0)
	}
	for _, tc := range []struct {
		name     string
		noNormal bool
		want     map[int64]float64
	}{
		// 1: 1000·4/16 + 500·8000/64000 + 200·1/1 + 3000·2/4 + 700·2/4 = 250 + 62.5 + 200 + 1500 + 350
		// 2 (big: the cluster's): 1000·8/64 + 500·32000/256000 + 200·2/4 + 3000·4/16, no h100 = 125 + 62.5 + 100 + 750
		// 3: 1000·1/16 + 200·1/1 (at least one node) + 100·4/16 = 62.5 + 200 + 25
		{"normalised", false, map[int64]float64{1: 2362.5, 2: 1037.5, 3: 287.5}},
		// 1: 4000 + 4e6 + 200 + 6000 + 1400; 2: 8000 + 16e6 + 400 + 12000; 3: 1000 + 200 + 400
		{"NO_NORMAL_TRES", true, map[int64]float64{1: 4011600, 2: 16020400, 3: 1600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Now: rkAt(0), Pending: jobs}
			_, by := rkRank(t, "slurm", MultifactorParams{WeightTRES: weights, PartitionTRES: totals, NoNormalTRES: tc.noNormal}, s)
			for id, want := range tc.want {
				if got := by[id].Parts.Get("tres"); math.Abs(got-want) > 1e-9 || by[id].Value != math.Floor(want) {
					t.Errorf("job %d: tres %v value %v, want %v and %v", id, got, by[id].Value, want, math.Floor(want))
				}
			}
		})
	}
}

func TestMultifactor_WhatMovesIt(t *testing.T) {
	pol, err := New("slurm", MultifactorParams{WeightAge: 1000, WeightJobSize: 5, FavorSmall: true, ClusterNodes: 1, ClusterCPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	text := pol.(Explainer).WhatMovesIt(nil)
	if !strings.Contains(text, "its own wait") || !strings.Contains(text, "a smaller request") || strings.Contains(text, "fair-share") {
		t.Errorf("WhatMovesIt = %q: want age and a smaller request, no fair share", text)
	}
	none, _ := New("slurm", nil)
	if text := none.(Explainer).WhatMovesIt(nil); !strings.Contains(text, "oldest first") {
		t.Errorf("no weights: WhatMovesIt = %q", text)
	}
}

// TestMultifactor_FairTree checks Fair Tree's ranks, worked out by hand.
// Shares: phys 2, chem 1; alice, bob in phys, carol in chem (1 each).
// Usage alice 3000, carol 1000 (root 4000):
//
//	LF chem = (1/3)/(1000/4000) = 1.333, LF phys = (2/3)/(3000/4000) = .889: chem first
//	carol: (1/1)/(1000/1000) = 1: rank 3, F = 1
//	bob:   (1/2)/0 = +Inf: rank 2, F = 2/3;  alice: (1/2)/(3000/3000) = .5: rank 1, F = 1/3
//
// With no usage every level ties at +Inf: everyone has rank 3, F = 1,
// and jobs go oldest first.
func TestMultifactor_FairTree(t *testing.T) {
	shares := &Shares{Accounts: map[string]float64{"phys": 2, "chem": 1}}
	used := rkLedger(t, LedgerParams{HalfLife: -1})
	used.Charge(&Job{ID: 100, Account: "phys", User: "alice", GPUs: 1}, rkAt(0), rkAt(50), Service{})
	used.Charge(&Job{ID: 101, Account: "chem", User: "carol", GPUs: 1}, rkAt(0), rkAt(1000.0/60), Service{})
	withDeleted := used.Clone()
	for i, acct := range []string{"gone1", "gone2", "gone3"} {
		withDeleted.Charge(&Job{ID: int64(200 + i), Account: acct, User: "bob", GPUs: 1}, rkAt(0), rkAt(5), Service{})
	}
	jobs := []rkJob{
		{id: 1, acct: "phys", user: "alice", submit: 10},
		{id: 2, acct: "phys", user: "bob", submit: 20},
		{id: 3, acct: "chem", user: "carol", submit: 30},
	}
	for _, tc := range []struct {
		name   string
		ledger *Ledger
		want   []int64
		f      map[int64]float64
	}{
		{"usage", used, []int64{3, 2, 1}, map[int64]float64{1: 1.0 / 3, 2: 2.0 / 3, 3: 1}},
		{"no usage", rkLedger(t, LedgerParams{HalfLife: -1}), []int64{1, 2, 3}, map[int64]float64{1: 1, 2: 1, 3: 1}},
		// History of an account since deleted (not in the share tree):
		// not ranked, so the steps stay 1/3.
		{"usage of a deleted account", withDeleted, []int64{3, 2, 1}, map[int64]float64{1: 1.0 / 3, 2: 2.0 / 3, 3: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rkSnap(60, jobs...)
			s.Shares, s.Ledger = shares, tc.ledger
			got, by := rkRank(t, "slurm", MultifactorParams{WeightFairshare: 3000, FairTree: true}, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for id, f := range tc.f {
				if g := by[id].Parts.Get("fairshare"); math.Abs(g-f) > 1e-12 || by[id].Value != max(1, math.Floor(3000*g)) {
					t.Errorf("job %d: fairshare %v value %v, want %v", id, g, by[id].Value, f)
				}
			}
		})
	}
}

// TestMultifactor_CalcPeriod: with PriorityCalcPeriod, fair share and age
// are those of slurmctld's last recalculation (every 10 minutes from
// minute 0 here). alice (phys, 2 shares) has used 50 GPU-minutes and carol
// (chem, 1) nothing, so at minute 61 carol's job ranks first. carol then
// uses 100 GPU-minutes by minute 65: recomputed at once, alice's job goes
// first (as without the period); held until the recalculation at minute
// 70, carol's stays first, and bob's job submitted at minute 62 has age 0.
// At minute 70 the new usage counts.
func TestMultifactor_CalcPeriod(t *testing.T) {
	shares := &Shares{Accounts: map[string]float64{"phys": 2, "chem": 1}}
	l := rkLedger(t, LedgerParams{HalfLife: -1})
	l.Charge(&Job{ID: 100, Account: "phys", User: "alice", GPUs: 1}, rkAt(0), rkAt(50), Service{})
	jobs := []Job{
		{ID: 1, User: "alice", Account: "phys", Submit: rkAt(0), GPUs: 1, State: StatePending, ArrayTask: -1},
		{ID: 2, User: "carol", Account: "chem", Submit: rkAt(1), GPUs: 1, State: StatePending, ArrayTask: -1},
	}
	site := MultifactorParams{WeightAge: 1000, WeightFairshare: 10000, MaxAge: 2 * time.Hour}
	held := site
	held.CalcPeriod, held.CalcEpoch = 10*time.Minute, rkAt(0)
	pol, err := New("slurm", held)
	if err != nil {
		t.Fatal(err)
	}
	rank := func(at float64, pending []Job) ([]int64, map[int64]Score) {
		t.Helper()
		scores, err := pol.Rank(&Snapshot{Now: rkAt(at), Pending: pending, Shares: shares, Ledger: l})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		by := map[int64]Score{}
		for _, sc := range scores {
			ids = append(ids, sc.JobID)
			by[sc.JobID] = sc
		}
		return ids, by
	}
	if got, _ := rank(61, jobs); !slices.Equal(got, []int64{2, 1}) {
		t.Fatalf("minute 61: order %v, want carol's 2 first", got)
	}
	l.Charge(&Job{ID: 101, Account: "chem", User: "carol", GPUs: 1}, rkAt(0), rkAt(100), Service{})
	withBob := append(slices.Clone(jobs), Job{ID: 3, User: "bob", Account: "phys", Submit: rkAt(62), GPUs: 1, State: StatePending, ArrayTask: -1})
	if got, _ := rkRank(t, "slurm", site, &Snapshot{Now: rkAt(65), Pending: jobs, Shares: shares, Ledger: l}); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("minute 65, recomputed: order %v, want alice's 1 first (else the test shows nothing)", got)
	}
	got, by := rank(65, withBob)
	if slices.Index(got, 2) > slices.Index(got, 1) {
		t.Errorf("minute 65, held since minute 60: order %v, want carol's 2 before alice's 1", got)
	}
	if a := by[1].Parts.Get("age"); !rkClose(a, 60.0/120) {
		t.Errorf("minute 65: alice's age factor %v, want its age at minute 60, 0.5", a)
	}
	if a := by[3].Parts.Get("age"); a != 0 {
		t.Errorf("minute 65: bob's job, submitted at 62, age factor %v, want 0", a)
	}
	if got, _ := rank(70, jobs); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("minute 70, recalculated: order %v, want alice's 1 first", got)
	}
	if _, err := NewMultifactor(MultifactorParams{CalcPeriod: -time.Second}); err == nil {
		t.Errorf("a negative PriorityCalcPeriod: no error")
	}
}
