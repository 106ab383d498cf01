package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// FairshareParams configures fairshare. The zero value gives the defaults.
// The usage half-life is the Ledger's (LedgerParams.HalfLife).
type FairshareParams struct {
	// FairshareWeight weighs the fair-share factor (PriorityWeightFairshare).
	// 0 means 1.
	FairshareWeight float64
	// AgeWeight weighs the age factor (PriorityWeightAge), relative to
	// FairshareWeight. 0 (the default) ranks on fair share alone, with
	// ties to the older job; sites often add age, e.g. 0.1.
	AgeWeight float64
	// MaxAge is the age at which the age factor reaches 1 (PriorityMaxAge).
	// 0 means Slurm's default, 7 days.
	MaxAge time.Duration
	// Dampening is FairShareDampeningFactor. 0 means Slurm's default, 1.
	Dampening float64
}

// fairshare is Slurm's classic fair-share factor (Slurm documentation,
// "Classic Fairshare Algorithm"; priority/multifactor with
// PriorityFlags=NO_FAIR_TREE), on GPU-time: the baseline admins already
// know. For the association u of a job in account a:
//
//	S_a  = shares(a)/Σ shares(accounts)          S_u = shares(u)/Σ shares(users of a) · S_a
//	UA_x = usage(x)/usage(root)                   (decayed, capped at 1)
//	UE_a = UA_a + (1 − UA_a)·shares(a)/Σ shares(accounts)      (UE_root = 1)
//	UE_u = UA_u + (UE_a − UA_u)·shares(u)/Σ shares(users of a)
//	F    = 2^(−(UE_u/S_u)/Dampening), and 0 when S_u = 0
//
// Value = FairshareWeight·F + AgeWeight·min(1, age/MaxAge), age counted
// from eligibility; ties go to the older job, as in Slurm. Parts:
// fairshare (F), age, usage_effective (UE_u), shares_norm (S_u).
//
// Adaptation: usage is GPU-seconds (Snapshot.Service) instead of Slurm's
// TRES-billing CPU-seconds, decayed by the Ledger with Slurm's half-life
// rule but exactly over time instead of once per PriorityCalcPeriod. The
// tree has two levels (accounts, users). The siblings whose shares are
// summed are the associations named in Snapshot.Shares plus those the
// Ledger or the snapshot's jobs mention (Slurm sums every association in
// its database).
type fairshare struct {
	maxAge float64
	damp   float64
	sc     scorer
}

// NewFairshare returns the "fairshare" policy.
func NewFairshare(p FairshareParams) (Policy, error) {
	if p.FairshareWeight < 0 || p.AgeWeight < 0 || p.MaxAge < 0 || p.Dampening < 0 {
		return nil, fmt.Errorf("fairshare: weights, max age and dampening must be >= 0: %+v", p)
	}
	if p.FairshareWeight == 0 {
		p.FairshareWeight = 1
	}
	if p.MaxAge == 0 {
		p.MaxAge = 7 * 24 * time.Hour
	}
	if p.Dampening == 0 {
		p.Dampening = 1
	}
	return &fairshare{maxAge: p.MaxAge.Seconds(), damp: p.Dampening, sc: scorer{
		names:   []string{"fairshare", "age", "usage_effective", "shares_norm"},
		weights: []float64{p.FairshareWeight, p.AgeWeight, 0, 0},
	}}, nil
}

func (*fairshare) Name() string { return "fairshare" }

// fsFactor is one association's fair-share state.
type fsFactor struct{ f, ue, sNorm float64 }

func (p *fairshare) Rank(s *Snapshot) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	return p.rank(s, g, shareSums(s, g.keys))
}

func (*fairshare) readsShares() bool { return true }

func (p *fairshare) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	g, done := pooledGroups(s.Pending)
	defer done()
	return p.rank(s, g, x.shares)
}

