package schedule

import (
	"github.com/fairway-hpc/fairway/policy"

	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Machine is the cluster a forecast plays the queue forward on: Nodes
// identical nodes of PerNode units, a unit being a GPU, or a processor
// when CPUs is set, or a GPU shard when ShardsPerGPU is set.
type Machine struct {
	Nodes   int
	PerNode int
	CPUs    bool
	// ShardsPerGPU, when above 0, counts the machine in GPU shards: a
	// whole GPU is ShardsPerGPU units, a shard one, so a shard job waits
	// for room like any other instead of needing nothing. (Which shards
	// share which GPU is not modelled.)
	ShardsPerGPU int
}

// Capacity is the machine's total number of units.
func (m Machine) Capacity() int { return m.Nodes * m.PerNode }

// Need is how many of the machine's units job j asks for.
func (m Machine) Need(j *policy.Job) int {
	if m.CPUs {
		return j.CPUs
	}
	if m.ShardsPerGPU > 0 {
		return j.GPUs*m.ShardsPerGPU + j.Shards
	}
	return j.GPUs
}

// DefaultForecastResolution is the forecast's clock step when
// ForecastParams.Resolution is 0: Slurm's backfill plans at the same
// resolution (slurm.conf SchedulerParameters bf_resolution, default 60 s).
const DefaultForecastResolution = time.Minute

// ForecastParams configures a forecast.
type ForecastParams struct {
	Machine Machine
	// Limits plays every job for its time limit instead of its predicted
	// run time: what Slurm's `squeue --start` says.
	Limits bool
	// NoBackfill starts jobs strictly in order, as the simulator's
	// NoBackfill does; the default is EASY backfilling.
	NoBackfill bool
	// DefaultLimit is the time limit of jobs that have none. 0 means
	// UnknownRun.
	DefaultLimit time.Duration
	// Resolution is the forecast's clock step: jobs end at the first step
	// at or after their expected end. 0 means DefaultForecastResolution;
	// time.Nanosecond plays exact times.
	Resolution time.Duration
}

// Expected is one job's forecast.
type Expected struct {
	JobID int64
	// Rank is the job's place in Fairway's order, 1 first; 0 for a
	// running job.
	Rank int
	// Start is when the job is expected to start (a running job's actual
	// start), End when it is expected to end: Start + Run.
	Start, End time.Time
	// Run is the run time the forecast assumed: the predicted run time
	// (or the time limit, under Limits), never more than the limit. For a
	// running job that has outlived its prediction it is what it has run
	// so far, twice over (see NewForecast).
	Run time.Duration
	// Units is what the job holds, of the machine's kind.
	Units int
	// Never is set for a pending job larger than the machine; Start and
	// End are zero.
	Never bool
	// Tasks is how many jobs a pending array record stands for (Job.Tasks,
	// at least 1). Start and End are its first task's, LastStart and
	// LastEnd its last task's (the same as Start and End for one job):
	// each task holds Units and runs Run.
	Tasks              int
	LastStart, LastEnd time.Time
}

// Forecast is what a play-forward of one snapshot expects: a start for
// every pending job, an end for every running one.
type Forecast struct {
	Now    time.Time
	Limits bool
	// Pending is every ranked job, in Fairway's order.
	Pending []Expected
	// Running is every running job, earliest start first.
	Running []Expected
	// index maps JobID to its place in Pending, built on first use.
	index     map[int64]int32
	indexOnce sync.Once
	steps     int // clock steps played, for benchmarks
}

// Job returns the forecast of pending job id.
func (f *Forecast) Job(id int64) (Expected, bool) {
	f.indexOnce.Do(func() {
		f.index = make(map[int64]int32, len(f.Pending))
		for i, e := range f.Pending {
			f.index[e.JobID] = int32(i)
		}
	})
	i, ok := f.index[id]
	if !ok {
		return Expected{}, false
	}
	return f.Pending[i], true
}

// Preceding is what happens before a pending job can start, each list in
// time order: the running jobs expected to end by then (Ends); the jobs
// ranked ahead of it expected to start by then, which must start first
// (Ahead); and the jobs ranked below it expected to start by then, which
// backfill into room it cannot use yet and need not start first
// (Backfill). The counts count every such job, listed or not.
type Preceding struct {
	Ends, Ahead, Backfill               []Expected
	EndCount, AheadCount, BackfillCount int
}

// Before returns what happens before pending job id can start. Each list
// holds at most most jobs (all when most <= 0), the earliest of those show
// accepts (every one when show is nil); the counts are of all of them.
// ok is false when id is not pending. Only the listed jobs are copied: the
// last of a long queue has the whole queue before it, and serve's API
// answers this per request.
func (f *Forecast) Before(id int64, most int, show func(Expected) bool) (p Preceding, ok bool) {
	e, ok := f.Job(id)
	if !ok || e.Never {
		return p, ok
	}
	var ends, ahead, backfill []int32
	for i, r := range f.Running {
		if !r.End.After(e.Start) {
			ends = append(ends, int32(i))
		}
	}
	for i, q := range f.Pending {
		if q.JobID == id || q.Never || q.Start.After(e.Start) {
			continue
		}
		if q.Rank < e.Rank {
			ahead = append(ahead, int32(i))
		} else {
			backfill = append(backfill, int32(i))
		}
	}
	p.EndCount, p.AheadCount, p.BackfillCount = len(ends), len(ahead), len(backfill)
	p.Ends = pick(f.Running, ends, func(x Expected) time.Time { return x.End }, most, show)
	p.Ahead = pick(f.Pending, ahead, func(x Expected) time.Time { return x.Start }, most, show)
	p.Backfill = pick(f.Pending, backfill, func(x Expected) time.Time { return x.Start }, most, show)
	return p, true
}

// pick copies from all, in the order of at (ties in the order of all), the
// jobs at indices idx that show accepts, at most most of them (all when
// most <= 0).
func pick(all []Expected, idx []int32, at func(Expected) time.Time, most int, show func(Expected) bool) []Expected {
	slices.SortStableFunc(idx, func(a, b int32) int { return at(all[a]).Compare(at(all[b])) })
	var out []Expected
	for _, i := range idx {
		if most > 0 && len(out) == most {
			break
		}
		if show == nil || show(all[i]) {
			out = append(out, all[i])
		}
	}
	return out
}

// fjob is one job's state in a play-forward.
type fjob struct {
	alloc []Use
	run   int64 // ns
	limit int64 // ns
	start int64 // ns from now; running jobs' may be negative
	end   int64 // when it ends, on the forecast's clock
	ended bool
}

// fcEnd is a job ending at t on the forecast's clock.
type fcEnd struct {
	t int64
	k int32
}

func (a fcEnd) before(b fcEnd) bool { return a.t < b.t || (a.t == b.t && a.k < b.k) }

// fcEnds is a binary min-heap of ends (container/heap would box every
// push).
type fcEnds []fcEnd

func (h *fcEnds) push(e fcEnd) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *fcEnds) pop() fcEnd {
	q := *h
	top, n := q[0], len(q)-1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q[c+1].before(q[c]) {
			c++
		}
		if !q[c].before(q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	*h = q
	return top
}

// NewForecast plays snapshot s forward from s.Now and returns when every
// pending job is expected to start. Running jobs end at their start plus
// their predicted run time (s.Predicted, or the time limit when there is
// none), never past their time limit; pending jobs start in the order of
// ranking (Policy.Rank's, best first), scheduled as the simulator
// schedules them: EASY backfilling (see EASY), which plans with time
// limits as Slurm does, on the machine's nodes with the simulator's
// placement (see Pool). With p.Limits every job runs for its time limit,
// which is what `squeue --start` reports.
//
// A running job that has already outlived its prediction is expected to
// run as long again as it has run so far, up to its limit: for
// heavy-tailed run times the median remaining life of a job is its age
// (Harchol-Balter and Downey, "Exploiting process lifetime distributions
// for dynamic load balancing", SIGMETRICS 1996, §3). A running job past
// its limit ends at the next step.
//
// The forecast ignores what it cannot know: jobs submitted later (which
// may rank ahead), preemption, nodes going down or coming back, jobs
// cancelled while pending, reservations and partitions (the machine is
// one pool of identical nodes), and the ranking changing as time passes
// (ages and fair-share usage move); it keeps the snapshot's order. Running
// jobs are placed on the nodes in start order, since a snapshot does not
// say which nodes they hold; a running job that no longer fits is left
// out. Times are on a clock of p.Resolution steps from s.Now.
func NewForecast(s *policy.Snapshot, ranking []policy.Score, p ForecastParams) (*Forecast, error) {
	m := p.Machine
	if m.Nodes <= 0 || m.PerNode <= 0 {
		return nil, fmt.Errorf("forecast: machine of %d nodes × %d units: want both > 0", m.Nodes, m.PerNode)
	}
	if len(ranking) != len(s.Pending) {
		return nil, fmt.Errorf("forecast: ranking of %d jobs for %d pending", len(ranking), len(s.Pending))
	}
	res := int64(p.Resolution)
	if res <= 0 {
		res = int64(DefaultForecastResolution)
	}
	defLimit := p.DefaultLimit
	if defLimit <= 0 {
		defLimit = policy.UnknownRun
	}
	f := &Forecast{Now: s.Now, Limits: p.Limits}
	byID := make(map[int64]int32, len(s.Pending))
	for i := range s.Pending {
		byID[s.Pending[i].ID] = int32(i)
	}
	limitOf := func(j *policy.Job) int64 {
		if j.TimeLimit > 0 {
			return int64(j.TimeLimit)
		}
		return int64(defLimit)
	}
	runOf := func(j *policy.Job, limit int64) int64 {
		if p.Limits {
			return limit
		}
		// A prediction of 0 s is a prediction (jobs that end at once, as
		// on a test cluster), as it is to the policies' predictedRun; only
		// a missing one falls back to the limit.
		if d, ok := s.Predicted[j.ID]; ok {
			return min(max(int64(d), 0), limit)
		}
		return limit
	}

	// Jobs 0..len(running)-1 are the running ones, then the pending ones
	// in ranking order.
	run := make([]int, len(s.Running))
	for i := range run {
		run[i] = i
	}
	slices.SortStableFunc(run, func(a, b int) int { return s.Running[a].Start.Compare(s.Running[b].Start) })
	nr := len(run)
	// A pending array record stands for Tasks jobs: its first task is job
	// nr+r like any record's, the others come after every record, and
	// taskOf maps them back to the record's rank.
	extra := 0
	for _, sc := range ranking {
		if i, ok := byID[sc.JobID]; ok && i >= 0 {
			extra += max(s.Pending[i].Tasks, 1) - 1
		}
	}
	nk := nr + len(ranking)
	taskOf := make([]int32, 0, extra)
	jobs := make([]fjob, nk+extra)
	easy := NewEASY(m.Nodes, m.PerNode)
	events := make(fcEnds, 0, nr)
	byLimit := make([]LimitEnd, 0, nr)
	f.Running = make([]Expected, nr)
	now := s.Now
	var buf []Use
	for r, i := range run {
		j := &s.Running[i]
		fj := &jobs[r]
		fj.limit = limitOf(j)
		fj.start = int64(j.Start.Sub(now))
		fj.run = runOf(j, fj.limit)
		if fj.start+fj.run <= 0 && !p.Limits {
			fj.run = min(-2*fj.start, fj.limit)
		}
		end := max(fj.start+fj.run, 0)
		fj.end = stepUp(end, res)
		need := m.Need(j)
		f.Running[r] = Expected{JobID: j.ID, Start: j.Start, End: now.Add(time.Duration(fj.end)),
			Run: time.Duration(fj.end - fj.start), Units: need}
		if need <= 0 {
			continue
		}
		if a := easy.Free.Place(need, buf); a != nil {
			easy.Free.Take(a)
			fj.alloc = append([]Use(nil), a...)
			buf = a
		}
		events = append(events, fcEnd{fj.end, int32(r)})
		byLimit = append(byLimit, LimitEnd{T: fj.start + fj.limit, K: int32(r)})
	}
	slices.SortFunc(events, func(a, b fcEnd) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.k, b.k)) }) // a sorted slice is a heap
	slices.SortFunc(byLimit, compareLimitEnd)

	f.Pending = make([]Expected, len(ranking))
	nq := len(ranking) + extra
	q := Queue{Order: make([]int32, 0, nq), Need: make([]int32, 0, nq),
		Limit: make([]int64, 0, nq), blockMin: make([]int32, 0, nq/queueBlock+1)}
	capacity := m.Capacity()
	minNeed := capacity + 1
	for r, sc := range ranking {
		i, ok := byID[sc.JobID]
		if !ok {
			return nil, fmt.Errorf("forecast: ranked job %d is not pending", sc.JobID)
		}
		if i < 0 {
			return nil, fmt.Errorf("forecast: job %d ranked twice", sc.JobID)
		}
		j := &s.Pending[i]
		k := nr + r
		fj := &jobs[k]
		fj.limit = limitOf(j)
		fj.run = runOf(j, fj.limit)
		need := m.Need(j)
		tasks := max(j.Tasks, 1)
		f.Pending[r] = Expected{JobID: j.ID, Rank: r + 1, Units: need, Run: time.Duration(fj.run), Tasks: tasks}
		byID[sc.JobID] = -1
		if need > capacity {
			f.Pending[r].Never = true
			continue
		}
		// A job asking for none of the machine's units starts at once.
		q.Add(int32(k), max(need, 0), fj.limit)
		minNeed = min(minNeed, max(need, 0))
		// Its other tasks queue right behind it: Slurm starts an array's
		// tasks in index order, at the record's priority.
		for range tasks - 1 {
			kt := nk + len(taskOf)
			jobs[kt] = fjob{limit: fj.limit, run: fj.run}
			taskOf = append(taskOf, int32(r))
			q.Add(int32(kt), max(need, 0), fj.limit)
		}
	}

	ends := &limitEnds{jobs: jobs, byLimit: byLimit}
	var t int64
	var arena []Use // the started jobs' allocations, in blocks
	onStart := func(i int, a []Use) {
		k := q.Order[i]
		fj := &jobs[k]
		if len(arena)+len(a) > cap(arena) {
			arena = make([]Use, 0, max(1024, len(a)))
		}
		arena = append(arena, a...)
		fj.alloc = arena[len(arena)-len(a) : len(arena) : len(arena)]
		fj.start = t
		fj.end = stepUp(t+fj.run, res)
		events.push(fcEnd{fj.end, k})
		ends.add(LimitEnd{T: t + fj.limit, K: k})
		start, end := now.Add(time.Duration(t)), now.Add(time.Duration(fj.end))
		r := int(k) - nr
		if int(k) >= nk {
			r = int(taskOf[int(k)-nk])
		} else {
			f.Pending[r].Start, f.Pending[r].End = start, end
		}
		e := &f.Pending[r]
		if start.After(e.LastStart) {
			e.LastStart = start
		}
		if end.After(e.LastEnd) {
			e.LastEnd = end
		}
	}
	for q.Live() > 0 {
		f.steps++
		for len(events) > 0 && events[0].t <= t {
			e := events.pop()
			fj := &jobs[e.k]
			fj.ended = true
			ends.dead++
			easy.Free.Give(fj.alloc)
		}
		if easy.Free.Fits(minNeed) {
			live := q.Live()
			easy.Pass(t, &q, ends.all, !p.NoBackfill, onStart)
			if q.Live() < live {
				q.Compact()
				minNeed = q.minNeed()
			}
		}
		if q.Live() == 0 {
			break
		}
		if len(events) == 0 {
			// Nothing runs and the head does not fit: impossible for a
			// job no larger than the machine.
			return nil, fmt.Errorf("forecast: %d jobs cannot start on an idle machine", q.Live())
		}
		t = events[0].t
	}
	return f, nil
}

