package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/power"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// Backfill selects how jobs behind a blocked one may start.
type Backfill string

// The backfill modes.
const (
	// EASY is EASY backfilling (Lifka, "The ANL/IBM SP scheduling system",
	// JSSPP 1995; Mu'alem and Feitelson, IEEE TPDS 12(6), 2001), as Slurm's
	// backfill plugin does it for the top job: the highest-priority job
	// that cannot start gets a reservation at the earliest time it fits,
	// judged by the time limits of the running jobs; a lower-priority job
	// may start now if it fits and either ends (by its own time limit)
	// before that time or uses only resources the reservation leaves free.
	EASY Backfill = "easy"
	// NoBackfill starts jobs strictly in priority order, stopping at the
	// first that does not fit (Slurm's main scheduler without backfill).
	NoBackfill Backfill = "none"
)

// ParseBackfill returns the Backfill spelled s.
func ParseBackfill(s string) (Backfill, error) {
	switch Backfill(s) {
	case EASY, NoBackfill:
		return Backfill(s), nil
	}
	return "", fmt.Errorf("unknown backfill %q: want easy or none", s)
}

// Config is one simulation: a cluster, a policy and how Slurm would act on
// its ranking.
type Config struct {
	Cluster Cluster
	// Policy ranks the queue at every scheduling point.
	Policy policy.Policy
	// Predictor predicts run times, learning from jobs as they finish in
	// simulated time. It must be fresh: Run feeds it, unless the policy
	// reads no prediction (policy.ReadsPredictions) and nothing else sees
	// them (no OnCycle, no forecast): then it leaves it untouched, since
	// it could not change the schedule. nil leaves policies to cost jobs
	// by their time limits.
	Predictor policy.Predictor
	// Backfill is EASY (the default, "") or NoBackfill. Ignored when
	// Preempt is set.
	Backfill Backfill
	// BackfillInterval is Slurm's bf_interval: when set, EASY's backfill
	// (the reservation and the jobs started behind it) runs only at
	// BackfillEpoch + k × BackfillInterval, as Slurm's backfill thread
	// wakes every bf_interval, while jobs that start in ranking order
	// start at every scheduling point, as Slurm's main scheduler starts
	// them on each submit and completion. 0: backfill at every point.
	// Ignored with Preempt or NoBackfill.
	BackfillInterval time.Duration
	// BackfillEpoch is when the backfill passes are counted from
	// (slurmctld's start); zero: the first submit.
	BackfillEpoch time.Time
	// Preempt runs the policy preemptively, as Tiresias does (Gu et al.,
	// NSDI'19, §4): at every scheduling point running jobs are ranked with
	// the pending ones, the best-ranked jobs that fit the cluster's capacity
	// run, and running jobs outside that set are preempted and requeued,
	// keeping their progress (checkpoint-restart) and attained service.
	Preempt bool
	// Tick is how often a preemptive simulation reconsiders the queue while
	// jobs wait, besides every arrival and completion. 0 means
	// policy.DefaultChargeEvery.
	Tick time.Duration
	// DefaultLimit is the time limit of jobs that have none (GPU traces),
	// as a partition's DefaultTime would give them. 0 means
	// policy.UnknownRun, 7 days.
	DefaultLimit time.Duration
	// History, when set, are finished jobs (with their recorded Start and
	// End, in end order) the engine learns from before the first event,
	// in one cycle at the first submit with nothing pending: the predictor
	// observes them and the fair-share ledger is charged for them, as
	// serve warms up from the accounting history. Every one must have
	// ended before the first simulated submit. Run only reads them.
	History []policy.Job
	// Shares, Ledger and ChargeEvery configure the policy.Engine.
	Shares      *policy.Shares
	Ledger      policy.LedgerParams
	ChargeEvery time.Duration
	// Service, when set, is what the engine charges jobs (fair-share
	// usage, attained service) instead of the cluster's units
	// (Cluster.Service): Slurm's billing, policy.Service.BillCPUs.
	Service *policy.Service
	// Progress, when set, is called now and then with the number of jobs
	// submitted so far and the total. An error stops the simulation: Run
	// returns it.
	Progress func(done, total int) error
	// OnCycle, when set, sees every cycle's observation, snapshot and
	// ranking before the simulator acts on it (a recorder, for tests and
	// decision logs). It must not keep or modify them.
	OnCycle func(o *policy.Observation, s *policy.Snapshot, ranking []policy.Score)

	// Power, when set, saves power by its rule and charges the resume
	// delay to the jobs placed on powered-down nodes (Result.Power).
	// Not with Preempt.
	Power *Power

	// Share, when set, lets jobs share GPUs (see Share; Result.Share).
	// Only without backfill (an empty Backfill is then NoBackfill),
	// preemption, partitions or power saving.
	Share *Share
	// checkShare, set by tests, checks the shared cluster's books
	// (simulator.checkShared) at every instant.
	checkShare bool
	// checkHot, set by tests, checks simulator.hot against the jobs
	// (simulator.checkHotJobs) before every decision.
	checkHot bool
	// rebuildQueue, set by tests, builds the EASY queue of a static
	// order afresh at every cycle (no keepQueue).
	rebuildQueue bool
	// queueBuilds, set by tests, counts the EASY queues built afresh.
	queueBuilds *int
	// clockCycles, set by tests, counts the cycles ordered by a
	// ClockOrder (cycleClock).
	clockCycles *int
	// HeliosQSSF replays the scheduling loop of the Helios artifact's QSSF
	// (Hu et al., SC'21; HeliosArtifact, framework/QSSF Service,
	// policies/qssf.py), for side-by-side checks against it:
	//   - the queue is ranked at every arrival, even when no pending job
	//     fits, so a job is predicted when it arrives, and it keeps that
	//     prediction while it waits (EngineParams.PredictOnce): the
	//     artifact assigns a job's estimate once, the first time it sorts
	//     the queue by estimates, and never again;
	//   - when every pending job arrived at this instant, they are taken
	//     by their demand, fewest units first, then in submit order, and
	//     not ranked or predicted: the artifact estimates only when some
	//     job was already waiting, and otherwise sorts by gpu_num.
	// Not with Preempt.
	HeliosQSSF bool

	// watch, set by MeasureForecast, makes start-time forecasts as the
	// simulation goes, without changing what it simulates.
	watch *forecastWatch
}

// service is what the engine charges: Config.Service, else the cluster's.
func (cfg *Config) service() policy.Service {
	if cfg.Service != nil {
		return *cfg.Service
	}
	return cfg.Cluster.Service()
}

// Service is the policy.Service of a cluster: GPUs, or one unit per
// processor on CPU clusters, whatever GPUs a job also holds (Need counts
// its CPUs there too).
func (c Cluster) Service() policy.Service {
	if c.Unit == CPUs {
		return policy.Service{BillCPUs: true}
	}
	return policy.Service{}
}

// Need is how many units of the cluster's kind job j asks for.
func (c Cluster) Need(j *policy.Job) int {
	if c.Unit == CPUs {
		return j.CPUs
	}
	return j.GPUs
}

// Result is what happened to every job of one simulation.
type Result struct {
	Policy  string
	Cluster Cluster
	// Jobs are the simulated jobs in submit order.
	Jobs []JobResult
	// Skipped counts the trace jobs left out, by reason.
	Skipped map[string]int
	// Cycles counts the scheduling cycles run (policy rankings).
	Cycles      int
	Preemptions int
	// Power is what power saving did, when Config.Power was set.
	Power *PowerResult
	// Share is what GPU sharing did, when Config.Share was set.
	Share *ShareResult
}

