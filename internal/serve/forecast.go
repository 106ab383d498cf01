package serve

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// QueueForecast is one cycle's start-time forecast (schedule.NewForecast)
// of every ranked job, with predicted run times and with time limits, as
// `fairway queue`, `fairway explain` and the HTTP API show it. It is
// built once per cycle and only read after: the API serves it from
// several goroutines.
type QueueForecast struct {
	At      time.Time        `json:"at"`
	Policy  string           `json:"policy"`
	Machine schedule.Machine `json:"-"`
	// Jobs is every ranked job, in squeue's order: by partition, then
	// Fairway's rank.
	Jobs []JobForecast `json:"jobs"`

	Predicted, Limits *schedule.Forecast `json:"-"`
	byID              map[int64]int
	runningUser       map[int64]string // the running jobs' users, for StartFor
}

// JobForecast is one pending job's forecast.
type JobForecast struct {
	JobID     int64     `json:"job_id"`
	User      string    `json:"user"`
	Account   string    `json:"account"`
	Partition string    `json:"partition"`
	Rank      int       `json:"rank"`
	Of        int       `json:"of"`
	Submit    time.Time `json:"submit"`
	WaitS     float64   `json:"wait_s"`
	// PredictedRunS is the run time the forecast assumed (the prediction,
	// or the time limit when there is none), never above the limit.
	PredictedRunS float64 `json:"predicted_run_s"`
	TimeLimitS    float64 `json:"time_limit_s,omitempty"`
	// ExpectedStart is the forecast with predicted run times; LimitStart
	// the same with time limits (what `squeue --start` says), a bound
	// Slurm's own planning gives. Both are absent for a job larger than
	// the partitions ranked.
	ExpectedStart *time.Time `json:"expected_start,omitempty"`
	LimitStart    *time.Time `json:"limit_bound_start,omitempty"`
	Reason        string     `json:"reason"`
	// GPUs and Shards are what one task asks for; Tasks is how many jobs
	// a pending array record stands for (1 otherwise), each played
	// forward as its own job: ExpectedStart is the first task's,
	// LastTaskExpectedStart the last one's.
	GPUs                  int        `json:"gpus"`
	Shards                int        `json:"shards,omitempty"`
	Tasks                 int        `json:"tasks"`
	LastTaskExpectedStart *time.Time `json:"last_task_expected_start,omitempty"`
}

// StartForecast is what must happen before a job starts, for explain.
type StartForecast struct {
	Expected   *time.Time `json:"expected_start,omitempty"`
	LimitBound *time.Time `json:"limit_bound_start,omitempty"`
	// MustEnd are the running jobs expected to end first, MustStart the
	// jobs ranked ahead expected to start first, Backfill the jobs ranked
	// below expected to start by then in room this job cannot use yet
	// (they need not start first), each in time order (schedule.Forecast.Before).
	// The counts are of all of them, also where the lists hold only the
	// asking user's own (StartFor).
	MustEnd        []Event `json:"must_end"`
	MustStart      []Event `json:"must_start"`
	Backfill       []Event `json:"backfill"`
	MustEndCount   int     `json:"must_end_count"`
	MustStartCount int     `json:"must_start_count"`
	BackfillCount  int     `json:"backfill_count"`
}

// Event is a job expected to start or end at At.
type Event struct {
	JobID int64     `json:"job_id"`
	At    time.Time `json:"at"`
	Units int       `json:"units"`
}

// MachineOf is the machine the forecast plays the ranked partitions on:
// their usable nodes (all partitions when none is named), counted in
// GPUs when any of them has GPUs, else in CPUs; in GPU shards when every
// GPU node splits each GPU into the same number of shards, so that shard
// jobs take room too. Nodes are taken as alike, each with the most any
// has.
func MachineOf(cl *slurmctl.Cluster, partitions []string) schedule.Machine {
	var gpuNodes, gpuMax, cpuNodes, cpuMax, spg int
	sharded := true
	for i := range cl.Nodes {
		n := &cl.Nodes[i]
		if !n.Usable() || !slices.ContainsFunc(n.Partitions, func(p string) bool { return len(partitions) == 0 || slices.Contains(partitions, p) }) {
			continue
		}
		cpuNodes, cpuMax = cpuNodes+1, max(cpuMax, n.CPUs)
		if n.GPUs > 0 {
			gpuNodes, gpuMax = gpuNodes+1, max(gpuMax, n.GPUs)
			if n.Shards == 0 || n.Shards%n.GPUs != 0 || (spg != 0 && n.Shards/n.GPUs != spg) {
				sharded = false
			} else {
				spg = n.Shards / n.GPUs
			}
		}
	}
	if gpuNodes > 0 && sharded && spg > 1 {
		return schedule.Machine{Nodes: gpuNodes, PerNode: gpuMax * spg, ShardsPerGPU: spg}
	}
	if gpuNodes > 0 {
		return schedule.Machine{Nodes: gpuNodes, PerNode: gpuMax}
	}
	return schedule.Machine{Nodes: cpuNodes, PerNode: cpuMax, CPUs: true}
}