// stepUp rounds t up to a multiple of res.
func stepUp(t, res int64) int64 {
	if r := t % res; r != 0 {
		return t + res - r
	}
	return t
}

// limitEnds is the running jobs' limit ends in time order, as EASY's
// reservation reads them: a sorted list, the ends added since it was last
// rebuilt (sorted, short) and a count of the jobs in them that ended. A
// rebuild costs a pass over the running jobs, so it waits until the
// additions or the ended jobs are a good part of them.
type limitEnds struct {
	jobs    []fjob
	byLimit []LimitEnd
	added   []LimitEnd
	dead    int
	spare   []LimitEnd // the storage rebuild writes next
}

func (l *limitEnds) add(e LimitEnd) {
	i, _ := slices.BinarySearchFunc(l.added, e, compareLimitEnd)
	l.added = slices.Insert(l.added, i, e)
	if len(l.added) > 64+len(l.byLimit)/32 {
		l.rebuild()
	}
}

func (l *limitEnds) rebuild() {
	out := l.spare[:0]
	for e := range l.all2 {
		out = append(out, e)
	}
	l.spare = l.byLimit[:0]
	l.byLimit, l.added, l.dead = out, l.added[:0], 0
}

// all yields every live end and its allocation, earliest first.
func (l *limitEnds) all(yield func(int64, []Use) bool) {
	if l.dead > len(l.byLimit)/2+64 {
		l.rebuild()
	}
	for e := range l.all2 {
		if !yield(e.T, l.jobs[e.K].alloc) {
			return
		}
	}
}

