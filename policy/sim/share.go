package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// Shared GPUs. runShared replays a GPU trace like Run, with one more thing
// Slurm can do: a one-GPU job whose user and job name have a history of
// light use is submitted as shards (what contrib/slurm/job_submit.lua does
// with the table rewrite.Rules.Share feeds it), and shard jobs share a GPU.
// Sharing is not free, so jobs on one GPU slow each other by a stated
// interference model, and the benefit is measured, not assumed.
//
// Interference model. A job j has a solo utilization u_j (the fraction of
// the GPU's compute it keeps busy when alone, jobUsage.Util). On a GPU
// running the set J of jobs, each runs at speed
//
//	1 / ( max(1, Σ_{i∈J} u_i) · (1 + β·(|J|−1)) )
//
// of its solo speed: when the solo utilizations sum above one the device is
// time-sliced and each job gets u_j/Σu of it against the u_j it needs (the
// "summed utilization" rule), and every co-runner costs a further β
// (context switches, cache and memory-bandwidth contention; shareConfig.
// Interference, defaultInterference = 0.1 — an assumption, not a
// measurement). Speeds change whenever a job joins or leaves a GPU, and a
// job's remaining work is carried over. Memory is not enforced (shards are
// not, in Slurm): starts that put a GPU's summed peak memory above the device
// are counted (sharedResult.MemOversubscribed), since in reality they would
// risk out-of-memory failures.
//
// The Slurm model is Run's with NoBackfill: at every arrival and
// completion the Observation goes through policy.Engine.Cycle, and jobs start
// in ranking order until the first that does not fit. Whole-GPU jobs are
// placed as Run places them (consolidated, best fit on free whole GPUs;
// multi-node jobs take wholly free nodes), counting a GPU that holds shards
// as busy. A shard job goes to the GPU already holding shard jobs with the
// fewest free shards that fit (packing, as Slurm's first fit over a node's
// devices tends to), else to a free GPU on the node a one-GPU job would get.
// With sharing off runShared gives exactly Run's schedule under NoBackfill
// (TestRunShared_OffIsRun).
//
// No command runs it: it is the evaluation of the share rule that
// TestPhillyMIX_GPUSharing prints (INSTALL.md, "GPU sharing and resource
// rewriting"), so it is unexported.

// jobUsage is how a job uses one GPU when it runs alone.
type jobUsage struct {
	Util    float64 // fraction of the GPU's compute it keeps busy, (0, 1]
	MemFrac float64 // its peak memory over the GPU's memory, (0, 1]
}

// defaultInterference is the β of the interference model: each co-runner
// on a GPU slows a job by a further 10%.
const defaultInterference = 0.1

// shareConfig configures runShared.
type shareConfig struct {
	// On applies the share rule at submit time. Off, runShared is the
	// baseline: every job gets whole GPUs.
	On bool
	// Rewrite configures the share rule (rewrite.Rules.Share);
	// ShardsPerGPU is required, at least 2.
	Rewrite rewrite.Params
	// Usage is each job's use of a GPU, by job id. A job not in it uses a
	// whole GPU (Util 1, MemFrac 1): it is never judged light.
	Usage map[int64]jobUsage
	// Interference is β; negative is an error. Use defaultInterference
	// for the default.
	Interference float64
	// GPUMemMB is the device memory the recorded samples report (81920
	// when 0).
	GPUMemMB int64
}

// sharedResult is what happened to every job of one runShared, with what
// sharing did.
type sharedResult struct {
	*Result
	// Shared counts the jobs that ran on shards.
	Shared int
	// AllocGPUSeconds is the GPU time during which a GPU held at least one
	// job; WorkGPUSeconds the compute the jobs did, Σ u_j × GPUs_j × their
	// solo run time: the same work however it is scheduled.
	AllocGPUSeconds float64
	WorkGPUSeconds  float64
	// MemOversubscribed counts shard starts after which a GPU's summed
	// peak memory exceeded the device.
	MemOversubscribed int
	// MaxPerGPU is the most jobs that ran on one GPU at once.
	MaxPerGPU int
}