// NewQueueForecast plays a cycle's snapshot and ranking forward on m both
// ways. running are the running jobs of the ranked partitions (the
// snapshot's may hold others).
func NewQueueForecast(pol string, m schedule.Machine, snap *policy.Snapshot, running []policy.Job, ranking []policy.Score) (*QueueForecast, error) {
	s := *snap
	s.Running = running
	fp := schedule.ForecastParams{Machine: m}
	pf, err := schedule.NewForecast(&s, ranking, fp)
	if err != nil {
		return nil, err
	}
	fp.Limits = true
	lf, err := schedule.NewForecast(&s, ranking, fp)
	if err != nil {
		return nil, err
	}
	q := &QueueForecast{At: s.Now, Policy: pol, Machine: m, Predicted: pf, Limits: lf, byID: make(map[int64]int, len(ranking)),
		runningUser: make(map[int64]string, len(running))}
	for i := range running {
		q.runningUser[running[i].ID] = running[i].User
	}
	jobs := make(map[int64]*policy.Job, len(s.Pending))
	for i := range s.Pending {
		jobs[s.Pending[i].ID] = &s.Pending[i]
	}
	// For the reasons: how many running jobs end by a given time, and how
	// many of the jobs ranked ahead start by then (jobs ranked below that
	// start earlier backfill and are not waited for). Jobs are visited in
	// rank order; ahead counts, by start time, the starts seen so far.
	ends := make([]time.Time, 0, len(pf.Running))
	for _, r := range pf.Running {
		ends = append(ends, r.End)
	}
	starts := make([]time.Time, 0, len(pf.Pending))
	for _, e := range pf.Pending {
		if !e.Never {
			starts = append(starts, e.Start)
		}
	}
	slices.SortFunc(ends, time.Time.Compare)
	slices.SortFunc(starts, time.Time.Compare)
	ahead := make(fenwick, len(starts)+1)
	var latestAhead time.Time // latest start of the jobs ranked ahead
	q.Jobs = make([]JobForecast, len(pf.Pending))
	times := make([]time.Time, 2*len(pf.Pending)) // the rows' start times, in one allocation
	for r, e := range pf.Pending {
		j := jobs[e.JobID]
		jf := JobForecast{JobID: j.ID, User: j.User, Account: j.Account, Partition: j.Partition, Rank: e.Rank, Of: len(pf.Pending),
			Submit: j.Submit, WaitS: max(0, s.Now.Sub(j.Submit).Seconds()), PredictedRunS: e.Run.Seconds(), TimeLimitS: j.TimeLimit.Seconds(),
			GPUs: j.GPUs, Shards: j.Shards, Tasks: e.Tasks}
		le := lf.Pending[r]
		switch {
		case e.Never:
			jf.Reason = fmt.Sprintf("asks for %d %s, more than the %d the ranked partitions have", e.Units, unitName(m), m.Capacity())
		default:
			times[2*r], times[2*r+1] = e.Start, le.Start
			start := e.Start
			jf.ExpectedStart, jf.LimitStart = &times[2*r], &times[2*r+1]
			if e.Tasks > 1 {
				last := e.LastStart
				jf.LastTaskExpectedStart = &last
			}
			nEnd := sort.Search(len(ends), func(i int) bool { return ends[i].After(start) })
			upTo := sort.Search(len(starts), func(i int) bool { return starts[i].After(start) }) // starts ≤ start
			nStart := ahead.sum(upTo)
			ahead.add(sort.Search(len(starts), func(i int) bool { return !starts[i].Before(start) }))
			ending := plural.N(nEnd, "running job", "running jobs")
			switch {
			case !start.After(s.Now):
				jf.Reason = "starts at Slurm's next scheduling pass: it fits now"
			case start.Before(latestAhead):
				jf.Reason = fmt.Sprintf("backfills ahead of higher-ranked jobs once %s end", ending)
				if nEnd == 1 {
					jf.Reason = fmt.Sprintf("backfills ahead of higher-ranked jobs once %s ends", ending)
				}
			case e.Rank == 1:
				jf.Reason = fmt.Sprintf("first in Fairway's order; waits for %s to end", ending)
			case nEnd == 0:
				jf.Reason = fmt.Sprintf("rank %d: waits for %s ranked ahead to start", e.Rank, plural.N(nStart, "queued job", "queued jobs"))
			default:
				jf.Reason = fmt.Sprintf("rank %d: waits for %s to end and %s ranked ahead to start", e.Rank, ending,
					plural.N(nStart, "queued job", "queued jobs"))
			}
			if start.After(latestAhead) {
				latestAhead = start
			}
		}
		q.Jobs[r] = jf
	}
	slices.SortStableFunc(q.Jobs, func(a, b JobForecast) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Rank, b.Rank))
	})
	for i, jf := range q.Jobs {
		q.byID[jf.JobID] = i
	}
	return q, nil
}

