package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// SynthParams configures Synth. The zero value gives the defaults, the
// small workload `fairway simulate` runs when given no trace.
type SynthParams struct {
	// Jobs is how many jobs to generate (2000).
	Jobs int
	// Users is how many users submit them (40).
	Users int
	// Nodes and GPUsPerNode are the cluster the offered load is
	// calibrated against (8 nodes × 8 GPUs).
	Nodes       int
	GPUsPerNode int
	// Load is the offered load: GPU-seconds submitted per GPU-second of
	// the cluster, on average (0.9).
	Load float64
	// Seed makes the workload reproducible: the same parameters and seed
	// give the same jobs.
	Seed uint64
	// Start is the first instant submits may fall at (2020-04-01 00:00 UTC,
	// where the Helios traces begin).
	Start time.Time
}

// Bounds on a synthetic workload: far beyond any trace replayed here, and
// below what would exhaust memory or overflow the submit times.
const (
	maxSynthJobs  = 10_000_000
	maxSynthUnits = 1 << 24             // nodes × GPUs per node
	maxSynthSpan  = 100 * 365 * 86400.0 // seconds from the first submit to the last
)

func (p *SynthParams) defaults() error {
	if p.Jobs < 0 || p.Users < 0 || p.Nodes < 0 || p.GPUsPerNode < 0 || p.Load < 0 {
		return fmt.Errorf("synth: negative setting in %+v", *p)
	}
	if math.IsNaN(p.Load) || p.Load > MaxLoad {
		return fmt.Errorf("synth: load %g: want a number > 0 and at most %d", p.Load, MaxLoad)
	}
	if p.Jobs > maxSynthJobs {
		return fmt.Errorf("synth: %d jobs: at most %d", p.Jobs, maxSynthJobs)
	}
	if p.Nodes > maxSynthUnits || p.GPUsPerNode > maxSynthUnits || p.Nodes*p.GPUsPerNode > maxSynthUnits {
		return fmt.Errorf("synth: %d nodes × %d GPUs: at most %d GPUs in all", p.Nodes, p.GPUsPerNode, maxSynthUnits)
	}
	if p.Jobs == 0 {
		p.Jobs = 2000
	}
	if p.Users == 0 {
		p.Users = 40
	}
	if p.Nodes == 0 {
		p.Nodes = 8
	}
	if p.GPUsPerNode == 0 {
		p.GPUsPerNode = 8
	}
	if p.Load == 0 {
		p.Load = 0.9
	}
	if p.Start.IsZero() {
		p.Start = time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)
	}
	return nil
}

// The Helios characterization Synth is calibrated to (Hu et al.,
// "Characterization and Prediction of Deep Learning Workloads in
// Large-Scale GPU Datacenters", SC'21, §3).
const (
	// SynthMedianRun and SynthMeanRun are the median and mean GPU job
	// durations: heavy-tailed, most jobs short, most GPU time in long jobs.
	SynthMedianRun = 200 * time.Second
	SynthMeanRun   = 6600 * time.Second
	// SynthMaxRun caps durations, as clusters cap time limits.
	SynthMaxRun = 14 * 24 * time.Hour
	// synthRepeatSigma is the log-space spread of one job template's
	// durations: resubmitting the same job gives similar run times.
	synthRepeatSigma = 0.7
)

// synthStates are the final states and their shares among jobs.
var synthStates = []struct {
	state policy.State
	p     float64
}{{policy.StateCompleted, 0.62}, {policy.StateCancelled, 0.22}, {policy.StateFailed, 0.16}}

// synthGPUs are the GPU counts of job templates and their shares: most
// jobs use one GPU, a few are large distributed jobs.
var synthGPUs = []struct {
	gpus int
	p    float64
}{{1, 0.70}, {2, 0.10}, {4, 0.08}, {8, 0.08}, {16, 0.03}, {32, 0.01}}

// synthLimits is the ladder of time limits users pick from.
var synthLimits = []time.Duration{
	10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
	12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour,
}

