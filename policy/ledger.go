package policy

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// LedgerParams configures a Ledger. The zero value gives the defaults.
type LedgerParams struct {
	// HalfLife is the half-life of fair-share usage (Slurm's
	// PriorityDecayHalfLife). 0 means Slurm's default, 7 days; a negative
	// value turns decay off. VTC counters and attained service never decay.
	HalfLife time.Duration
	// Samples is how many finished jobs' total service the ledger keeps as
	// the service distribution of tiresias' 2D-Gittins index. 0 means 10000.
	Samples int
}

// Ledger is the fairness state that outlives a cycle, kept in one place so
// that `serve` and `simulate` run the same code:
//
//   - per association and per account, fair-share usage in GPU-seconds,
//     decaying with the configured half-life (Slurm's usage_raw);
//   - per association and per account, the VTC service counter in
//     GPU-seconds, never decaying, lifted when the user becomes backlogged
//     (Sheng et al., OSDI'24, §4);
//   - per job, the service it has attained and the wall-clock spans it ran,
//     which a requeued job keeps (tiresias);
//   - the total service of recently finished jobs (tiresias' Gittins index).
//
// A policy only reads a Ledger, through Snapshot.Ledger. The cycle owner (the
// serve loop or the simulator) is its only writer and, every cycle or
// scheduling point, in this order:
//
//  1. Charge every job for the time it ran since it was last charged:
//     Charge(j, from, to, svc) with from = max(last charge, j.Start) and
//     to = now for running jobs, or the time it stopped for jobs that
//     ended, were requeued or were preempted since. Charging [a,b] then
//     [b,c] equals charging [a,c], decay included, so the cadence does not
//     matter: serve charges every cycle, the simulator may charge a job at
//     each scheduling point or only when it stops.
//  2. Finish(j) for every job that left the system for good (completed,
//     failed, cancelled). Not for a requeued job: it keeps its service.
//  3. Backlog(pending, shares) with the pending jobs about to be ranked,
//     which lifts the VTC counters of users who became backlogged.
//  4. Build the Snapshot with Ledger set to this ledger, and Rank.
//
// svc must be the Snapshot's Service and shares its Shares. Serve, starting
// cold, replays the accounting history (jobs that ended within a few
// half-lives, in end order) through Charge and Finish. What-if work ranks a
// Clone. A Ledger is not safe for concurrent use.
type Ledger struct {
	halfLife float64 // seconds; 0 means no decay
	base     time.Time
	baseSet  bool

	assocs   map[Assoc]*assocUsage
	accounts map[string]*accountUsage
	keys     uint64  // associations and accounts added: the key sets change only when it does
	total    float64 // root usage, scaled like assocUsage.usage
	jobs     map[int64]*jobUsage

	samples    []float64
	nextSample int
	maxSamples int

	epoch       uint64            // Backlog calls, to mark who is backlogged now
	blAssocs    []Assoc           // associations backlogged at the last Backlog call
	blUsage     []*assocUsage     // their usage records, so Backlog need not look them up
	nowUsage    []*assocUsage     // scratch for Backlog
	blAccounts  []string          // accounts backlogged at the last Backlog call
	nowAssocs   []Assoc           // scratch for Backlog
	nowAccounts []string          // scratch for Backlog
	leavers     map[string]leaver // scratch for Backlog
	lastLeft    string            // account that most recently stopped being backlogged
	lastLeftSet bool

	memo chargeMemo // Charge's last lookups; Clone resets it
	// blMemo[i] is the usage records Backlog found for the job at
	// pending[i] at an earlier call, checked against the job's id, user
	// and account before use: a queue changes little from one call to the
	// next, and looking its jobs' associations up again (two strings
	// hashed each) was most of a big queue's Backlog. Clone drops it.
	blMemo []backlogMemo
	// lookups counts the association lookups (assoc), which tests bound.
	lookups int
}

// backlogMemo is the usage records of the association and account of one
// pending job (records are never deleted, so the pointers stay valid).
type backlogMemo struct {
	id            int64
	user, account string
	assoc         *assocUsage
	acct          *accountUsage
}