// fenwick counts items by position (a binary indexed tree over 1..n-1):
// add and sum cost O(log n), so counting, for every job of a long queue,
// the starts of the jobs ranked ahead stays O(n log n).
type fenwick []int

// add counts one item at position i (0-based).
func (f fenwick) add(i int) {
	for i++; i < len(f); i += i & -i {
		f[i]++
	}
}

// sum is the number of items at positions below n.
func (f fenwick) sum(n int) int {
	c := 0
	for ; n > 0; n -= n & -n {
		c += f[n]
	}
	return c
}

func unitName(m schedule.Machine) string {
	switch {
	case m.CPUs:
		return "CPUs"
	case m.ShardsPerGPU > 0:
		return fmt.Sprintf("GPU shards (%d a GPU)", m.ShardsPerGPU)
	}
	return "GPUs"
}

// Job returns pending job id's forecast.
func (q *QueueForecast) Job(id int64) (JobForecast, bool) {
	i, ok := q.byID[id]
	if !ok {
		return JobForecast{}, false
	}
	return q.Jobs[i], true
}

// Filter returns the jobs of user and account ("" matches any), in
// squeue's order.
func (q *QueueForecast) Filter(user, account string) []JobForecast {
	out, _ := q.Page(user, account, 0, math.MaxInt)
	return out
}

// Page returns the jobs of user and account ("" matches any) from the
// offset-th on, at most limit of them, and how many match in all. It
// copies only the page: the API answers it to any caller a few times a
// second, and a copy of every match (Filter) of a 100k-job queue is
// about 100 MB.
func (q *QueueForecast) Page(user, account string, offset, limit int) ([]JobForecast, int) {
	out := []JobForecast{}
	total := 0
	for i := range q.Jobs {
		jf := &q.Jobs[i]
		if (user != "" && jf.User != user) || (account != "" && jf.Account != account) {
			continue
		}
		if total >= offset && len(out) < limit {
			out = append(out, *jf)
		}
		total++
	}
	return out, total
}

// Start returns what must happen before pending job id starts.
func (q *QueueForecast) Start(id int64) (*StartForecast, bool) { return q.StartFor(id, "", 0) }

// StartFor is Start as user may see it: the jobs of other users that must
// end or start first are counted but not listed (no id, time or size of
// theirs), as Slurm's PrivateData=jobs hides them. user "" lists all.
// most > 0 lists at most most of each kind, the earliest; the counts
// still count them all. The API bounds it so that an answer about the
// last of 100k jobs is not 100k events.
func (q *QueueForecast) StartFor(id int64, user string, most int) (*StartForecast, bool) {
	jf, ok := q.Job(id)
	if !ok {
		return nil, false
	}
	sf := &StartForecast{Expected: jf.ExpectedStart, LimitBound: jf.LimitStart, MustEnd: []Event{}, MustStart: []Event{}, Backfill: []Event{}}
	var shown func(schedule.Expected) bool
	if user != "" {
		shown = func(e schedule.Expected) bool {
			if e.Rank == 0 { // running
				return q.runningUser[e.JobID] == user
			}
			return q.jobUser(e.JobID) == user
		}
	}
	pr, _ := q.Predicted.Before(id, most, shown)
	sf.MustEndCount, sf.MustStartCount, sf.BackfillCount = pr.EndCount, pr.AheadCount, pr.BackfillCount
	for _, e := range pr.Ends {
		sf.MustEnd = append(sf.MustEnd, Event{JobID: e.JobID, At: e.End, Units: e.Units})
	}
	for _, e := range pr.Ahead {
		sf.MustStart = append(sf.MustStart, Event{JobID: e.JobID, At: e.Start, Units: e.Units})
	}
	for _, e := range pr.Backfill {
		sf.Backfill = append(sf.Backfill, Event{JobID: e.JobID, At: e.Start, Units: e.Units})
	}
	return sf, true
}

