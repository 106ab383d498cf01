package policy

import (
	"math"
	"slices"
	"time"
)

// runningIndex is the Engine's record of the running jobs, carried from
// cycle to cycle so that a policy need not visit every running job at every
// cycle. It holds, per association and per account, the committed service of
// their running jobs (what vtc and fair-qssf add to the VTC counters, see
// vtc): Σ max(0, predicted service − attained), summed in job id order.
//
// A job's committed service changes only when the job starts or stops, when
// it is charged (the Engine's sweep, every ChargeEvery) or when its
// prediction changes, so between two sweeps a cycle only finds the jobs that
// started or stopped and re-sums the associations and accounts they touch;
// the sums are bit-identical to the ones an index built from scratch holds
// (the same terms, added in the same order). The Engine hands the index to
// its policy in a rankIndex; a Snapshot ranked without an Engine gets one
// built from scratch by the same code (indexRunning).
type runningIndex struct {
	jobs     map[int64]*runRec
	assocs   map[Assoc]*runSum
	accounts map[string]*runSum
	// users counts each user's running jobs, while it has some: Themis' N
	// (see assocGroups.activeUsers) without a pass over the running jobs.
	users map[string]int32
	// userRuns holds the same counts in cells that stay, at 0, once the
	// user has no running job (userCell makes one for any user): themis
	// keeps the cells of the users it saw pending rather than looking
	// each one up at every cycle (see activeMemo).
	userRuns map[string]*int32

	order  []*runRec // the running jobs of the last match, in Running order
	next   []*runRec // scratch for match
	cur    []*Job    // order's jobs in the Observation, between match and settle
	newRun []int32   // indices in Running of the jobs new to the index
	// appended is set once an Observation with RunningAppended was
	// matched: order is not kept then, and the records of this match's
	// new jobs are in fresh, their jobs in freshJobs until settle.
	appended  bool
	fresh     []*runRec
	freshJobs []*Job
	// byStart lists the records in the order their jobs were first seen
	// running under RunningAppended: the Engine's sweep charges the
	// running jobs in that order, so that the caller's Running need not
	// keep it. The entry of a job that stops or leaves the index is
	// emptied (unlist), and empty entries are dropped once they are many.
	byStart []startEnt
	// stale is set when, under RunningAppended, the Engine charged every
	// running job and their committed service has not been read again
	// yet: it is, with ledger, at the first read of a sum
	// (committedUser, committedAccount), so that a cycle whose policy
	// reads none (most) does not visit every running job. Between two
	// sweeps a running job's attained service does not change, so the
	// values read later are the ones read at the sweep. Its prediction
	// does not change while it runs (the Engine predicts only the running
	// jobs new to the index, before settle reads them), so it is not read
	// again.
	stale  bool
	ledger *Ledger
	// readSums is set once a sum was read (committedUser,
	// committedAccount): a policy that reads them reads them at every
	// cycle, so from then on the Engine's sweep works out each job's
	// committed service as it charges it (fused), from its byStart entry,
	// rather than leaving the index stale and walking every record again
	// at the next read.
	readSums bool
	fused    bool // the last sweep worked the committed service out
	// sweeps counts the Engine's sweeps: a record whose sweptAt is the
	// last one holds, in swept, the attained service that sweep (under
	// RunningAppended) left in its Ledger record, which refresh takes
	// rather than following the record to the Ledger's again (thousands
	// of cache misses a sweep on a big machine, right after the sweep's
	// own).
	sweeps uint64
	dirty  []*runSum // sums to add up again, at their next read (refresh)
	// Records are carved from slabs and reused once their job left, so
	// that the records a cycle walks share cache lines.
	slab  []runRec
	free  []*runRec // records free for reuse
	left  []*runRec // records whose job left during this match
	cycle uint64    // match calls, to mark who was seen in this one
	// unknown counts the associations of running jobs that neither the
	// Ledger nor the share tree knows, and unknownGen changes whenever
	// their set does (see shareSumCache).
	unknown    int
	unknownGen uint64
	// usersOnly keeps, of the running jobs, only their users (users,
	// userRuns) and which are new (newRun): no sums, no Ledger. An Engine
	// that keeps no Ledger (EngineParams.LedgerUnread) indexes so for a
	// policy that reads nothing else (ledgerFree), sparing a big
	// machine's account sums the copy of thousands of jobs at every stop.
	usersOnly bool
}

