package rewrite

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fairway-hpc/fairway/policy"
)

// The markers a user puts in a job's comment (sbatch --comment). They are
// matched anywhere in the comment, so they can sit beside the user's own
// text; job_submit.lua matches the same spelling.
const (
	// OptOutMarker: Fairway never rewrites this job (no shards, no CPU,
	// memory or GPU-count change).
	OptOutMarker = "fairway:no-rewrite"
	// ElasticMarker, followed by "=MIN-MAX" (e.g. fairway:elastic=1-4),
	// declares that the job runs correctly on any GPU count in [MIN, MAX]
	// on one node, and may be given any of them.
	ElasticMarker = "fairway:elastic"
)

// Rewrite rule names, as Proposal.Rule spells them.
const (
	RuleShare   = "share"
	RuleCPUs    = "cpus"
	RuleMemory  = "memory"
	RuleElastic = "elastic"
)

// OptedOut reports whether a job's comment carries OptOutMarker.
func OptedOut(comment string) bool { return strings.Contains(comment, OptOutMarker) }

// elasticRE is compiled on first use: every fairway process (a hook runs
// one per job start) would otherwise pay for it at start-up. It reads the
// text after the marker: digit runs of any length, so that a number too
// long is refused rather than read in part, and what follows, which must
// not continue the range.
var elasticRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^=(\d+)-(\d+)([.\-]?)`)
})

// ErrBadElastic is returned by ParseElastic for a malformed range.
var ErrBadElastic = errors.New("bad elastic range")

// maxElastic bounds a range's ends: more GPUs than any node has.
const maxElastic = 9999

// ParseElastic reads ElasticMarker's range from a job's comment. ok is false
// when the comment has no marker. The first marker counts: one not
// followed by =MIN-MAX (whole numbers to 9999; a '.' or '-' may not follow
// MAX), or whose range is empty or starts at 0, is an error. Any user
// writes the comment, and serve logs the error: it quotes the marker and
// at most 24 bytes after it, never the whole comment.
func ParseElastic(comment string) (lo, hi int, ok bool, err error) {
	i := strings.Index(comment, ElasticMarker)
	if i < 0 {
		return 0, 0, false, nil
	}
	rest := comment[i+len(ElasticMarker):]
	quoted := ElasticMarker + rest
	if n := len(ElasticMarker) + 24; len(quoted) > n {
		for k := 1; k < utf8.UTFMax && !utf8.RuneStart(quoted[n]); k++ {
			n-- // not mid-character, where one is
		}
		quoted = quoted[:n] + "…"
	}
	m := elasticRE().FindStringSubmatch(rest)
	if m == nil || m[3] != "" {
		return 0, 0, true, fmt.Errorf("%w: %q: want %s=MIN-MAX", ErrBadElastic, quoted, ElasticMarker)
	}
	lo, err1 := strconv.Atoi(m[1])
	hi, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || lo > maxElastic || hi > maxElastic {
		return 0, 0, true, fmt.Errorf("%w: %q: want MIN and MAX at most %d", ErrBadElastic, quoted, maxElastic)
	}
	if lo < 1 || hi < lo {
		return 0, 0, true, fmt.Errorf("%w: %d-%d: want 1 <= MIN <= MAX", ErrBadElastic, lo, hi)
	}
	return lo, hi, true, nil
}

// UsageSample is what one finished job used, as the epilog (GPU) and
// Slurm's accounting (CPU, memory) recorded it. A measurement that is not
// known is negative (GPUUtilPct, CPUsUsed) or 0 (the MB fields).
type UsageSample struct {
	JobID  int64
	User   string
	Name   string
	End    time.Time
	State  policy.State
	GPUs   int // whole GPUs the run held
	Shards int // shards the run held (0 for a whole-GPU run)
	CPUs   int
	Run    time.Duration

	// GPUUtilPct is the mean over the run's GPUs of their average
	// utilization (0-100); for a run on several nodes, the busiest node's
	// mean (accounting.UsageSamples says why).
	GPUUtilPct float64
	// GPUMemPeakMB is the largest peak device memory of one of its GPUs;
	// GPUMemTotalMB the memory of the smallest device it ran on.
	GPUMemPeakMB  int64
	GPUMemTotalMB int64
	// CPUsUsed is the average number of busy CPUs over the run (Slurm's
	// TotalCPU over the elapsed time); MemUsedMB its peak resident memory.
	CPUsUsed  float64
	MemUsedMB int64
}

// ProfileKey names a profile: one user's jobs of one name.
type ProfileKey struct{ User, Name string }

// UsageProfile is the history of one user's jobs of one name, folded
// from UsageSamples by Rules.Profiles: what the rules judge a new job of
// that name by.
type UsageProfile struct {
	User string
	Name string

	// GPUJobs counts the whole-GPU runs with GPU measurements. Shard
	// runs are left out: NVML reports a shared device's utilization, not
	// the job's. GPUUtilPct is the 90th percentile (nearest rank) of those
	// runs' utilization, GPUMemPeakMB the largest peak, GPUMemTotalMB the
	// smallest device.
	GPUJobs       int
	GPUUtilPct    float64
	GPUMemPeakMB  int64
	GPUMemTotalMB int64

	// CPUJobs counts the runs with CPU time known; CPUsPerGPU is the 90th
	// percentile of their busy CPUs per GPU-equivalent.
	CPUJobs    int
	CPUsPerGPU float64
	// MemJobs counts the runs with peak memory known; MemPerGPUMB is the
	// largest peak per GPU-equivalent.
	MemJobs     int
	MemPerGPUMB int64

	// RunByGPUs is the median run time of the completed whole-GPU runs by
	// GPU count: the scaling evidence for an elastic job.
	RunByGPUs map[int]time.Duration
}

// Params configures a Rules. Zero fields take the defaults in
// parentheses; ShardsPerGPU is required for the share rule, CPUsPerGPU for
// the CPU rule and MemPerGPUMB for the memory rule (each rule is off while
// its field is 0).
type Params struct {
	// ShardsPerGPU is how many shards one GPU is split into (gres.conf's
	// Count= of one GPU's shard line).
	ShardsPerGPU int
	// Window is how many of a profile's newest measured runs are folded,
	// per measurement (20).
	Window int
	// MinHistory is how many measured runs a rule needs before it trusts
	// a profile (3).
	MinHistory int
	// ShareMaxUtilPct: a job is shared only when its runs' utilization
	// (90th percentile) is at most this (50).
	ShareMaxUtilPct float64
	// Headroom multiplies measured use before resources are sized from it
	// (1.25).
	Headroom float64
	// CPUsPerGPU is the GPU-proportional CPU share: a node's CPUs over its
	// GPUs. MaxCPUsPerGPU caps what history may raise a job to
	// (2 × CPUsPerGPU); NodeCPUs caps any job (no cap when 0).
	CPUsPerGPU    float64
	MaxCPUsPerGPU float64
	NodeCPUs      int
	// MemPerGPUMB is the GPU-proportional memory share; MaxMemPerGPUMB caps
	// what history may raise a job to (2 × MemPerGPUMB); NodeMemMB caps any
	// job (no cap when 0).
	MemPerGPUMB    int64
	MaxMemPerGPUMB int64
	NodeMemMB      int64
	// GPUsPerNode caps an elastic job's count (no cap when 0): elastic
	// jobs run on one node.
	GPUsPerNode int
	// ElasticParallel is the parallel fraction p of Amdahl's law assumed for
	// an elastic job whose history does not show how it scales (0.9).
	ElasticParallel float64
}

// Rules holds the rewrite rules' settings. It is pure and safe for
// concurrent use.
type Rules struct{ p Params }

// New checks p and fills its defaults.
func New(p Params) (*Rules, error) {
	if p.ShardsPerGPU < 0 || p.Window < 0 || p.MinHistory < 0 || p.CPUsPerGPU < 0 || p.MaxCPUsPerGPU < 0 ||
		p.MemPerGPUMB < 0 || p.MaxMemPerGPUMB < 0 || p.NodeCPUs < 0 || p.NodeMemMB < 0 || p.GPUsPerNode < 0 {
		return nil, errors.New("rewrite: negative setting")
	}
	if p.ShareMaxUtilPct < 0 || p.ShareMaxUtilPct > 100 {
		return nil, fmt.Errorf("rewrite: share max utilization %g%%: want 0 to 100", p.ShareMaxUtilPct)
	}
	if p.Headroom != 0 && p.Headroom < 1 {
		return nil, fmt.Errorf("rewrite: headroom %g: want at least 1", p.Headroom)
	}
	if p.ElasticParallel < 0 || p.ElasticParallel > 1 {
		return nil, fmt.Errorf("rewrite: elastic parallel fraction %g: want 0 to 1", p.ElasticParallel)
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if p.Window == 0 {
		p.Window = 20
	}
	if p.MinHistory == 0 {
		p.MinHistory = 3
	}
	def(&p.ShareMaxUtilPct, 50)
	def(&p.Headroom, 1.25)
	def(&p.MaxCPUsPerGPU, 2*p.CPUsPerGPU)
	def(&p.ElasticParallel, 0.9)
	if p.MaxMemPerGPUMB == 0 {
		p.MaxMemPerGPUMB = 2 * p.MemPerGPUMB
	}
	if p.MaxCPUsPerGPU < p.CPUsPerGPU || p.MaxMemPerGPUMB < p.MemPerGPUMB {
		return nil, errors.New("rewrite: a maximum per GPU below the proportional share")
	}
	return &Rules{p: p}, nil
}

// gpuEq is a job's GPU demand in GPU-equivalents (shards count as their
// fraction of a GPU).
func (r *Rules) gpuEq(gpus, shards int) float64 {
	if gpus > 0 || shards == 0 {
		return float64(gpus)
	}
	if r.p.ShardsPerGPU <= 0 {
		return 1
	}
	return float64(shards) / float64(r.p.ShardsPerGPU)
}

// Profiles folds samples into one profile per user and job name: for
// each measurement (GPU, CPU, memory, run time by GPU count), the newest
// Window runs of that name that carry it (by End, then JobID). The result
// does not depend on the order of samples.
func (r *Rules) Profiles(samples []UsageSample) map[ProfileKey]*UsageProfile {
	by := map[ProfileKey][]*UsageSample{}
	for i := range samples {
		s := &samples[i]
		k := ProfileKey{s.User, s.Name}
		by[k] = append(by[k], s)
	}
	out := make(map[ProfileKey]*UsageProfile, len(by))
	for k, ss := range by {
		slices.SortFunc(ss, func(a, b *UsageSample) int {
			if c := b.End.Compare(a.End); c != 0 {
				return c
			}
			return cmp.Compare(b.JobID, a.JobID)
		})
		p := &UsageProfile{User: k.User, Name: k.Name}
		var utils, cpus []float64
		runs := map[int][]time.Duration{}
		// Each measurement has its own window of the newest Window runs
		// that carry it, so that once a name runs on shards its older
		// whole-GPU runs still count (otherwise sharing would stop by
		// itself after Window shard runs, and start again after three
		// whole-GPU ones).
		var nGPU, nCPU, nMem, nRun int
		for _, s := range ss {
			g := r.gpuEq(s.GPUs, s.Shards)
			if s.Shards == 0 && s.GPUs > 0 && s.GPUUtilPct >= 0 && nGPU < r.p.Window {
				nGPU++
				p.GPUJobs++
				utils = append(utils, s.GPUUtilPct)
				p.GPUMemPeakMB = max(p.GPUMemPeakMB, s.GPUMemPeakMB)
				if s.GPUMemTotalMB > 0 && (p.GPUMemTotalMB == 0 || s.GPUMemTotalMB < p.GPUMemTotalMB) {
					p.GPUMemTotalMB = s.GPUMemTotalMB
				}
			}
			if g > 0 && s.CPUsUsed >= 0 && nCPU < r.p.Window {
				nCPU++
				p.CPUJobs++
				cpus = append(cpus, s.CPUsUsed/g)
			}
			if g > 0 && s.MemUsedMB > 0 && nMem < r.p.Window {
				nMem++
				p.MemJobs++
				p.MemPerGPUMB = max(p.MemPerGPUMB, int64(math.Ceil(float64(s.MemUsedMB)/g)))
			}
			if s.Shards == 0 && s.GPUs > 0 && s.State == policy.StateCompleted && s.Run > 0 && nRun < r.p.Window {
				nRun++
				runs[s.GPUs] = append(runs[s.GPUs], s.Run)
			}
		}
		p.GPUUtilPct = nearestRank(utils, 0.9)
		p.CPUsPerGPU = nearestRank(cpus, 0.9)
		if len(runs) > 0 {
			p.RunByGPUs = make(map[int]time.Duration, len(runs))
			for g, rs := range runs {
				slices.Sort(rs)
				p.RunByGPUs[g] = rs[(len(rs)-1)/2] // lower median
			}
		}
		out[k] = p
	}
	return out
}

// nearestRank is the q-quantile of v by the nearest-rank method (0 for an
// empty v). v is sorted in place.
func nearestRank(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// ShareRule is one row of the submit-time table: a job of User named Name
// that asks for one whole GPU on one node gets Shards shards instead.
type ShareRule struct {
	User   string
	Name   string
	Shards int
	Reason string
}

// Share decides whether jobs of p's user and name should get shards
// instead of a whole GPU, and how many. The rule needs MinHistory
// whole-GPU runs with utilization and memory measured, a 90th-percentile
// utilization of at most ShareMaxUtilPct, and then sizes the request by the
// larger of the two fractions of the GPU the job used (utilization, peak
// memory over device memory), times Headroom, rounded up to whole shards.
// Guard rails: never more shards than a GPU has, and no rule at all when the
// job would need the whole GPU anyway (ShardsPerGPU shards or more). The
// reason is given either way.
func (r *Rules) Share(p *UsageProfile) (ShareRule, bool) {
	rule := ShareRule{User: p.User, Name: p.Name}
	s := r.p.ShardsPerGPU
	switch {
	case s < 2:
		rule.Reason = "sharing off: no shard count per GPU configured"
		return rule, false
	case p.GPUJobs < r.p.MinHistory:
		rule.Reason = fmt.Sprintf("%d whole-GPU runs measured, %d needed", p.GPUJobs, r.p.MinHistory)
		return rule, false
	case p.GPUMemTotalMB <= 0 || p.GPUMemPeakMB <= 0:
		rule.Reason = "GPU memory use not measured"
		return rule, false
	case p.GPUUtilPct > r.p.ShareMaxUtilPct:
		rule.Reason = fmt.Sprintf("uses %.0f%% of its GPU (p90 of %d runs), above %.0f%%", p.GPUUtilPct, p.GPUJobs, r.p.ShareMaxUtilPct)
		return rule, false
	}
	util := p.GPUUtilPct / 100
	mem := float64(p.GPUMemPeakMB) / float64(p.GPUMemTotalMB)
	frac := max(util, mem) * r.p.Headroom
	n := max(int(math.Ceil(frac*float64(s)-1e-9)), 1)
	if n >= s {
		rule.Reason = fmt.Sprintf("needs %d of %d shards (utilization %.0f%%, memory %d of %d MB, ×%.2f headroom): the whole GPU",
			n, s, p.GPUUtilPct, p.GPUMemPeakMB, p.GPUMemTotalMB, r.p.Headroom)
		return rule, false
	}
	rule.Shards = n
	rule.Reason = fmt.Sprintf("%d whole-GPU runs used %.0f%% of the GPU (p90) and at most %d of %d MB; ×%.2f headroom: %d of %d shards",
		p.GPUJobs, p.GPUUtilPct, p.GPUMemPeakMB, p.GPUMemTotalMB, r.p.Headroom, n, s)
	return rule, true
}

// Proposal is one change proposed for a pending job: the request after
// the change (GPUs, CPUs or MemoryMB; a zero field is left as it is), what
// it was, and why.
type Proposal struct {
	JobID    int64
	Rule     string // RuleCPUs, RuleMemory or RuleElastic
	GPUs     int
	CPUs     int
	MemoryMB int64
	From     int64 // the value before: GPUs, CPUs or MB, by Rule
	Reason   string
}

// Asked is what a job asked for before Fairway changed its request. A zero
// field means the job's current request is what it asked for.
type Asked struct {
	CPUs     int
	MemoryMB int64
}

// Resources proposes the CPUs and memory of pending job j, Synergy-TUNE
// style, from its profile p (nil when it has none). asked is what the job
// asked for before Fairway changed it: the floor "never fewer than it asked
// for" is that, not what an earlier proposal raised it to (a job grown to 8
// CPUs for 4 GPUs and then shrunk to 2 GPUs would otherwise keep 8).
//
//   - proportional share: CPUsPerGPU (MemPerGPUMB) × the job's
//     GPU-equivalents, rounded up;
//   - without history (fewer than MinHistory measured runs) the job gets
//     the larger of what it asked for and its proportional share: never
//     fewer CPUs or less memory than it asked for;
//   - with history it gets its measured use per GPU-equivalent (90th
//     percentile for CPUs, peak for memory) × Headroom, rounded up, at
//     least 1 CPU, at most MaxCPUsPerGPU (MaxMemPerGPUMB) per
//     GPU-equivalent: below the proportional share only when history shows
//     the job needs less;
//   - never more than NodeCPUs (NodeMemMB), when set, per node.
//
// A job without GPUs or shards gets no proposal. Proposals equal to the
// request are left out.
func (r *Rules) Resources(j *policy.Job, asked Asked, p *UsageProfile) []Proposal {
	g := r.gpuEq(j.GPUs, j.Shards)
	if g <= 0 {
		return nil
	}
	if asked.CPUs <= 0 {
		asked.CPUs = j.CPUs
	}
	if asked.MemoryMB <= 0 {
		asked.MemoryMB = j.MemoryMB
	}
	var out []Proposal
	nodes := max(j.Nodes, 1)
	if r.p.CPUsPerGPU > 0 && j.CPUs > 0 {
		prop := ceilInt(r.p.CPUsPerGPU * g)
		want, why := max(asked.CPUs, prop), ""
		if p != nil && p.CPUJobs >= r.p.MinHistory {
			need := max(ceilInt(p.CPUsPerGPU*g*r.p.Headroom), 1)
			want = min(need, ceilInt(r.p.MaxCPUsPerGPU*g))
			why = fmt.Sprintf("%d runs used %.2f CPUs per GPU (p90); ×%.2f headroom for %.3g GPUs: %d CPUs (proportional share %d, cap %d)",
				p.CPUJobs, p.CPUsPerGPU, r.p.Headroom, g, want, prop, ceilInt(r.p.MaxCPUsPerGPU*g))
		} else {
			have := 0
			if p != nil {
				have = p.CPUJobs
			}
			why = fmt.Sprintf("no CPU history (%d of %d runs): GPU-proportional share %.3g CPUs per GPU × %.3g GPUs = %d, never below the %d asked",
				have, r.p.MinHistory, r.p.CPUsPerGPU, g, prop, asked.CPUs)
		}
		if r.p.NodeCPUs > 0 && want > r.p.NodeCPUs*nodes {
			want = r.p.NodeCPUs * nodes
			why += fmt.Sprintf("; capped at the node's %d CPUs", r.p.NodeCPUs)
		}
		if want != j.CPUs {
			out = append(out, Proposal{JobID: j.ID, Rule: RuleCPUs, CPUs: want, From: int64(j.CPUs), Reason: why})
		}
	}
	if r.p.MemPerGPUMB > 0 && j.MemoryMB > 0 {
		prop := int64(math.Ceil(float64(r.p.MemPerGPUMB) * g))
		want, why := max(asked.MemoryMB, prop), ""
		if p != nil && p.MemJobs >= r.p.MinHistory {
			need := max(int64(math.Ceil(float64(p.MemPerGPUMB)*g*r.p.Headroom)), 1)
			want = min(need, int64(math.Ceil(float64(r.p.MaxMemPerGPUMB)*g)))
			why = fmt.Sprintf("%d runs peaked at %d MB per GPU; ×%.2f headroom for %.3g GPUs: %d MB (proportional share %d)",
				p.MemJobs, p.MemPerGPUMB, r.p.Headroom, g, want, prop)
		} else {
			why = fmt.Sprintf("no memory history: GPU-proportional share %d MB per GPU × %.3g GPUs = %d MB, never below the %d MB asked",
				r.p.MemPerGPUMB, g, prop, asked.MemoryMB)
		}
		if r.p.NodeMemMB > 0 && want > r.p.NodeMemMB*int64(nodes) {
			want = r.p.NodeMemMB * int64(nodes)
			why += fmt.Sprintf("; capped at the node's %d MB", r.p.NodeMemMB)
		}
		if want != j.MemoryMB {
			out = append(out, Proposal{JobID: j.ID, Rule: RuleMemory, MemoryMB: want, From: j.MemoryMB, Reason: why})
		}
	}
	return out
}

func ceilInt(x float64) int { return int(math.Ceil(x - 1e-9)) }

// ElasticJob is a pending job that declared a GPU range, with what the
// AFS rule needs to know about it.
type ElasticJob struct {
	Job      *policy.Job
	Min, Max int
	Profile  *UsageProfile // nil when it has no history
	// Predicted is the predicted run time at the requested GPU count; 0
	// means none (the time limit is used, then policy.UnknownRun).
	Predicted time.Duration
	// Ahead is how many of the free GPUs the jobs ranked ahead of this
	// one that are not elastic, and can start now, take first.
	Ahead int
}

// Elastic chooses GPU counts for the elastic jobs by AFS-L (Hwang et al.,
// NSDI'21), dividing the free GPUs among them one step at a time:
//
//   - a job holding none competes with weight 1: its first step is its
//     minimum, and among such jobs the one with the shortest run time at
//     its minimum goes first;
//   - a job holding g GPUs competes with its marginal throughput gain
//     w(g) = (T(g+1) − T(g)) / T(g+1), and a step gives it one more GPU,
//     up to its maximum (and GPUsPerNode);
//   - ties go to the job Fairway ranks first (the order of jobs).
//
// T is Amdahl's law, T(g) = 1 / ((1 − p) + p/g), with the parallel
// fraction p fitted to the job's history when it ran with at least two GPU
// counts (run time R(g) = a + b/g by least squares, p = b/(a+b)), else
// ElasticParallel. Jobs are the elastic candidates in ranking order and free
// the free GPUs. A job may be given only what is left of free once the jobs
// ranked ahead of it have theirs: the elastic ones what this division gives
// them, the others their Ahead. Jobs ranked below a job that are not
// elastic hold no GPUs back from it. A job that gets nothing keeps its request; a job whose count
// differs from its request gets a RuleElastic proposal. Only single-node
// jobs whose range holds at least one count are considered.
func (r *Rules) Elastic(jobs []ElasticJob, free int) []Proposal {
	type cand struct {
		e     *ElasticJob
		p     float64
		lo    int
		hi    int
		run1  float64 // run time at the minimum, seconds
		g     int
		order int
		ahead int
		why   string
	}
	var cs []*cand
	for i := range jobs {
		e := &jobs[i]
		j := e.Job
		hi := e.Max
		if r.p.GPUsPerNode > 0 {
			hi = min(hi, r.p.GPUsPerNode)
		}
		if j.Nodes > 1 || j.GPUs < 1 || e.Min < 1 || hi < e.Min {
			continue
		}
		p, src := r.p.ElasticParallel, "assumed"
		if fit, ok := amdahlFit(e.Profile); ok {
			p, src = fit, "fitted to history"
		}
		run := e.Predicted
		if run <= 0 {
			run = j.TimeLimit
		}
		if run <= 0 {
			run = policy.UnknownRun
		}
		// R(g) = R1·((1−p) + p/g): run time at the minimum from the
		// prediction at the requested count.
		atMin := run.Seconds() * amdahlTime(p, e.Min) / amdahlTime(p, j.GPUs)
		cs = append(cs, &cand{e: e, p: p, lo: e.Min, hi: hi, run1: atMin, order: i, ahead: max(e.Ahead, 0),
			why: fmt.Sprintf("parallel fraction %.2f (%s)", p, src)})
	}
	// fits reports whether c may take step more GPUs: for c and every
	// candidate ranked below it that holds some, what the jobs ranked
	// ahead of that one hold (elastic: given here; others: their Ahead)
	// must stay within free. cs is in ranking order.
	fits := func(c *cand, step int) bool {
		held := 0
		for _, d := range cs {
			g := d.g
			if d == c {
				g += step
			}
			held += g
			if d.order >= c.order && g > 0 && held+d.ahead > free {
				return false
			}
		}
		return true
	}
	better := func(a, b *cand) bool { // a goes before b
		if (a.g == 0) != (b.g == 0) {
			return a.g == 0
		}
		if a.g == 0 {
			if a.run1 != b.run1 {
				return a.run1 < b.run1
			}
			return a.order < b.order
		}
		wa, wb := afsWeight(a.p, a.g), afsWeight(b.p, b.g)
		if wa != wb {
			return wa > wb
		}
		if a.g != b.g {
			return a.g < b.g
		}
		return a.order < b.order
	}
	for {
		var best *cand
		for _, c := range cs {
			step := 1
			if c.g == 0 {
				step = c.lo
			}
			if c.g >= c.hi || !fits(c, step) {
				continue
			}
			if best == nil || better(c, best) {
				best = c
			}
		}
		if best == nil {
			break
		}
		if best.g == 0 {
			best.g = best.lo
		} else {
			best.g++
		}
	}
	var out []Proposal
	for _, c := range cs {
		j := c.e.Job
		if c.g == 0 || c.g == j.GPUs {
			continue
		}
		why := fmt.Sprintf("elastic %d-%d: AFS-L gives %d of the free GPUs (%s; marginal gain of one more %.3f)",
			c.e.Min, c.e.Max, c.g, c.why, afsWeight(c.p, c.g))
		switch {
		case c.g == c.e.Max:
			why = fmt.Sprintf("elastic %d-%d: AFS-L gives its maximum %d (%s)", c.e.Min, c.e.Max, c.g, c.why)
		case c.g == c.hi:
			why = fmt.Sprintf("elastic %d-%d: AFS-L gives %d, the most GPUs free on one node (%s)", c.e.Min, c.e.Max, c.g, c.why)
		}
		out = append(out, Proposal{JobID: j.ID, Rule: RuleElastic, GPUs: c.g, From: int64(j.GPUs), Reason: why})
	}
	return out
}

// amdahlTime is the run time at g GPUs relative to one GPU.
func amdahlTime(p float64, g int) float64 { return (1 - p) + p/float64(g) }

// afsWeight is AFS's marginal throughput gain of one more GPU at g,
// (T(g+1) − T(g)) / T(g+1), with T = 1/amdahlTime.
func afsWeight(p float64, g int) float64 {
	t0, t1 := 1/amdahlTime(p, g), 1/amdahlTime(p, g+1)
	return (t1 - t0) / t1
}

// amdahlFit fits R(g) = a + b/g to a profile's median run times by GPU
// count (least squares in x = 1/g) and returns p = b/(a+b) in [0, 1]. It
// needs two distinct counts.
func amdahlFit(p *UsageProfile) (float64, bool) {
	if p == nil || len(p.RunByGPUs) < 2 {
		return 0, false
	}
	var n, sx, sy, sxx, sxy float64
	for g, r := range p.RunByGPUs {
		x, y := 1/float64(g), r.Seconds()
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, false
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	if a+b <= 0 {
		return 0, false
	}
	return min(max(b/(a+b), 0), 1), true
}