// chargeMemo spares Charge the work it repeats from job to job: the Engine
// charges the running jobs together, in runs of one association's jobs, and
// over the same interval [last sweep, now] for all that ran through it.
type chargeMemo struct {
	// The usage records of the last association charged: records are
	// never deleted, so the pointers stay valid.
	key   Assoc
	assoc *assocUsage
	acct  *accountUsage
	// scaledIntegral's two transcendental factors for the last interval
	// and decay base. The times are compared with ==, all their fields,
	// so equal keys give the same factors to the bit.
	from, to, base time.Time
	exp2, expm1    float64
	ok             bool
	// secs is to.Sub(from).Seconds() of the last interval charged,
	// [sfrom, sto].
	sfrom, sto time.Time
	secs       float64
	sok        bool
}

// assocUsage and accountUsage hold usage scaled by 2^((base-t0)/halfLife):
// the decayed usage at time t is usage·2^(-(t-base)/halfLife), so time
// passing costs nothing and charging is O(1).
type assocUsage struct {
	usage   float64
	vtc     float64
	backlog bool
	seen    uint64
}

type accountUsage struct {
	usage   float64
	vtc     float64
	backlog bool
	seen    uint64

	lastLeft    string // user of this account that most recently left the backlog
	lastLeftSet bool
	minC        float64 // scratch for Backlog: min weighted counter of continuing users
}

type jobUsage struct {
	service  float64 // attained GPU-seconds
	rate     float64 // GPU-equivalents while running
	runs     []runSpan
	finished bool // Finish dropped it from Ledger.jobs
	// user, account and their records, as chargeUsage last looked them
	// up: a job is charged again and again (at every sweep, thousands
	// of running jobs on a big machine), and looking its association up
	// each time hashed two strings. Records are never deleted.
	user, account string
	assoc         *assocUsage
	acct          *accountUsage
}

// runSpan is a wall-clock interval a job ran, in Unix nanoseconds.
type runSpan struct{ from, to int64 }

// rebaseAt bounds the scale factor 2^((t-base)/halfLife) at 2^60 before
// the ledger renormalises, far from float64's limits.
const rebaseAt = 60

// NewLedger returns an empty ledger.
func NewLedger(p LedgerParams) (*Ledger, error) {
	if p.Samples < 0 {
		return nil, fmt.Errorf("ledger: samples %d: want >= 0", p.Samples)
	}
	if p.Samples == 0 {
		p.Samples = 10000
	}
	h := p.HalfLife
	if h == 0 {
		h = 7 * 24 * time.Hour
	}
	l := &Ledger{
		assocs:     map[Assoc]*assocUsage{},
		accounts:   map[string]*accountUsage{},
		jobs:       map[int64]*jobUsage{},
		maxSamples: p.Samples,
	}
	if h > 0 {
		l.halfLife = h.Seconds()
	}
	return l, nil
}

func (l *Ledger) assoc(a Assoc) *assocUsage {
	l.lookups++
	u := l.assocs[a]
	if u == nil {
		u = &assocUsage{}
		l.assocs[a] = u
		l.keys++
	}
	return u
}

func (l *Ledger) account(name string) *accountUsage {
	u := l.accounts[name]
	if u == nil {
		u = &accountUsage{}
		l.accounts[name] = u
		l.keys++
	}
	return u
}

// Charge records that j ran from from to to at its service rate svc.Rate(j):
// it adds the service to the job's attained service, to the VTC counters of
// its association and account, and to their fair-share usage, decayed
// exactly over the interval. Intervals of one job must not overlap.
func (l *Ledger) Charge(j *Job, from, to time.Time, svc Service) {
	if !to.After(from) {
		return
	}
	l.charge(j.ID, j.User, j.Account, svc.Rate(j), from, to)
}

// charge is Charge of the job with this id, user and account, running at
// rate (its Service.Rate), from before to.
func (l *Ledger) charge(id int64, user, account string, rate float64, from, to time.Time) {
	l.chargeUsage(l.usage(id), user, account, rate, from, to)
}