// runRec is one running job.
type runRec struct {
	id            int64
	user, account string
	assoc, acct   *runSum
	pred          time.Duration // Snapshot.Predicted, when hasPred
	hasPred       bool
	attained      float64 // Ledger.Attained
	swept         float64 // its Ledger record's service after the sweep sweptAt
	sweptAt       uint64
	run           time.Duration // predictedRunOf the above, and
	runSec        float64       // its seconds, kept to spare the division
	rate          float64       // Service.Rate of the job, and
	limit         time.Duration // its TimeLimit, under RunningAppended
	start         time.Time     // the job's Start
	listed        bool          // in byStart, at listedAt
	listedAt      int
	leaving       bool    // in this cycle's Stopped (see Engine.sweepAppended)
	committed     float64 // max(0, predicted service − attained)
	seen          uint64
	fresh         bool // new to the index: read its prediction and service
	gone          bool
	counted       bool // in users, under usersOnly (assoc says so otherwise)
	// usage is the job's Ledger record once Engine.sweepAppended has
	// looked it up.
	usage *jobUsage
}

// startEnt is an entry of runningIndex.byStart: a running job and what the
// Engine's sweep reads of it. A sweep charges every running job, thousands
// on a big machine: it reads them from this array, in the order it walks
// it, rather than from each job's record, charged cell and Ledger record
// in turn, a chain of cache misses per job.
type startEnt struct {
	r     *runRec   // nil once the job stopped or left the index
	start time.Time // the job's Start
	rate  float64   // its Service.Rate, once settled
	// cell is the job's Engine.charged cell once a sweep looked it up,
	// and at what it holds: while a job is listed, only sweeps write its
	// cell (a job that stops is unlisted first), and they write at too.
	cell *time.Time
	at   time.Time
	// usage is the job's Ledger record once a sweep charged it, and known
	// reports that the record holds the job's association (an earlier
	// charge looked it up): a listed job's user and account do not
	// change, so later sweeps charge it without comparing them. While
	// known, service and span are the record's service and last run span
	// (lastTo its end), assocUsage and acctUsage its association's and
	// account's records: only sweeps charge a listed job, so they add to
	// them without reading the record (see Ledger.chargeListed). A listed
	// job's record is not finished: Finish comes only to a job that
	// stopped, which is unlisted before the next sweep.
	usage      *jobUsage
	known      bool
	service    float64
	span       *runSpan
	lastTo     int64
	assocUsage *assocUsage
	acctUsage  *accountUsage
	// predSvc is float64(rate·runSec) of the record and committed its
	// committed service, as settleCommitted last left them; assoc and acct
	// its sums. A fused sweep works the committed service out from them.
	predSvc, committed float64
	assoc, acct        *runSum
}

// runSum is the committed service of one association's or account's
// running jobs.
type runSum struct {
	// jobs in id order, with ids their ids. A job that left is a hole
	// (nil, its id kept, value +0) until holes are many (see leaveSum):
	// a term +0 leaves every partial sum as it is, and an account's sum
	// on a big machine is thousands of jobs, which a job that leaves
	// would otherwise move down one place, with their values and
	// partial sums.
	jobs  []*runRec
	ids   []int64
	live  int // jobs that are not holes
	holes int
	// vals[k] is jobs[k].committed unless reload is set: adding up reads
	// these in a row rather than following a pointer per job (on a big
	// machine one account's sum is thousands of jobs, added up from the
	// place of each job that stops).
	vals   []float64
	reload bool    // vals is out of date: read it again from jobs
	sum    float64 // the jobs' committed service, added in id order
	// prefix[k] is the sum of jobs[:k+1], so that when jobs[i] joins,
	// leaves or changes, adding up again starts at i: the terms before it
	// and the order they are added in are the same (a job that starts
	// usually has the largest id of its sum, so it costs one addition).
	prefix []float64
	from   int // while dirty: prefix[from:] is out of date
	dirty  bool
	known  bool // an association the Ledger or the share tree knows; accounts: always
	// gone is set when the sum left its map (no job left in it): a
	// policy that keeps the cell (groupMemo) looks its key up again.
	gone bool
}

