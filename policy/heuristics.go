package policy

import (
	"fmt"
	"math"
	"time"
)

// The HPC heuristics RLScheduler compares itself with (Zhang et al.,
// "RLScheduler: An Automated HPC Batch Job Scheduler Using Reinforcement
// Learning", SC'20, in its evaluation): SJF, F1, WFP3 and UNICEP. They are
// registered so that Fairway's comparisons set its policies beside the
// published baselines on the same simulator.
//
// Like RLScheduler, they read what the user asked, not a prediction: r is
// the job's time limit (UnknownRun when it has none), and n its requested
// size: whole GPUs where the job asks for GPUs or shards (Job.GPUCount,
// Service.ShardsPerGPU), else CPUs (processors, the unit of SWF traces),
// at least 1. w, the time waited, counts from eligibility as Slurm's age
// does. None of them reads fair share: they are efficiency baselines.

// requestedRun is r: the job's time limit in seconds, UnknownRun's when
// it has none.
func requestedRun(j *Job) float64 {
	if j.TimeLimit > 0 {
		return j.TimeLimit.Seconds()
	}
	return UnknownRun.Seconds()
}

// requestedSize is n: GPUs where the job has GPUs or shards, else CPUs, at
// least 1.
func requestedSize(s *Snapshot, j *Job) float64 {
	if j.GPUs > 0 || j.Shards > 0 {
		return max(j.GPUCount(s.Service.ShardsPerGPU), 1)
	}
	return float64(max(j.CPUs, 1))
}

// waited is w: seconds since the job became eligible, at least 0.
func waited(s *Snapshot, j *Job) float64 {
	return max(0, s.Now.Sub(waitingSince(j)).Seconds())
}

// secondsClock is now.Sub(t).Seconds() for the many t of one ranking,
// bit for bit, at a fraction of the cost: Sub checks every difference for
// overflow by adding it back (u.Add(d).Equal(t)), which a difference of
// less than 2³³ seconds (272 years) cannot need, so since takes the
// difference of Unix seconds and nanoseconds, as Sub does of its own, and
// leaves the rest (the zero time, a now with a monotonic reading, which
// Sub may subtract instead) to Sub.
type secondsClock struct {
	now  time.Time
	sec  int64
	nsec int
	wall bool // now has no monotonic reading
}

func newSecondsClock(now time.Time) secondsClock {
	return secondsClock{now: now, sec: now.Unix(), nsec: now.Nanosecond(), wall: now == now.Round(0)}
}

// since is now.Sub(t).Seconds().
func (c *secondsClock) since(t time.Time) float64 {
	if ds := c.sec - t.Unix(); c.wall && ds > -1<<33 && ds < 1<<33 {
		return (time.Duration(ds)*time.Second + time.Duration(c.nsec-t.Nanosecond())).Seconds()
	}
	return c.now.Sub(t).Seconds()
}

// waited is waited(s, j) for c = newSecondsClock(s.Now).
func (c *secondsClock) waited(j *Job) float64 {
	return max(0, c.since(waitingSince(j)))
}

// SJFLimitParams configures sjf-limit, which has no parameters.
type SJFLimitParams struct{}

// sjfLimit is Shortest-Job-First by the user's time limit, RLScheduler's
// SJF (Zhang et al., SC'20: the queue sorted by requested time,
// then submit time): the predictor-free SJF of the HPC literature.
// Value = −r. Parts: limit_s.
type sjfLimit struct{ sc scorer }

// NewSJFLimit returns the "sjf-limit" policy.
func NewSJFLimit(SJFLimitParams) (Policy, error) {
	return &sjfLimit{sc: scorer{names: []string{"limit_s"}, weights: []float64{-1}}}, nil
}

func (*sjfLimit) Name() string { return "sjf-limit" }

func (p *sjfLimit) Rank(s *Snapshot) ([]Score, error) {
	parts := s.partsBuf(len(s.Pending))
	for i := range s.Pending {
		parts[i] = requestedRun(&s.Pending[i])
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("sjf-limit: %w", err)
	}
	return scores, nil
}

func (*sjfLimit) staticOrder() bool { return true }

func (p *sjfLimit) staticKey(_ *Snapshot, j *Job) (float64, error) {
	row := [1]float64{requestedRun(j)}
	return p.sc.value(row[:]), nil
}

// F1Params configures f1.
type F1Params struct {
	// Origin is where submit times s are counted from. The zero time means
	// the earliest submit time among the snapshot's pending and running
	// jobs (see f1).
	Origin time.Time
}

