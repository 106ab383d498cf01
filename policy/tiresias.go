package policy

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// TiresiasParams configures tiresias. The zero value gives the defaults,
// those of the authors' simulator (SymbioticLab/Tiresias, dlas-gpu).
type TiresiasParams struct {
	// Gittins selects discretized 2D-Gittins; false (the default) is
	// discretized 2D-LAS.
	Gittins bool
	// Thresholds are the queue limits on attained service in GPU-seconds,
	// ascending: a job below Thresholds[0] is in Q0 (served first), below
	// Thresholds[1] in Q1, and so on; K thresholds make K+1 queues. nil
	// means the simulator's {3250, 7200}: three queues.
	Thresholds []float64
	// PromoteKnob is the starvation knob: a job that has run, been
	// requeued, and then waited PromoteKnob times as long as it had run
	// since it last entered Q0 goes back to Q0. 0 (the default, as in the
	// simulator's dlas-gpu) never promotes.
	PromoteKnob float64
	// GittinsDelta is the service quantum Δ of the Gittins index, in
	// GPU-seconds. 0 means the simulator's 3250.
	GittinsDelta float64
}

// tiresias is Tiresias' discretized two-dimensional attained-service
// scheduler (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed
// Deep Learning", NSDI'19, §3: 2D-LAS and 2D-Gittins with priority
// discretization and the PROMOTEKNOB). A job's attained service is GPUs ×
// time run; the queues Q0..QK split it at Thresholds; lower queues are
// served first. Within a queue, 2D-LAS serves in arrival order and
// 2D-Gittins by the Gittins index of the attained service a over the
// service distribution of finished jobs,
//
//	G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a],
//
// higher first. As in the simulator, a promotion to Q0 restarts the
// service counted for queueing, and pending time accumulates only once a
// job has run, from its last promotion.
//
// Adaptation to a batch scheduler: Tiresias preempts; Slurm as Fairway
// drives it does not, so in serve tiresias ranks pending jobs only, and a
// requeued job keeps its attained service (the Ledger keeps it, with the
// spans it ran, which the promotion rule replays). A job that never ran is
// in Q0, so without requeues 2D-LAS is FIFO. Within a queue arrival order
// is submit order (the simulator appends promoted jobs to Q0's tail). The
// Gittins distribution is the service of the last finished jobs the Ledger
// samples (the artifact reads durations from a file); with no samples the
// index is 0 and Gittins falls back to LAS' order. For a preemptive
// simulation, charge running jobs up to Now and pass them in
// Snapshot.Pending too: a job's rank depends only on the Ledger, so the top
// of the ranking that fits should run and the rest be requeued.
//
// Value = −queue (+ G/(1+G), in [0, 1), with Gittins). Parts: queue,
// gittins_order (G/(1+G)), gittins_index (G), attained_gpu_s (all service
// received), queued_gpu_s (since the last promotion), promoted.
type tiresias struct {
	gittins    bool
	thresholds []float64
	knob       float64
	delta      float64
	sc         scorer
}

// NewTiresias returns the "tiresias" policy.
func NewTiresias(p TiresiasParams) (Policy, error) {
	if p.Thresholds == nil {
		p.Thresholds = []float64{3250, 7200}
	}
	for i, t := range p.Thresholds {
		if t <= 0 || (i > 0 && t <= p.Thresholds[i-1]) {
			return nil, fmt.Errorf("tiresias: thresholds %v: want positive and ascending", p.Thresholds)
		}
	}
	if p.PromoteKnob < 0 || p.GittinsDelta < 0 {
		return nil, fmt.Errorf("tiresias: promote knob %g and Gittins delta %g: want >= 0", p.PromoteKnob, p.GittinsDelta)
	}
	if p.GittinsDelta == 0 {
		p.GittinsDelta = 3250
	}
	gw := 0.0
	if p.Gittins {
		gw = 1
	}
	return &tiresias{
		gittins:    p.Gittins,
		thresholds: slices.Clone(p.Thresholds),
		knob:       p.PromoteKnob,
		delta:      p.GittinsDelta,
		sc: scorer{
			names:   []string{"queue", "gittins_order", "gittins_index", "attained_gpu_s", "queued_gpu_s", "promoted"},
			weights: []float64{-1, gw, 0, 0, 0, 0},
		},
	}, nil
}

func (p *tiresias) Name() string { return "tiresias" }

func (p *tiresias) Rank(s *Snapshot) ([]Score, error) {
	var dist gittinsDist
	if p.gittins {
		dist = newGittinsDist(s.Ledger.sortedSamples())
	}
	now := s.Now.UnixNano()
	parts := s.partsBuf(tiresiasParts * len(s.Pending))
	for i := range s.Pending {
		p.row(s, &s.Pending[i], now, dist, parts[tiresiasParts*i:tiresiasParts*(i+1)])
	}
	scores, err := p.sc.rank(s, parts, nil)
	if err != nil {
		return nil, fmt.Errorf("tiresias: %w", err)
	}
	return scores, nil
}

// tiresiasParts is the number of tiresias' score parts.
const tiresiasParts = 6