// JobResult is one simulated job.
type JobResult struct {
	ID      int64
	User    string
	Account string
	Units   int
	Submit  time.Time
	Start   time.Time // first start
	End     time.Time
	Run     time.Duration // time it ran, over all its runs
	Limit   time.Duration
	// Runs lists every span the job ran, only for jobs preempted at least
	// once (otherwise it ran from Start to End).
	Runs []Span
}

// Span is a half-open interval of time.
type Span struct{ From, To time.Time }

// Skip reasons.
const (
	SkipNoRun     = "no run time"
	SkipNoUnits   = "asks for no units of the cluster's kind"
	SkipTooLarge  = "larger than the cluster"
	SkipDuplicate = "duplicate job id"
)

// ErrNoJobs is returned by Run when no job of the trace can be simulated.
var ErrNoJobs = errors.New("no job to simulate")

// sjob is one job's simulation state.
type sjob struct {
	src   int32 // index in the input
	need  int32
	pos   int32 // index in pending
	rpos  int32 // with simulator.loose, index in running while it runs
	seq   int64 // running: its start's number (from 1), the running list's order (see runningAt); 0 when not running
	epoch int32 // bumped on preemption, to drop the stale end event
	state policy.State
	run   int64 // ns, capped at the limit
	limit int64 // ns
	done  int64 // ns run before the current start
	start int64 // current start, ns
	first int64 // first start, ns; -1 before
	end   int64
	view  int32 // partitioned: its router view
	ended bool  // finished for good
	alloc []schedule.Use
	runs  []Span
}

// hotJob is a job's need and whether it runs (see simulator.hot).
type hotJob struct {
	need    int32
	running bool
}

type endEvent struct {
	t     int64
	k     int32
	epoch int32
}

type limitEntry struct {
	t int64 // start + remaining limit, ns
	k int32
}

type simulator struct {
	cfg    Config
	in     []policy.Job
	jobs   []sjob
	byID   map[int64]int32
	eng    *policy.Engine
	now    int64
	origin time.Time

	// denseID, when not nil, is byID for the ids minID.. as a slice, -1
	// where byID has no job: a trace's ids are usually nearly consecutive,
	// and cycle looks up every ranked job.
	denseID []int32
	minID   int64

	pending []policy.Job
	pendK   []int32
	running []policy.Job
	runK    []int32
	starts  int64 // starts so far, numbering them (sjob.seq)
	// loose, when nothing but the engine reads the running list (no
	// OnCycle, no forecast, no GPU sharing; no preemption, or byService's,
	// which preempts in reverse start order by sjob.seq), keeps it as
	// Observation.RunningAppended allows rather than in start order: the
	// jobs the engine saw running at its last cycle (the first runBase),
	// in any order, then the ones started since; a job that stops has the
	// last of its part moved into its place (sjob.rpos), where keeping
	// start order moves every job behind it, thousands on a big machine.
	loose   bool
	runBase int
	// arrived counts the jobs submitted so far (jobs are in submit
	// order), oldest is the first of them that has not finished: with
	// Snapshot.EarliestSubmit, the earliest submit in the system.
	arrived, oldest int

	stopped []policy.Job
	cands   []policy.Job // preemptive: pending + running
	trueRun map[int64]time.Duration

	ends endHeap
	// With Config.BackfillInterval: the next backfill pass, and whether
	// one is due at this instant.
	bfNext int64
	bfDue  bool

	// lastCycle is when the last scheduling cycle ran (-1: none yet): the
	// preemption tick counts from it.
	lastCycle int64
	byLimit   limitList
	easy      *schedule.EASY
	free      *schedule.Pool // easy.Free
	place     []schedule.Use
	queue     schedule.Queue // order, for easy
	// queueKept is whether queue is the static order of the last cycle
	// less the jobs started since (keepQueue).
	queueKept bool

	needs needs

	order       []int32
	sel         []uint32
	selEpoch    uint32
	cycles      int
	preemptions int

	power *powerModel // nil: every node always up

	// static, when the policy's keys are static (policy.Traits.StaticOrder)
	// and nothing needs the Scores (no OnCycle, no forecast, no
	// preemption), holds the pending jobs keyed so far in the policy's
	// order: a cycle keys only the jobs that arrived since the last one
	// (unkeyed) and those the engine predicted anew, instead of re-ranking
	// the queue.
	static  *policy.StaticOrder
	unkeyed []int32
	// bare, with static, when the policy also reads no prediction: its
	// keys then depend on nothing the engine keeps (ledger, predictions),
	// so a cycle skips the engine and keys jobs on a Snapshot of the
	// queue alone (snap).
	bare bool
	snap policy.Snapshot
	// clock, when the policy's keys grow with each job's wait
	// (policy.NewClockOrder: wfp3, unicep; themis, see clockEngine) and
	// nothing needs the Scores, holds the pending jobs in the policy's
	// order: a cycle brings it to the cycle's instant and adds the jobs
	// that arrived (unkeyed), without the engine where the keys read
	// nothing it keeps (wfp3, unicep).
	clock *policy.ClockOrder
	// clockEngine, with clock, when the keys also read each job's
	// prediction and N, the users with a pending or running job (themis):
	// a cycle runs the engine's update for the predictions, sets N, kept
	// here (users), and keys again the jobs the engine predicted anew,
	// and every job at a new N.
	clockEngine bool
	users       userCount
	// byService, preemptive, when the policy's keys change only when the
	// engine charges a job (policy.NewServiceOrder: tiresias' 2D-LAS) and
	// nothing needs the Scores, holds the candidates, pending and running,
	// in the policy's order and picks the ones to run: a cycle keys the
	// jobs that arrived or were requeued (unkeyed) and, when the engine
	// swept, the running ones whose key may have changed, instead of
	// copying every running job into the queue, ranking them all and
	// walking the ranking.
	byService *policy.ServiceOrder
	// charge, with byService when nothing but the Ledger's spans is
	// read, replaces the engine (serviceCharge); chargeEvery is the
	// engine's charging period.
	charge      *serviceCharge
	chargeEvery time.Duration
	victims     []int32 // scratch for cycleByService
	// hot is each job's need and whether it runs, as decidePreemptive
	// reads them for every job it ranks (thousands on a big machine): a
	// dense copy of sjob's need and seq != 0, where reading sjob missed
	// the cache at every job.
	hot     []hotJob
	toStart []int32 // scratch for decidePreemptive
	// qneed and qrem are each job's need and remaining limit (limit −
	// done), dense, as decideEASY reads them for every pending job at
	// every point to build the EASY queue (schedule.Queue.Fill), where
	// reading sjob missed the cache at every job.
	qneed []int32
	qrem  []int64

	// parts, on a partitioned cluster (Cluster.Layout), replaces easy,
	// free, queue and needs with one of each per view.
	parts *partState

	sh *shareState // nil: no GPU sharing
}