// usage is the job's record, created when it has none.
func (l *Ledger) usage(id int64) *jobUsage {
	ju := l.jobs[id]
	if ju == nil {
		ju = &jobUsage{}
		l.jobs[id] = ju
	}
	return ju
}

// chargeUsage is charge of the job whose record (usage) is ju.
func (l *Ledger) chargeUsage(ju *jobUsage, user, account string, rate float64, from, to time.Time) {
	units := chargeJob(ju, rate, l.seconds(from, to), from, to)
	if units == 0 {
		return
	}
	if ju.assoc == nil || user != ju.user || account != ju.account {
		m := &l.memo
		if m.assoc == nil || user != m.key.User || account != m.key.Account {
			m.key = Assoc{Account: account, User: user}
			m.assoc, m.acct = l.assoc(m.key), l.account(account)
		}
		ju.user, ju.account, ju.assoc, ju.acct = user, account, m.assoc, m.acct
	}
	l.chargeAssoc(ju.assoc, ju.acct, rate, units, from, to)
}

// chargeListed is chargeUsage of a job the Engine's sweep charges from its
// byStart entry en, whose record holds the job's association (en.known)
// and whose service and last span en holds: the sweep charges a running
// job again and again, and reading its record and spans at each charge
// was a chain of cache misses per job. The record is written, not read.
// It reports false, having changed nothing, when the interval does not
// extend the last span (the caller charges the job through chargeUsage).
func (l *Ledger) chargeListed(en *startEnt, from, to time.Time) bool {
	f, t := from.UnixNano(), to.UnixNano()
	if f > en.lastTo {
		return false
	}
	ju, rate := en.usage, en.rate
	units := rate * l.seconds(from, to)
	en.service += units
	ju.service, ju.rate = en.service, rate
	en.lastTo = max(en.lastTo, t)
	en.span.to = en.lastTo
	if units != 0 {
		l.chargeAssoc(en.assocUsage, en.acctUsage, rate, units, from, to)
	}
	return true
}

// seconds is to.Sub(from).Seconds(), worked out once for an interval
// charged again and again.
func (l *Ledger) seconds(from, to time.Time) float64 {
	m := &l.memo
	if !m.sok || from != m.sfrom || to != m.sto {
		m.sfrom, m.sto, m.secs, m.sok = from, to, to.Sub(from).Seconds(), true
	}
	return m.secs
}

// chargeJob adds to the job's record what it received from from to to,
// secs seconds, at rate, and returns that service.
func chargeJob(ju *jobUsage, rate, secs float64, from, to time.Time) float64 {
	units := rate * secs
	ju.service += units
	ju.rate = rate
	f, t := from.UnixNano(), to.UnixNano()
	if n := len(ju.runs); n > 0 && f <= ju.runs[n-1].to {
		ju.runs[n-1].to = max(ju.runs[n-1].to, t)
	} else {
		ju.runs = append(ju.runs, runSpan{f, t})
	}
	return units
}

// chargeAssoc adds units of service, received from from to to at rate,
// to the VTC counters and usage of an association (a) and its account.
func (l *Ledger) chargeAssoc(a *assocUsage, acct *accountUsage, rate, units float64, from, to time.Time) {
	a.vtc += units
	acct.vtc += units
	d := l.scaledIntegral(rate, from, to)
	a.usage += d
	acct.usage += d
	l.total += d
}

