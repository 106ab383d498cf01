package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// UnknownRun is the run time assumed for a job that has neither a
// prediction nor a time limit: long, so that a job nobody can size never
// passes for a short one.
const UnknownRun = 7 * 24 * time.Hour

// ErrBadScore is returned by Rank when a policy's parts combine into NaN
// (which no ordering can place), naming the job.
var ErrBadScore = errors.New("score is not a number")

// predictedRun is the run time a policy assumes for j: the prediction in
// the snapshot, else the job's time limit, else UnknownRun.
func predictedRun(s *Snapshot, j *Job) time.Duration {
	d, ok := s.Predicted[j.ID]
	return predictedRunOf(j, d, ok)
}

// predictedAt is predictedRun of s.Pending[i], read from the Engine's
// cache entry of the job when s has it (the same entry as Predicted's,
// without hashing the id: policies look up every pending job at every
// cycle).
func predictedAt(s *Snapshot, i int) time.Duration {
	j := &s.Pending[i]
	if i < len(s.pendPred) && s.predOf.cycle == s.predCycle {
		if c := s.pendPred[i]; c != nil && c.id == j.ID && !c.gone {
			return predictedRunOf(j, c.run, c.has)
		}
	}
	return predictedRun(s, j)
}

// predictedRunOf is predictedRun for a prediction d already looked up (ok
// when there is one).
func predictedRunOf(j *Job, d time.Duration, ok bool) time.Duration {
	return predictedRunLimit(j.TimeLimit, d, ok)
}

// predictedRunLimit is predictedRunOf for a job of time limit limit.
func predictedRunLimit(limit, d time.Duration, ok bool) time.Duration {
	if ok {
		return max(d, 0)
	}
	if limit > 0 {
		return limit
	}
	return UnknownRun
}

// predictedService is the predicted service of s.Pending[i] in
// GPU-seconds: its rate times its predicted run time (Helios' "GPU time"),
// read as predictedAt does.
func predictedService(s *Snapshot, i int) float64 {
	return s.Service.Rate(&s.Pending[i]) * predictedAt(s, i).Seconds()
}

// waitingSince is when the job became able to run: its eligible time when
// known, else its submit time. Slurm's age factor counts from the same.
func waitingSince(j *Job) time.Time {
	if !j.Eligible.IsZero() {
		return j.Eligible
	}
	return j.Submit
}

// scorer names the parts of one policy's score and weighs them. Its value
// method is the only place in the package where parts are combined into a
// Score's Value:
//
//	Value = Σ weight[k] · part[k]
//
// Parts with weight 0 explain the score without moving it.
type scorer struct {
	names   []string
	weights []float64
	memo    rankMemo // the last order rankWith gave
}

func (sc *scorer) value(parts []float64) float64 {
	v := 0.0
	for k, w := range sc.weights {
		if w != 0 {
			v += w * parts[k]
		}
	}
	return v
}

// single is the one part with a weight that is not 0 and its weight, or
// -1 when several parts or none have one.
func (sc *scorer) single() (int, float64) {
	one := -1
	for k, w := range sc.weights {
		if w != 0 {
			if one >= 0 {
				return -1, 0
			}
			one = k
		}
	}
	if one < 0 {
		return -1, 0
	}
	return one, sc.weights[one]
}

// rankEntry is one pending job while it is being ordered.
type rankEntry struct {
	value  float64
	submit int64 // Unix nanoseconds, math.MinInt64 when unknown
	id     int64
	i      int32 // index in Snapshot.Pending
}

