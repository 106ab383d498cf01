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

// Share turns on GPU sharing in Run (Config.Share): Slurm's GPU shards
// (gres/shard, with or without MPS), where several jobs run on one GPU.
//
// Which jobs share. A job that asks for one whole GPU on one node whose
// user and job name have a history of light use is submitted as shards
// instead: the share rule (rewrite.Rules.Share, what
// contrib/slurm/job_submit.lua applies with the table serve writes) is
// asked at submit time, on the use the simulation itself recorded for the
// same user's jobs of the same name that ended before (what the epilog
// and sacct would have recorded). A job of the trace that already asks
// for shards and no whole GPU (policy.Job.Shards, as the accounting
// database records it) runs on its shards as it asked. Traces record no
// GPU use: Usage gives it, or the seeded UsageModel draws it.
//
// Placement. A GPU holds whole-GPU jobs or shard jobs, never both (Slurm
// never hands out a GPU whole while shards of it are in use, nor shards
// of a GPU held whole). Whole-GPU jobs are placed as without sharing
// (schedule.Pool, consolidated best fit), a GPU holding shards counting
// as busy. A shard job goes to the GPU already holding shard jobs with
// the fewest free shards that fit (packing, as Slurm's first fit over a
// node's devices tends to; lowest node and device on ties), else takes a
// free GPU where a one-GPU job would go, its lowest free device. A GPU
// holds at most ShardsPerGPU shards, so at most ShardsPerGPU jobs at once.
//
// Interference model. A job j has a solo utilization u_j (JobUsage.Util:
// the fraction of the GPU's compute it keeps busy alone). On a GPU running
// the set J of jobs, each runs at speed
//
//	1 / ( max(1, Σ_{i∈J} u_i) · (1 + β·(|J|−1)) )
//
// of its solo speed: when the solo utilizations sum above one the device is
// time-sliced and each job gets u_j/Σu of it against the u_j it needs (the
// "summed utilization" rule), and every co-runner costs a further β
// (Interference: context switches, cache and memory-bandwidth contention;
// DefaultInterference is an assumption, not a measurement). Speeds change
// whenever a job joins or leaves a GPU, its remaining work carried over;
// a job stretched past its time limit is killed there (timeout), as Slurm
// would. Whole-GPU jobs run at solo speed. Memory is not enforced (shards
// are not, in Slurm): starts that put a GPU's summed peak memory above the
// device are counted (ShareResult.MemOversubscribed), since in reality they
// would risk out-of-memory failures.
//
// Scheduling. Sharing changes a running job's end, so EASY reservations,
// judged by time limits, would hold for the whole-GPU view only: a shared
// simulation starts jobs strictly in ranking order (NoBackfill) and is
// not preemptive, partitioned nor power-saving.
type Share struct {
	// ShardsPerGPU is how many shards one GPU is split into (gres.conf's
	// shard Count for one GPU): the co-location limit. At least 2.
	ShardsPerGPU int
	// Interference is the model's β, >= 0 (DefaultInterference).
	Interference float64
	// Rule configures the share rule (rewrite.Params; zero values are
	// serve's defaults). Its ShardsPerGPU is ShardsPerGPU.
	Rule rewrite.Params
	// Usage is each job's use of one GPU, by job id; nil draws it from
	// Model. A job not in a given Usage uses a whole GPU (Util 1, MemFrac
	// 1): it is never judged light.
	Usage map[int64]JobUsage
	// Model draws Usage when Usage is nil.
	Model UsageModel
	// GPUMemMB is the device memory usage records report (81920 when 0).
	GPUMemMB int64
}

// DefaultShardsPerGPU and DefaultInterference are `fairway simulate
// --share`'s defaults: four shards per GPU (the lab's gres.conf), and a
// 10% slowdown per co-runner.
const (
	DefaultShardsPerGPU = 4
	DefaultInterference = 0.1
)

