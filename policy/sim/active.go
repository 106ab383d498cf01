package sim

import (
	"cmp"
	"slices"
	"time"
)

// ActiveUsers is the number of users with a job pending or running over
// time — per user, the union of their jobs' [Submit, End) spans — as a
// piecewise-constant count with its running integral, so its average over
// any interval is two binary searches. Finish-time fairness (Themis' ρ)
// uses it both here (Measure) and in the monthly report, so simulated and
// real ρ are computed the same way.
type ActiveUsers struct {
	t     []int64   // change points, ns, ascending
	count []float64 // value from t[i] on
	integ []float64 // ∫ count from t[0] to t[i], count·seconds
}

// NewActiveUsers builds the count from n jobs; span(i) gives job i's user
// and its [Submit, End) span.
func NewActiveUsers(n int, span func(i int) (user string, from, to time.Time)) *ActiveUsers {
	type ev struct {
		t int64
		d float64
	}
	spans := map[string][][2]int64{}
	for i := range n {
		u, from, to := span(i)
		spans[u] = append(spans[u], [2]int64{from.UnixNano(), to.UnixNano()})
	}
	var evs []ev
	for _, ss := range spans {
		for _, s := range union(ss) {
			evs = append(evs, ev{s[0], 1}, ev{s[1], -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	a := &ActiveUsers{}
	c, integ := 0.0, 0.0
	for i, e := range evs {
		if i > 0 {
			integ += c * float64(e.t-evs[i-1].t) / 1e9
		}
		c += e.d
		if n := len(a.t); n > 0 && a.t[n-1] == e.t {
			a.count[n-1] = c
			continue
		}
		a.t = append(a.t, e.t)
		a.count = append(a.count, c)
		a.integ = append(a.integ, integ)
	}
	return a
}

// Mean is the average count over [from, to); the count at from when to is
// not after from.
func (a *ActiveUsers) Mean(from, to time.Time) float64 {
	x, y := from.UnixNano(), to.UnixNano()
	if y <= x {
		i := a.index(x)
		if i < 0 {
			return 0
		}
		return a.count[i]
	}
	return (a.integral(y) - a.integral(x)) / (float64(y-x) / 1e9)
}

// index is the change point in force at at, -1 before the first.
func (a *ActiveUsers) index(at int64) int {
	i, found := slices.BinarySearch(a.t, at)
	if !found {
		i--
	}
	return i
}

func (a *ActiveUsers) integral(at int64) float64 {
	i := a.index(at)
	if i < 0 {
		return 0
	}
	return a.integ[i] + a.count[i]*float64(at-a.t[i])/1e9
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