// f1 is the first of the four scheduling functions Carastan-Santos and de
// Camargo obtained by regression over simulated schedules ("Obtaining
// Dynamic Scheduling Policies with Simulation and Machine Learning",
// SC'17, the first of its functions F1 to F4):
//
//	F1 = log10(r)·n + 8.70·10²·log10(s)
//
// the smallest first, with s the job's submit time; RLScheduler's F1
// (SC'20) evaluates it with r the requested time and n the requested
// processors, and replaces an r or s of 0 by 0.1, as here.
//
// Adaptation: the papers count s from the start of the simulated
// sequence (RLScheduler from the start of the trace); a live queue has no
// start, so s counts from F1Params.Origin, by default the earliest submit
// time among the snapshot's pending and running jobs. The nearer the
// origin, the more the log10(s) term orders by age; the farther, the more
// F1 is log10(r)·n. Value = −F1. Parts: f1, log10_limit, size,
// log10_submit.
type f1 struct {
	origin time.Time
	sc     scorer
}

// NewF1 returns the "f1" policy.
func NewF1(p F1Params) (Policy, error) {
	return &f1{origin: p.Origin, sc: scorer{
		names:   []string{"f1", "log10_limit", "size", "log10_submit"},
		weights: []float64{-1, 0, 0, 0},
	}}, nil
}

func (*f1) Name() string { return "f1" }

// f1SubmitWeight is F1's 8.70·10².
const f1SubmitWeight = 870

func (p *f1) Rank(s *Snapshot) ([]Score, error) {
	origin := p.keyOrigin(s)
	const k = 4
	parts := s.partsBuf(k * len(s.Pending))
	for i := range s.Pending {
		f1Row(s, &s.Pending[i], origin, parts[k*i:k*i+k])
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("f1: %w", err)
	}
	return scores, nil
}

// f1Row fills j's parts: F1, log10 r, n, log10 s, with s counted from
// origin.
func f1Row(s *Snapshot, j *Job, origin time.Time, row []float64) {
	log10Pos := func(v float64) float64 {
		if v <= 0 {
			v = 0.1
		}
		return math.Log10(v)
	}
	lr, n := log10Pos(requestedRun(j)), requestedSize(s, j)
	ls := log10Pos(j.Submit.Sub(origin).Seconds())
	row[0], row[1], row[2], row[3] = lr*n+f1SubmitWeight*ls, lr, n, ls
}

// keyOrigin is where s counts from in s: F1Params.Origin, else the
// earliest submit time among s's pending and running jobs.
func (p *f1) keyOrigin(s *Snapshot) time.Time {
	origin := p.origin
	if origin.IsZero() && !s.EarliestSubmit.IsZero() {
		return s.EarliestSubmit
	}
	if origin.IsZero() {
		for _, jobs := range [][]Job{s.Pending, s.Running} {
			for i := range jobs {
				if t := jobs[i].Submit; !t.IsZero() && (origin.IsZero() || t.Before(origin)) {
					origin = t
				}
			}
		}
	}
	return origin
}

// f1's key is static while its origin stays: a fixed one always, the
// default (the earliest submit time still in the system) until that job
// leaves, when it moves every job's log10(s) term by a different amount
// and every key is computed again (originKeyed).
func (p *f1) staticOrder() bool { return true }

func (p *f1) staticKey(s *Snapshot, j *Job) (float64, error) {
	return p.staticKeyFrom(s, p.keyOrigin(s), j)
}

func (p *f1) staticKeyFrom(s *Snapshot, origin time.Time, j *Job) (float64, error) {
	var row [4]float64
	f1Row(s, j, origin, row[:])
	return p.sc.value(row[:]), nil
}

// WFP3Params configures wfp3, which has no parameters.
type WFP3Params struct{}

// wfp3 is WFP3 (Tang et al., "Fault-aware, utility-based job scheduling
// on Blue Gene/P systems", IEEE CLUSTER 2009), one of
// RLScheduler's baselines (SC'20): the job with the largest
//
//	(w/r)³·n
//
// first. It favours jobs that have waited long relative to their
// requested time, and large jobs. Value = (w/r)³·n. Parts: wfp3, wait_s,
// limit_s, size.
type wfp3 struct{ sc scorer }

// NewWFP3 returns the "wfp3" policy.
func NewWFP3(WFP3Params) (Policy, error) {
	return &wfp3{sc: scorer{names: []string{"wfp3", "wait_s", "limit_s", "size"}, weights: []float64{1, 0, 0, 0}}}, nil
}

func (*wfp3) Name() string { return "wfp3" }

func (p *wfp3) Rank(s *Snapshot) ([]Score, error) {
	return rankByWait(s, &p.sc, "wfp3", wfp3Value)
}

