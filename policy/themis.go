package policy

import (
	"fmt"
	"sync"
	"time"
)

// ThemisParams configures themis. The zero value gives the defaults.
type ThemisParams struct {
	// MinRun floors T_independent so a job predicted to take no time does
	// not get an infinite ρ. 0 means 10 s, the τ of bounded slowdown.
	MinRun time.Duration
}

// themis ranks by finish-time fairness (Mahajan et al., "Themis: Fair and
// Efficient GPU Cluster Scheduling", NSDI'20, §3, "Finish-time fairness"):
// ρ = T_shared / T_independent, where T_independent is the job's finish
// time had it run alone on a 1/N share of the cluster (N contending users)
// and T_shared its finish time in the shared cluster. Themis offers
// resources to the apps with the largest ρ first; here the worst-off job
// ranks first.
//
// Adaptation to a batch scheduler that only re-ranks pending, rigid jobs:
// Themis' apps are Fairway's jobs; N is the number of distinct users with a
// pending or running job; a job's share is C/N of the snapshot's capacity
// C = Snapshot.GPUs. A rigid job needing G GPU-equivalents on a share of
// C/N runs slowed by max(1, G·N/C), so T_independent = run·max(1, G·N/C)
// (run = predicted run time; C unknown means no slowdown). A pending job
// that started now would finish after T_shared = (Now − Submit) + run. So
// ρ grows as the job waits, fastest for short jobs of users with small
// shares — Themis' incentive. Themis' auction and its fairness knob f
// pick which apps bid, not their order, and have no counterpart here.
// Value = ρ. Parts: rho, t_shared_s, t_independent_s, active_users (N).
type themis struct {
	minRun float64
	sc     scorer
	users  activeMemo
}

// NewThemis returns the "themis" policy.
func NewThemis(p ThemisParams) (Policy, error) {
	if p.MinRun < 0 {
		return nil, fmt.Errorf("themis: min run %s: want >= 0", p.MinRun)
	}
	if p.MinRun == 0 {
		p.MinRun = 10 * time.Second
	}
	return &themis{minRun: p.MinRun.Seconds(), sc: scorer{
		names:   []string{"rho", "t_shared_s", "t_independent_s", "active_users"},
		weights: []float64{1, 0, 0, 0},
	}}, nil
}

func (*themis) Name() string { return "themis" }

func (p *themis) Rank(s *Snapshot) ([]Score, error) {
	return p.rankIndexed(s, &rankIndex{running: indexRunning(s)})
}

func (*themis) readsShares() bool { return false }

// rankIndexed ranks s with N counted from its pending users and the
// running ones x keeps (activeUsersOf), not from a pass over every
// running job: thousands on a big machine, at every cycle.
func (p *themis) rankIndexed(s *Snapshot, x *rankIndex) ([]Score, error) {
	n, ok := p.users.count(s.Pending, x.running)
	if !ok {
		buf := getRankScratch()
		n = activeUsersOf(s.Pending, x.running, &buf.users)
		buf.put()
	}
	const k = 4
	parts := s.partsBuf(k * len(s.Pending))
	clock := newSecondsClock(s.Now)
	for i := range s.Pending {
		j := &s.Pending[i]
		run := predictedAt(s, i).Seconds()
		tid := max(run*shareSlowdown(s, j, n), p.minRun)
		tsh := clock.since(j.Submit) + run
		row := parts[k*i : k*i+k]
		row[0], row[1], row[2], row[3] = tsh/tid, tsh, tid, n
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("themis: %w", err)
	}
	return scores, nil
}

// shareSlowdown is how much slower than alone job j runs on its owner's 1/N
// share of the snapshot's capacity C: max(1, G·N/C), 1 when C is unknown.
func shareSlowdown(s *Snapshot, j *Job, users float64) float64 {
	if s.GPUs <= 0 {
		return 1
	}
	return shareSlowdownAt(s, s.Service.Rate(j), users)
}

// shareSlowdownAt is shareSlowdown for a job of rate rate
// (s.Service.Rate(j)), read once by a caller that needs it again.
func shareSlowdownAt(s *Snapshot, rate, users float64) float64 {
	if s.GPUs <= 0 {
		return 1
	}
	return max(1, rate*users/s.GPUs)
}

// finishTimeFairness is job j's ρ were it to start now and run for run
// seconds: T_shared / T_independent with T_shared = (Now − Submit) + run
// and T_independent = max(run · shareSlowdown, minRun). clock is
// newSecondsClock(s.Now): it reads Now − Submit as s.Now.Sub does,
// without its cost at every pending job.
func finishTimeFairness(s *Snapshot, clock *secondsClock, j *Job, run, users, minRun float64) float64 {
	tid := max(run*shareSlowdown(s, j, users), minRun)
	return (clock.since(j.Submit) + run) / tid
}