// JobUsage is how a job uses one GPU when it runs alone.
type JobUsage struct {
	Util    float64 // fraction of the GPU's compute it keeps busy, (0, 1]
	MemFrac float64 // its peak memory over the GPU's memory, (0, 1]
}

// UsageModel is the seeded model of GPU use for traces that record none
// (Philly-MIX, Helios, SWF, the synthetic generator). It is Fairway's
// assumption, not a measurement: jobs are grouped into templates (one
// user's jobs of one name, as the share rule groups them); a LightFraction
// of the templates are light (solo utilization uniform in [0.05, 0.35],
// peak memory in [0.03, 0.25] of the GPU), the others heavy (utilization in
// [0.5, 1], memory in [0.25, 0.95]); each job varies around its template's
// values by a lognormal factor (σ 0.15 for utilization, 0.1 for memory),
// clipped to [0.01, 1].
type UsageModel struct {
	Seed          uint64
	LightFraction float64 // in [0, 1]; 0 means DefaultLightFraction
}

// DefaultLightFraction is the share of light templates UsageModel assumes.
const DefaultLightFraction = 0.4

// ShareResult is what sharing did in one simulation (Result.Share).
type ShareResult struct {
	ShardsPerGPU int
	// Shared counts the jobs that ran on shards; CoLocated those of them
	// that shared their GPU with another job at some time.
	Shared, CoLocated int
	// AllocGPUSeconds is the GPU time during which a GPU held at least one
	// job; WorkGPUSeconds the compute the jobs did, Σ u_j × GPUs_j × the
	// solo run time of the work done: the same work however it is
	// scheduled.
	AllocGPUSeconds float64
	WorkGPUSeconds  float64
	// SharedRunSeconds is the time the shard jobs ran, SharedSoloSeconds
	// the time their work would have taken alone: their ratio is the
	// interference's slowdown.
	SharedRunSeconds, SharedSoloSeconds float64
	// MemOversubscribed counts shard starts after which a GPU's summed
	// peak memory exceeded the device.
	MemOversubscribed int
	// MaxPerGPU is the most jobs that ran on one GPU at once.
	MaxPerGPU int
}

// ShareMetrics are the metrics of a shared simulation (Metrics.Share).
// Metrics.Utilization counts a shard job as one GPU for the time it ran:
// read AllocUtilization and ComputeUtilization for GPU time.
type ShareMetrics struct {
	ShardsPerGPU int `json:"shards_per_gpu"`
	Shared       int `json:"shared_jobs"`
	CoLocated    int `json:"co_located_jobs"`
	// AllocUtilization is AllocGPUSeconds over capacity × makespan: how
	// much of the cluster was handed out. ComputeUtilization is
	// WorkGPUSeconds over the same: how much of it computed.
	AllocUtilization   float64 `json:"alloc_utilization"`
	ComputeUtilization float64 `json:"compute_utilization"`
	// Slowdown is SharedRunSeconds over SharedSoloSeconds (1 when no job
	// ran on shards).
	Slowdown          float64 `json:"shared_slowdown"`
	MaxPerGPU         int     `json:"max_jobs_per_gpu"`
	MemOversubscribed int     `json:"mem_oversubscribed"`
}

func (r *ShareResult) metrics(makespan float64, capacity int) *ShareMetrics {
	m := &ShareMetrics{ShardsPerGPU: r.ShardsPerGPU, Shared: r.Shared, CoLocated: r.CoLocated, MaxPerGPU: r.MaxPerGPU,
		MemOversubscribed: r.MemOversubscribed, Slowdown: 1}
	if span := makespan * float64(capacity); span > 0 {
		m.AllocUtilization = r.AllocGPUSeconds / span
		m.ComputeUtilization = r.WorkGPUSeconds / span
	}
	if r.SharedSoloSeconds > 0 {
		m.Slowdown = r.SharedRunSeconds / r.SharedSoloSeconds
	}
	return m
}