func newRunningIndex() *runningIndex {
	return &runningIndex{jobs: map[int64]*runRec{}, assocs: map[Assoc]*runSum{}, accounts: map[string]*runSum{}, users: map[string]int32{},
		userRuns: map[string]*int32{}}
}

// An update of the index is in two steps around the Engine's predictions:
// match, after the Engine charged and finished, finds which running jobs
// are new (newRun: only they can be due a prediction, see Engine.due);
// settle, once predicted, computes what changed and adds up the sums.

// match follows o.Running and o.Stopped.
func (x *runningIndex) match(o *Observation, l *Ledger, shares *Shares) {
	x.cycle++
	if x.unknown > 0 {
		// The Ledger only learns associations: look again.
		for a, s := range x.assocs {
			if !s.known && knownAssoc(a, l, shares) {
				s.known = true
				x.unknown--
				x.unknownGen++
			}
		}
	}
	for i := range o.Stopped {
		if r := x.jobs[o.Stopped[i].ID]; r != nil {
			x.remove(r)
		}
	}
	if o.RunningAppended {
		x.matchAppended(o, l, shares)
		return
	}
	// Match o.Running against the previous order: the simulator appends
	// the jobs it starts and deletes those that stop, so a walk in step
	// finds nearly every job without a lookup. Jobs out of step are looked
	// up by id.
	prev, p := x.order, 0
	next, cur := x.next[:0], x.cur[:0]
	x.newRun = x.newRun[:0]
	for i := range o.Running {
		j := &o.Running[i]
		for p < len(prev) && (prev[p].gone || prev[p].seen == x.cycle) {
			p++
		}
		var r *runRec
		if p < len(prev) && prev[p].id == j.ID {
			r = prev[p]
			p++
		} else {
			r = x.jobs[j.ID]
		}
		switch {
		case r == nil:
			r = x.newRec()
			r.id, r.fresh = j.ID, true
			x.jobs[j.ID] = r
			x.newRun = append(x.newRun, int32(i))
		case r.seen == x.cycle:
			continue // a job id listed twice is one job
		}
		r.seen, r.start = x.cycle, j.Start
		x.attach(r, j, l, shares)
		next, cur = append(next, r), append(cur, j)
	}
	// Jobs of the previous order not seen now left without being listed
	// as stopped.
	for _, r := range prev {
		if !r.gone && r.seen != x.cycle {
			x.remove(r)
		}
	}
	if x.appended {
		// The previous matches kept no order: look for those jobs among
		// all (the order records leave in changes no sum).
		for _, r := range x.jobs {
			if r.seen != x.cycle {
				x.remove(r)
			}
		}
		x.appended = false
	}
	clear(prev) // keep no pointer to a record that left
	x.order, x.next, x.cur = next, prev[:0], cur
	// Nothing points to the records that left any more.
	x.free = append(x.free, x.left...)
	clear(x.left)
	x.left = x.left[:0]
}

// matchAppended is match's rest under Observation.RunningAppended: the
// jobs that did not stop are the first len(x.jobs) of Running, in the
// order the previous match saw them, so only the ones after them are
// looked at. It visits the jobs that started or stopped, not every
// running job.
func (x *runningIndex) matchAppended(o *Observation, l *Ledger, shares *Shares) {
	if !x.appended {
		// The jobs that did not stop are in the previous match's order.
		clear(x.byStart)
		x.byStart = x.byStart[:0]
		// What a sweep read of them is looked up again: the matches that
		// kept no byStart may have charged them (Engine.chargeRunning).
		for _, r := range x.order {
			if !r.gone {
				x.listStart(r)
			}
		}
		clear(x.order)
		x.order, x.appended = x.order[:0], true
	}
	x.newRun = x.newRun[:0]
	for i := len(x.jobs); i < len(o.Running); i++ {
		j := &o.Running[i]
		if x.jobs[j.ID] != nil {
			continue // a job id listed twice is one job
		}
		r := x.newRec()
		r.id, r.fresh, r.seen, r.start = j.ID, true, x.cycle, j.Start
		x.jobs[j.ID] = r
		x.newRun = append(x.newRun, int32(i))
		x.attach(r, j, l, shares)
		x.fresh, x.freshJobs = append(x.fresh, r), append(x.freshJobs, j)
		x.listStart(r)
	}
	if len(x.byStart) > 2*len(x.jobs)+256 {
		// Records leave faster than jobs start only in bursts: drop the
		// empty entries, keeping the order of the others.
		w := 0
		for _, en := range x.byStart {
			if en.r != nil {
				en.r.listedAt = w
				x.byStart[w] = en
				w++
			}
		}
		clear(x.byStart[w:])
		x.byStart = x.byStart[:w]
	}
	x.free = append(x.free, x.left...)
	clear(x.left)
	x.left = x.left[:0]
}