var (
	synthTasks  = []string{"train", "eval", "finetune", "sweep", "pretrain", "infer", "debug"}
	synthModels = []string{"resnet50", "bert", "gpt", "vit", "unet", "yolo", "lstm", "t5", "moe", "diffusion"}
)

// synthTemplate is a job a user submits again and again.
type synthTemplate struct {
	name    string
	logBase float64 // log of the template's median run time, seconds
	gpus    int
	over    float64 // how much the user over-asks for time
}

// Synth generates a synthetic GPU workload calibrated to the Helios
// characterization (Hu et al., SC'21, §3), seeded and reproducible:
//
//   - Durations are lognormal with median SynthMedianRun and, capped at
//     SynthMaxRun, mean SynthMeanRun (σ is solved for the cap).
//   - Users submit a few job templates (a name, a GPU count, a typical
//     duration) again and again, so names repeat and a template's runs are
//     alike (log-space spread synthRepeatSigma within, the rest of σ
//     between templates); user activity is Zipf-distributed, so a few
//     users submit most jobs, as in Helios.
//   - GPU counts follow synthGPUs (most jobs one GPU), capped at the
//     cluster; jobs larger than a node ask for whole nodes.
//   - Final states are 62% completed, 22% cancelled, 16% failed,
//     independent of duration.
//   - Submits are a Poisson process with a diurnal rate (±50%, peak in
//     the afternoon), whose mean rate makes the generated jobs' GPU-seconds
//     the requested offered load of the cluster over the submit span.
//   - Time limits are the smallest step of a ladder (10 min … 14 days)
//     covering the run time times the template's over-request factor
//     (1.5–6×), as users round their requests up.
//
// Each job has Start = Submit and End = Submit + run time: a trace of what
// ran, not of how it was scheduled. Times are whole seconds.
func Synth(p SynthParams) ([]policy.Job, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	g := &synthRand{r: rand.NewPCG(p.Seed, 0x5eed_fa1e_4a7)}
	mu := math.Log(SynthMedianRun.Seconds())
	sigma := synthSigma(mu, SynthMeanRun.Seconds(), SynthMaxRun.Seconds())
	baseSigma := math.Sqrt(max(sigma*sigma-synthRepeatSigma*synthRepeatSigma, 0))
	capacity := p.Nodes * p.GPUsPerNode

	// Users, their activity and their templates.
	type user struct {
		name      string
		templates []synthTemplate
		cum       []float64
	}
	users := make([]user, p.Users)
	userCum := make([]float64, p.Users)
	acc := 0.0
	for u := range users {
		acc += 1 / float64(u+1)
		userCum[u] = acc
		n := 1 + g.geometric(0.3)
		ts := make([]synthTemplate, n)
		cum := make([]float64, n)
		c := 0.0
		for i := range ts {
			gpus := 1
			x := g.float()
			for _, s := range synthGPUs {
				if x < s.p {
					gpus = s.gpus
					break
				}
				x -= s.p
			}
			for gpus > capacity {
				gpus /= 2
			}
			ts[i] = synthTemplate{
				name:    fmt.Sprintf("%s-%s-%d", synthTasks[g.intn(len(synthTasks))], synthModels[g.intn(len(synthModels))], g.intn(100)),
				logBase: mu + baseSigma*g.normal(),
				gpus:    gpus,
				over:    1.5 * math.Pow(4, g.float()),
			}
			c += 1 / float64(i+1)
			cum[i] = c
		}
		users[u] = user{name: fmt.Sprintf("u%03d", u+1), templates: ts, cum: cum}
	}

	// The jobs: who submits which template, how it ends.
	jobs := make([]policy.Job, p.Jobs)
	logRun := make([]float64, p.Jobs) // the template's draw, before calibration
	over := make([]float64, p.Jobs)
	for i := range jobs {
		u := &users[pick(userCum, g.float()*userCum[len(userCum)-1])]
		tp := &u.templates[pick(u.cum, g.float()*u.cum[len(u.cum)-1])]
		logRun[i] = tp.logBase + synthRepeatSigma*g.normal()
		over[i] = tp.over
		state := synthStates[0].state
		x := g.float()
		for _, s := range synthStates {
			if x < s.p {
				state = s.state
				break
			}
			x -= s.p
		}
		jobs[i] = policy.Job{
			ID:        int64(i + 1),
			ArrayTask: -1,
			User:      u.name,
			Partition: "vc1",
			Name:      tp.name,
			Nodes:     schedule.NodesFor(tp.gpus, p.GPUsPerNode),
			CPUs:      4 * tp.gpus,
			GPUs:      tp.gpus,
			State:     state,
		}
	}

	// Calibrate: the job with the k-th smallest draw gets the lognormal's
	// (k−½)/n quantile, so the durations have exactly the published
	// median and, up to sampling of the tail, mean, while each template's
	// runs stay alike.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(logRun[a], logRun[b]) })
	runs := make([]float64, len(jobs))
	gpuSeconds := 0.0
	for k, i := range order {
		q := (float64(k) + 0.5) / float64(len(jobs))
		run := math.Exp(mu + sigma*math.Sqrt2*math.Erfinv(2*q-1))
		runs[i] = math.Round(min(max(run, 1), SynthMaxRun.Seconds()))
		gpuSeconds += float64(jobs[i].GPUs) * runs[i]
	}

	// Submits: the mean rate at which these jobs offer the requested load,
	// modulated by the time of day through thinning (Lewis and Shedler,
	// 1979).
	rate := float64(len(jobs)) * p.Load * float64(capacity) / gpuSeconds // jobs per second
	const day = 86400.0
	maxRate := 1.5 * rate
	t := 0.0
	for i := range jobs {
		for {
			t += g.exp() / maxRate
			diurnal := 1 + 0.5*math.Sin(2*math.Pi*(t/day-0.375))
			if g.float()*1.5 <= diurnal {
				break
			}
		}
		if t > maxSynthSpan {
			return nil, fmt.Errorf("synth: load %g spreads %d jobs over more than 100 years: want a higher load", p.Load, len(jobs))
		}
		limit := synthLimits[len(synthLimits)-1]
		for _, l := range synthLimits {
			if l.Seconds() >= runs[i]*over[i] {
				limit = l
				break
			}
		}
		j := &jobs[i]
		j.Submit = p.Start.Add(time.Duration(math.Floor(t)) * time.Second)
		j.Start = j.Submit
		j.End = j.Submit.Add(time.Duration(runs[i]) * time.Second)
		j.TimeLimit = limit
	}
	return jobs, nil
}