// rank ranks s, whose pending jobs g groups and whose sums of shares are
// sums.
func (p *fairshare) rank(s *Snapshot, g *assocGroups, sums shareTotals) ([]Score, error) {
	factors := fairshareFactors(s, g, sums, p.damp)
	const k = 4
	parts := s.partsBuf(k * len(s.Pending))
	for i := range s.Pending {
		j := &s.Pending[i]
		ff := factors[g.of[i]]
		age := 0.0
		if p.maxAge > 0 {
			age = min(1, max(0, s.Now.Sub(waitingSince(j)).Seconds()/p.maxAge))
		}
		row := parts[k*i : k*i+k]
		row[0], row[1], row[2], row[3] = ff.f, age, ff.ue, ff.sNorm
	}
	var scores []Score
	var err error
	if p.sc.weights[1] == 0 {
		// Without age a job's Value is its association's factor.
		scores, err = p.sc.rankByGroup(s, parts, g)
	} else {
		scores, err = p.sc.rank(s, parts, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("fairshare: %w", err)
	}
	return scores, nil
}

// fairshareFactors computes the classic fair-share factor of every group
// (association) of g, s's pending jobs, from s's sums of shares.
func fairshareFactors(s *Snapshot, g *assocGroups, sums shareTotals, damp float64) []fsFactor {
	accounts, sumAccounts := sums.accounts, sums.sum

	total := s.Ledger.TotalUsage(s.Now)
	norm := func(u float64) float64 {
		if total <= 0 {
			return 0
		}
		return min(1, u/total)
	}
	out := make([]fsFactor, len(g.keys))
	for x, a := range g.keys {
		sa, su := s.Shares.Account(a.Account), s.Shares.User(a)
		sumUsers := accounts[a.Account]

		uaAcct := norm(s.Ledger.AccountUsage(a.Account, s.Now))
		ueAcct := 1.0 // the root's effective usage
		sNormAcct := 0.0
		if sumAccounts > 0 {
			ueAcct = uaAcct + (1-uaAcct)*sa/sumAccounts
			sNormAcct = sa / sumAccounts
		}
		ua := norm(s.Ledger.Usage(a, s.Now))
		ue := ueAcct
		sNorm := 0.0
		if sumUsers > 0 {
			ue = ua + (ueAcct-ua)*su/sumUsers
			sNorm = su / sumUsers * sNormAcct
		}
		f := 0.0
		if sNorm > 0 {
			f = math.Exp2(-(ue / sNorm) / damp)
		}
		out[x] = fsFactor{f: f, ue: ue, sNorm: sNorm}
	}
	return out
}

// shareTotals are the sums of shares fair share divides among: for every
// account the tree, the Ledger or the snapshot knows, the sum of its users'
// shares (accounts, read-only), and the sum of those accounts' shares.
type shareTotals struct {
	accounts map[string]float64
	sum      float64
}

// shareSums returns s's shareTotals; pending lists the associations of its
// pending jobs, each once.
func shareSums(s *Snapshot, pending []Assoc) shareTotals {
	if !s.Shares.whole() {
		return shareSumsSorted(s, pending)
	}
	// Whole shares add up exactly in any order, so the sums need no
	// sorting: one pass over the ledger, the tree and the jobs.
	accounts := map[string]float64{} // account -> Σ shares of its users
	var extra map[Assoc]struct{}
	inLedger := func(a Assoc) bool {
		if s.Ledger == nil {
			return false
		}
		_, ok := s.Ledger.assocs[a]
		return ok
	}
	addAccount := func(name string) {
		if _, ok := accounts[name]; !ok {
			accounts[name] = 0
		}
	}
	if s.Ledger != nil {
		for a := range s.Ledger.assocs {
			accounts[a.Account] += s.Shares.User(a)
		}
		for name := range s.Ledger.accounts {
			addAccount(name)
		}
	}
	if s.Shares != nil {
		for a := range s.Shares.Users {
			if !inLedger(a) {
				accounts[a.Account] += s.Shares.User(a)
			}
		}
		for name := range s.Shares.Accounts {
			addAccount(name)
		}
	}
	addJob := func(a Assoc) {
		if inLedger(a) {
			return
		}
		if s.Shares != nil {
			if _, ok := s.Shares.Users[a]; ok {
				return
			}
		}
		if _, ok := extra[a]; ok {
			return
		}
		if extra == nil {
			extra = map[Assoc]struct{}{}
		}
		extra[a] = struct{}{}
		accounts[a.Account] += s.Shares.User(a)
	}
	for _, a := range pending {
		addJob(a)
	}
	for i := range s.Running {
		addJob(AssocOf(&s.Running[i]))
	}
	sumAccounts := 0.0
	for name := range accounts {
		sumAccounts += s.Shares.Account(name)
	}
	return shareTotals{accounts: accounts, sum: sumAccounts}
}

// shareSumsSorted is shareSums for fractional shares: it sums in sorted
// order so that the result does not depend on map iteration.
func shareSumsSorted(s *Snapshot, pending []Assoc) shareTotals {
	accountSet := map[string]struct{}{}
	userSet := map[Assoc]struct{}{}
	if s.Shares != nil {
		for name := range s.Shares.Accounts {
			accountSet[name] = struct{}{}
		}
		for a := range s.Shares.Users {
			userSet[a] = struct{}{}
		}
	}
	if s.Ledger != nil {
		for name := range s.Ledger.accounts {
			accountSet[name] = struct{}{}
		}
		for a := range s.Ledger.assocs {
			userSet[a] = struct{}{}
		}
	}
	for _, a := range pending {
		userSet[a] = struct{}{}
	}
	for i := range s.Running {
		userSet[AssocOf(&s.Running[i])] = struct{}{}
	}
	users := make([]Assoc, 0, len(userSet))
	for a := range userSet {
		users = append(users, a)
		accountSet[a.Account] = struct{}{}
	}
	slices.SortFunc(users, compareAssoc)
	accounts := make(map[string]float64, len(accountSet)) // account -> Σ shares of its users
	for _, a := range users {
		accounts[a.Account] += s.Shares.User(a)
	}
	names := make([]string, 0, len(accountSet))
	for name := range accountSet {
		names = append(names, name)
	}
	slices.Sort(names)
	sumAccounts := 0.0
	for _, name := range names {
		sumAccounts += s.Shares.Account(name)
	}
	return shareTotals{accounts: accounts, sum: sumAccounts}
}

// shareSumCache is what an Engine keeps of shareSums from cycle to cycle.
// The sums of the Engine's Snapshot depend only on the associations and
// accounts the Ledger, the share tree and the jobs name: the Engine's
// Backlog puts every pending job's association in the Ledger, and a running
// job's association adds to the sums only when neither the Ledger nor the
// tree knows it. So they change only when the Ledger meets a new
// association or account (Ledger.keys counts them) or the set of those
// unknown running associations changes (runningIndex.unknownGen), and are
// recomputed only then rather than at every cycle.
type shareSumCache struct {
	ledger     *Ledger
	keys       uint64
	shares     *Shares
	unknownGen uint64
	set        bool
	sums       shareTotals
}

// of returns the sums of s, a Snapshot of the Engine whose Ledger, tree
// and runningIndex x are s's.
func (c *shareSumCache) of(s *Snapshot, x *runningIndex) shareTotals {
	if !c.set || c.ledger != s.Ledger || c.keys != s.Ledger.keys || c.shares != s.Shares || c.unknownGen != x.unknownGen {
		c.sums = shareSums(s, nil) // pending jobs: in the Ledger, see above
		c.ledger, c.keys, c.shares, c.unknownGen, c.set = s.Ledger, s.Ledger.keys, s.Shares, x.unknownGen, true
	}
	return c.sums
}