// listStart appends r to byStart.
func (x *runningIndex) listStart(r *runRec) {
	r.listed, r.listedAt = true, len(x.byStart)
	x.byStart = append(x.byStart, startEnt{r: r, start: r.start, rate: r.rate,
		predSvc: float64(r.rate * r.runSec), committed: r.committed, assoc: r.assoc, acct: r.acct})
}

// keep notes in en ju, the Ledger record of its job (of user and
// account), which was just charged: what Ledger.chargeListed reads.
func (en *startEnt) keep(ju *jobUsage, user, account string) {
	en.usage = ju
	n := len(ju.runs)
	en.known = ju.assoc != nil && ju.user == user && ju.account == account && n > 0
	if en.known {
		en.service, en.span, en.lastTo = ju.service, &ju.runs[n-1], ju.runs[n-1].to
		en.assocUsage, en.acctUsage = ju.assoc, ju.acct
	}
}

// entry is r's byStart entry, nil when it has none.
func (x *runningIndex) entry(r *runRec) *startEnt {
	if r.listed {
		if i := r.listedAt; i < len(x.byStart) && x.byStart[i].r == r {
			return &x.byStart[i]
		}
	}
	return nil
}

// unlist empties r's entry in byStart: a sweep no longer charges it.
func (x *runningIndex) unlist(r *runRec) {
	if en := x.entry(r); en != nil {
		*en = startEnt{}
	}
	r.listed = false
}

// attach puts r, now running j, into the sums of j's association and
// account, unless it is in them already.
func (x *runningIndex) attach(r *runRec, j *Job, l *Ledger, shares *Shares) {
	if x.usersOnly {
		if r.counted && r.user == j.User {
			return
		}
		x.detach(r)
		r.user, r.account, r.counted = j.User, j.Account, true
		x.users[j.User]++
		*x.userCell(j.User)++
		return
	}
	if r.assoc != nil && r.user == j.User && r.account == j.Account {
		return
	}
	x.detach(r)
	r.user, r.account = j.User, j.Account
	a := Assoc{Account: j.Account, User: j.User}
	r.assoc = x.assocs[a]
	if r.assoc == nil {
		r.assoc = &runSum{known: knownAssoc(a, l, shares)}
		x.assocs[a] = r.assoc
		if !r.assoc.known {
			x.unknown++
			x.unknownGen++
		}
	}
	r.acct = x.accounts[j.Account]
	if r.acct == nil {
		r.acct = &runSum{known: true}
		x.accounts[j.Account] = r.acct
	}
	x.joinSum(r.assoc, r)
	x.joinSum(r.acct, r)
	x.users[j.User]++
	*x.userCell(j.User)++
}

// userCell is user's cell of userRuns, made at 0 when it has none.
func (x *runningIndex) userCell(user string) *int32 {
	c := x.userRuns[user]
	if c == nil {
		c = new(int32)
		x.userRuns[user] = c
	}
	return c
}

// newRec returns a zero record, reused or from the current slab.
func (x *runningIndex) newRec() *runRec {
	if n := len(x.free); n > 0 {
		r := x.free[n-1]
		x.free = x.free[:n-1]
		*r = runRec{}
		return r
	}
	if len(x.slab) == 0 {
		x.slab = make([]runRec, 256)
	}
	r := &x.slab[0]
	x.slab = x.slab[1:]
	return r
}