// scaledIntegral is ∫ rate·2^((s-base)/h) ds over [from, to]: the usage the
// interval adds, in the ledger's scaled units.
func (l *Ledger) scaledIntegral(rate float64, from, to time.Time) float64 {
	if l.halfLife == 0 {
		return rate * l.seconds(from, to)
	}
	m := &l.memo
	if m.ok && from == m.from && to == m.to && l.base == m.base {
		// The interval last worked out, with the same base: the base was
		// set and, at to, needed no rebase (or was rebased to it) then.
		return rate * l.halfLife / math.Ln2 * m.exp2 * m.expm1
	}
	if !l.baseSet {
		l.base, l.baseSet = from, true
	}
	if to.Sub(l.base).Seconds()/l.halfLife > rebaseAt {
		l.rebase(to)
	}
	if !m.ok || from != m.from || to != m.to || l.base != m.base {
		x1 := from.Sub(l.base).Seconds() / l.halfLife
		dx := to.Sub(from).Seconds() / l.halfLife
		m.exp2, m.expm1 = math.Exp2(x1), math.Expm1(dx*math.Ln2)
		m.from, m.to, m.base, m.ok = from, to, l.base, true
	}
	return rate * l.halfLife / math.Ln2 * m.exp2 * m.expm1
}

// rebase moves the decay reference to t, rescaling every stored usage.
func (l *Ledger) rebase(t time.Time) {
	f := l.decay(t)
	for _, a := range l.assocs {
		a.usage *= f
	}
	for _, a := range l.accounts {
		a.usage *= f
	}
	l.total *= f
	l.base = t
}

// decay is the factor that turns stored usage into usage at time at.
func (l *Ledger) decay(at time.Time) float64 {
	if l.halfLife == 0 || !l.baseSet {
		return 1
	}
	return math.Exp2(-at.Sub(l.base).Seconds() / l.halfLife)
}

// Finish forgets a job that left the system for good, keeping its total
// service as a sample of the service distribution if it received any.
func (l *Ledger) Finish(j *Job) {
	ju := l.jobs[j.ID]
	if ju == nil {
		return
	}
	ju.finished = true
	delete(l.jobs, j.ID)
	if ju.service <= 0 {
		return
	}
	if len(l.samples) < l.maxSamples {
		l.samples = append(l.samples, ju.service)
		return
	}
	l.samples[l.nextSample] = ju.service
	l.nextSample = (l.nextSample + 1) % l.maxSamples
}