// Run simulates jobs on cfg's cluster under cfg's policy and returns what
// happened to each. A job's run time is its trace run time (End − Start),
// capped at its time limit as Slurm would kill it; its demand is its GPUs
// (or processors, on a CPU cluster). Jobs are submitted at their trace
// submit times, in trace order on ties.
//
// Events are processed in time order; at one instant every completion,
// then every arrival, then one scheduling cycle: the Observation goes
// through policy.Engine.Cycle (ledger, prediction, ranking, the code serve
// runs) and the ranking is acted on as Slurm would (see Backfill and
// Config.Preempt). A non-preemptive cycle is skipped when no pending job
// fits the free resources, since no decision could start one.
func Run(jobs []policy.Job, cfg Config) (*Result, error) {
	if err := cfg.Cluster.validate(); err != nil {
		return nil, err
	}
	if cfg.Policy == nil {
		return nil, fmt.Errorf("simulate: no policy")
	}
	service := cfg.service()
	if cfg.Share != nil {
		if err := checkShareConfig(&cfg); err != nil {
			return nil, err
		}
		service.ShardsPerGPU = cfg.Share.ShardsPerGPU
	}
	switch cfg.Backfill {
	case "":
		cfg.Backfill = EASY
	case EASY, NoBackfill:
	default:
		return nil, fmt.Errorf("simulate: unknown backfill %q", cfg.Backfill)
	}
	if cfg.Tick <= 0 {
		cfg.Tick = policy.DefaultChargeEvery
	}
	if cfg.DefaultLimit <= 0 {
		cfg.DefaultLimit = policy.UnknownRun
	}
	if cfg.BackfillInterval < 0 {
		return nil, fmt.Errorf("simulate: backfill interval %v: want >= 0", cfg.BackfillInterval)
	}
	if cfg.Power != nil && cfg.Preempt {
		return nil, fmt.Errorf("simulate: power saving with preemption is not modelled")
	}
	if cfg.HeliosQSSF && cfg.Preempt {
		return nil, fmt.Errorf("simulate: the Helios artifact's QSSF loop does not preempt")
	}
	if cfg.Cluster.Layout != nil {
		switch {
		case cfg.Preempt:
			return nil, fmt.Errorf("simulate: preemption on a partitioned cluster is not modelled")
		case cfg.Power != nil:
			return nil, fmt.Errorf("simulate: power saving on a partitioned cluster is not modelled")
		case cfg.watch != nil:
			return nil, fmt.Errorf("simulate: start-time forecasts on a partitioned cluster are not modelled")
		}
	}
	chargeEvery := cfg.ChargeEvery
	if cfg.Preempt && chargeEvery == 0 {
		// A preemptive policy ranks running jobs by what they have
		// attained: charge them at least as often as it reconsiders.
		chargeEvery = cfg.Tick
	}
	pred := cfg.Predictor
	if !policy.ReadsPredictions(cfg.Policy) && cfg.OnCycle == nil && cfg.watch == nil {
		// Training and querying it is most of such a run's time, for
		// predictions nobody reads.
		pred = nil
	}
	eng, err := policy.NewEngine(policy.EngineParams{
		Policy:      cfg.Policy,
		Predictor:   pred,
		Ledger:      cfg.Ledger,
		Shares:      cfg.Shares,
		Service:     service,
		GPUs:        float64(cfg.Cluster.Capacity()),
		ChargeEvery: chargeEvery,
		PredictOnce: cfg.HeliosQSSF,
		// The forecast (watch) reads the Ledger; a recorder (OnCycle)
		// may keep the Snapshot.
		LedgerUnread: cfg.OnCycle == nil && cfg.watch == nil,
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s := &simulator{cfg: cfg, in: jobs, eng: eng, byID: make(map[int64]int32, len(jobs)), chargeEvery: chargeEvery}
	res := &Result{Policy: cfg.Policy.Name(), Cluster: cfg.Cluster, Skipped: map[string]int{}}
	if err := s.load(res); err != nil {
		return nil, err
	}
	if err := s.warm(); err != nil {
		return nil, err
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	s.result(res)
	return res, nil
}

// load prepares the jobs in submit order.
func (s *simulator) load(res *Result) error {
	if s.cfg.Cluster.Layout != nil {
		s.parts = &partState{router: newRouter(s.cfg.Cluster)}
	}
	var r *router
	if s.parts != nil {
		r = s.parts.router
	}
	admitted, err := admit(s.in, s.cfg, res.Skipped, s.byID, r)
	if err != nil {
		return err
	}
	capacity := s.cfg.Cluster.Capacity()
	s.origin = s.in[admitted[0].src].Submit
	if bf := int64(s.cfg.BackfillInterval); bf > 0 {
		// The first pass at or after the first submit.
		off := int64(0)
		if e := s.cfg.BackfillEpoch; !e.IsZero() {
			off = int64(e.Sub(s.origin)) % bf
			if off < 0 {
				off += bf
			}
		}
		s.bfNext = off
	}
	s.jobs = make([]sjob, len(admitted))
	s.hot = make([]hotJob, len(admitted))
	s.qneed = make([]int32, len(admitted))
	s.qrem = make([]int64, len(admitted))
	s.trueRun = make(map[int64]time.Duration, len(admitted))
	for k, a := range admitted {
		j := &s.in[a.src]
		s.jobs[k] = sjob{src: a.src, need: int32(a.need), state: a.state,
			run: int64(a.run), limit: int64(a.limit), first: -1, view: a.view}
		s.hot[k].need = int32(a.need)
		s.qneed[k], s.qrem[k] = int32(a.need), int64(a.limit)
		s.trueRun[j.ID] = a.run
	}
	if s.cfg.Share != nil {
		if s.sh, err = newShareState(s); err != nil {
			return err
		}
	}
	if s.parts != nil {
		s.parts.init(s)
	} else {
		s.easy = schedule.NewEASY(s.cfg.Cluster.Nodes, s.cfg.Cluster.PerNode)
		s.free = s.easy.Free
	}
	s.needs = newNeeds(capacity)
	s.sel = make([]uint32, len(s.jobs))
	s.indexIDs()
	if !s.cfg.Preempt && s.cfg.OnCycle == nil && s.cfg.watch == nil {
		s.static, _ = policy.NewStaticOrder(s.cfg.Policy)
		s.bare = s.static != nil && !policy.ReadsPredictions(s.cfg.Policy)
		if s.static == nil {
			s.clock, _ = policy.NewClockOrder(s.cfg.Policy)
			if s.clock != nil && s.clock.ReadsUsers() {
				// Where jobs share GPUs or run in partitions themis
				// ranks the whole queue as before.
				if s.sh != nil || s.parts != nil {
					s.clock = nil
				} else {
					s.clockEngine = true
					s.users.init(s.in, s.jobs)
				}
			}
		}
		s.loose = s.sh == nil
	}
	if s.cfg.Preempt && s.cfg.OnCycle == nil && s.cfg.watch == nil {
		s.byService, _ = policy.NewServiceOrder(s.cfg.Policy)
		s.loose = s.byService != nil
		if s.byService != nil && !policy.ReadsPredictions(s.cfg.Policy) && len(s.cfg.History) == 0 {
			if s.charge, err = newServiceCharge(s, s.chargeEvery); err != nil {
				return fmt.Errorf("simulate: %w", err)
			}
		}
	}
	if s.cfg.Power != nil {
		if s.power, err = newPowerModel(s.cfg.Power, s.cfg.Cluster, s.origin); err != nil {
			return err
		}
	}
	return nil
}

// warm runs the engine's learning cycle on cfg.History at the first
// submit. It is not a scheduling cycle: nothing is pending, OnCycle does
// not see it and Result.Cycles does not count it.
func (s *simulator) warm() error {
	h := s.cfg.History
	if len(h) == 0 {
		return nil
	}
	for i := range h {
		if h[i].Start.IsZero() || h[i].End.Before(h[i].Start) || !h[i].End.Before(s.origin) {
			return fmt.Errorf("simulate: history job %d (start %s, end %s) did not end before the first submit %s",
				h[i].ID, h[i].Start.Format(time.RFC3339), h[i].End.Format(time.RFC3339), s.origin.Format(time.RFC3339))
		}
	}
	if _, _, err := s.eng.Cycle(&policy.Observation{Now: s.origin, Stopped: h}); err != nil {
		return fmt.Errorf("simulate: warm up from %d history jobs: %w", len(h), err)
	}
	return nil
}

// replay is a job a simulation replays: its index in the input, and the
// run time, limit and final state it is replayed with.
type replay struct {
	src        int32
	view       int32 // on a partitioned cluster, the router's view it runs in
	need       int   // units asked (Cluster.Need; one GPU for a job of shards, with Share)
	run, limit time.Duration
	state      policy.State
}

// CutAtDefaultLimit counts the jobs of jobs that have no time limit and
// ran longer than policy.UnknownRun, the limit a replay gives them: it cuts
// them there, as timeouts, where Slurm let them run (a partition whose
// MaxTime is UNLIMITED). Reports say so (CutWarning) rather than replay a
// shorter history without a word.
func CutAtDefaultLimit(jobs []policy.Job) int {
	n := 0
	for i := range jobs {
		j := &jobs[i]
		if j.TimeLimit <= 0 && !j.Start.IsZero() && j.End.After(j.Start) && j.RunTime() > policy.UnknownRun {
			n++
		}
	}
	return n
}

// CutWarning is the line a report prints for n jobs CutAtDefaultLimit
// counts.
func CutWarning(n int) string {
	return fmt.Sprintf("warning: %d jobs without a time limit ran longer than %s; the replay cuts them there (as timeouts), where Slurm let them run",
		n, DefaultLimitText())
}

// DefaultLimitText spells the limit a replay gives a job without one
// (policy.UnknownRun): "7 days".
func DefaultLimitText() string {
	if d := policy.UnknownRun; d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return policy.UnknownRun.String()
}

// admit picks the jobs of in a simulation can replay, in submit order
// (stable), and counts the others in skipped by reason. byID maps each
// admitted job's id to its index in the result. A run past the job's limit
// (or cfg.DefaultLimit when it has none) is cut there and times out; a job
// whose state is not final completes. With a router (a partitioned
// cluster), each job is sent to its partition's view, and a job no node
// of its partition (and GPU type) can run is left out under a reason that
// names them.
func admit(in []policy.Job, cfg Config, skipped map[string]int, byID map[int64]int32, r *router) ([]replay, error) {
	capacity := cfg.Cluster.Capacity()
	order := make([]int32, 0, len(in))
	var views []int32 // by input index, with a router
	if r != nil {
		views = make([]int32, len(in))
	}
	for i := range in {
		j := &in[i]
		need, shardsFit := cfg.Cluster.Need(j), true
		if cfg.Share != nil {
			need, _, shardsFit = shareNeed(cfg.Share, j)
		}
		switch {
		case j.Start.IsZero() || j.End.IsZero() || j.End.Before(j.Start) || j.Submit.IsZero():
			skipped[SkipNoRun]++
		case need <= 0:
			skipped[SkipNoUnits]++
		case r == nil && need > capacity || !shardsFit:
			skipped[SkipTooLarge]++
		default:
			if _, dup := byID[j.ID]; dup {
				skipped[SkipDuplicate]++
				continue
			}
			if r != nil {
				v, why := r.route(j, need)
				if v < 0 {
					skipped[why]++
					continue
				}
				views[i] = v
			}
			byID[j.ID] = -1
			order = append(order, int32(i))
		}
	}
	if len(order) == 0 && len(in) > 0 {
		return nil, fmt.Errorf("simulate %d trace jobs: %w (left out: %s)", len(in), ErrNoJobs, trace.FormatLeftOut(skipped))
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("simulate %d trace jobs: %w", len(in), ErrNoJobs)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return in[a].Submit.Compare(in[b].Submit) })
	out := make([]replay, len(order))
	for k, i := range order {
		j := &in[i]
		limit := j.TimeLimit
		if limit <= 0 {
			limit = cfg.DefaultLimit
		}
		run, state := j.RunTime(), j.State
		if run > limit {
			run, state = limit, policy.StateTimeout
		}
		if !state.Finished() {
			state = policy.StateCompleted
		}
		out[k] = replay{src: i, run: run, limit: limit, state: state, need: cfg.Cluster.Need(j)}
		if cfg.Share != nil {
			out[k].need, _, _ = shareNeed(cfg.Share, j)
		}
		if r != nil {
			out[k].view = views[i]
		}
		byID[j.ID] = int32(k)
	}
	return out, nil
}

// indexIDs fills denseID when the simulated jobs' ids span at most four
// times as many ids as there are jobs.
func (s *simulator) indexIDs() {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for id, k := range s.byID {
		if k >= 0 {
			lo, hi = min(lo, id), max(hi, id)
		}
	}
	if lo > hi || uint64(hi-lo) >= 4*uint64(len(s.jobs)) {
		return
	}
	s.minID, s.denseID = lo, make([]int32, hi-lo+1)
	for i := range s.denseID {
		s.denseID[i] = -1
	}
	for id, k := range s.byID {
		if k >= 0 {
			s.denseID[id-lo] = k
		}
	}
}

// jobIndex is the index in jobs of the job with this id, -1 or !ok when
// no simulated job has it.
func (s *simulator) jobIndex(id int64) (int32, bool) {
	if s.denseID == nil {
		k, ok := s.byID[id]
		return k, ok
	}
	if id < s.minID || uint64(id-s.minID) >= uint64(len(s.denseID)) {
		return -1, false
	}
	return s.denseID[id-s.minID], true
}

func (s *simulator) at(ns int64) time.Time { return s.origin.Add(time.Duration(ns)) }

func (s *simulator) submitAt(k int) int64 {
	return int64(s.in[s.jobs[k].src].Submit.Sub(s.origin))
}

// loop runs the events to the end.
func (s *simulator) loop() error {
	s.lastCycle = -1
	return runEvents(s, len(s.jobs), &s.ends, s.cfg.Progress, "simulate")
}

// The simulator as runEvents drives it.

func (s *simulator) busy() bool { return len(s.running) > 0 || len(s.pending) > 0 }

func (s *simulator) waiting() int { return len(s.pending) }

func (s *simulator) epochOf(k int32) int32 { return s.jobs[k].epoch }

// dropStale pops stale end events on a shared cluster, where speeds change
// often; elsewhere a stale end event still wakes the loop, as it always has.
func (s *simulator) dropStale() {
	if s.sh != nil {
		s.dropStaleEnds()
	}
}

// wake brings t forward to the next preemption tick and the next forecast
// snapshot, when there is a queue to look at.
func (s *simulator) wake(t int64) int64 {
	if s.cfg.Preempt && len(s.pending) > 0 && s.lastCycle >= 0 {
		t = min(t, s.lastCycle+int64(s.cfg.Tick))
	}
	if w := s.cfg.watch; w != nil && len(s.pending) > 0 && t != math.MaxInt64 {
		t = min(t, w.next)
	}
	if s.power != nil && t != math.MaxInt64 {
		t = min(t, s.power.wakeAt())
	}
	if s.cfg.BackfillInterval > 0 && len(s.pending) > 0 && !s.cfg.Preempt && s.cfg.Backfill != NoBackfill {
		t = min(t, s.bfNext)
	}
	return t
}

// setNow moves the clock to t and reports whether a preemption tick is due
// (something to decide on besides completions and arrivals).
func (s *simulator) setNow(t int64) bool {
	s.now = t
	if s.power != nil {
		s.power.tick(t)
	}
	if bf := int64(s.cfg.BackfillInterval); bf > 0 {
		// A backfill pass is due when t reached the next one; the one
		// after is the first past t.
		s.bfDue = t >= s.bfNext
		if s.bfDue {
			s.bfNext += ((t-s.bfNext)/bf + 1) * bf
			if len(s.pending) > 0 && !s.cfg.Preempt && s.cfg.Backfill != NoBackfill {
				return true
			}
		}
	}
	return s.cfg.Preempt && s.lastCycle >= 0 && t >= s.lastCycle+int64(s.cfg.Tick)
}

// backfillNow reports whether this scheduling point backfills.
func (s *simulator) backfillNow() bool {
	return s.cfg.Backfill != NoBackfill && (s.cfg.BackfillInterval <= 0 || s.bfDue)
}

func (s *simulator) arrive(k int32) {
	s.arrived++
	s.submit(k)
	if w := s.cfg.watch; w != nil {
		w.arrived = append(w.arrived, k)
	}
}

// decide runs a scheduling cycle when something changed and a pending job
// could start (any job, when running ones may be preempted).
func (s *simulator) decide(changed bool) error {
	if s.cfg.checkShare {
		if err := s.checkShared(); err != nil {
			return fmt.Errorf("simulate: at %s: %w", s.at(s.now).Format(time.RFC3339), err)
		}
	}
	if s.cfg.checkHot {
		if err := s.checkHotJobs(); err != nil {
			return fmt.Errorf("simulate: at %s: %w", s.at(s.now).Format(time.RFC3339), err)
		}
	}
	if !changed || len(s.pending) == 0 || !s.cfg.Preempt && !s.cfg.HeliosQSSF && !s.anyFits() {
		if w := s.cfg.watch; w != nil {
			return w.idle(s)
		}
		return nil
	}
	if err := s.cycle(); err != nil {
		return err
	}
	s.lastCycle = s.now
	if s.cfg.checkShare {
		if err := s.checkShared(); err != nil {
			return fmt.Errorf("simulate: after the cycle at %s: %w", s.at(s.now).Format(time.RFC3339), err)
		}
	}
	return nil
}

// cycle ranks the queue through the engine and acts on the ranking.
func (s *simulator) cycle() error {
	if s.cfg.HeliosQSSF && s.allArrivedNow() {
		s.cycleArrivals()
		return nil
	}
	if s.static != nil {
		return s.cycleStatic()
	}
	if s.clock != nil {
		return s.cycleClock()
	}
	if s.byService != nil {
		return s.cycleByService()
	}
	o := policy.Observation{Now: s.at(s.now), Pending: s.pending, Running: s.running, Stopped: s.stopped, TrueRun: s.trueRun,
		RunningAppended: true}
	if s.cfg.Preempt {
		s.cands = append(append(s.cands[:0], s.pending...), s.running...)
		o.Pending = s.cands
	}
	s.runBase = len(s.running)
	cycle := s.eng.CycleReusing // the order below is all this cycle reads
	if s.cfg.OnCycle != nil || s.cfg.watch != nil {
		cycle = s.eng.Cycle // they may keep the ranking
	}
	snap, ranking, err := cycle(&o)
	if err != nil {
		return fmt.Errorf("simulate: cycle at %s: %w", o.Now.Format(time.RFC3339), err)
	}
	if s.cfg.OnCycle != nil {
		s.cfg.OnCycle(&o, snap, ranking)
	}
	if w := s.cfg.watch; w != nil {
		if err := w.cycle(s, snap, ranking); err != nil {
			return err
		}
	}
	s.cycles++
	s.stopped = s.stopped[:0]
	s.order = s.order[:0]
	for _, sc := range ranking {
		k, ok := s.jobIndex(sc.JobID)
		if !ok || k < 0 {
			return fmt.Errorf("simulate: policy %s ranked unknown job %d", s.cfg.Policy.Name(), sc.JobID)
		}
		s.order = append(s.order, k)
	}
	if len(s.order) != len(o.Pending) {
		return fmt.Errorf("simulate: policy %s ranked %d of %d pending jobs", s.cfg.Policy.Name(), len(s.order), len(o.Pending))
	}
	if s.cfg.Preempt {
		s.decidePreemptive()
	} else {
		s.decideEASY()
	}
	return nil
}

// cycleStatic is cycle for a policy with static keys: the engine updates
// its state as in a full cycle, and the order is the kept one, with the
// new jobs and the jobs predicted anew (re)keyed into it, or every job
// keyed again when the keys' origin moved.
func (s *simulator) cycleStatic() error {
	o := policy.Observation{Now: s.at(s.now), Pending: s.pending, Running: s.running, Stopped: s.stopped, TrueRun: s.trueRun,
		RunningAppended: true}
	var snap *policy.Snapshot
	s.runBase = len(s.running)
	if s.bare {
		s.snap = policy.Snapshot{Now: o.Now, Pending: o.Pending, Running: o.Running, TrueRun: o.TrueRun, Shares: s.cfg.Shares,
			Service: s.cfg.service(), GPUs: float64(s.cfg.Cluster.Capacity()), EarliestSubmit: s.earliestSubmit()}
		snap = &s.snap
	} else {
		var err error
		if snap, err = s.eng.Update(&o); err != nil {
			return fmt.Errorf("simulate: cycle at %s: %w", o.Now.Format(time.RFC3339), err)
		}
	}
	if s.static.Moved(snap) {
		// The keys' origin moved (f1's): key the whole queue again.
		s.queueKept = false
		if err := s.static.AddAll(snap, s.pending, s.pendK); err != nil {
			return s.rankError(snap, err)
		}
	} else {
		for _, id := range s.repredicted() {
			if k, ok := s.jobIndex(id); ok && k >= 0 && s.static.Has(id) {
				s.queueKept = false
				if err := s.static.Add(snap, &s.pending[s.jobs[k].pos], k); err != nil {
					return s.rankError(snap, err)
				}
			}
		}
		for _, k := range s.unkeyed {
			if err := s.static.Add(snap, &s.pending[s.jobs[k].pos], k); err != nil {
				return s.rankError(snap, err)
			}
		}
	}
	added := s.unkeyed
	s.unkeyed = s.unkeyed[:0]
	s.cycles++
	s.stopped = s.stopped[:0]
	if n := s.static.Len(); n != len(o.Pending) {
		return fmt.Errorf("simulate: policy %s ranked %d of %d pending jobs", s.cfg.Policy.Name(), n, len(o.Pending))
	}
	if s.sh == nil && s.parts == nil && s.keepQueue(added) {
		s.pass()
		return nil
	}
	s.order = append(s.order[:0], s.static.Tags()...)
	s.decideEASY()
	s.queueKept = s.sh == nil && s.parts == nil
	return nil
}

// cycleClock is cycle for a policy whose keys grow with each job's wait:
// the order is the kept one brought to now, with the jobs that arrived
// since added. wfp3's and unicep's keys read nothing the engine keeps,
// so the cycle skips it, as cycleStatic does for a bare static order;
// themis' read predictions (updateClock).
func (s *simulator) cycleClock() error {
	s.runBase = len(s.running)
	snap := &s.snap
	if s.clockEngine {
		var err error
		if snap, err = s.updateClock(); err != nil {
			return err
		}
	} else {
		s.snap = policy.Snapshot{Now: s.at(s.now), Pending: s.pending, Running: s.running, TrueRun: s.trueRun, Shares: s.cfg.Shares,
			Service: s.cfg.service(), GPUs: float64(s.cfg.Cluster.Capacity())}
		s.clock.Advance(s.snap.Now)
	}
	for _, k := range s.unkeyed {
		if err := s.clock.AddSized(snap, &s.pending[s.jobs[k].pos], k, s.qneed[k], s.qrem[k]); err != nil {
			return s.rankError(snap, err)
		}
	}
	s.unkeyed = s.unkeyed[:0]
	s.cycles++
	s.stopped = s.stopped[:0]
	if n := s.clock.Len(); n != len(s.pending) {
		return fmt.Errorf("simulate: policy %s ranked %d of %d pending jobs", s.cfg.Policy.Name(), n, len(s.pending))
	}
	if s.cfg.clockCycles != nil {
		*s.cfg.clockCycles++
	}
	if s.sh != nil || s.parts != nil {
		s.order = s.clock.AppendTags(s.order[:0])
		s.decideEASY()
		return nil
	}
	s.passClock()
	return nil
}

// updateClock is cycleClock's engine update where the keys read
// predictions and N (clockEngine): it brings the order to now and keys
// again the jobs held whose constants may have changed, every one at a
// new N (a few thousand of big's 55,000 points), else those the engine
// predicted anew (about one a point).
func (s *simulator) updateClock() (*policy.Snapshot, error) {
	o := policy.Observation{Now: s.at(s.now), Pending: s.pending, Running: s.running, Stopped: s.stopped, TrueRun: s.trueRun,
		RunningAppended: true}
	snap, err := s.eng.Update(&o)
	if err != nil {
		return nil, fmt.Errorf("simulate: cycle at %s: %w", o.Now.Format(time.RFC3339), err)
	}
	s.clock.Advance(snap.Now)
	if s.clock.SetUsers(float64(s.users.n)) {
		for i, k := range s.pendK {
			if s.clock.Has(k) {
				if err := s.clock.Rekey(snap, i, k); err != nil {
					return nil, s.rankError(snap, err)
				}
			}
		}
		return snap, nil
	}
	for _, id := range s.repredicted() {
		if k, ok := s.jobIndex(id); ok && k >= 0 && s.clock.Has(k) {
			if err := s.clock.Rekey(snap, int(s.jobs[k].pos), k); err != nil {
				return nil, s.rankError(snap, err)
			}
		}
	}
	return snap, nil
}

// passClock is decideEASY's pass over the ClockOrder's queue, given only
// the jobs it may start: on a big machine's busy points a thousand jobs
// wait, and ordering them all and walking them, to start two or three,
// was most of the run. The jobs start in order while they fit, each
// found best by the order (Best) and started by a pass of its own, as the
// pass over the whole queue starts them; the first that does not fit is
// the head, and the pass over the head and the jobs behind it within
// EASY.BackfillBounds, in order, starts what the whole queue's would.
func (s *simulator) passClock() {
	s.queueKept = false
	for {
		k, ok := s.clock.Best()
		if !ok {
			return
		}
		s.order = append(s.order[:0], k)
		s.queue.Fill(s.order, s.qneed, s.qrem)
		if !s.free.Fits(int(s.qneed[k])) {
			break
		}
		s.pass()
	}
	if !s.backfillNow() {
		return
	}
	head := s.order[0]
	fitCap, heldCap, shadow := s.easy.BackfillBounds(s.now, int(s.qneed[head]), s.limitEnds)
	s.clock.Behind(head, fitCap, heldCap, shadow-s.now)
	s.easy.PassMore(s.now, &s.queue, s.limitEnds, true,
		func(i int, a []schedule.Use) { s.start(s.queue.Order[i], a) }, s.moreClock)
}

// moreClock appends to q the next job of the ClockOrder's walk behind
// the head (EASY.PassMore): one at a time, since after one starts fewer
// may.
func (s *simulator) moreClock(q *schedule.Queue, fitCap, heldCap int) bool {
	k, ok := s.clock.NextBehind(fitCap, heldCap)
	if ok {
		q.Add(k, int(s.qneed[k]), s.qrem[k])
	}
	return ok
}

// keepQueue brings the EASY queue of the last static cycle up to date
// when the jobs added since (added, as keyed) all rank behind the ones it
// holds, as every arrival does under an order by submit time (fifo): they
// are appended, where building the queue again would cost a pass over
// every pending job at every scheduling point. Jobs leave the static order
// only when they start, which the pass marked in the queue. It reports
// false, changing nothing, when the queue must be built again.
func (s *simulator) keepQueue(added []int32) bool {
	q := &s.queue
	if !s.queueKept || s.cfg.rebuildQueue || len(added) > 8 || q.Live()+len(added) != s.static.Len() {
		return false
	}
	tail := s.static.TagsFrom(s.static.Len() - len(added))
	for _, k := range tail {
		if !slices.Contains(added, k) {
			return false
		}
	}
	q.Compact()
	for _, k := range tail {
		j := &s.jobs[k]
		q.Add(k, int(j.need), j.limit-j.done)
	}
	return true
}

// cycleByService is the preemptive cycle for a policy whose keys change
// only when the engine charges a job: the engine updates its state as in
// a full cycle (its Ledger is all such a policy reads), and the order is
// the kept one, with the jobs that arrived or were requeued since the
// last cycle and, when the engine swept, the running jobs keyed again.
func (s *simulator) cycleByService() error {
	o := policy.Observation{Now: s.at(s.now), Pending: s.pending, Running: s.running, Stopped: s.stopped, TrueRun: s.trueRun,
		RunningAppended: true}
	s.runBase = len(s.running)
	var snap *policy.Snapshot
	var swept bool
	if s.charge != nil {
		snap, swept = s.charge.update(s, o.Now)
	} else {
		var err error
		if snap, err = s.eng.Update(&o); err != nil {
			return fmt.Errorf("simulate: cycle at %s: %w", o.Now.Format(time.RFC3339), err)
		}
		swept = s.eng.Swept()
	}
	if swept {
		err := s.byService.Swept(snap, func(k int32) *policy.Job {
			if s.charge != nil {
				return s.charge.running(s, k, o.Now)
			}
			return &s.running[s.jobs[k].rpos] // loose: rpos is its place
		})
		if err != nil {
			return s.rankError(snap, err)
		}
	}
	for _, k := range s.unkeyed {
		if err := s.byService.Add(snap, &s.pending[s.jobs[k].pos], k, s.jobs[k].need); err != nil {
			return s.rankError(snap, err)
		}
	}
	s.unkeyed = s.unkeyed[:0]
	s.cycles++
	s.stopped = s.stopped[:0]
	if n := len(s.pending) + len(s.running); s.byService.Len() != n {
		return fmt.Errorf("simulate: policy %s ranked %d of %d jobs", s.cfg.Policy.Name(), s.byService.Len(), n)
	}
	// The jobs decidePreemptive would pick from the same order: the
	// running ones outside them are preempted latest started first, as
	// from a running list in start order, then the others started.
	start, stop := s.byService.Select(int64(s.cfg.Cluster.Capacity()))
	s.victims = append(s.victims[:0], stop...)
	slices.SortFunc(s.victims, func(a, b int32) int { return cmp.Compare(s.jobs[b].seq, s.jobs[a].seq) })
	for _, k := range s.victims {
		s.preempt(k)
	}
	s.startSelected(start)
	for _, k := range start {
		if s.isRunning(k) {
			s.byService.Started(snap, &s.running[s.jobs[k].rpos], k)
		}
	}
	return nil
}

// earliestSubmit is the earliest submit among the pending and running
// jobs, zero when there are none.
func (s *simulator) earliestSubmit() time.Time {
	for s.oldest < s.arrived && s.jobs[s.oldest].ended {
		s.oldest++
	}
	if s.oldest == s.arrived {
		return time.Time{}
	}
	return s.in[s.jobs[s.oldest].src].Submit
}

// repredicted is the engine's Repredicted, none when the cycle skipped
// the engine.
func (s *simulator) repredicted() []int64 {
	if s.bare {
		return nil
	}
	return s.eng.Repredicted()
}

// allArrivedNow reports whether every pending job was submitted at this
// instant.
func (s *simulator) allArrivedNow() bool {
	for _, k := range s.pendK {
		if s.submitAt(int(k)) != s.now {
			return false
		}
	}
	return true
}

// cycleArrivals is the cycle of Config.HeliosQSSF when every pending job
// has just arrived: they go by demand, fewest units first, then submit
// order (the trace's on ties), without the engine; the jobs it leaves
// pending are ranked and predicted at the next cycle.
func (s *simulator) cycleArrivals() {
	s.order = append(s.order[:0], s.pendK...)
	slices.SortFunc(s.order, func(a, b int32) int {
		if c := cmp.Compare(s.jobs[a].need, s.jobs[b].need); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // jobs are in submit order
	})
	s.cycles++
	s.decideEASY()
	if s.static != nil || s.clock != nil {
		// No job was keyed: the ones still pending are all unkeyed.
		s.unkeyed = append(s.unkeyed[:0], s.pendK...)
	}
}

// rankError is the error of a cycle whose ranking failed: the policy's
// own Rank's, as a full cycle returns it, else keyErr.
func (s *simulator) rankError(snap *policy.Snapshot, keyErr error) error {
	err := keyErr
	if _, rerr := s.cfg.Policy.Rank(snap); rerr != nil {
		err = rerr
	}
	return fmt.Errorf("simulate: cycle at %s: rank: %w", snap.Now.Format(time.RFC3339), err)
}

// decideEASY starts jobs in ranking order while they fit, then, under
// EASY, reserves for the first that does not and backfills behind it.
func (s *simulator) decideEASY() {
	if s.sh != nil {
		s.decideShared()
		return
	}
	if s.parts != nil {
		s.decideParts()
		return
	}
	s.queueKept = false
	if s.cfg.queueBuilds != nil {
		*s.cfg.queueBuilds++
	}
	s.queue.Fill(s.order, s.qneed, s.qrem)
	s.pass()
}

// pass runs the EASY pass over s.queue.
func (s *simulator) pass() {
	s.easy.Pass(s.now, &s.queue, s.limitEnds, s.backfillNow(),
		func(i int, a []schedule.Use) { s.start(s.queue.Order[i], a) })
}

// limitEnds yields the running jobs' limit ends, earliest first.
func (s *simulator) limitEnds(yield func(int64, []schedule.Use) bool) {
	for e := range s.byLimit.all {
		if !yield(e.t, s.jobs[e.k].alloc) {
			return
		}
	}
}

// decidePreemptive runs the best-ranked jobs that fit the capacity and
// preempts the running jobs outside them.
func (s *simulator) decidePreemptive() {
	s.selEpoch++
	capacity, used := s.cfg.Cluster.Capacity(), 0
	// The selected jobs not running, in order: the ones to start once the
	// others are preempted (preempting touches no selected job), where a
	// second pass over the order would visit every running job again.
	s.toStart = s.toStart[:0]
	for _, k := range s.order {
		if h := s.hot[k]; used+int(h.need) <= capacity {
			used += int(h.need)
			s.sel[k] = s.selEpoch
			if !h.running {
				s.toStart = append(s.toStart, k)
			}
		}
	}
	// The running list is in start order here (byService decides
	// when it is loose).
	for r := len(s.runK) - 1; r >= 0; r-- {
		if r < len(s.runK) && s.sel[s.runK[r]] != s.selEpoch {
			s.preempt(s.runK[r])
		}
	}
	s.startSelected(s.toStart)
}

// startSelected starts, in order, the jobs of toStart (selected by a
// preemptive decision, none running) that fit the free units.
func (s *simulator) startSelected(toStart []int32) {
	for _, k := range toStart {
		j := &s.jobs[k]
		if s.isRunning(k) {
			continue
		}
		if s.free.Fits(int(j.need)) {
			a := s.free.Place(int(j.need), s.place)
			s.free.Take(a)
			s.place = a
			s.start(k, a)
		}
	}
}

// checkHotJobs reports the first job whose entry in s.hot is not its
// need and running state, or whose entries in s.qneed and s.qrem are not
// its need and remaining limit.
func (s *simulator) checkHotJobs() error {
	for k := range s.jobs {
		j := &s.jobs[k]
		if want := (hotJob{need: j.need, running: j.seq != 0}); s.hot[k] != want {
			return fmt.Errorf("job %d: hot %+v, want %+v", s.in[j.src].ID, s.hot[k], want)
		}
		if s.qneed[k] != j.need || s.qrem[k] != j.limit-j.done {
			return fmt.Errorf("job %d: queue need %d and remaining limit %d, want %d and %d",
				s.in[j.src].ID, s.qneed[k], s.qrem[k], j.need, j.limit-j.done)
		}
	}
	return nil
}

// isRunning is whether job k is running: a field read, where the
// preemptive cycle asks it of every job it ranks (thousands running on a big
// machine, each a binary search of the running list).
func (s *simulator) isRunning(k int32) bool { return s.jobs[k].seq != 0 }

// runningAt is where job k is in the running list, -1 when it is not
// running. The list is in start order, so in order of seq: a binary search
// finds it, where keeping each job's index would cost a pass over the jobs
// behind it whenever one stops (thousands on a big machine).
func (s *simulator) runningAt(k int32) int {
	seq := s.jobs[k].seq
	i, ok := slices.BinarySearchFunc(s.runK, seq, func(q int32, seq int64) int { return cmp.Compare(s.jobs[q].seq, seq) })
	if !ok || s.runK[i] != k {
		return -1
	}
	return i
}

// submit queues job k.
func (s *simulator) submit(k int32) {
	j := &s.jobs[k]
	pj := s.in[j.src]
	pj.Start, pj.End, pj.State, pj.ExitCode = time.Time{}, time.Time{}, policy.StatePending, 0
	if s.sh != nil {
		s.sh.submitted(k, &pj)
	}
	s.enqueue(k, pj)
}

func (s *simulator) enqueue(k int32, pj policy.Job) {
	j := &s.jobs[k]
	if s.clockEngine {
		s.users.add(k)
	}
	j.pos = int32(len(s.pending))
	s.pending = append(s.pending, pj)
	s.pendK = append(s.pendK, k)
	s.needs.add(int(j.need))
	if s.parts != nil {
		s.parts.views[j.view].enqueue(int(j.need))
	}
	if s.static != nil || s.byService != nil || s.clock != nil {
		s.unkeyed = append(s.unkeyed, k)
	}
}

// removePending swap-removes entry p of a pending list and of its job
// indices (the order of the pending list does not matter: ranking does not
// depend on it). It returns the job removed and the index of the job moved
// into p, -1 when none moved.
func removePending(pending *[]policy.Job, keys *[]int32, p int32) (policy.Job, int32) {
	last := int32(len(*pending) - 1)
	pj, moved := (*pending)[p], int32(-1)
	if p != last {
		(*pending)[p], (*keys)[p] = (*pending)[last], (*keys)[last]
		moved = (*keys)[p]
	}
	*pending, *keys = (*pending)[:last], (*keys)[:last]
	return pj, moved
}

// dequeue removes job k from the pending list.
func (s *simulator) dequeue(k int32) policy.Job {
	j := &s.jobs[k]
	pj, moved := removePending(&s.pending, &s.pendK, j.pos)
	if moved >= 0 {
		s.jobs[moved].pos = j.pos
	}
	if s.static != nil {
		s.static.Remove(pj.ID)
	}
	if s.clock != nil {
		s.clock.Remove(k)
	}
	if s.parts != nil {
		s.parts.views[j.view].dequeue(int(j.need))
	}
	s.needs.remove(int(j.need))
	return pj
}

// start runs pending job k on allocation a, now; a is already taken
// from the free units.
func (s *simulator) start(k int32, a []schedule.Use) {
	j := &s.jobs[k]
	pj := s.dequeue(k)
	j.alloc = append(j.alloc[:0], a...)
	j.start = s.now
	if s.power != nil {
		// The job holds its nodes from now and runs once they are up;
		// its time limit counts from then, as Slurm's does after a boot.
		j.start += s.power.take(s.now, a)
	}
	if j.first < 0 {
		j.first = j.start
	}
	pj.Start, pj.State = s.at(s.now), policy.StateRunning
	s.starts++
	j.seq = s.starts
	s.hot[k].running = true
	j.rpos = int32(len(s.running))
	s.running = append(s.running, pj)
	s.runK = append(s.runK, k)
	s.insertLimit(limitEntry{t: j.start + j.limit - j.done, k: k})
	if s.sh != nil {
		s.startedShared(k)
		return
	}
	s.ends.push(endEvent{t: j.start + j.run - j.done, k: k, epoch: j.epoch})
}

// removeRunning removes entry p of a running list and of its job indices,
// keeping the rest in start order (as squeue lists them); setPos, when not
// nil, is told the new place of every job that moved.
func removeRunning(running *[]policy.Job, keys *[]int32, p int32, setPos func(k, q int32)) policy.Job {
	rj := (*running)[p]
	*running = slices.Delete(*running, int(p), int(p)+1)
	*keys = slices.Delete(*keys, int(p), int(p)+1)
	if setPos != nil {
		for q := int(p); q < len(*keys); q++ {
			setPos((*keys)[q], int32(q))
		}
	}
	return rj
}

// removeLoose removes running job k from a loose running list. When the
// engine has seen k running, the last job it has seen takes k's place and
// the jobs started since move down by one, keeping their start order (the
// engine learns their order from the list); otherwise the jobs started
// after k move down. Only the jobs started since the engine's last cycle
// move, a handful where the list holds thousands.
func (s *simulator) removeLoose(k int32) policy.Job {
	p, last := int(s.jobs[k].rpos), len(s.running)-1
	rj := s.running[p]
	if p < s.runBase {
		s.runBase--
		s.moveRunning(s.runBase, p)
		p = s.runBase
	}
	for q := p; q < last; q++ {
		s.moveRunning(q+1, q)
	}
	s.running[last] = policy.Job{} // keep no strings alive
	s.running, s.runK = s.running[:last], s.runK[:last]
	return rj
}

// moveRunning moves entry from of the running list to entry to.
func (s *simulator) moveRunning(from, to int) {
	if from != to {
		s.running[to], s.runK[to] = s.running[from], s.runK[from]
		s.jobs[s.runK[to]].rpos = int32(to)
	}
}

// stop takes running job k off the cluster now and returns its Job.
func (s *simulator) stop(k int32) policy.Job {
	j := &s.jobs[k]
	var rj policy.Job
	if s.loose {
		rj = s.removeLoose(k)
	} else {
		rj = removeRunning(&s.running, &s.runK, int32(s.runningAt(k)), nil)
	}
	j.seq = 0
	s.hot[k].running = false
	if s.clockEngine {
		s.users.remove(k)
	}
	s.removeLimit(limitEntry{t: j.start + j.limit - j.done, k: k})
	if s.parts != nil {
		s.parts.give(j.alloc)
	} else {
		s.free.Give(j.alloc)
	}
	if s.power != nil {
		s.power.give(s.now, j.alloc)
	}
	rj.End = s.at(s.now)
	return rj
}

// finish ends running job k now: it ran to completion (or its limit).
func (s *simulator) finish(k int32) {
	j := &s.jobs[k]
	if s.sh != nil {
		s.endingShared(k)
	}
	rj := s.stop(k)
	rj.State = j.state
	s.stopped = append(s.stopped, rj)
	if s.byService != nil {
		s.byService.Remove(k)
	}
	if j.runs != nil {
		j.runs = append(j.runs, Span{s.at(j.start), s.at(s.now)})
	}
	j.end, j.ended = s.now, true
}

// preempt requeues running job k, keeping its progress.
func (s *simulator) preempt(k int32) {
	j := &s.jobs[k]
	rj := s.stop(k)
	rj.State = policy.StatePending // requeued, not gone
	if s.byService != nil {
		s.byService.Requeued(k)
	}
	s.stopped = append(s.stopped, rj)
	j.runs = append(j.runs, Span{s.at(j.start), s.at(s.now)})
	j.done += s.now - j.start
	s.qrem[k] = j.limit - j.done
	j.epoch++
	s.preemptions++
	rj.Start, rj.End = time.Time{}, time.Time{}
	s.enqueue(k, rj)
}

func (s *simulator) insertLimit(e limitEntry) { s.byLimit.insert(e) }

func (s *simulator) removeLimit(e limitEntry) { s.byLimit.remove(e) }

func compareLimit(a, b limitEntry) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	}
	return int(a.k) - int(b.k)
}

