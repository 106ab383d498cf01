package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
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

// activeUsers counts the users with a job pending or running over time,
// as policy/sim's Measure does.
func activeUsers(jobs []policy.Job) *sim.ActiveUsers {
	return sim.NewActiveUsers(len(jobs), func(i int) (string, time.Time, time.Time) {
		return jobs[i].User, jobs[i].Submit, jobs[i].End
	})
}

// finishTimeFairness is Themis' ρ (Mahajan et al., "Themis: Fair and
// Efficient GPU Cluster Scheduling", NSDI'20, §3) for job j: its completion
// time End − Submit over the time it would take on a 1/N share of the
// cluster, T_id = max(run, τ) · max(1, units·N/capacity), where N is the
// average number of users with a job pending or running over the job's life
// (policy/sim's Measure uses the same definition, so real and simulated ρ
// compare). ρ ≤ 1: the job did no worse than on its own slice of the
// cluster. NaN for a job that did not run or asked for no units.
func finishTimeFairness(j *policy.Job, units, capacity float64, tau time.Duration, active *sim.ActiveUsers) float64 {
	run := j.RunTime()
	if run <= 0 || units <= 0 || capacity <= 0 {
		return math.NaN()
	}
	n := max(1, active.Mean(j.Submit, j.End))
	tid := max(run, tau).Seconds() * max(1, units*n/capacity)
	return j.End.Sub(j.Submit).Seconds() / tid
}

// peakUnits is the largest number of units (GPUs, or processors) in use at
// once by jobs, by Service rate.
func peakUnits(jobs []policy.Job, svc policy.Service) float64 {
	evs := make([]useEvent[float64], 0, 2*len(jobs))
	for i := range jobs {
		j := &jobs[i]
		r := svc.Rate(j)
		if j.Start.IsZero() || !j.End.After(j.Start) || r <= 0 {
			continue
		}
		evs = append(evs, useEvent[float64]{j.Start.UnixNano(), r}, useEvent[float64]{j.End.UnixNano(), -r})
	}
	return peakUse(evs)
}

// useEvent is a start (d > 0) or an end (d < 0) of d units in use at t
// (Unix nanoseconds).
type useEvent[T int | float64] struct {
	t int64
	d T
}

// peakUse is the most units in use at once over evs, which it sorts. Ends
// come before starts at the same instant: a unit freed and taken again at
// once is one unit.
func peakUse[T int | float64](evs []useEvent[T]) T {
	slices.SortFunc(evs, func(a, b useEvent[T]) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d)
	})
	var cur, peak T
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}