// compareRank orders entries best first: higher value, then earlier submit
// time, then lower job id (the tie-break Slurm itself applies after
// priority, so equal values keep the same order in Slurm).
func compareRank(a, b rankEntry) int {
	switch {
	case a.value > b.value:
		return -1
	case a.value < b.value:
		return 1
	case a.submit < b.submit:
		return -1
	case a.submit > b.submit:
		return 1
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// sortRank sorts entries by compareRank. Large rankings are first radix
// sorted on the value alone (no comparisons: a cycle of 100,000 jobs
// sorts several times faster), then each run of equal values is sorted by
// the tie-break. scratch, if at least as long as entries, is used as the
// radix sort's second buffer.
func sortRank(entries, scratch []rankEntry) {
	if len(entries) < 512 {
		sortSmall(entries)
		return
	}
	// valueKey orders uint64s as compareRank orders values: descending.
	valueKey := func(v float64) uint64 {
		b := math.Float64bits(v)
		if b>>63 != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		return ^b
	}
	const bits, buckets = 11, 1 << 11
	if len(scratch) < len(entries) {
		scratch = make([]rankEntry, len(entries))
	}
	src, dst := entries, scratch[:len(entries)]
	var count [buckets]int
	for shift := 0; shift < 64; shift += bits {
		clear(count[:])
		for _, e := range src {
			count[valueKey(e.value)>>shift&(buckets-1)]++
		}
		if slices.Contains(count[:], len(src)) {
			continue // every key has the same digit here
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, e := range src {
			d := valueKey(e.value) >> shift & (buckets - 1)
			dst[count[d]] = e
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &entries[0] {
		copy(entries, src)
	}
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].value == entries[i].value {
			j++
		}
		if j-i > 1 {
			sortSmall(entries[i:j])
		}
		i = j
	}
}

// sortSmall sorts entries by compareRank: a quicksort written for
// rankEntry, so that compareRank is inlined (the simulator sorts short
// queues millions of times, where slices.SortFunc's indirect calls cost a
// sixth of the run). compareRank is a total order on distinct ids, so any
// correct sort gives the same result; the depth limit hands pathological
// inputs to slices.SortFunc.
func sortSmall(entries []rankEntry) {
	quickRank(entries, 2*bits.Len(uint(len(entries))))
}

func quickRank(e []rankEntry, depth int) {
	for len(e) > 12 {
		if depth == 0 {
			slices.SortFunc(e, compareRank)
			return
		}
		depth--
		// Median of three to e[0], then partition around it.
		m, l := len(e)/2, len(e)-1
		if compareRank(e[m], e[0]) < 0 {
			e[m], e[0] = e[0], e[m]
		}
		if compareRank(e[l], e[m]) < 0 {
			e[l], e[m] = e[m], e[l]
			if compareRank(e[m], e[0]) < 0 {
				e[m], e[0] = e[0], e[m]
			}
		}
		e[0], e[m] = e[m], e[0]
		p := e[0]
		i, j := 1, l
		for {
			for i <= j && compareRank(e[i], p) < 0 {
				i++
			}
			for i <= j && compareRank(p, e[j]) < 0 {
				j--
			}
			if i >= j {
				break
			}
			e[i], e[j] = e[j], e[i]
			i++
			j--
		}
		e[0], e[j] = e[j], e[0]
		// Recurse into the smaller side, loop on the larger.
		if j < len(e)-1-j {
			quickRank(e[:j], depth)
			e = e[j+1:]
		} else {
			quickRank(e[j+1:], depth)
			e = e[:j]
		}
	}
	for i := 1; i < len(e); i++ {
		for k := i; k > 0 && compareRank(e[k], e[k-1]) < 0; k-- {
			e[k], e[k-1] = e[k-1], e[k]
		}
	}
}

func unixNanoOrMin(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// rank is where every policy's Rank ends: parts holds one row of
// len(sc.names) parts per pending job, in Snapshot.Pending order. It
// combines each row into a Value, orders the jobs best first with the
// documented tie-break and builds the Scores. The Scores' Parts are views
// of parts, which rank keeps: the caller must not reuse it.
//
// sub, when not nil, is each pending job's unixNanoOrMin(Submit), already computed.
func (sc *scorer) rank(s *Snapshot, parts []float64, sub []int64) ([]Score, error) {
	buf := getRankScratch()
	defer buf.put()
	return sc.rankWith(s, parts, sub, buf)
}

// rankWith is rank sorting in buf's buffers when buf is not nil.
func (sc *scorer) rankWith(s *Snapshot, parts []float64, sub []int64, buf *rankScratch) ([]Score, error) {
	return sc.rankHinted(s, parts, sub, buf, nil)
}

// rankHinted is rankWith sorting from hint, when not nil: the pending
// jobs' slots in an order close to the ranking's (see rankMemo.sortHinted).
func (sc *scorer) rankHinted(s *Snapshot, parts []float64, sub []int64, buf *rankScratch, hint []int32) ([]Score, error) {
	n, k := len(s.Pending), len(sc.names)
	var entries, radix []rankEntry
	if buf != nil {
		// Every entry is written below.
		buf.ents = resize(buf.ents, n)
		entries = buf.ents
		if n >= 512 {
			buf.radix = resize(buf.radix, n)
			radix = buf.radix
		}
	} else {
		entries = make([]rankEntry, n)
	}
	// Most policies weigh one part: its weighted value is read from each
	// row without a pass over the weights (the same sum, 0 + w·part).
	one, w1 := sc.single()
	for i := range s.Pending {
		j := &s.Pending[i]
		var v float64
		if one >= 0 {
			v = 0
			v += w1 * parts[i*k+one]
		} else {
			v = sc.value(parts[i*k : (i+1)*k])
		}
		if math.IsNaN(v) {
			return nil, fmt.Errorf("job %d: %w", j.ID, ErrBadScore)
		}
		e := rankEntry{value: v, id: j.ID, i: int32(i)}
		if sub != nil {
			e.submit = sub[i]
		} else {
			e.submit = unixNanoOrMin(j.Submit)
		}
		entries[i] = e
	}
	if hint != nil {
		sc.memo.sortHinted(entries, radix, hint)
	} else {
		sc.memo.sortFrom(entries, radix)
	}
	scores, t := s.scoresBuf(n, sc.names, parts[:n*k])
	for r, e := range entries {
		scores[r] = Score{JobID: e.id, Value: e.value, Parts: Parts{t: t, row: e.i}}
	}
	return scores, nil
}

// assocGroups partitions the pending jobs by association, and the
// associations by account, so per-user and per-account state is looked up
// once per group rather than once per job.
type assocGroups struct {
	of       []int32 // group of each pending job
	keys     []Assoc // association of each group
	acct     []int32 // account index of each group
	accounts []string
	byAcct   map[string]int32
	// byUser finds a user's first group; sameUser chains the groups of one
	// user in other accounts (rare), so a lookup hashes one string.
	byUser   map[string]int32
	sameUser []int32
	// members lists pending job indices grouped: group g's jobs are
	// members[start[g]:start[g+1]].
	members []int32
	start   []int32
	fill    []int32 // reset's scratch
	// assocNum is each group's association number in the groupMemo that
	// resetWith was given; empty without one.
	assocNum []int32
}

func groupByAssoc(jobs []Job) *assocGroups {
	g := &assocGroups{}
	g.reset(jobs)
	return g
}

// reset makes g the grouping of jobs, reusing g's slices and maps (see
// rankScratch).
func (g *assocGroups) reset(jobs []Job) { g.resetWith(jobs, nil) }

// resetWith is reset finding each job's group through m, when not nil,
// which no other goroutine may use meanwhile.
func (g *assocGroups) resetWith(jobs []Job, m *groupMemo) {
	// The runs of one user's jobs bound the number of users: sizing the
	// maps for them spares their growth in the simulator's short queues
	// (up to 64: a queue in random order has about as many runs as jobs).
	runs := min(len(jobs), 1)
	for i := 1; i < len(jobs) && runs < 64; i++ {
		if jobs[i].User != jobs[i-1].User {
			runs++
		}
	}
	if g.byUser == nil {
		g.byUser = make(map[string]int32, runs)
		g.byAcct = map[string]int32{}
	} else {
		clear(g.byUser)
		clear(g.byAcct)
	}
	g.of = resize(g.of, len(jobs)) // every entry is written below
	g.keys, g.acct = g.keys[:0], g.acct[:0]
	g.accounts, g.sameUser = g.accounts[:0], g.sameUser[:0]
	g.assocNum = g.assocNum[:0]
	lastG := int32(-1)
	if m != nil {
		m.calls++
		m.grow(len(jobs))
	}
	for i := range jobs {
		j := &jobs[i]
		if m != nil {
			// Groups are numbered in the order of first sight either
			// way; the memo finds a job's association without hashing.
			a := m.assocAt(i, j)
			if m.stamp[a] != m.calls {
				m.stamp[a], m.grp[a] = m.calls, g.add(j)
				g.assocNum = append(g.assocNum, a)
			}
			g.of[i] = m.grp[a]
			continue
		}
		if lastG >= 0 && j.User == g.keys[lastG].User && j.Account == g.keys[lastG].Account {
			g.of[i] = lastG
			continue
		}
		x, ok := g.lookup(j.Account, j.User)
		if !ok {
			x = g.add(j)
		}
		g.of[i], lastG = x, x
	}
	g.start = zeroed(g.start, len(g.keys)+1)
	for _, x := range g.of {
		g.start[x+1]++
	}
	for x := range g.keys {
		g.start[x+1] += g.start[x]
	}
	g.members = resize(g.members, len(jobs)) // every entry is written below
	g.fill = append(g.fill[:0], g.start[:len(g.keys)]...)
	for i, x := range g.of {
		g.members[g.fill[x]] = int32(i)
		g.fill[x]++
	}
}

// add makes a group for j's association, which has none yet, and
// returns its number.
func (g *assocGroups) add(j *Job) int32 {
	x := int32(len(g.keys))
	g.keys = append(g.keys, AssocOf(j))
	g.sameUser = append(g.sameUser, -1)
	if first, ok := g.byUser[j.User]; ok {
		for g.sameUser[first] >= 0 {
			first = g.sameUser[first]
		}
		g.sameUser[first] = x
	} else {
		g.byUser[j.User] = x
	}
	a, ok := g.byAcct[j.Account]
	if !ok {
		a = int32(len(g.accounts))
		g.byAcct[j.Account] = a
		g.accounts = append(g.accounts, j.Account)
	}
	g.acct = append(g.acct, a)
	return x
}

// groupMemo is what a policy that groups the same queue at every cycle
// (vtc, fair-qssf) remembers for assocGroups.resetWith: per queue slot the
// job seen there and its association's number, and per number the group
// it has in the current grouping. A queue whose slots mostly keep their
// jobs (the simulator's, hundreds of jobs on a big machine) is grouped
// with a comparison per job instead of a lookup by name.
type groupMemo struct {
	mu sync.Mutex // held by the policy's ranking that uses the memo
	// Per slot: the job, its user and account, and its association's
	// number, -1 when the slot holds nothing yet.
	id            []int64
	user, account []string
	num           []int32
	// Per association number: the call that last gave it a group, and
	// that group.
	nums  map[Assoc]int32
	stamp []uint64
	grp   []int32
	calls uint64
	// Per association number, for vtc: its cell in the running index
	// runOf and in the Ledger ledOf, nil until it has one. The Ledger
	// never drops a cell, the index marks the ones it drops (runSum.gone),
	// so a cell found is the association's while the memo is given the
	// same index and Ledger, and reading it spares hashing the
	// association at every cycle (userCells).
	runOf *runningIndex
	run   []*runSum
	ledOf *Ledger
	led   []*assocUsage
}

// userCells writes, for each group of g (grouped by resetWith through
// m), the committed service of its running jobs in running to comm (as
// running.committedUser) unless running is nil, and its VTC counter in
// l to ctr (as l.Counter).
func (m *groupMemo) userCells(g *assocGroups, running *runningIndex, l *Ledger, comm, ctr []float64) {
	for len(m.run) < len(m.stamp) {
		m.run, m.led = append(m.run, nil), append(m.led, nil)
	}
	if running != nil {
		running.refresh()
		if m.runOf != running {
			m.runOf = running
			clear(m.run)
		}
		for x, a := range g.assocNum {
			c := m.run[a]
			if c == nil || c.gone {
				c = running.assocs[g.keys[x]]
				m.run[a] = c
			}
			if c != nil {
				comm[x] = c.sum
			}
		}
	}
	if l == nil {
		return // every counter 0, as ctr holds
	}
	if m.ledOf != l {
		m.ledOf = l
		clear(m.led)
	}
	for x, a := range g.assocNum {
		c := m.led[a]
		if c == nil {
			c = l.assocs[g.keys[x]]
			m.led[a] = c
		}
		if c != nil {
			ctr[x] = c.vtc
		}
	}
}

// grow makes room for n slots.
func (m *groupMemo) grow(n int) {
	for len(m.num) < n {
		m.id, m.user, m.account = append(m.id, 0), append(m.user, ""), append(m.account, "")
		m.num = append(m.num, -1)
	}
}

// assocAt is the number of the association of j, in slot i.
func (m *groupMemo) assocAt(i int, j *Job) int32 {
	if a := m.num[i]; a >= 0 && m.id[i] == j.ID && m.user[i] == j.User && m.account[i] == j.Account {
		return a
	}
	if m.nums == nil {
		m.nums = map[Assoc]int32{}
	}
	key := AssocOf(j)
	a, ok := m.nums[key]
	if !ok {
		a = int32(len(m.stamp))
		m.nums[key] = a
		m.stamp, m.grp = append(m.stamp, 0), append(m.grp, 0)
	}
	m.id[i], m.user[i], m.account[i], m.num[i] = j.ID, j.User, j.Account, a
	return a
}

// lookup returns the group of an association, if it has pending jobs.
func (g *assocGroups) lookup(account, user string) (int32, bool) {
	x, ok := g.byUser[user]
	for ok && g.keys[x].Account != account {
		x = g.sameUser[x]
		ok = x >= 0
	}
	return x, ok
}

// group returns the pending job indices of group x.
func (g *assocGroups) group(x int) []int32 { return g.members[g.start[x]:g.start[x+1]] }

// rankByGroup is rank for a policy whose Value is the same for every job
// of one association of g (the weighted parts read only the group's
// factors): sorted from the last order (rankMemo), else by sortByGroup. A
// NaN value goes to rank, which reports it as it would.
func (sc *scorer) rankByGroup(s *Snapshot, parts []float64, g *assocGroups) ([]Score, error) {
	n, k := len(s.Pending), len(sc.names)
	buf := getRankScratch()
	defer buf.put()
	vals := resize(buf.run, len(g.keys))
	buf.run = vals
	for x := range g.keys {
		i := g.group(x)[0]
		vals[x] = sc.value(parts[int(i)*k : (int(i)+1)*k])
		if math.IsNaN(vals[x]) {
			return sc.rankWith(s, parts, nil, buf)
		}
	}
	buf.ents = resize(buf.ents, n)
	entries := buf.ents
	for i := range s.Pending {
		entries[i] = rankEntry{value: vals[g.of[i]], submit: unixNanoOrMin(s.Pending[i].Submit), id: s.Pending[i].ID, i: int32(i)}
	}
	buf.radix = resize(buf.radix, n) // sortByGroup's copy, the memo's radix buffer
	sc.memo.sortOr(entries, buf.radix, func() { sortByGroup(entries, vals, g, buf) })
	scores, t := s.scoresBuf(n, sc.names, parts[:n*k])
	for r, e := range entries {
		scores[r] = Score{JobID: e.id, Value: e.value, Parts: Parts{t: t, row: e.i}}
	}
	return scores, nil
}

// sortByGroup sorts entries, one per pending job of g whose value is its
// group's in vals, by compareRank: the groups are ordered by value, and
// only the jobs of each run of groups of one value are sorted, by the
// tie-break. That is the order sortRank gives (compareRank is a total
// order on distinct ids), at the cost of sorting each group rather than
// the queue.
func sortByGroup(entries []rankEntry, vals []float64, g *assocGroups, buf *rankScratch) {
	order := resize(buf.perAcct, len(g.keys))
	buf.perAcct = order
	for x := range order {
		order[x] = int32(x)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(vals[b], vals[a]) })
	byJob := append(buf.radix[:0], entries...)
	buf.radix = byJob
	at := 0
	for r := 0; r < len(order); {
		from := at
		v := vals[order[r]]
		for ; r < len(order) && vals[order[r]] == v; r++ {
			for _, i := range g.group(int(order[r])) {
				entries[at] = byJob[i]
				at++
			}
		}
		sortSmall(entries[from:at])
	}
}