// pick returns the first index whose cumulative weight exceeds x.
func pick(cum []float64, x float64) int {
	for i, c := range cum {
		if x < c {
			return i
		}
	}
	return len(cum) - 1
}

// synthSigma solves for the σ of a lognormal with log-median mu whose mean,
// capped at c, is m: E[min(X, c)] = e^(μ+σ²/2)·Φ((ln c − μ − σ²)/σ) +
// c·(1 − Φ((ln c − μ)/σ)), which grows with σ here.
func synthSigma(mu, m, c float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	capped := func(s float64) float64 {
		lc := math.Log(c)
		return math.Exp(mu+s*s/2)*phi((lc-mu-s*s)/s) + c*(1-phi((lc-mu)/s))
	}
	lo, hi := 0.01, 6.0
	for range 100 {
		mid := (lo + hi) / 2
		if capped(mid) < m {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// synthRand draws from a PCG source with formulas written out here, so a
// seed gives the same workload whatever the Go release.
type synthRand struct{ r *rand.PCG }

// float is uniform in [0, 1).
func (g *synthRand) float() float64 { return float64(g.r.Uint64()>>11) / (1 << 53) }

// intn is uniform in [0, n).
func (g *synthRand) intn(n int) int { return int(g.float() * float64(n)) }

// normal is a standard normal draw (Box–Muller).
func (g *synthRand) normal() float64 {
	u := 1 - g.float() // (0, 1]
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*g.float())
}

// exp is a standard exponential draw.
func (g *synthRand) exp() float64 { return -math.Log(1 - g.float()) }

// geometric counts failures before the first success of probability p.
func (g *synthRand) geometric(p float64) int {
	return int(math.Floor(math.Log(1-g.float()) / math.Log(1-p)))
}