// eventModel is the simulator's cluster model as runEvents drives it (one
// implementation, simulator, with or without GPU sharing).
type eventModel interface {
	busy() bool            // a job runs or waits
	waiting() int          // jobs pending
	epochOf(k int32) int32 // bumped when a job's end event goes stale
	dropStale()            // pop stale end events before choosing the next instant
	wake(t int64) int64    // bring t forward to a wake-up of the model's own
	setNow(t int64) bool   // move the clock; true when something is due anyway
	submitAt(k int) int64  // job k's submit instant
	arrive(k int32)        // job k is submitted now
	finish(k int32)        // job k's run ends now
	decide(changed bool) error
}

// runEvents is the one event loop of the simulators: at each instant, in
// time order, it ends the runs due (an end event whose job's epoch moved on
// is stale and skipped), submits the jobs due, and lets the model decide.
// what names the simulation in errors.
func runEvents(m eventModel, n int, ends *endHeap, progress func(done, total int) error, what string) error {
	next := 0 // next job to submit
	step := max(n/100, 1)
	for next < n || m.busy() {
		m.dropStale()
		t := int64(math.MaxInt64)
		if next < n {
			t = m.submitAt(next)
		}
		if len(*ends) > 0 {
			t = min(t, (*ends)[0].t)
		}
		t = m.wake(t)
		if t == math.MaxInt64 {
			return fmt.Errorf("%s: %d jobs wait on an idle cluster", what, m.waiting())
		}
		changed := m.setNow(t)
		for len(*ends) > 0 && (*ends)[0].t == t {
			if e := ends.pop(); e.epoch == m.epochOf(e.k) {
				m.finish(e.k)
				changed = true
			}
		}
		for next < n && m.submitAt(next) == t {
			m.arrive(int32(next))
			next++
			changed = true
			if progress != nil && next%step == 0 {
				if err := progress(next, n); err != nil {
					return fmt.Errorf("%s: stopped at job %d of %d: %w", what, next, n, err)
				}
			}
		}
		if err := m.decide(changed); err != nil {
			return err
		}
	}
	return nil
}