// settle computes the committed service of the jobs match found and adds
// up the sums that changed. refresh re-reads every job's prediction and
// attained service (the Engine charged every running job); otherwise they
// are read only for the jobs new to the index, since between two sweeps
// the Engine changes them for no other running job: it charges running
// jobs only when it sweeps, and predicts only those new to the index.
func (x *runningIndex) settle(refresh bool, predicted map[int64]time.Duration, l *Ledger, svc Service) {
	if x.usersOnly {
		// No sums to settle: keep no pointer into the observation.
		clear(x.cur)
		clear(x.fresh)
		clear(x.freshJobs)
		x.cur, x.fresh, x.freshJobs = x.cur[:0], x.fresh[:0], x.freshJobs[:0]
		return
	}
	if x.appended {
		x.settleAppended(refresh, predicted, l, svc)
	} else if x.stale {
		// Appended observations left the sweep's values unread.
		refresh, x.stale = true, false
	}
	for k, r := range x.order {
		j := x.cur[k]
		// The job's own fields may change: they are read each time (and
		// kept, should the next observations be appended).
		r.rate, r.limit = svc.Rate(j), j.TimeLimit
		x.settleRec(r, refresh, predicted, l, r.rate, r.limit)
	}
	clear(x.cur) // keep no pointer into the observation
	x.cur = x.cur[:0]
	// The sums are added up at their first read (refresh): most policies
	// read none, and adding up a big machine's sums at every cycle was a
	// good part of its cycle. Adding them up later gives the same bits
	// (prefix[:from] stays valid however many changes pile up). Sums that
	// left still sit in dirty until then: add up once they outnumber the
	// live ones, so that dirty stays bounded.
	if len(x.dirty) > 2*(len(x.assocs)+len(x.accounts))+64 {
		x.sumDirty()
	}
}

// sumDirty adds up again the sums that changed.
func (x *runningIndex) sumDirty() {
	for _, s := range x.dirty {
		s.dirty = false
		// prefix[:from] holds: the jobs before from are those it was
		// added up from (a change at i sets from to at most i).
		if s.reload {
			for k, r := range s.jobs {
				if r != nil {
					s.vals[k] = r.committed
				}
			}
			s.reload = false
		}
		s.prefix = slices.Grow(s.prefix[:s.from], len(s.jobs)-s.from)[:len(s.jobs)]
		sum := 0.0
		if s.from > 0 {
			sum = s.prefix[s.from-1]
		}
		vals, prefix := s.vals[s.from:], s.prefix[s.from:]
		for k, v := range vals {
			sum += v
			prefix[k] = sum
		}
		s.sum = sum
	}
	clear(x.dirty) // keep no sum that left
	x.dirty = x.dirty[:0]
}

// settleAppended is settle's walk under Observation.RunningAppended, where
// a running job's fields do not change: its rate and time limit are read
// when it is new, and between two sweeps only the new jobs are visited.
// The order they are visited in changes no sum (each is added up in id
// order).
func (x *runningIndex) settleAppended(refresh bool, predicted map[int64]time.Duration, l *Ledger, svc Service) {
	for k, r := range x.fresh {
		j := x.freshJobs[k]
		r.rate, r.limit = svc.Rate(j), j.TimeLimit
		if en := x.entry(r); en != nil {
			en.rate = r.rate
		}
	}
	for _, r := range x.fresh {
		x.settleRec(r, false, predicted, l, r.rate, r.limit)
	}
	if refresh && !x.fused {
		x.stale, x.ledger = true, l
	}
	clear(x.fresh) // keep no record that may leave, nor a pointer into the observation
	clear(x.freshJobs)
	x.fresh, x.freshJobs = x.fresh[:0], x.freshJobs[:0]
}

// settleRec brings r's committed service up to date, for a job of this
// rate and time limit, reading its prediction and attained service when
// read is set or r is new, and marks its sums dirty when it changed. read
// is set only in walks that settle every job of the index.
func (x *runningIndex) settleRec(r *runRec, read bool, predicted map[int64]time.Duration, l *Ledger, rate float64, limit time.Duration) {
	if read || r.fresh {
		r.pred, r.hasPred = predicted[r.id]
		r.readAttained(l)
		r.fresh = false
	}
	x.settleCommitted(r, read, rate, limit)
}