// sharedMetrics are Measure's metrics of a sharedResult and the GPU-time
// ones that sharing changes.
type sharedMetrics struct {
	Metrics
	Shared int `json:"shared_jobs"`
	// AllocUtilization is AllocGPUSeconds over capacity × makespan: how
	// much of the cluster was handed out. ComputeUtilization is
	// WorkGPUSeconds over the same: how much of it computed.
	AllocUtilization   float64 `json:"alloc_utilization"`
	ComputeUtilization float64 `json:"compute_utilization"`
	MemOversubscribed  int     `json:"mem_oversubscribed"`
	MaxPerGPU          int     `json:"max_jobs_per_gpu"`
}

// measureShared computes the metrics of a shared run. A shard job counts as
// one unit in Measure's utilization, so use AllocUtilization and
// ComputeUtilization for GPU time.
func measureShared(res *sharedResult, p MetricsParams) sharedMetrics {
	m := sharedMetrics{Metrics: Measure(res.Result, p), Shared: res.Shared, MemOversubscribed: res.MemOversubscribed, MaxPerGPU: res.MaxPerGPU}
	if span := m.Makespan * float64(res.Cluster.Capacity()); span > 0 {
		m.AllocUtilization = res.AllocGPUSeconds / span
		m.ComputeUtilization = res.WorkGPUSeconds / span
	}
	return m
}

// usageModel is the seeded model of GPU use that synthUsage draws from,
// for traces that record none (Philly-MIX, Helios). It is Fairway's
// assumption, not a measurement: jobs are grouped into templates (one user's
// jobs of one name, as the share rule groups them); a LightFraction of the
// templates are light (solo utilization uniform in [0.05, 0.35], peak memory
// in [0.03, 0.25] of the GPU), the others heavy (utilization in [0.5, 1],
// memory in [0.25, 0.95]); each job varies around its template's values by a
// lognormal factor (σ 0.15 for utilization, 0.1 for memory), clipped to
// [0.01, 1].
type usageModel struct {
	Seed          uint64
	LightFraction float64 // 0 means 0.4
}

// synthUsage draws every job's GPU use from m. The draw for a job depends
// only on the seed, its template and its id, not on the order of jobs.
func synthUsage(jobs []policy.Job, m usageModel) map[int64]jobUsage {
	if m.LightFraction == 0 {
		m.LightFraction = 0.4
	}
	type base struct{ util, mem float64 }
	templates := map[rewrite.ProfileKey]base{}
	out := make(map[int64]jobUsage, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		k := rewrite.ProfileKey{User: j.User, Name: j.Name}
		b, ok := templates[k]
		if !ok {
			h := fnv.New64a()
			h.Write([]byte(k.User + "\x00" + k.Name))
			r := rand.New(rand.NewPCG(m.Seed, h.Sum64()))
			if r.Float64() < m.LightFraction {
				b = base{0.05 + 0.30*r.Float64(), 0.03 + 0.22*r.Float64()}
			} else {
				b = base{0.5 + 0.5*r.Float64(), 0.25 + 0.70*r.Float64()}
			}
			templates[k] = b
		}
		r := rand.New(rand.NewPCG(m.Seed^0x9e3779b97f4a7c15, uint64(j.ID)))
		clip := func(v float64) float64 { return min(max(v, 0.01), 1) }
		out[j.ID] = jobUsage{Util: clip(b.util * math.Exp(0.15*r.NormFloat64())), MemFrac: clip(b.mem * math.Exp(0.1*r.NormFloat64()))}
	}
	return out
}

// gpuRef names one GPU: node and device index.
type gpuRef struct{ node, dev int32 }

type sgpu struct {
	whole  int32   // whole-GPU job holding it, -1 none
	shards int     // shards held by shard jobs
	jobs   []int32 // shard jobs on it
	busy   int64   // when it last became occupied, ns
}

// shJob is one job's state in a shared simulation.
type shJob struct {
	src     int32
	gpus    int // whole GPUs asked (0 for a shard job)
	shards  int
	u, mem  float64
	state   policy.State // final state
	solo    float64      // solo run time, s (trace run time, capped at the limit)
	soloNs  int64        // the same in ns, exact: a job that is never slowed ends exactly as in Run
	left    float64      // work left, in solo seconds
	speed   float64
	last    int64 // ns: when left was last brought up to date
	limit   int64 // ns
	start   int64
	first   int64
	end     int64
	epoch   int32
	pos     int32
	alloc   []gpuRef
	running bool
}