// rankByWait ranks the pending jobs of s by value(w, r, n) of each one's
// wait w, time limit r and size n, the parts of wfp3 and unicep:
// value, wait_s, limit_s, size.
func rankByWait(s *Snapshot, sc *scorer, name string, value func(w, r, n float64) float64) ([]Score, error) {
	const k = 4
	parts := s.partsBuf(k * len(s.Pending))
	clock := newSecondsClock(s.Now)
	for i := range s.Pending {
		j := &s.Pending[i]
		w, r, n := clock.waited(j), requestedRun(j), requestedSize(s, j)
		row := parts[k*i : k*i+k]
		row[0], row[1], row[2], row[3] = value(w, r, n), w, r, n
	}
	scores, err := sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return scores, nil
}

// wfp3Value is (w/r)³·n, the Value of a job of limit r and size n that
// waited w.
func wfp3Value(w, r, n float64) float64 {
	x := w / r
	return x * x * x * n
}

// wfp3's key is a function of the job's wait: a ClockOrder keeps its
// order between points.
func (*wfp3) clockConsts(s *Snapshot, j *Job, _ int, _ float64) (r, n float64) {
	return requestedRun(j), requestedSize(s, j)
}

func (*wfp3) clockValue(w, r, n float64) float64 { return wfp3Value(w, r, n) }

func (*wfp3) clockSince(j *Job) (time.Time, bool) { return waitingSince(j), false }

func (*wfp3) clockReadsUsers() bool { return false }

// wfp3's key is (c·w)³ with c = ∛n/r.
func (*wfp3) clockSlope(r, n float64) float64 { return math.Cbrt(n) / r }

func (*wfp3) clockBound(y float64) float64 { return y * y * y * clockMargin }

func (*wfp3) clockValues(keys []clockKey, jobs []clockJob, now *clockNow) {
	for i := range keys {
		k := &keys[i]
		j := &jobs[k.slot]
		k.value = wfp3Value(now.wait(j), j.a, j.b)
	}
}

// UNICEPParams configures unicep, which has no parameters.
type UNICEPParams struct{}

// unicep is UNICEP (Tang et al., IEEE CLUSTER 2009), one of
// RLScheduler's baselines (SC'20): the job with the largest
//
//	w / (log2(n)·r)
//
// first: waited long relative to its requested time, and small. On Blue
// Gene/P n was at least a 32-node partition; here a one-processor (or
// one-GPU) job would divide by log2(1) = 0, so log2(n) is floored at 1:
// such a job ranks as a job of 2. (RLScheduler adds 10⁻¹⁵ instead, which
// puts every one-processor job ahead of all others.) Value =
// w/(max(log2 n, 1)·r). Parts: unicep, wait_s, limit_s, size.
type unicep struct{ sc scorer }

// NewUNICEP returns the "unicep" policy.
func NewUNICEP(UNICEPParams) (Policy, error) {
	return &unicep{sc: scorer{names: []string{"unicep", "wait_s", "limit_s", "size"}, weights: []float64{1, 0, 0, 0}}}, nil
}

func (*unicep) Name() string { return "unicep" }

func (p *unicep) Rank(s *Snapshot) ([]Score, error) {
	return rankByWait(s, &p.sc, "unicep", unicepValue)
}

// unicepValue is w/(max(log2 n, 1)·r), the Value of a job of limit r and
// size n that waited w.
func unicepValue(w, r, n float64) float64 { return w / unicepDivisor(r, n) }

// unicepDivisor is max(log2 n, 1)·r, what unicep divides the wait by.
func unicepDivisor(r, n float64) float64 { return max(math.Log2(n), 1) * r }

// unicep's key is the wait over a constant: a ClockOrder keeps its order
// between points. The constants are the divisor and 0.
func (*unicep) clockConsts(s *Snapshot, j *Job, _ int, _ float64) (d, _ float64) {
	return unicepDivisor(requestedRun(j), requestedSize(s, j)), 0
}

func (*unicep) clockValue(w, d, _ float64) float64 { return w / d }

func (*unicep) clockSince(j *Job) (time.Time, bool) { return waitingSince(j), false }

func (*unicep) clockReadsUsers() bool { return false }

// unicep's key is c·w with c = 1/d.
func (*unicep) clockSlope(d, _ float64) float64 { return 1 / d }

func (*unicep) clockBound(y float64) float64 { return y * clockMargin }

// clockMargin is clockBound's: the relative rounding of a key and of
// its bound are a few units of 2⁻⁵³ each.
const clockMargin = 1 + 0x1p-20

func (*unicep) clockValues(keys []clockKey, jobs []clockJob, now *clockNow) {
	for i := range keys {
		k := &keys[i]
		j := &jobs[k.slot]
		k.value = now.wait(j) / j.a
	}
}