// readAttained reads the job's attained service from l.
func (r *runRec) readAttained(l *Ledger) {
	if u := r.usage; u != nil && !u.finished {
		// The Ledger's record of the job, which the Engine's sweep keeps
		// on r (the index's Ledger is the Engine's): until Finish marks
		// it finished it is the one Attained finds, and a sweep after a
		// big machine's charges reads thousands.
		r.attained = u.service
	} else {
		r.attained = l.Attained(r.id)
	}
}

// settleCommitted is settleRec's rest, once r's prediction and attained
// service are read.
func (x *runningIndex) settleCommitted(r *runRec, read bool, rate float64, limit time.Duration) {
	if run := predictedRunLimit(limit, r.pred, r.hasPred); run != r.run {
		r.run, r.runSec = run, run.Seconds()
	}
	x.setCommitted(r, committed(rate, r.runSec, r.attained), read)
	if en := x.entry(r); en != nil {
		en.predSvc, en.committed = float64(rate*r.runSec), r.committed
	}
}

// sweptCommitted is settleCommitted of a listed job that a fused sweep
// (see readSums) just charged, its record's service now service: its
// prediction, rate and time limit are those settleCommitted last read,
// which do not change while it is listed, so its entry holds what
// committed reads of them.
func (x *runningIndex) sweptCommitted(en *startEnt, service float64) {
	r := en.r
	r.attained = service
	c := max(0, en.predSvc-service)
	if math.Float64bits(c) == math.Float64bits(en.committed) {
		return
	}
	en.committed, r.committed = c, c
	// As setCommitted with read: every job is read again.
	en.assoc.reload, en.acct.reload = true, true
	x.markDirty(en.assoc, 0)
	x.markDirty(en.acct, 0)
}

// setCommitted sets r's committed service to c and marks its sums dirty
// when that changed it. read is settleRec's.
func (x *runningIndex) setCommitted(r *runRec, c float64, read bool) {
	if math.Float64bits(c) == math.Float64bits(r.committed) {
		return
	}
	r.committed = c
	for _, s := range [2]*runSum{r.assoc, r.acct} {
		if read {
			// Every job is read again (a sweep charged them all): the
			// sums change from their first jobs on, and finding each
			// job's place in its account's sum (thousands of running
			// jobs) only to learn that costs more than adding up from
			// the start, which gives the same bits.
			s.reload = true
			x.markDirty(s, 0)
			continue
		}
		i := s.find(r)
		s.vals[i] = c
		x.markDirty(s, i)
	}
}

// detach takes r out of the sums of its association and account.
func (x *runningIndex) detach(r *runRec) {
	if x.usersOnly {
		if r.counted {
			x.leaveUser(r.user)
			r.counted = false
		}
		return
	}
	if r.assoc == nil {
		return
	}
	if leaveSum(x, x.assocs, Assoc{Account: r.account, User: r.user}, r) && !r.assoc.known {
		x.unknown--
		x.unknownGen++
	}
	leaveSum(x, x.accounts, r.account, r)
	x.leaveUser(r.user)
	r.assoc, r.acct = nil, nil
}

// leaveUser counts one running job of user less.
func (x *runningIndex) leaveUser(user string) {
	*x.userRuns[user]--
	if x.users[user]--; x.users[user] <= 0 {
		delete(x.users, user)
	}
}

// remove forgets a job that stopped running.
func (x *runningIndex) remove(r *runRec) {
	x.unlist(r)
	x.detach(r)
	delete(x.jobs, r.id)
	r.gone = true
	x.left = append(x.left, r)
}

// markDirty marks s to be added up again from its job i on.
func (x *runningIndex) markDirty(s *runSum, i int) {
	if !s.dirty {
		s.dirty, s.from = true, i
		x.dirty = append(x.dirty, s)
		return
	}
	s.from = min(s.from, i)
}

// index is the first place in s.jobs whose id is not below id.
func (s *runSum) index(id int64) int {
	i, _ := slices.BinarySearch(s.ids, id)
	return i
}

// find is r's place in s.jobs, len(s.jobs) when it is not there. It is
// the first place of its id: a job joins before the holes that jobs left
// under the same id, and one record per id is in the index at a time.
func (s *runSum) find(r *runRec) int {
	if i := s.index(r.id); i < len(s.jobs) && s.jobs[i] == r {
		return i
	}
	return len(s.jobs)
}