// Backlog tells the ledger which jobs are pending now. An association (or
// account) with a pending job is backlogged. One that was not backlogged at
// the previous call and is now has its VTC counter lifted: its weighted
// counter (counter/shares) is raised to the smallest weighted counter of the
// siblings that stayed backlogged — accounts among accounts, users among the
// users of the same account — or, when no sibling stayed backlogged, to that
// of the sibling that most recently left the backlog (the one with the
// largest weighted counter when several left at once). A counter is never
// lowered, and zero-share associations are neither lifted nor lift others.
// This is VTC's counter lift (Sheng et al., OSDI'24, §4): idle users cannot
// bank credit. The authors' artifact (Ying1123/VTC-artifact) skips the lift
// when nobody else is backlogged; Fairway lifts to the last to leave, so a
// moment when the whole queue drains cannot be banked either. Users who
// become backlogged in the same call do not lift each other. The result
// does not depend on the order of pending.
func (l *Ledger) Backlog(pending []Job, shares *Shares) {
	l.epoch++
	ep := l.epoch
	// Who is pending now, each once. Only they and those backlogged at the
	// previous call (l.blAssocs, l.blAccounts) can change state, so the
	// loops below visit nobody else: a call costs O(pending + backlogged),
	// not O(every association ever seen).
	nowAssocs, nowAccounts := l.nowAssocs[:0], l.nowAccounts[:0]
	nowUsage := l.nowUsage[:0]
	if cap(l.blMemo) < len(pending) {
		l.blMemo = slices.Grow(l.blMemo[:0], len(pending))
	}
	memo := l.blMemo[:len(pending)]
	for i := range pending {
		j := &pending[i]
		m := &memo[i]
		// The slot's memo first: it holds the job's own strings, which
		// compare without reading their bytes.
		if m.assoc == nil || m.id != j.ID || m.user != j.User || m.account != j.Account {
			if i > 0 && j.User == pending[i-1].User && j.Account == pending[i-1].Account {
				// Queues hold runs of one user's jobs: the records of the
				// job before, seen just now.
				p := &memo[i-1]
				*m = backlogMemo{id: j.ID, user: j.User, account: j.Account, assoc: p.assoc, acct: p.acct}
				continue
			}
			*m = backlogMemo{id: j.ID, user: j.User, account: j.Account, assoc: l.assoc(AssocOf(j)), acct: l.account(j.Account)}
		}
		if u := m.assoc; u.seen != ep {
			u.seen = ep
			nowAssocs = append(nowAssocs, AssocOf(j))
			nowUsage = append(nowUsage, u)
		}
		if a := m.acct; a.seen != ep {
			a.seen = ep
			nowAccounts = append(nowAccounts, j.Account)
		}
	}

	// Accounts among accounts.
	minC, haveMin := math.Inf(1), false
	var left string
	leftC, haveLeft := math.Inf(-1), false
	for _, name := range l.blAccounts {
		a := l.accounts[name]
		w := shares.Account(name)
		now := a.seen == ep
		if w <= 0 {
			continue
		}
		c := a.vtc / w
		switch {
		case now:
			if c < minC {
				minC, haveMin = c, true
			}
		default:
			if !haveLeft || c > leftC || (c == leftC && name < left) {
				left, leftC, haveLeft = name, c, true
			}
		}
	}
	if haveLeft {
		l.lastLeft, l.lastLeftSet = left, true
	}
	if !haveMin && l.lastLeftSet {
		if a, ok := l.accounts[l.lastLeft]; ok {
			if w := shares.Account(l.lastLeft); w > 0 {
				minC, haveMin = a.vtc/w, true
			}
		}
	}
	for _, name := range nowAccounts {
		a := l.accounts[name]
		if !a.backlog && haveMin {
			if w := shares.Account(name); w > 0 {
				a.vtc = max(a.vtc, minC*w)
			}
		}
	}

	// Users among the users of their account: first the smallest weighted
	// counter of those staying backlogged, and who left, per account.
	for _, name := range nowAccounts {
		l.accounts[name].minC = math.Inf(1)
	}
	leavers := l.leavers
	clear(leavers)
	for i, k := range l.blAssocs {
		u := l.blUsage[i]
		w := shares.User(k)
		if w <= 0 {
			continue
		}
		now := u.seen == ep
		c := u.vtc / w
		switch {
		case now:
			acct := l.accounts[k.Account]
			acct.minC = min(acct.minC, c)
		default:
			if leavers == nil {
				leavers = map[string]leaver{}
				l.leavers = leavers
			}
			if o, ok := leavers[k.Account]; !ok || c > o.c || (c == o.c && k.User < o.user) {
				leavers[k.Account] = leaver{k.User, c}
			}
		}
	}
	for acct, lv := range leavers {
		a := l.accounts[acct]
		a.lastLeft, a.lastLeftSet = lv.user, true
	}
	for i, k := range nowAssocs {
		u := nowUsage[i]
		if !u.backlog {
			w := shares.User(k)
			acct := l.accounts[k.Account]
			m := acct.minC
			if math.IsInf(m, 1) && acct.lastLeftSet {
				ll := Assoc{Account: k.Account, User: acct.lastLeft}
				if lu, ok := l.assocs[ll]; ok {
					if lw := shares.User(ll); lw > 0 {
						m = lu.vtc / lw
					}
				}
			}
			if w > 0 && !math.IsInf(m, 1) {
				u.vtc = max(u.vtc, m*w)
			}
		}
	}
	for _, u := range l.blUsage {
		u.backlog = false
	}
	for _, name := range l.blAccounts {
		l.accounts[name].backlog = false
	}
	for _, u := range nowUsage {
		u.backlog = true
	}
	for _, name := range nowAccounts {
		l.accounts[name].backlog = true
	}
	// The lists swap roles: who is backlogged now, and scratch for the
	// next call.
	l.blAssocs, l.nowAssocs = nowAssocs, l.blAssocs
	l.blUsage, l.nowUsage = nowUsage, l.blUsage
	l.blAccounts, l.nowAccounts = nowAccounts, l.blAccounts
}