// finishTimeFairnessAt is finishTimeFairness for a job of rate rate
// (s.Service.Rate(j)) submitted since seconds ago (clock.since(j.Submit)),
// both read once by a caller that needs them again.
func finishTimeFairnessAt(s *Snapshot, rate, since, run, users, minRun float64) float64 {
	tid := max(run*shareSlowdownAt(s, rate, users), minRun)
	return (since + run) / tid
}

// activeUsersOf is assocGroups.activeUsers for the pending jobs pending
// without grouping them: themis reads N alone, and grouping the queue by
// association and account at every cycle cost a tenth of its simulation.
// N is the running users plus the pending users not running, each
// collected once in *seen (reused, cleared here); a run of one user's jobs
// costs one comparison per job.
func activeUsersOf(pending []Job, x *runningIndex, seen *map[string]struct{}) float64 {
	if *seen == nil {
		*seen = map[string]struct{}{}
	}
	m := *seen
	clear(m)
	for i := range pending {
		u := pending[i].User
		if i > 0 && u == pending[i-1].User {
			continue
		}
		if _, ok := x.users[u]; !ok {
			m[u] = struct{}{}
		}
	}
	return float64(len(x.users) + len(m))
}

// activeMemo counts N as activeUsersOf does from what it remembers of the
// last queues: per queue slot the job seen there and its user's number,
// and per user number the running index's cell of the user's running
// jobs (runningIndex.userCell). A queue seen again, most of whose slots
// keep their jobs, costs a comparison per job and no lookup by name; a
// big machine's queue is hundreds of jobs at every cycle.
type activeMemo struct {
	mu sync.Mutex // held by one count; others count without the memo
	// Per slot of the last queue: the job, its user and the user's
	// number, -1 when the slot holds nothing.
	id   []int64
	user []string
	num  []int32
	// Per user number: the name, the cell of x (nil until read), and the
	// count call that last counted the user.
	nums  map[string]int32
	names []string
	cells []*int32
	seen  []uint64
	calls uint64
	x     *runningIndex // the index the cells are x's
}

// count is activeUsersOf(pending, x); ok is false, with nothing counted,
// while another goroutine uses the memo.
func (m *activeMemo) count(pending []Job, x *runningIndex) (n float64, ok bool) {
	if !m.mu.TryLock() {
		return 0, false
	}
	defer m.mu.Unlock()
	if m.x != x {
		m.x = x
		clear(m.cells)
	}
	if m.nums == nil {
		m.nums = map[string]int32{}
	}
	for len(m.num) < len(pending) {
		m.id, m.user, m.num = append(m.id, 0), append(m.user, ""), append(m.num, -1)
	}
	m.calls++
	notRunning := 0
	for i := range pending {
		j := &pending[i]
		u := m.num[i]
		if u < 0 || m.id[i] != j.ID || m.user[i] != j.User {
			u = m.number(j.User)
			m.id[i], m.user[i], m.num[i] = j.ID, j.User, u
		}
		if m.seen[u] == m.calls {
			continue
		}
		m.seen[u] = m.calls
		c := m.cells[u]
		if c == nil {
			c = x.userCell(m.names[u])
			m.cells[u] = c
		}
		if *c == 0 {
			notRunning++
		}
	}
	return float64(len(x.users) + notRunning), true
}

// number is user's number, given at its first sight.
func (m *activeMemo) number(user string) int32 {
	u, ok := m.nums[user]
	if !ok {
		u = int32(len(m.names))
		m.nums[user] = u
		m.names, m.cells, m.seen = append(m.names, user), append(m.cells, nil), append(m.seen, 0)
	}
	return u
}

// themis' key is linear in the time since the job's submission while N
// and its prediction stay: ρ = (w + run)/tid. A ClockOrder keeps its
// order between points, the caller setting N (SetUsers) and keying a job
// again when its prediction changes (Rekey). The constants are run and
// tid, computed as rankIndexed computes them.
func (p *themis) clockConsts(s *Snapshot, j *Job, i int, users float64) (run, tid float64) {
	var d time.Duration
	if i >= 0 {
		d = predictedAt(s, i)
	} else {
		d = predictedRun(s, j)
	}
	run = d.Seconds()
	return run, max(run*shareSlowdown(s, j, users), p.minRun)
}

func (*themis) clockSince(j *Job) (time.Time, bool) { return j.Submit, true }

func (*themis) clockReadsUsers() bool { return true }

func (*themis) clockValue(w, run, tid float64) float64 { return (w + run) / tid }

// themis' key is c·w + run/tid with c = 1/tid, and run/tid is at most 1:
// tid is at least run·max(1, ·).
func (*themis) clockSlope(_, tid float64) float64 { return 1 / tid }

func (*themis) clockBound(y float64) float64 { return (y + 1) * clockMargin }

func (*themis) clockValues(keys []clockKey, jobs []clockJob, now *clockNow) {
	for i := range keys {
		k := &keys[i]
		j := &jobs[k.slot]
		k.value = (now.wait(j) + j.a) / j.b
	}
}