// validate checks s as Run reads it.
func (s *Share) validate() error {
	switch {
	case s.ShardsPerGPU < 2:
		return fmt.Errorf("%d shards per GPU: want at least 2", s.ShardsPerGPU)
	case !(s.Interference >= 0) || math.IsInf(s.Interference, 1):
		return fmt.Errorf("interference %g: want a finite number >= 0", s.Interference)
	case !(s.Model.LightFraction >= 0 && s.Model.LightFraction <= 1):
		return fmt.Errorf("light fraction %g: want 0 to 1", s.Model.LightFraction)
	case s.GPUMemMB < 0:
		return fmt.Errorf("GPU memory %d MB: want >= 0", s.GPUMemMB)
	}
	return nil
}

// DrawUsage draws every job's GPU use from m. The draw for a job depends
// only on the seed, its template and its id, not on the order of jobs.
func DrawUsage(jobs []policy.Job, m UsageModel) map[int64]JobUsage {
	if m.LightFraction == 0 {
		m.LightFraction = DefaultLightFraction
	}
	type base struct{ util, mem float64 }
	templates := map[rewrite.ProfileKey]base{}
	out := make(map[int64]JobUsage, len(jobs))
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
		out[j.ID] = JobUsage{Util: clip(b.util * math.Exp(0.15*r.NormFloat64())), MemFrac: clip(b.mem * math.Exp(0.1*r.NormFloat64()))}
	}
	return out
}

// shareNeed is what a job of the trace asks of a shared cluster: its
// whole GPUs, or one GPU for a job of shards only; the shards it asks
// for (0 for whole GPUs), and false when it asks for more shards than a
// GPU has.
func shareNeed(sh *Share, j *policy.Job) (need, shards int, ok bool) {
	if j.GPUs > 0 || j.Shards <= 0 {
		return j.GPUs, 0, true
	}
	return 1, j.Shards, j.Shards <= sh.ShardsPerGPU
}

// sharedGPU is one GPU holding shard jobs.
type sharedGPU struct {
	node   int32
	dev    int32   // its device index on the node
	shards int     // shards its jobs hold
	jobs   []int32 // its jobs, by job index
	busy   int64   // when it took its first job, ns
}

// shareState is the simulator's GPU sharing (simulator.sh).
type shareState struct {
	p     Share
	rules *rewrite.Rules
	// By job index.
	use    []JobUsage
	shards []int32   // shards it asks for (0: whole GPUs)
	gpu    []int32   // while it runs on shards: its GPU, in gpus
	left   []float64 // work left, in seconds of solo run time
	speed  []float64
	last   []int64 // ns: when left was last brought up to date
	co     []bool  // ran beside another job
	// gpus are the shared GPUs, open ones listed in open; spare are
	// the indices of closed ones, for reuse.
	gpus  []sharedGPU
	open  []int32
	spare []int32
	// pendShards[n] counts the pending jobs asking for n shards.
	pendShards []int32
	// busy marks the devices in use, node × PerNode + device, and devs
	// lists each running whole-GPU job's, by job index: the Pool counts
	// a node's free GPUs, and ties between shared GPUs are broken by
	// device, as Slurm hands out a node's devices lowest first.
	busy []bool
	devs [][]int32

	per     int32 // GPUs per node
	samples map[rewrite.ProfileKey][]rewrite.UsageSample
	verdict map[rewrite.ProfileKey]int // shards for a one-GPU job of the key; 0 none
	res     ShareResult
}

// takeDevs marks the lowest n free devices of node busy and appends them
// to dst.
func (sh *shareState) takeDevs(node int32, n int, dst []int32) []int32 {
	base := node * sh.per
	for d := int32(0); d < sh.per && n > 0; d++ {
		if !sh.busy[base+d] {
			sh.busy[base+d] = true
			dst = append(dst, base+d)
			n--
		}
	}
	return dst
}

