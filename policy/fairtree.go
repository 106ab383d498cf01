package policy

import (
	"cmp"
	"math"
	"slices"
)

// fairTreeFactors returns the Fair Tree fair-share factor (Slurm's default
// since 19.05; documentation, "Fair Tree Fairshare Algorithm") of every
// user association the snapshot knows (its share tree, its Ledger, its
// jobs), for a tree of two levels, accounts under the root and users
// under their account:
//
//	LF(x) = S(x)/U(x)   S: x's shares over its siblings' sum; U: x's usage
//	                     over its parent's (0 when the parent has none);
//	                     +Inf when U = 0 < S, 0 when S = 0
//
// Accounts are visited in descending LF, accounts of equal LF as one
// (their users pooled); within each, users in descending LF. The k-th user
// visited has rank N − k + 1 (N: the user associations), users of equal LF
// one after the other share the first one's rank, and the factor is
// rank/N: the most under-served user gets 1, whatever the magnitude of
// the differences. Users the Ledger alone knows, of an account the share
// tree lacks (deleted since), are not ranked.
func fairTreeFactors(s *Snapshot, pending []Assoc) map[Assoc]float64 {
	userSet := map[Assoc]struct{}{}
	if s.Shares != nil {
		for a := range s.Shares.Users {
			userSet[a] = struct{}{}
		}
	}
	// Usage of an account the share tree lacks is history of an
	// association since deleted: Slurm's tree no longer ranks it, and
	// counting it would shrink every rank step (1/N).
	inTree := func(account string) bool {
		if s.Shares == nil || len(s.Shares.Accounts) == 0 {
			return true
		}
		_, ok := s.Shares.Accounts[account]
		return ok
	}
	if s.Ledger != nil {
		for a := range s.Ledger.assocs {
			if inTree(a.Account) {
				userSet[a] = struct{}{}
			}
		}
	}
	for _, a := range pending {
		userSet[a] = struct{}{}
	}
	for i := range s.Running {
		userSet[AssocOf(&s.Running[i])] = struct{}{}
	}
	byAccount := map[string][]Assoc{}
	for a := range userSet {
		byAccount[a.Account] = append(byAccount[a.Account], a)
	}
	if s.Shares != nil {
		for name := range s.Shares.Accounts {
			if _, ok := byAccount[name]; !ok {
				byAccount[name] = nil // an account with no users: it only shares the root
			}
		}
	}
	level := func(shares, sum, usage, parentUsage float64) float64 {
		switch {
		case shares <= 0 || sum <= 0:
			return 0
		case parentUsage <= 0 || usage <= 0:
			return math.Inf(1)
		}
		return (shares / sum) / (usage / parentUsage)
	}
	type node struct {
		name string
		lf   float64
	}
	accounts := make([]node, 0, len(byAccount))
	sumAccounts := 0.0
	for name := range byAccount {
		sumAccounts += s.Shares.Account(name)
	}
	total := s.Ledger.TotalUsage(s.Now)
	for name := range byAccount {
		accounts = append(accounts, node{name, level(s.Shares.Account(name), sumAccounts, s.Ledger.AccountUsage(name, s.Now), total)})
	}
	slices.SortFunc(accounts, func(a, b node) int {
		return cmp.Or(cmp.Compare(b.lf, a.lf), cmp.Compare(a.name, b.name))
	})
	n := float64(len(userSet))
	out := make(map[Assoc]float64, len(userSet))
	rank, next := n, n
	type user struct {
		a  Assoc
		lf float64
	}
	for i := 0; i < len(accounts); {
		// Accounts of equal LF pool their users.
		k := i
		var users []user
		for ; k < len(accounts) && accounts[k].lf == accounts[i].lf; k++ {
			name := accounts[k].name
			sum, acctUsage := 0.0, s.Ledger.AccountUsage(name, s.Now)
			for _, a := range byAccount[name] {
				sum += s.Shares.User(a)
			}
			for _, a := range byAccount[name] {
				users = append(users, user{a, level(s.Shares.User(a), sum, s.Ledger.Usage(a, s.Now), acctUsage)})
			}
		}
		i = k
		slices.SortFunc(users, func(a, b user) int { return cmp.Or(cmp.Compare(b.lf, a.lf), compareAssoc(a.a, b.a)) })
		for x, u := range users {
			if x == 0 || u.lf != users[x-1].lf {
				rank = next
			}
			out[u.a] = rank / n
			next--
		}
	}
	return out
}