// joinSum adds r, in id order, to s.
func (x *runningIndex) joinSum(s *runSum, r *runRec) {
	i := s.index(r.id)
	s.jobs = slices.Insert(s.jobs, i, r)
	s.ids = slices.Insert(s.ids, i, r.id)
	s.vals = slices.Insert(s.vals, i, r.committed)
	s.live++
	if !zeroTerm(r.committed) {
		x.markDirty(s, i)
		return
	}
	// Adding +0 leaves every partial sum as it was (they are never −0:
	// they start at +0 and add terms that are not negative), so the
	// partial sum at r's place is the one before it, and the sums from
	// i on are not added up again. A job joins its sums with nothing
	// committed yet (settleRec then sets it at its place, usually the
	// last).
	if !s.dirty || i < s.from {
		prev := 0.0
		if i > 0 {
			prev = s.prefix[i-1]
		}
		s.prefix = slices.Insert(s.prefix, i, prev)
		if s.dirty {
			s.from++
		}
	}
}

// zeroTerm reports whether c, a committed service, is +0: a term that
// leaves a sum of committed service as it is.
func zeroTerm(c float64) bool { return math.Float64bits(c) == 0 }

// leaveSum takes r out of the sum of key in m, and the sum out of m once it
// is empty; it reports whether it did.
func leaveSum[K comparable](x *runningIndex, m map[K]*runSum, key K, r *runRec) bool {
	s := m[key]
	if s == nil {
		return false
	}
	if i := s.find(r); i < len(s.jobs) {
		// r's place becomes a hole of value +0. A job of +0 committed
		// (most jobs that stop ran past their prediction) changes no
		// partial sum: none is added up again.
		s.jobs[i], s.vals[i] = nil, 0
		s.live--
		s.holes++
		if !zeroTerm(r.committed) {
			x.markDirty(s, i)
		}
		if s.holes > s.live+64 {
			s.compact(x)
		}
	}
	if s.live > 0 {
		return false
	}
	s.gone = true
	delete(m, key)
	return true
}

// compact removes s's holes. The partial sums are added up again from
// the first hole on (those before it stay): the same terms but the +0
// ones, in the same order, hence the same bits.
func (s *runSum) compact(x *runningIndex) {
	first := slices.Index(s.jobs, nil)
	if first < 0 {
		return
	}
	w := first
	for k := first; k < len(s.jobs); k++ {
		if r := s.jobs[k]; r != nil {
			s.jobs[w], s.ids[w], s.vals[w] = r, s.ids[k], s.vals[k]
			w++
		}
	}
	clear(s.jobs[w:])
	s.jobs, s.ids, s.vals = s.jobs[:w], s.ids[:w], s.vals[:w]
	s.prefix = s.prefix[:min(len(s.prefix), first)]
	s.holes = 0
	x.markDirty(s, first)
}

// knownAssoc reports whether the Ledger or the share tree knows a.
func knownAssoc(a Assoc, l *Ledger, shares *Shares) bool {
	if l != nil {
		if _, ok := l.assocs[a]; ok {
			return true
		}
	}
	if shares != nil {
		if _, ok := shares.Users[a]; ok {
			return true
		}
	}
	return false
}

// refresh reads again, when stale, every running job's attained service,
// and adds up the sums that changed since they were
// last read.
func (x *runningIndex) refresh() {
	x.readSums = true
	if x.stale {
		for _, r := range x.jobs {
			if r.sweptAt == x.sweeps {
				r.attained = r.swept
			} else {
				r.readAttained(x.ledger)
			}
			x.settleCommitted(r, true, r.rate, r.limit)
		}
		x.stale, x.ledger = false, nil
	}
	if len(x.dirty) > 0 {
		x.sumDirty()
	}
}

// committedUser and committedAccount are the committed service of the
// running jobs of an association and of an account.
func (x *runningIndex) committedUser(a Assoc) float64 {
	x.refresh()
	if s := x.assocs[a]; s != nil {
		return s.sum
	}
	return 0
}

func (x *runningIndex) committedAccount(name string) float64 {
	x.refresh()
	if s := x.accounts[name]; s != nil {
		return s.sum
	}
	return 0
}