// checkShareConfig is Run's check of a shared simulation's settings; it
// reads an unset backfill as NoBackfill.
func checkShareConfig(cfg *Config) error {
	sh := cfg.Share
	if err := sh.validate(); err != nil {
		return fmt.Errorf("simulate shared GPUs: %w", err)
	}
	switch {
	case cfg.Cluster.Unit != GPUs:
		return errors.New("simulate shared GPUs: the cluster must hold GPUs")
	case cfg.Cluster.Layout != nil:
		return errors.New("simulate shared GPUs: partitioned clusters are not modelled")
	case cfg.Preempt:
		return errors.New("simulate shared GPUs: preemption is not modelled")
	case cfg.Power != nil:
		return errors.New("simulate shared GPUs: power saving is not modelled")
	case cfg.watch != nil:
		return errors.New("simulate shared GPUs: start-time forecasts are not modelled")
	case cfg.Backfill == "":
		cfg.Backfill = NoBackfill
	case cfg.Backfill != NoBackfill:
		return fmt.Errorf("simulate shared GPUs: backfill %q is not modelled (a shared job's end moves, a reservation cannot hold); use %q", cfg.Backfill, NoBackfill)
	}
	return nil
}

// newShareState prepares sharing for the simulator's loaded jobs.
func newShareState(s *simulator) (*shareState, error) {
	p := *s.cfg.Share
	if p.GPUMemMB == 0 {
		p.GPUMemMB = 81920
	}
	rp := p.Rule
	rp.ShardsPerGPU = p.ShardsPerGPU
	rules, err := rewrite.New(rp)
	if err != nil {
		return nil, fmt.Errorf("simulate shared GPUs: %w", err)
	}
	usage := p.Usage
	if usage == nil {
		usage = DrawUsage(s.in, p.Model)
	}
	n := len(s.jobs)
	sh := &shareState{p: p, rules: rules, use: make([]JobUsage, n), shards: make([]int32, n), gpu: make([]int32, n),
		left: make([]float64, n), speed: make([]float64, n), last: make([]int64, n), co: make([]bool, n),
		pendShards: make([]int32, p.ShardsPerGPU+1), busy: make([]bool, s.cfg.Cluster.Capacity()), devs: make([][]int32, n),
		per:     int32(s.cfg.Cluster.PerNode),
		samples: map[rewrite.ProfileKey][]rewrite.UsageSample{}, verdict: map[rewrite.ProfileKey]int{}}
	sh.res.ShardsPerGPU = p.ShardsPerGPU
	for k := range s.jobs {
		j := &s.in[s.jobs[k].src]
		u, ok := usage[j.ID]
		if !ok || !(u.Util > 0) || !(u.MemFrac > 0) {
			u = JobUsage{Util: 1, MemFrac: 1}
		}
		sh.use[k] = JobUsage{Util: min(u.Util, 1), MemFrac: min(u.MemFrac, 1)}
		_, n, _ := shareNeed(&p, j)
		sh.shards[k] = int32(n)
	}
	return sh, nil
}

// submitted decides, at submit time as job_submit.lua does, whether
// pending job k (pj, its queue entry) runs on shards.
func (sh *shareState) submitted(k int32, pj *policy.Job) {
	if sh.shards[k] == 0 && pj.GPUs == 1 && pj.Nodes <= 1 {
		if n := sh.verdictOf(rewrite.ProfileKey{User: pj.User, Name: pj.Name}); n > 0 {
			sh.shards[k] = int32(n)
			pj.GPUs, pj.Shards = 0, n
		}
	}
	if n := sh.shards[k]; n > 0 {
		sh.pendShards[n]++
		sh.res.Shared++
	}
}

// verdictOf is the share rule's answer for a key from the history so far.
func (sh *shareState) verdictOf(key rewrite.ProfileKey) int {
	if v, ok := sh.verdict[key]; ok {
		return v
	}
	v := 0
	if ss := sh.samples[key]; len(ss) > 0 {
		if p := sh.rules.Profiles(ss)[key]; p != nil {
			if r, ok := sh.rules.Share(p); ok {
				v = r.Shards
			}
		}
	}
	sh.verdict[key] = v
	return v
}