// jobUser is the user of pending job id; "" when it is not one.
func (q *QueueForecast) jobUser(id int64) string {
	if i, ok := q.byID[id]; ok {
		return q.Jobs[i].User
	}
	return ""
}

// forecastState is what the Runner keeps of its forecasts.
type forecastState struct {
	last atomic.Pointer[QueueForecast] // the last cycle's, for the API
	busy atomic.Bool                   // a background forecast is running
	// first holds each pending job's first forecast starts (predicted,
	// limits), observed in the error histogram when it starts. Only the
	// forecast under way touches it.
	first map[int64][2]time.Time
}

// LastForecast returns the last forecast made, nil before the first or
// when forecasts are off. Safe for concurrent use.
func (r *Runner) LastForecast() *QueueForecast { return r.fc.last.Load() }

// forecastCycle plays the cycle forward, observes the forecast error of
// the jobs that started since the previous forecast, and publishes the
// forecast. A forecast that fails is logged: ranking and writing go on.
// With Config.ForecastAsync it does so on a goroutine of its own and
// returns nil at once, skipping this cycle's forecast while the previous
// one still runs; the snapshot's predictions are copied first, since the
// next cycle updates them.
func (r *Runner) forecastCycle(log *slog.Logger, cl *slurmctl.Cluster, snap *policy.Snapshot, scores []policy.Score) *QueueForecast {
	m := MachineOf(cl, r.cfg.Partitions)
	running := cl.Running(r.cfg.Partitions...)
	if !r.cfg.ForecastAsync {
		return r.forecast(log, r.policyLabel(), m, snap, running, scores)
	}
	if !r.fc.busy.CompareAndSwap(false, true) {
		log.Debug("start-time forecast skipped: the previous one is still running")
		return nil
	}
	s := policy.Snapshot{Now: snap.Now, Pending: snap.Pending, Running: snap.Running,
		Predicted: make(map[int64]time.Duration, len(snap.Pending)+len(running))}
	for _, js := range [][]policy.Job{snap.Pending, running} {
		for i := range js {
			if d, ok := snap.Predicted[js[i].ID]; ok {
				s.Predicted[js[i].ID] = d
			}
		}
	}
	label := r.policyLabel() // read here: a reload may change it while the forecast runs
	go func() {
		defer r.fc.busy.Store(false)
		r.forecast(log, label, m, &s, running, scores)
	}()
	return nil
}

// forecast makes, observes and publishes one forecast of the ranking of
// the policy called label.
func (r *Runner) forecast(log *slog.Logger, label string, m schedule.Machine, snap *policy.Snapshot, running []policy.Job, scores []policy.Score) *QueueForecast {
	prev := r.fc.last.Load()
	var q *QueueForecast
	if m.Nodes > 0 && m.PerNode > 0 {
		var err error
		if q, err = NewQueueForecast(label, m, snap, running, scores); err != nil {
			log.Warn("start-time forecast", "err", err)
		}
	} else {
		log.Warn("start-time forecast: the ranked partitions have no usable node")
	}
	if r.fc.first == nil {
		r.fc.first = map[int64][2]time.Time{}
	}
	if prev != nil {
		for i := range snap.Running {
			j := &snap.Running[i]
			pj, ok := prev.Job(j.ID)
			if !ok || pj.ExpectedStart == nil || j.Start.IsZero() {
				continue
			}
			first := r.fc.first[j.ID]
			r.metrics.forecastStarted(j.Start, [2]time.Time{*pj.ExpectedStart, *pj.LimitStart}, first)
			delete(r.fc.first, j.ID)
		}
	}
	if q != nil {
		live := make(map[int64][2]time.Time, len(q.Jobs))
		for _, jf := range q.Jobs {
			if f, ok := r.fc.first[jf.JobID]; ok {
				live[jf.JobID] = f
			} else if jf.ExpectedStart != nil {
				live[jf.JobID] = [2]time.Time{*jf.ExpectedStart, *jf.LimitStart}
			}
		}
		r.fc.first = live
		r.fc.last.Store(q)
	}
	return q
}

// forecastStarted observes a started job's forecast errors: the last
// forecast before it started and, when known, the first made for it.
func (m *Metrics) forecastStarted(start time.Time, last, first [2]time.Time) {
	for i, method := range []string{"predicted", "limits"} {
		m.forecastError.WithLabelValues(method, "last").Observe(absSeconds(last[i].Sub(start)))
		if !first[i].IsZero() {
			m.forecastError.WithLabelValues(method, "first").Observe(absSeconds(first[i].Sub(start)))
		}
	}
}

func absSeconds(d time.Duration) float64 {
	if d < 0 {
		d = -d
	}
	return d.Seconds()
}
