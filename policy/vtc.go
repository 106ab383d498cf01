package policy

import (
	"fmt"
	"math"
)

// VTCParams configures vtc. The zero value gives the defaults.
type VTCParams struct {
	// IgnoreRunning leaves the predicted service running jobs have yet to
	// receive out of the counters, which then hold only service received.
	// false (the default) counts it; see vtc.
	IgnoreRunning bool
}

// vtc is the Virtual Token Counter (Sheng et al., "Fairness in Serving
// Large Language Models", OSDI'24, §4, the VTC algorithm, and its
// weighted variant): every client has a counter of the service it received,
// divided by its weight; the backlogged client with the smallest counter is
// served next and charged for what it gets; a client that becomes
// backlogged has its counter lifted to the smallest counter among the
// backlogged clients, so it cannot bank credit while idle. The VTC bound
// (two backlogged clients' weighted service differs by at most twice the
// cost of one request) follows from always serving the least-served one.
//
// Adaptation to Slurm, where service is GPU time and Fairway re-ranks the
// whole pending queue each cycle instead of picking one request:
//
//   - Clients are associations; service is GPU-seconds (Snapshot.Service),
//     charged as jobs run and lifted on backlog by the Ledger; weights are
//     raw shares. It is hierarchical where the share tree is: accounts
//     share the cluster by account counters, users share their account by
//     user counters (one account, or a nil tree, is plain per-user VTC).
//   - A ranking is VTC's dispatch order played forward: each job gets the
//     counter its user (then its account) would have when VTC picked it,
//     charging every earlier pick its predicted service — a start tag, as
//     in start-time fair queuing. Within a user, vtc keeps VTC's FIFO.
//     The job with the smallest account tag ranks first.
//   - VTC charges a request's prompt when it is dispatched; a batch job
//     holds its GPUs for hours, so a counter charged only as time passes
//     would let a user start many long jobs before the counter catches up.
//     Unless IgnoreRunning, the service the user's running jobs are
//     predicted to use and the Ledger has not charged yet is added to the
//     counter ("committed"); the Ledger trues it up as the jobs really run,
//     so counter + committed does not depend on how often they are charged.
//   - Zero-share associations or accounts rank after everyone else, FIFO
//     among themselves.
//
// Value = −account tag. Parts: vtc_tag, user_counter (the weighted user
// counter, committed service included), predicted_gpu_s, zero_share.
type vtc struct {
	ignoreRunning bool
	sc            scorer
	memo          vtcMemo
}

// vtcMemo keeps the orders of computeVTC's last sorts: the jobs within
// each association (orders, under groups' lock; within when that cannot
// serve), and the jobs of each account by user tag; and the association
// of the job in each queue slot.
type vtcMemo struct {
	within, acct segMemo
	// acctOne is acct for a queue whose jobs are all of one account and
	// tagged: one segment in slot order, which a rankMemo sorts with
	// fewer passes.
	acctOne rankMemo
	groups  groupMemo
	orders  withinMemo
}

// NewVTC returns the "vtc" policy.
func NewVTC(p VTCParams) (Policy, error) {
	return &vtc{ignoreRunning: p.IgnoreRunning, sc: scorer{
		names:   []string{"vtc_tag", "user_counter", "predicted_gpu_s", "zero_share"},
		weights: []float64{-1, 0, 0, 0},
	}}, nil
}

func (*vtc) Name() string { return "vtc" }

func (p *vtc) Rank(s *Snapshot) ([]Score, error) {
	var x rankIndex
	if !p.ignoreRunning {
		x.running = indexRunning(s)
	}
	return p.rankIndexed(s, &x)
}

func (*vtc) readsShares() bool { return false }

func (p *vtc) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	buf := getRankScratch()
	defer buf.put()
	n := len(s.Pending)
	buf.cost, buf.sub, buf.wait = resize(buf.cost, n), resize(buf.sub, n), resize(buf.wait, n)
	cost, sub, fifo := buf.cost, buf.sub, buf.wait // every entry is written below
	for i := range s.Pending {
		cost[i] = predictedService(s, i)
		sub[i] = unixNanoOrMin(s.Pending[i].Submit)
		// VTC serves a user's requests first come, first served.
		fifo[i] = float64(sub[i])
	}
	t := computeVTC(s, cost, sub, fifo, committedOf(x, p.ignoreRunning), buf, &p.memo)
	const k = 4
	parts := s.partsBuf(k * len(s.Pending))
	for i := range s.Pending {
		x := t.g.of[i]
		row := parts[k*i : k*i+k]
		row[0], row[1], row[2] = t.tag[i], t.userC[x], cost[i]
		if t.zero[x] {
			row[3] = 1
		}
	}
	scores, err := p.sc.rankHinted(s, parts, sub, buf, t.hint)
	if err != nil {
		return nil, fmt.Errorf("vtc: %w", err)
	}
	return scores, nil
}