// Usage is the association's fair-share usage at time at, in decayed
// GPU-seconds.
func (l *Ledger) Usage(a Assoc, at time.Time) float64 {
	if l == nil {
		return 0
	}
	if u := l.assocs[a]; u != nil {
		return u.usage * l.decay(at)
	}
	return 0
}

// AccountUsage is the account's fair-share usage at time at, in decayed
// GPU-seconds.
func (l *Ledger) AccountUsage(account string, at time.Time) float64 {
	if l == nil {
		return 0
	}
	if u := l.accounts[account]; u != nil {
		return u.usage * l.decay(at)
	}
	return 0
}

// TotalUsage is the whole cluster's fair-share usage at time at (Slurm's
// root association), in decayed GPU-seconds.
func (l *Ledger) TotalUsage(at time.Time) float64 {
	if l == nil {
		return 0
	}
	return l.total * l.decay(at)
}

// Counter is the association's VTC counter: GPU-seconds received, raised by
// lifts, not divided by shares.
func (l *Ledger) Counter(a Assoc) float64 {
	if l == nil {
		return 0
	}
	if u := l.assocs[a]; u != nil {
		return u.vtc
	}
	return 0
}

// AccountCounter is the account's VTC counter, as Counter.
func (l *Ledger) AccountCounter(account string) float64 {
	if l == nil {
		return 0
	}
	if u := l.accounts[account]; u != nil {
		return u.vtc
	}
	return 0
}

// Attained is the service job id has received so far, in GPU-seconds.
func (l *Ledger) Attained(id int64) float64 {
	if l == nil {
		return 0
	}
	if u := l.jobs[id]; u != nil {
		return u.service
	}
	return 0
}

// Assocs lists the associations the ledger knows, sorted.
func (l *Ledger) Assocs() []Assoc {
	if l == nil {
		return nil
	}
	out := make([]Assoc, 0, len(l.assocs))
	for a := range l.assocs {
		out = append(out, a)
	}
	slices.SortFunc(out, compareAssoc)
	return out
}

func compareAssoc(a, b Assoc) int {
	if a.Account != b.Account {
		if a.Account < b.Account {
			return -1
		}
		return 1
	}
	if a.User < b.User {
		return -1
	}
	if a.User > b.User {
		return 1
	}
	return 0
}

// leaver is, in Backlog, the user whose association of an account
// stopped being backlogged with the largest counter.
type leaver struct {
	user string
	c    float64
}

// Clone returns an independent copy, for what-if ranking.
func (l *Ledger) Clone() *Ledger {
	if l == nil {
		return nil
	}
	c := *l
	c.memo = chargeMemo{} // its pointers are l's records
	c.blMemo = nil
	c.assocs = make(map[Assoc]*assocUsage, len(l.assocs))
	for k, v := range l.assocs {
		x := *v
		c.assocs[k] = &x
	}
	c.accounts = make(map[string]*accountUsage, len(l.accounts))
	for k, v := range l.accounts {
		x := *v
		c.accounts[k] = &x
	}
	c.jobs = make(map[int64]*jobUsage, len(l.jobs))
	for k, v := range l.jobs {
		x := *v
		x.runs = slices.Clone(v.runs)
		x.assoc, x.acct = nil, nil // l's records
		c.jobs[k] = &x
	}
	c.samples = slices.Clone(l.samples)
	c.blAssocs, c.blAccounts = slices.Clone(l.blAssocs), slices.Clone(l.blAccounts)
	c.nowAssocs, c.nowAccounts, c.leavers = nil, nil, nil
	c.blUsage, c.nowUsage = make([]*assocUsage, len(c.blAssocs)), nil
	for i, k := range c.blAssocs {
		c.blUsage[i] = c.assocs[k]
	}
	return &c
}

// sortedSamples returns the finished jobs' service samples, ascending.
func (l *Ledger) sortedSamples() []float64 {
	if l == nil {
		return nil
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	return s
}
