package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// quantile is the q-quantile of xs, interpolating linearly between order
// statistics (Hyndman and Fan's definition 7, numpy's default, as policy/sim
// uses); xs is sorted in place. NaN when xs is empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (pos-float64(lo))*(xs[hi]-xs[lo])
}

// jain is Jain's fairness index (Σx)²/(n·Σx²) (Jain, Chiu and Hawe,
// "A Quantitative Measure of Fairness and Discrimination for Resource
// Allocation in Shared Computer Systems", DEC-TR-301, 1984, §3): 1 when every
// x is equal, 1/n when one party has everything. NaN for fewer than two
// values or when all are zero.
func jain(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	var s, ss float64
	for _, x := range xs {
		s += x
		ss += x * x
	}
	if ss == 0 {
		return math.NaN()
	}
	return s * s / (float64(len(xs)) * ss)
}

// overlap is how long [a, b) and [from, to) overlap.
func overlap(a, b, from, to time.Time) time.Duration {
	lo, hi := a, b
	if from.After(lo) {
		lo = from
	}
	if to.Before(hi) {
		hi = to
	}
	if !hi.After(lo) {
		return 0
	}
	return hi.Sub(lo)
}

// stepCount is a piecewise-constant count over time with its running
// integral, for averages over intervals.
type stepCount struct {
	t     []int64   // change points, ns, ascending
	count []float64 // value from t[i] on
	integ []float64 // ∫ count from t[0] to t[i], count·seconds
}

// mean is the average of the count over [a, b); the count at a when b ≤ a.
func (s *stepCount) mean(a, b int64) float64 {
	if b <= a {
		i, found := slices.BinarySearch(s.t, a)
		if !found {
			i--
		}
		if i < 0 {
			return 0
		}
		return s.count[i]
	}
	return (s.integral(b) - s.integral(a)) / (float64(b-a) / 1e9)
}

func (s *stepCount) integral(at int64) float64 {
	i, found := slices.BinarySearch(s.t, at)
	if !found {
		i--
	}
	if i < 0 {
		return 0
	}
	return s.integ[i] + s.count[i]*float64(at-s.t[i])/1e9
}

// activeUsers counts the users with a job pending or running over time:
// per user, the union of their jobs' [Submit, End) spans.
func activeUsers(jobs []policy.Job) *stepCount {
	type ev struct {
		t int64
		d float64
	}
	spans := map[string][][2]int64{}
	for i := range jobs {
		j := &jobs[i]
		spans[j.User] = append(spans[j.User], [2]int64{j.Submit.UnixNano(), j.End.UnixNano()})
	}
	var evs []ev
	for _, ss := range spans {
		for _, s := range union(ss) {
			evs = append(evs, ev{s[0], 1}, ev{s[1], -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	sc := &stepCount{}
	c, integ := 0.0, 0.0
	for i, e := range evs {
		if i > 0 {
			integ += c * float64(e.t-evs[i-1].t) / 1e9
		}
		c += e.d
		if n := len(sc.t); n > 0 && sc.t[n-1] == e.t {
			sc.count[n-1] = c
			continue
		}
		sc.t = append(sc.t, e.t)
		sc.count = append(sc.count, c)
		sc.integ = append(sc.integ, integ)
	}
	return sc
}

// union merges half-open spans, sorting ss.
func union(ss [][2]int64) [][2]int64 {
	slices.SortFunc(ss, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := ss[:0]
	for _, s := range ss {
		if s[1] <= s[0] {
			continue
		}
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// finishTimeFairness is Themis' ρ (Mahajan et al., "Themis: Fair and
// Efficient GPU Cluster Scheduling", NSDI'20, §3) for job j: its completion
// time End − Submit over the time it would take on a 1/N share of the
// cluster, T_id = max(run, τ) · max(1, units·N/capacity), where N is the
// average number of users with a job pending or running over the job's life
// (policy/sim's Measure uses the same definition, so real and simulated ρ
// compare). ρ ≤ 1: the job did no worse than on its own slice of the
// cluster. NaN for a job that did not run or asked for no units.
func finishTimeFairness(j *policy.Job, units, capacity float64, tau time.Duration, active *stepCount) float64 {
	run := j.RunTime()
	if run <= 0 || units <= 0 || capacity <= 0 {
		return math.NaN()
	}
	n := max(1, active.mean(j.Submit.UnixNano(), j.End.UnixNano()))
	tid := max(run, tau).Seconds() * max(1, units*n/capacity)
	return j.End.Sub(j.Submit).Seconds() / tid
}

// peakUnits is the largest number of units (GPUs, or processors) in use at
// once by jobs, by Service rate.
func peakUnits(jobs []policy.Job, svc policy.Service) float64 {
	type ev struct {
		t int64
		d float64
	}
	evs := make([]ev, 0, 2*len(jobs))
	for i := range jobs {
		j := &jobs[i]
		r := svc.Rate(j)
		if j.Start.IsZero() || !j.End.After(j.Start) || r <= 0 {
			continue
		}
		evs = append(evs, ev{j.Start.UnixNano(), r}, ev{j.End.UnixNano(), -r})
	}
	// Ends before starts at the same instant: a GPU freed and taken again
	// at once is one GPU.
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	cur, peak := 0.0, 0.0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}