// fit is the open shared GPU a job of n shards goes to, -1 when none has
// room: the one with the fewest free shards that fit, the lowest node and
// device on ties.
func (sh *shareState) fit(n int) int32 {
	best, bestFree := int32(-1), math.MaxInt
	for _, g := range sh.open {
		gg := &sh.gpus[g]
		free := sh.p.ShardsPerGPU - gg.shards
		if free < n || free > bestFree {
			continue
		}
		if free == bestFree {
			if b := &sh.gpus[best]; gg.node > b.node || gg.node == b.node && gg.dev > b.dev {
				continue
			}
		}
		best, bestFree = g, free
	}
	return best
}

// shardFits reports whether some pending shard job fits an open shared
// GPU.
func (sh *shareState) shardFits() bool {
	least := 0
	for n := 1; n < len(sh.pendShards); n++ {
		if sh.pendShards[n] > 0 {
			least = n
			break
		}
	}
	if least == 0 {
		return false
	}
	for _, g := range sh.open {
		if sh.p.ShardsPerGPU-sh.gpus[g].shards >= least {
			return true
		}
	}
	return false
}

// openGPU makes a GPU of node, just taken from the free units, a shared
// one, and returns it.
func (sh *shareState) openGPU(node int32, now int64) int32 {
	var g int32
	if n := len(sh.spare); n > 0 {
		g, sh.spare = sh.spare[n-1], sh.spare[:n-1]
	} else {
		g = int32(len(sh.gpus))
		sh.gpus = append(sh.gpus, sharedGPU{})
	}
	var dev [1]int32
	sh.takeDevs(node, 1, dev[:0])
	sh.gpus[g] = sharedGPU{node: node, dev: dev[0] - node*sh.per, busy: now, jobs: sh.gpus[g].jobs[:0]}
	sh.open = append(sh.open, g)
	return g
}

// decideShared is decideEASY for a cluster with shared GPUs: jobs start in
// ranking order while they fit, a shard job on a GPU already shared when
// one has room, else on a free GPU.
func (s *simulator) decideShared() {
	sh := s.sh
	for _, k := range s.order {
		j := &s.jobs[k]
		if n := sh.shards[k]; n > 0 {
			if g := sh.fit(int(n)); g >= 0 {
				sh.gpu[k] = g
				s.start(k, nil)
				continue
			}
		}
		if !s.free.Fits(int(j.need)) {
			return // strictly in order: the first job that does not fit stops the rest
		}
		a := s.free.Place(int(j.need), s.place)
		s.free.Take(a)
		s.place = a
		if sh.shards[k] > 0 {
			sh.gpu[k] = sh.openGPU(a[0].Node, s.now)
			a = nil // the GPU is the shared GPU's, returned when its last job ends
		} else {
			sh.devs[k] = sh.devs[k][:0]
			for _, u := range a {
				sh.devs[k] = sh.takeDevs(u.Node, int(u.Units), sh.devs[k])
			}
		}
		s.start(k, a)
	}
}

// startedShared is start's part for job k on a shared cluster: a shard job
// joins its GPU, which slows its co-runners, and every job on it gets its
// end event; a whole-GPU job gets its end event at its solo run time.
func (s *simulator) startedShared(k int32) {
	sh := s.sh
	j := &s.jobs[k]
	n := sh.shards[k]
	if n == 0 {
		s.ends.push(endEvent{t: j.start + j.run, k: k, epoch: j.epoch})
		sh.res.MaxPerGPU = max(sh.res.MaxPerGPU, 1)
		return
	}
	sh.pendShards[n]--
	sh.left[k], sh.last[k], sh.speed[k] = time.Duration(j.run).Seconds(), s.now, 0
	g := &sh.gpus[sh.gpu[k]]
	g.jobs = append(g.jobs, k)
	g.shards += int(n)
	sh.res.MaxPerGPU = max(sh.res.MaxPerGPU, len(g.jobs))
	mem := 0.0
	for _, o := range g.jobs {
		mem += sh.use[o].MemFrac
	}
	if mem > 1 {
		sh.res.MemOversubscribed++
	}
	s.respeed(sh.gpu[k])
}