// row fills j's score parts in s at now (s.Now in Unix nanoseconds).
func (p *tiresias) row(s *Snapshot, j *Job, now int64, dist gittinsDist, row []float64) {
	var ju *jobUsage
	if s.Ledger != nil {
		ju = s.Ledger.jobs[j.ID]
	}
	queued, promoted, attained := 0.0, false, 0.0
	if ju != nil {
		attained = ju.service
		queued, promoted = p.queuedService(ju, now)
	}
	q := p.queue(queued)
	row[0], row[3], row[4] = float64(q), attained, queued
	if promoted {
		row[5] = 1
	}
	if p.gittins {
		g := dist.index(queued, p.delta)
		row[1], row[2] = g/(1+g), g
	}
}

// 2D-LAS without promotion keys a job by the spans the Ledger charged it
// alone: its order of two jobs changes only when one is charged
// (serviceKeyed). 2D-Gittins reads the service of every finished job, and
// promotion reads Now.
func (p *tiresias) serviceOrder() bool { return !p.gittins && p.knob == 0 }

// keyFixedUntil: with serviceOrder, j's key is −queue(executed · rate),
// executed the seconds of the spans it ran; charged on, executed grows by
// at most the time past the end of its last span (a new span starts
// after it), so its key stays until executed reaches the next threshold
// over the rate. The margin, 1 ms and a millionth of that time, dwarfs
// the rounding of the sums (about 1e-16 of them per span).
func (p *tiresias) keyFixedUntil(s *Snapshot, j *Job) int64 {
	if j.Start.IsZero() {
		return math.MinInt64
	}
	var ju *jobUsage
	if s.Ledger != nil {
		ju = s.Ledger.jobs[j.ID]
	}
	executed, last, rate, jrate := 0.0, j.Start.UnixNano(), s.Service.Rate(j), 0.0
	if ju != nil {
		for _, r := range ju.runs {
			executed += float64(r.to-r.from) / 1e9
		}
		if n := len(ju.runs); n > 0 {
			last = ju.runs[n-1].to
		}
		jrate = ju.rate
	}
	q := p.queue(executed * jrate)
	rate = max(rate, jrate)
	if q == len(p.thresholds) || rate <= 0 {
		return math.MaxInt64
	}
	total := p.thresholds[q] / rate // seconds run to reach the next queue
	left := (total-executed)*1e9 - (1e6 + total*1e3)
	switch {
	case left <= 0:
		return math.MinInt64
	case left >= float64(math.MaxInt64)-float64(last):
		return math.MaxInt64
	}
	return last + int64(left)
}

// The order is not static in StaticOrder's sense: a requeued job's key
// changes when it is charged.
func (p *tiresias) staticOrder() bool { return false }

func (p *tiresias) staticKey(s *Snapshot, j *Job) (float64, error) {
	var row [tiresiasParts]float64
	p.row(s, j, s.Now.UnixNano(), gittinsDist{}, row[:])
	return p.sc.value(row[:]), nil
}

// queue is the index of the queue for a job with attained service a.
func (p *tiresias) queue(a float64) int {
	for q, t := range p.thresholds {
		if a < t {
			return q
		}
	}
	return len(p.thresholds)
}

// queuedService replays the simulator's promotion rule over the spans the
// job ran, up to now (it is pending now): the service counted for queueing
// since its last promotion, and whether the pending time since it last ran
// promoted it.
func (p *tiresias) queuedService(ju *jobUsage, now int64) (float64, bool) {
	executed, pending := 0.0, 0.0 // seconds since the last promotion
	promoted := false
	wait := func(d float64) {
		if executed <= 0 {
			return
		}
		pending += d
		if p.knob > 0 && p.queue(executed*ju.rate) > 0 && pending >= p.knob*executed {
			executed, pending, promoted = 0, 0, true
		}
	}
	for i, r := range ju.runs {
		if i > 0 {
			wait(float64(r.from-ju.runs[i-1].to) / 1e9)
		}
		executed += float64(r.to-r.from) / 1e9
		promoted = false
	}
	if n := len(ju.runs); n > 0 && now > ju.runs[n-1].to {
		wait(float64(now-ju.runs[n-1].to) / 1e9)
	}
	return executed * ju.rate, promoted
}

// gittinsDist is a sorted service sample with prefix sums.
type gittinsDist struct {
	s   []float64
	sum []float64 // sum[i] = s[0] + ... + s[i-1]
}

func newGittinsDist(sorted []float64) gittinsDist {
	sum := make([]float64, len(sorted)+1)
	for i, v := range sorted {
		sum[i+1] = sum[i] + v
	}
	return gittinsDist{s: sorted, sum: sum}
}

// index is the Gittins index of a job with attained service a and quantum
// delta: the chance it finishes within delta more, per unit of service it
// is expected to use in that quantum. 0 beyond the largest sample.
func (d gittinsDist) index(a, delta float64) float64 {
	n := len(d.s)
	i := sort.SearchFloat64s(d.s, a)
	for i < n && d.s[i] <= a {
		i++
	}
	if i == n {
		return 0
	}
	k := sort.SearchFloat64s(d.s, a+delta)
	for k < n && d.s[k] <= a+delta {
		k++
	}
	above := float64(n - i)
	prob := float64(k-i) / above
	used := (d.sum[k] - d.sum[i] - float64(k-i)*a + float64(n-k)*delta) / above
	if used <= 0 {
		return 0
	}
	return prob / used
}