// all2 yields every live end, earliest first. Ended jobs at the front of
// either list are dropped for good: they tend to gather there.
func (l *limitEnds) all2(yield func(LimitEnd) bool) {
	for len(l.byLimit) > 0 && l.jobs[l.byLimit[0].K].ended {
		l.byLimit, l.dead = l.byLimit[1:], l.dead-1
	}
	for len(l.added) > 0 && l.jobs[l.added[0].K].ended {
		l.added, l.dead = l.added[1:], l.dead-1
	}
	a := 0
	for _, e := range l.byLimit {
		for ; a < len(l.added) && compareLimitEnd(l.added[a], e) < 0; a++ {
			if !l.jobs[l.added[a].K].ended && !yield(l.added[a]) {
				return
			}
		}
		if !l.jobs[e.K].ended && !yield(e) {
			return
		}
	}
	for ; a < len(l.added); a++ {
		if !l.jobs[l.added[a].K].ended && !yield(l.added[a]) {
			return
		}
	}
}

// LimitEnd is a running job's end as the scheduler reckons it, by its time
// limit: at T (any clock), job K (the caller's index).
type LimitEnd struct {
	T int64
	K int32
}

func compareLimitEnd(a, b LimitEnd) int {
	if c := cmp.Compare(a.T, b.T); c != 0 {
		return c
	}
	return cmp.Compare(a.K, b.K)
}