// respeed brings the work of every job on shared GPU g up to now and gives
// them the speed of g's current set (the interference model), replanning
// their ends.
func (s *simulator) respeed(g int32) {
	sh := s.sh
	gg := &sh.gpus[g]
	sum := 0.0
	for _, o := range gg.jobs {
		sum += sh.use[o].Util
	}
	speed := 1 / (max(1, sum) * (1 + sh.p.Interference*float64(len(gg.jobs)-1)))
	for _, o := range gg.jobs {
		sh.advance(o, s.now)
		sh.speed[o] = speed
		if len(gg.jobs) > 1 {
			sh.co[o] = true
		}
		j := &s.jobs[o]
		j.epoch++
		done := s.now + int64(math.Ceil(sh.left[o]/speed*1e9))
		s.ends.push(endEvent{t: min(done, j.start+j.limit), k: o, epoch: j.epoch})
	}
}

// advance brings running shard job k's work left up to now.
func (sh *shareState) advance(k int32, now int64) {
	if sh.speed[k] > 0 {
		sh.left[k] = max(sh.left[k]-float64(now-sh.last[k])/1e9*sh.speed[k], 0)
	}
	sh.last[k] = now
}

// endingShared is finish's part for job k on a shared cluster, before it leaves
// the cluster: a shard job's run becomes the time it ran, and a timeout
// when its limit came before its work was done; it leaves its GPU (whose
// other jobs speed up). The GPU time and the work are counted, and the
// run recorded as the epilog and sacct would have.
func (s *simulator) endingShared(k int32) {
	sh := s.sh
	j := &s.jobs[k]
	in := &s.in[j.src]
	ran := s.now - j.start
	u := sh.use[k]
	gpus := 0
	if n := sh.shards[k]; n > 0 {
		sh.advance(k, s.now)
		if sh.left[k] > 1e-6 { // stopped by its time limit before its work was done
			j.state = policy.StateTimeout
		}
		solo := time.Duration(j.run).Seconds() - sh.left[k]
		j.run = ran
		sh.res.WorkGPUSeconds += u.Util * solo
		sh.res.SharedRunSeconds += float64(ran) / 1e9
		sh.res.SharedSoloSeconds += solo
		if sh.co[k] {
			sh.res.CoLocated++
		}
		g := sh.gpu[k]
		gg := &sh.gpus[g]
		gg.jobs = slices.DeleteFunc(gg.jobs, func(o int32) bool { return o == k })
		gg.shards -= int(n)
		if len(gg.jobs) > 0 {
			s.respeed(g)
		} else {
			sh.res.AllocGPUSeconds += float64(s.now-gg.busy) / 1e9
			s.free.Give([]schedule.Use{{Node: gg.node, Units: 1}})
			sh.busy[gg.node*sh.per+gg.dev] = false
			sh.open = slices.DeleteFunc(sh.open, func(o int32) bool { return o == g })
			sh.spare = append(sh.spare, g)
		}
	} else {
		gpus = int(j.need)
		for _, d := range sh.devs[k] {
			sh.busy[d] = false
		}
		sh.devs[k] = nil
		sh.res.WorkGPUSeconds += u.Util * float64(gpus) * float64(ran) / 1e9
		held := 0 // a job larger than a node holds its nodes whole
		for _, a := range j.alloc {
			held += int(a.Units)
		}
		sh.res.AllocGPUSeconds += float64(held) * float64(ran) / 1e9
	}
	key := rewrite.ProfileKey{User: in.User, Name: in.Name}
	sh.samples[key] = append(sh.samples[key], rewrite.UsageSample{JobID: in.ID, User: in.User, Name: in.Name, End: s.at(s.now), State: j.state,
		GPUs: gpus, Shards: int(sh.shards[k]), Run: time.Duration(ran), GPUUtilPct: 100 * u.Util,
		GPUMemPeakMB: int64(u.MemFrac * float64(sh.p.GPUMemMB)), GPUMemTotalMB: sh.p.GPUMemMB, CPUsUsed: -1})
	delete(sh.verdict, key)
}