// vtcTags is VTC's dispatch order over the pending jobs, as start tags.
type vtcTags struct {
	g       *assocGroups
	tag     []float64 // per pending job: account start tag (ranking key, ascending)
	userTag []float64 // per pending job: user start tag within its account
	userC   []float64 // per group: weighted user counter, committed service included
	acctC   []float64 // per account: weighted account counter, committed service included
	zero    []bool    // per group: zero shares (user or account)
	// hint is the pending jobs in ascending tag, nil when the jobs of
	// several accounts have tags (each account's are ascending, not
	// their concatenation): what the ranking sorts from.
	hint []int32
}

// computeVTC plays VTC forward over the pending jobs: within each
// association in ascending order of within (ties: older, then lower id),
// then across the users of an account by user tag, then across accounts by
// account tag. cost is each pending job's predicted service and sub its
// submit time as compareRank sees it (unixNanoOrMin). With running, the
// index of s's running jobs, their predicted service not yet charged
// counts as received; nil leaves it out.
//
// The tags and groups live in buf, which the caller must not put back in
// the pool while it uses them.
//
// memo, when not nil, is where the policy keeps the orders of its last
// call, which the sorts start from (see segMemo).
func computeVTC(s *Snapshot, cost []float64, sub []int64, within []float64, running *runningIndex, buf *rankScratch,
	memo *vtcMemo) *vtcTags {
	g := &buf.g
	sorted := false // g.members in the within order
	locked := memo != nil && memo.groups.mu.TryLock()
	if locked {
		g.resetWith(s.Pending, &memo.groups)
		sorted = memo.orders.membersWithin(g, &memo.groups, s.Pending, within, sub)
	} else {
		g.reset(s.Pending)
	}
	n, ng, na := len(s.Pending), len(g.keys), len(g.accounts)
	// tag is written for every job below, userTag for every job it is
	// read for; the per-group and per-account slices are read whole.
	t := &buf.t
	*t = vtcTags{
		g:       g,
		tag:     resize(t.tag, n),
		userTag: resize(t.userTag, n),
		userC:   zeroed(t.userC, ng),
		acctC:   zeroed(t.acctC, na),
		zero:    zeroed(t.zero, ng),
	}
	buf.commU, buf.commA = zeroed(buf.commU, ng), zeroed(buf.commA, na)
	commU, commA := buf.commU, buf.commA
	// Each group's committed service and user counter: through the memo's
	// cells when it grouped the queue, else looked up by association.
	buf.ctrU = zeroed(buf.ctrU, ng)
	ctrU := buf.ctrU
	if locked {
		memo.groups.userCells(g, running, s.Ledger, commU, ctrU)
		memo.groups.mu.Unlock()
	} else {
		for x, key := range g.keys {
			if running != nil {
				commU[x] = running.committedUser(key)
			}
			ctrU[x] = s.Ledger.Counter(key)
		}
	}
	if running != nil {
		for a, name := range g.accounts {
			commA[a] = running.committedAccount(name)
		}
	}

	buf.acctW = resize(buf.acctW, na) // every entry is written below
	acctW := buf.acctW
	for a, name := range g.accounts {
		acctW[a] = s.Shares.Account(name)
		if acctW[a] > 0 {
			t.acctC[a] = (s.Ledger.AccountCounter(name) + commA[a]) / acctW[a]
		}
	}

	// Every user's jobs in the within order (sortRank orders by
	// descending value, then submit, then id): each group sorted on its
	// own, n·log(jobs per user) rather than n·log n.
	// Every entry of ents a sort reads is written first.
	buf.ents = resize(buf.ents, n)
	ents := buf.ents
	// The radix sort's second buffer, needed only for 512 jobs or more.
	var scratchAll []rankEntry
	if n >= 512 {
		buf.radix = resize(buf.radix, n)
		scratchAll = buf.radix
	}
	var withinMemo, acctMemo *segMemo
	if memo != nil {
		withinMemo, acctMemo = &memo.within, &memo.acct
	}
	sortSegments := func(m *segMemo, ents []rankEntry, bounds []int32) {
		if m != nil {
			m.sortSegments(ents, bounds, n, scratchAll)
			return
		}
		for a := 0; a+1 < len(bounds); a++ {
			if lo, hi := bounds[a], bounds[a+1]; hi-lo > 1 {
				var scratch []rankEntry
				if scratchAll != nil {
					scratch = scratchAll[lo:hi]
				}
				sortRank(ents[lo:hi], scratch)
			}
		}
	}
	if !sorted {
		for k, i := range g.members {
			ents[k] = rankEntry{value: -within[i], submit: sub[i], id: s.Pending[i].ID, i: i}
		}
		sortSegments(withinMemo, ents, g.start)
		for k := range ents {
			g.members[k] = ents[k].i
		}
	}

	// User tags: each user's jobs charged in turn to the user's counter.
	for x, key := range g.keys {
		w := s.Shares.User(key)
		if w <= 0 || acctW[g.acct[x]] <= 0 {
			t.zero[x] = true
			continue
		}
		t.userC[x] = (ctrU[x] + commU[x]) / w
		c := t.userC[x]
		for _, m := range g.group(x) {
			t.userTag[m] = c
			c += cost[m] / w
		}
	}

	// Account tags: VTC among the users of an account serves the smallest
	// user tag next, so the account's jobs in ascending user tag (then
	// older, then lower id) are charged in turn to the account's counter.
	// Each account's jobs are sorted on their own.
	buf.perAcct = zeroed(buf.perAcct, na+1)
	perAcct := buf.perAcct
	for i := range n {
		if x := g.of[i]; !t.zero[x] {
			perAcct[g.acct[x]+1]++
		}
	}
	for a := range na {
		perAcct[a+1] += perAcct[a]
	}
	buf.fillA = append(buf.fillA[:0], perAcct[:na]...)
	fillA := buf.fillA
	for i := range n {
		if x := g.of[i]; !t.zero[x] {
			a := g.acct[x]
			ents[fillA[a]] = rankEntry{value: -t.userTag[i], submit: sub[i], id: s.Pending[i].ID, i: int32(i)}
			fillA[a]++
		}
	}
	buf.order = resize(buf.order, int(perAcct[na])) // every entry is written below
	order := buf.order
	if memo != nil && na == 1 && int(perAcct[na]) == n {
		memo.acctOne.sortFrom(ents[:n], scratchAll)
	} else {
		sortSegments(acctMemo, ents[:perAcct[na]], perAcct)
	}
	for k, e := range ents[:perAcct[na]] {
		order[k] = e.i
	}
	maxTag := math.Inf(-1)
	for a := range na {
		c := t.acctC[a]
		for _, m := range order[perAcct[a]:perAcct[a+1]] {
			t.tag[m] = c
			c += cost[m] / acctW[a]
		}
		maxTag = max(maxTag, c)
	}
	// Zero-share jobs after every other job, tied among themselves.
	if math.IsInf(maxTag, -1) {
		maxTag = 0
	}
	for x := range g.keys {
		if t.zero[x] {
			for _, m := range g.group(x) {
				t.tag[m] = maxTag + 1
			}
		}
	}
	tagged := 0
	for a := range na {
		if perAcct[a+1] > perAcct[a] {
			tagged++
		}
	}
	if tagged <= 1 {
		buf.hint = append(buf.hint[:0], order...)
		for x := range g.keys {
			if t.zero[x] {
				buf.hint = append(buf.hint, g.group(x)...)
			}
		}
		t.hint = buf.hint
	}
	return t
}

// committedOf is the running index computeVTC reads: x's, or nil when the
// policy ignores running jobs.
func committedOf(x *rankIndex, ignoreRunning bool) *runningIndex {
	if ignoreRunning {
		return nil
	}
	return x.running
}

// committed is what a running job is predicted to use and the Ledger has
// not charged yet, from its rate and predicted run time in seconds, at
// least 0: counter + committed does not depend on how recently the cycle
// owner charged running jobs. The conversion keeps the product rounded on
// its own, so that sums of it do not depend on what the compiler fuses.
func committed(rate, runSec, attained float64) float64 {
	return max(0, float64(rate*runSec)-attained)
}