// endHeap is the pending end events, a min-heap by time then job index
// (so that ties end in a fixed order).
type endHeap []endEvent

func (h *endHeap) push(e endEvent) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !lessEnd(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *endHeap) pop() endEvent {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(q) {
			break
		}
		c := l
		if r := l + 1; r < len(q) && lessEnd(q[r], q[l]) {
			c = r
		}
		if !lessEnd(q[c], q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	*h = q
	return top
}

func lessEnd(a, b endEvent) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.k < b.k
}

// result fills res from the finished simulation.
func (s *simulator) result(res *Result) {
	res.Jobs = make([]JobResult, len(s.jobs))
	for k := range s.jobs {
		j := &s.jobs[k]
		in := &s.in[j.src]
		res.Jobs[k] = JobResult{
			ID: in.ID, User: in.User, Account: in.Account, Units: int(j.need),
			Submit: in.Submit, Start: s.at(j.first), End: s.at(j.end),
			Run: time.Duration(j.run), Limit: time.Duration(j.limit), Runs: j.runs,
		}
	}
	res.Cycles, res.Preemptions = s.cycles, s.preemptions
	if s.sh != nil {
		res.Share = &s.sh.res
	}
	if p := s.power; p != nil {
		p.tick(p.next) // the last, partial step
		p.account(p.next - int64(p.series.Step))
		p.res.Metrics = power.Summarise(p.name(), p.res.Steps, p.series.Step)
		// Node-hours off as the nodes were off, not sampled at step ends:
		// the idle clock powers down between them.
		p.res.Metrics.NodeHoursOff = p.offNs / float64(time.Hour)
		if d := p.res.Metrics.Days; d > 0 {
			p.res.Metrics.MeanOff = p.res.Metrics.NodeHoursOff / (24 * d)
		}
		res.Power = &p.res
	}
}