// dropStaleEnds pops the end events whose job's speed changed since they
// were pushed, so that they do not wake the loop.
func (s *simulator) dropStaleEnds() {
	for len(s.ends) > 0 && s.ends[0].epoch != s.jobs[s.ends[0].k].epoch {
		s.ends.pop()
	}
}

// checkShared verifies the shared cluster's books: every GPU is free,
// held whole by running jobs or shared, never two of these, and no node
// holds more than its GPUs; a shared GPU holds only shard jobs, within
// its shards. Tests run it after every decision (Config.checkShare).
func (s *simulator) checkShared() error {
	sh := s.sh
	per := s.cfg.Cluster.PerNode
	used := make([]int, s.cfg.Cluster.Nodes)
	held := 0
	for _, k := range s.runK {
		if sh.shards[k] > 0 {
			if len(s.jobs[k].alloc) != 0 {
				return fmt.Errorf("shard job %d holds whole GPUs %v", s.in[s.jobs[k].src].ID, s.jobs[k].alloc)
			}
			continue
		}
		for _, a := range s.jobs[k].alloc {
			used[a.Node] += int(a.Units)
			held += int(a.Units)
		}
	}
	onGPU := 0
	for _, g := range sh.open {
		gg := &sh.gpus[g]
		used[gg.node]++
		held++
		shards := 0
		for _, o := range gg.jobs {
			if sh.shards[o] == 0 || sh.gpu[o] != g || !s.isRunning(o) {
				return fmt.Errorf("shared GPU on node %d holds job %d, not a running shard job of it", gg.node, s.in[s.jobs[o].src].ID)
			}
			shards += int(sh.shards[o])
		}
		if len(gg.jobs) == 0 || shards != gg.shards || shards > sh.p.ShardsPerGPU {
			return fmt.Errorf("shared GPU on node %d: %d jobs holding %d shards (booked %d) of %d", gg.node, len(gg.jobs), shards, gg.shards, sh.p.ShardsPerGPU)
		}
		onGPU += len(gg.jobs)
	}
	for n, u := range used {
		if u > per {
			return fmt.Errorf("node %d: %d GPUs in use of %d", n, u, per)
		}
	}
	// Device by device: each in use is one running whole-GPU job's or
	// one shared GPU's, and marked so.
	owned := make([]bool, len(sh.busy))
	own := func(d int32, what string) error {
		if owned[d] || !sh.busy[d] {
			return fmt.Errorf("node %d device %d: %s, taken %v, marked busy %v", d/sh.per, d%sh.per, what, owned[d], sh.busy[d])
		}
		owned[d] = true
		return nil
	}
	for _, k := range s.runK {
		for _, d := range sh.devs[k] {
			if err := own(d, fmt.Sprintf("job %d's", s.in[s.jobs[k].src].ID)); err != nil {
				return err
			}
		}
	}
	for _, g := range sh.open {
		if err := own(sh.gpus[g].node*sh.per+sh.gpus[g].dev, "a shared GPU"); err != nil {
			return err
		}
	}
	for d, b := range sh.busy {
		if b && !owned[d] {
			return fmt.Errorf("node %d device %d: marked busy, held by no job", d/int(sh.per), d%int(sh.per))
		}
	}
	if held+s.free.Total() != s.cfg.Cluster.Capacity() {
		return fmt.Errorf("%d GPUs in use and %d free on a cluster of %d", held, s.free.Total(), s.cfg.Cluster.Capacity())
	}
	running := 0
	for _, k := range s.runK {
		if sh.shards[k] > 0 {
			running++
		}
	}
	if running != onGPU {
		return fmt.Errorf("%d shard jobs run, %d on shared GPUs", running, onGPU)
	}
	return nil
}