type shared struct {
	cfg    Config
	sh     shareConfig
	in     []policy.Job
	jobs   []shJob
	byID   map[int64]int32
	eng    *policy.Engine
	rules  *rewrite.Rules
	now    int64
	origin time.Time
	nodes  [][]sgpu
	spg    int

	pending []policy.Job
	pendK   []int32
	running []policy.Job
	runK    []int32
	stopped []policy.Job
	trueRun map[int64]time.Duration
	ends    endHeap

	samples map[rewrite.ProfileKey][]rewrite.UsageSample
	verdict map[rewrite.ProfileKey]int // shards for a one-GPU job of the key; 0 none
	res     sharedResult
}

// runShared simulates jobs on cfg's GPU cluster with shared GPUs as
// described above. cfg.Backfill must be NoBackfill (or empty, read as
// NoBackfill: EASY reservations are not modelled with changing speeds),
// and cfg.Preempt false.
func runShared(jobs []policy.Job, cfg Config, sh shareConfig) (*sharedResult, error) {
	if err := cfg.Cluster.validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Cluster.Unit != GPUs:
		return nil, errors.New("simulate shared GPUs: the cluster must hold GPUs")
	case cfg.Cluster.Layout != nil:
		return nil, errors.New("simulate shared GPUs: partitioned clusters are not modelled")
	case cfg.Policy == nil:
		return nil, errors.New("simulate shared GPUs: no policy")
	case cfg.Preempt:
		return nil, errors.New("simulate shared GPUs: preemption is not modelled")
	case cfg.Backfill != "" && cfg.Backfill != NoBackfill:
		return nil, fmt.Errorf("simulate shared GPUs: backfill %q is not modelled; use %q", cfg.Backfill, NoBackfill)
	case sh.Interference < 0:
		return nil, fmt.Errorf("simulate shared GPUs: interference %g: want >= 0", sh.Interference)
	case sh.Rewrite.ShardsPerGPU < 2:
		return nil, fmt.Errorf("simulate shared GPUs: %d shards per GPU: want at least 2", sh.Rewrite.ShardsPerGPU)
	}
	if cfg.DefaultLimit <= 0 {
		cfg.DefaultLimit = policy.UnknownRun
	}
	if sh.GPUMemMB <= 0 {
		sh.GPUMemMB = 81920
	}
	rules, err := rewrite.New(sh.Rewrite)
	if err != nil {
		return nil, fmt.Errorf("simulate shared GPUs: %w", err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{
		Policy: cfg.Policy, Predictor: cfg.Predictor, Ledger: cfg.Ledger, Shares: cfg.Shares,
		Service: policy.Service{ShardsPerGPU: sh.Rewrite.ShardsPerGPU}, GPUs: float64(cfg.Cluster.Capacity()), ChargeEvery: cfg.ChargeEvery,
	})
	if err != nil {
		return nil, fmt.Errorf("simulate shared GPUs: %w", err)
	}
	s := &shared{cfg: cfg, sh: sh, in: jobs, byID: make(map[int64]int32, len(jobs)), eng: eng, rules: rules,
		spg: sh.Rewrite.ShardsPerGPU, samples: map[rewrite.ProfileKey][]rewrite.UsageSample{}, verdict: map[rewrite.ProfileKey]int{}}
	s.res.Result = &Result{Policy: cfg.Policy.Name(), Cluster: cfg.Cluster, Skipped: map[string]int{}}
	if err := s.load(); err != nil {
		return nil, err
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	s.result()
	return &s.res, nil
}

// load prepares the jobs in submit order, skipping as Run skips.
func (s *shared) load() error {
	c := s.cfg.Cluster
	admitted, err := admit(s.in, s.cfg, s.res.Skipped, s.byID, nil)
	if err != nil {
		return err
	}
	s.origin = s.in[admitted[0].src].Submit
	s.jobs = make([]shJob, len(admitted))
	s.trueRun = make(map[int64]time.Duration, len(admitted))
	for k, a := range admitted {
		j := &s.in[a.src]
		u, ok := s.sh.Usage[j.ID]
		if !ok || u.Util <= 0 || u.MemFrac <= 0 {
			u = jobUsage{Util: 1, MemFrac: 1}
		}
		s.jobs[k] = shJob{src: a.src, gpus: j.GPUs, state: a.state, solo: a.run.Seconds(), soloNs: int64(a.run), limit: int64(a.limit), first: -1,
			u: min(u.Util, 1), mem: min(u.MemFrac, 1)}
		s.trueRun[j.ID] = a.run
	}
	s.nodes = make([][]sgpu, c.Nodes)
	for n := range s.nodes {
		s.nodes[n] = make([]sgpu, c.PerNode)
		for d := range s.nodes[n] {
			s.nodes[n][d].whole = -1
		}
	}
	return nil
}

func (s *shared) at(ns int64) time.Time { return s.origin.Add(time.Duration(ns)) }

func (s *shared) submitAt(k int) int64 { return int64(s.in[s.jobs[k].src].Submit.Sub(s.origin)) }

func (s *shared) loop() error {
	return runEvents(s, len(s.jobs), &s.ends, s.cfg.Progress, "simulate shared GPUs")
}

// The shared-GPU model as runEvents drives it.

func (s *shared) busy() bool { return len(s.running) > 0 || len(s.pending) > 0 }

func (s *shared) waiting() int { return len(s.pending) }

func (s *shared) epochOf(k int32) int32 { return s.jobs[k].epoch }

// dropStale pops end events whose job's speed changed since they were
// pushed: they must not wake the loop.
func (s *shared) dropStale() {
	for len(s.ends) > 0 && s.ends[0].epoch != s.jobs[s.ends[0].k].epoch {
		s.ends.pop()
	}
}

func (s *shared) wake(t int64) int64 { return t }

func (s *shared) setNow(t int64) bool {
	s.now = t
	return false
}

func (s *shared) arrive(k int32) { s.submit(k) }

func (s *shared) decide(changed bool) error {
	if !changed || len(s.pending) == 0 || !s.anyFits() {
		return nil
	}
	return s.cycle()
}

// submit queues job k, deciding at submit time, as job_submit.lua does,
// whether it runs on shards.
func (s *shared) submit(k int32) {
	j := &s.jobs[k]
	pj := s.in[j.src]
	pj.Start, pj.End, pj.State, pj.ExitCode = time.Time{}, time.Time{}, policy.StatePending, 0
	if s.sh.On && pj.GPUs == 1 && pj.Nodes <= 1 {
		if n := s.verdictOf(rewrite.ProfileKey{User: pj.User, Name: pj.Name}); n > 0 {
			j.gpus, j.shards = 0, n
			pj.GPUs, pj.Shards = 0, n
			s.res.Shared++
		}
	}
	j.pos = int32(len(s.pending))
	s.pending = append(s.pending, pj)
	s.pendK = append(s.pendK, k)
}

// verdictOf is the share rule's answer for a key from the history so far.
func (s *shared) verdictOf(key rewrite.ProfileKey) int {
	if v, ok := s.verdict[key]; ok {
		return v
	}
	v := 0
	if ss := s.samples[key]; len(ss) > 0 {
		if p := s.rules.Profiles(ss)[key]; p != nil {
			if r, ok := s.rules.Share(p); ok {
				v = r.Shards
			}
		}
	}
	s.verdict[key] = v
	return v
}

func (s *shared) cycle() error {
	o := policy.Observation{Now: s.at(s.now), Pending: s.pending, Running: s.running, Stopped: s.stopped, TrueRun: s.trueRun}
	snap, ranking, err := s.eng.Cycle(&o)
	if err != nil {
		return fmt.Errorf("simulate shared GPUs: cycle at %s: %w", o.Now.Format(time.RFC3339), err)
	}
	if s.cfg.OnCycle != nil {
		s.cfg.OnCycle(&o, snap, ranking)
	}
	s.res.Cycles++
	s.stopped = s.stopped[:0]
	order := make([]int32, 0, len(ranking))
	for _, sc := range ranking {
		k, ok := s.byID[sc.JobID]
		if !ok || k < 0 {
			return fmt.Errorf("simulate shared GPUs: policy %s ranked unknown job %d", s.cfg.Policy.Name(), sc.JobID)
		}
		order = append(order, k)
	}
	if len(order) != len(o.Pending) {
		return fmt.Errorf("simulate shared GPUs: policy %s ranked %d of %d pending jobs", s.cfg.Policy.Name(), len(order), len(o.Pending))
	}
	for _, k := range order {
		a := s.place(k)
		if a == nil {
			break // strictly in order: the first job that does not fit stops the rest
		}
		s.start(k, a)
	}
	return nil
}

// freeWhole counts a node's GPUs with no job at all.
func (s *shared) freeWhole(n int) int {
	f := 0
	for d := range s.nodes[n] {
		g := &s.nodes[n][d]
		if g.whole < 0 && len(g.jobs) == 0 {
			f++
		}
	}
	return f
}

// anyFits reports whether some pending job could start now.
func (s *shared) anyFits() bool {
	minWhole, minShard := math.MaxInt, math.MaxInt
	for _, k := range s.pendK {
		if j := &s.jobs[k]; j.shards > 0 {
			minShard = min(minShard, j.shards)
		} else {
			minWhole = min(minWhole, j.gpus)
		}
	}
	per := s.cfg.Cluster.PerNode
	whollyFree, maxFree := 0, 0
	for n := range s.nodes {
		f := s.freeWhole(n)
		maxFree = max(maxFree, f)
		if f == per {
			whollyFree++
		}
		if minShard != math.MaxInt {
			for d := range s.nodes[n] {
				g := &s.nodes[n][d]
				if g.whole < 0 && len(g.jobs) > 0 && s.spg-g.shards >= minShard {
					return true
				}
			}
		}
	}
	if minShard != math.MaxInt && maxFree > 0 {
		return true
	}
	if minWhole == math.MaxInt {
		return false
	}
	if minWhole <= per {
		return maxFree >= minWhole
	}
	return whollyFree >= schedule.NodesFor(minWhole, per)
}

// place chooses the GPUs for job k, or nil when it does not fit now.
func (s *shared) place(k int32) []gpuRef {
	j := &s.jobs[k]
	per := s.cfg.Cluster.PerNode
	if j.shards > 0 {
		// A GPU already shared, with the fewest free shards that fit.
		best, bestFree := gpuRef{-1, -1}, math.MaxInt
		for n := range s.nodes {
			for d := range s.nodes[n] {
				g := &s.nodes[n][d]
				if free := s.spg - g.shards; g.whole < 0 && len(g.jobs) > 0 && free >= j.shards && free < bestFree {
					best, bestFree = gpuRef{int32(n), int32(d)}, free
				}
			}
		}
		if best.node >= 0 {
			return []gpuRef{best}
		}
		return s.wholeGPUs(1)
	}
	if j.gpus <= per {
		return s.wholeGPUs(j.gpus)
	}
	need := schedule.NodesFor(j.gpus, per)
	var out []gpuRef
	for n := range s.nodes {
		if s.freeWhole(n) == per {
			for d := range per {
				out = append(out, gpuRef{int32(n), int32(d)})
			}
			if need--; need == 0 {
				return out
			}
		}
	}
	return nil
}

// wholeGPUs picks g free GPUs on one node, the node with the fewest free
// GPUs that can take them (best fit, lowest index on ties), lowest devices
// first: Run's consolidated placement.
func (s *shared) wholeGPUs(g int) []gpuRef {
	best, bestFree := -1, math.MaxInt
	for n := range s.nodes {
		if f := s.freeWhole(n); f >= g && f < bestFree {
			best, bestFree = n, f
			if f == g {
				break
			}
		}
	}
	if best < 0 {
		return nil
	}
	out := make([]gpuRef, 0, g)
	for d := range s.nodes[best] {
		if gg := &s.nodes[best][d]; gg.whole < 0 && len(gg.jobs) == 0 {
			out = append(out, gpuRef{int32(best), int32(d)})
			if len(out) == g {
				break
			}
		}
	}
	return out
}

func (s *shared) gpu(r gpuRef) *sgpu { return &s.nodes[r.node][r.dev] }

// start runs pending job k on a now.
func (s *shared) start(k int32, a []gpuRef) {
	j := &s.jobs[k]
	pj, moved := removePending(&s.pending, &s.pendK, j.pos)
	if moved >= 0 {
		s.jobs[moved].pos = j.pos
	}

	j.alloc = append(j.alloc[:0], a...)
	j.start, j.last, j.left, j.running = s.now, s.now, j.solo, true
	j.first = s.now
	pj.Start, pj.State = s.at(s.now), policy.StateRunning
	j.pos = int32(len(s.running))
	s.running = append(s.running, pj)
	s.runK = append(s.runK, k)
	if j.shards > 0 {
		g := s.gpu(a[0])
		if len(g.jobs) == 0 {
			g.busy = s.now
		}
		g.jobs = append(g.jobs, k)
		g.shards += j.shards
		s.res.MaxPerGPU = max(s.res.MaxPerGPU, len(g.jobs))
		mem := 0.0
		for _, o := range g.jobs {
			mem += s.jobs[o].mem
		}
		if mem > 1 {
			s.res.MemOversubscribed++
		}
		s.respeed(g)
		return
	}
	for _, r := range a {
		g := s.gpu(r)
		g.whole, g.busy = k, s.now
	}
	s.res.MaxPerGPU = max(s.res.MaxPerGPU, 1)
	j.speed = 1
	s.schedule(k)
}

// respeed brings the work of every job on g up to now and gives them the
// speeds of g's current set (the interference model).
func (s *shared) respeed(g *sgpu) {
	sum := 0.0
	for _, o := range g.jobs {
		sum += s.jobs[o].u
	}
	speed := 1 / (max(1, sum) * (1 + s.sh.Interference*float64(len(g.jobs)-1)))
	for _, o := range g.jobs {
		j := &s.jobs[o]
		s.advance(j)
		j.speed = speed
		s.schedule(o)
	}
}

// advance brings a running job's remaining work up to now.
func (s *shared) advance(j *shJob) {
	if j.speed > 0 {
		j.left = max(j.left-float64(s.now-j.last)/1e9*j.speed, 0)
	}
	j.last = s.now
}

// schedule (re)plans job k's end at its current speed: when its work is
// done or its time limit is reached, whichever is first.
func (s *shared) schedule(k int32) {
	j := &s.jobs[k]
	j.epoch++
	done := s.now + int64(math.Ceil(j.left/j.speed*1e9))
	if j.shards == 0 {
		done = j.start + j.soloNs // whole GPUs: never slowed
	}
	s.ends.push(endEvent{t: min(done, j.start+j.limit), k: k, epoch: j.epoch})
}

// finish ends running job k now.
func (s *shared) finish(k int32) {
	j := &s.jobs[k]
	s.advance(j)
	state := j.state
	if j.left > 1e-6 { // stopped by its time limit before its work was done
		state = policy.StateTimeout
	}
	rj := removeRunning(&s.running, &s.runK, j.pos, func(k, q int32) { s.jobs[k].pos = q })
	j.running, j.end = false, s.now
	rj.End, rj.State = s.at(s.now), state
	s.stopped = append(s.stopped, rj)
	solo := j.solo - j.left
	if j.shards > 0 {
		s.res.WorkGPUSeconds += j.u * solo
		g := s.gpu(j.alloc[0])
		g.jobs = slices.DeleteFunc(g.jobs, func(o int32) bool { return o == k })
		g.shards -= j.shards
		if len(g.jobs) == 0 {
			s.res.AllocGPUSeconds += float64(s.now-g.busy) / 1e9
		} else {
			s.respeed(g)
		}
	} else {
		s.res.WorkGPUSeconds += j.u * float64(j.gpus) * solo
		for _, r := range j.alloc {
			g := s.gpu(r)
			g.whole = -1
			s.res.AllocGPUSeconds += float64(s.now-g.busy) / 1e9
		}
	}
	// What the epilog and sacct would have recorded.
	in := &s.in[j.src]
	key := rewrite.ProfileKey{User: in.User, Name: in.Name}
	s.samples[key] = append(s.samples[key], rewrite.UsageSample{JobID: in.ID, User: in.User, Name: in.Name, End: rj.End, State: state,
		GPUs: j.gpus, Shards: j.shards, Run: time.Duration(s.now - j.start), GPUUtilPct: 100 * j.u,
		GPUMemPeakMB: int64(j.mem * float64(s.sh.GPUMemMB)), GPUMemTotalMB: s.sh.GPUMemMB, CPUsUsed: -1})
	delete(s.verdict, key)
}

func (s *shared) result() {
	res := s.res.Result
	res.Jobs = make([]JobResult, len(s.jobs))
	for k := range s.jobs {
		j := &s.jobs[k]
		in := &s.in[j.src]
		units := j.gpus
		if j.shards > 0 {
			units = 1 // part of one GPU; see sharedMetrics for GPU time
		}
		res.Jobs[k] = JobResult{
			ID: in.ID, User: in.User, Account: in.Account, Units: units,
			Submit: in.Submit, Start: s.at(j.first), End: s.at(j.end),
			Run: time.Duration(j.end - j.start), Limit: time.Duration(j.limit),
		}
	}
}
