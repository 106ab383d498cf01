package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// MetricsParams configures Measure. The zero value gives the defaults.
type MetricsParams struct {
	// Tau is the bounded-slowdown threshold; 0 means 10 s (Feitelson et
	// al., "Theory and practice in parallel job scheduling", JSSPP 1997).
	Tau time.Duration
	// Window is the length of the intervals over which service is compared
	// for Jain's index; 0 means 1 hour.
	Window time.Duration
	// Shares is the share tree service is normalised by; nil means one
	// share each, as in the simulation.
	Shares *policy.Shares
}

// Metrics summarises one simulation. Times are in seconds.
type Metrics struct {
	Name        string  `json:"name"`
	Jobs        int     `json:"jobs"`
	AvgJCT      float64 `json:"avg_jct_s"`
	MedianJCT   float64 `json:"median_jct_s"`
	P95JCT      float64 `json:"p95_jct_s"`
	AvgWait     float64 `json:"avg_wait_s"`
	P95Wait     float64 `json:"p95_wait_s"`
	AvgBSLD     float64 `json:"avg_bsld"`
	Makespan    float64 `json:"makespan_s"`
	Utilization float64 `json:"utilization"`
	// Jain is Jain's fairness index over the share-normalised service of
	// the users backlogged throughout a window, averaged over windows.
	Jain float64 `json:"jain"`
	// JainWindows counts the windows with at least two such users.
	JainWindows int     `json:"jain_windows"`
	MaxRho      float64 `json:"max_rho"`
	P95Rho      float64 `json:"p95_rho"`
	// UserP95WaitSpread is the largest minus the smallest of the users'
	// 95th-percentile waits.
	UserP95WaitSpread float64 `json:"user_p95_wait_spread_s"`
	Preemptions       int     `json:"preemptions"`
	Cycles            int     `json:"cycles"`
	// Share is what GPU sharing did, in a shared simulation.
	Share *ShareMetrics `json:"share,omitempty"`
}

// Measure computes the metrics of a simulation:
//
//   - JCT (job completion time) is End − Submit; wait is JCT minus the time
//     the job ran, so a preempted job's waits after each preemption count.
//   - Bounded slowdown is max(1, JCT / max(run, τ)) (Feitelson et al.,
//     JSSPP 1997), averaged over every job.
//   - Makespan runs from the first submit to the last end; utilization is
//     the units busy (units × run time, summed) over capacity × makespan.
//   - Jain's index (Jain, Chiu and Hawe, DEC-TR-301, 1984) is
//     (Σx)²/(n·Σx²) over x_u = service_u / share_u for the n ≥ 2 users
//     backlogged (with a pending job) throughout a window, averaged over
//     windows. Service is unit-seconds received in the window; share_u is
//     the user's entitlement among those users, hierarchically as Slurm
//     splits shares (the account's among the backlogged accounts, then the
//     user's among the account's backlogged users). It is VTC's notion
//     (Sheng et al., OSDI'24, §3): backlogged users should receive equal
//     weighted service. 1 is perfectly fair.
//   - ρ is Themis' finish-time fairness (Mahajan et al., NSDI'20, §3): JCT
//     over the time the job would take on its 1/N share of the cluster,
//     T_id = max(run, τ) · max(1, units·N/capacity), with N the average
//     number of users with a pending or running job over the job's life.
//   - Percentiles interpolate linearly between order statistics.
func Measure(res *Result, p MetricsParams) Metrics {
	if p.Tau <= 0 {
		p.Tau = 10 * time.Second
	}
	if p.Window <= 0 {
		p.Window = time.Hour
	}
	m := Metrics{Name: res.Policy, Jobs: len(res.Jobs), Preemptions: res.Preemptions, Cycles: res.Cycles}
	n := len(res.Jobs)
	if n == 0 {
		return m
	}
	tau := p.Tau.Seconds()
	capacity := float64(res.Cluster.Capacity())
	jct := make([]float64, n)
	wait := make([]float64, n)
	first, last := res.Jobs[0].Submit, res.Jobs[0].End
	busy, bsld := 0.0, 0.0
	for i := range res.Jobs {
		j := &res.Jobs[i]
		run := j.Run.Seconds()
		jct[i] = j.End.Sub(j.Submit).Seconds()
		wait[i] = max(jct[i]-run, 0)
		bsld += max(1, jct[i]/max(run, tau))
		busy += float64(j.Units) * run
		if j.Submit.Before(first) {
			first = j.Submit
		}
		if j.End.After(last) {
			last = j.End
		}
	}
	m.AvgJCT, m.AvgWait, m.AvgBSLD = mean(jct), mean(wait), bsld/float64(n)
	m.Makespan = last.Sub(first).Seconds()
	if m.Makespan > 0 {
		m.Utilization = busy / (capacity * m.Makespan)
	}
	rho := finishTimeFairness(res, jct, tau, capacity)
	m.MaxRho = slices.Max(rho)
	m.P95Rho = percentile(rho, 0.95)
	m.UserP95WaitSpread = userWaitSpread(res, wait)
	m.Jain, m.JainWindows = windowJain(res, first, p.Window, p.Shares)
	m.MedianJCT = percentile(jct, 0.5)
	m.P95JCT = percentile(jct, 0.95)
	m.P95Wait = percentile(wait, 0.95)
	if res.Share != nil {
		m.Share = res.Share.metrics(m.Makespan, res.Cluster.Capacity())
	}
	return m
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile is the q-quantile of xs with linear interpolation (numpy's
// default); xs is sorted in place.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (pos-float64(lo))*(xs[hi]-xs[lo])
}

// UserWait is one user's waits in a simulation, in seconds.
type UserWait struct {
	User    string  `json:"user"`
	Jobs    int     `json:"jobs"`
	AvgWait float64 `json:"avg_wait_s"`
	P95Wait float64 `json:"p95_wait_s"`
}

// UserWaits lists every user's waits, by user name.
func UserWaits(res *Result) []UserWait {
	by := map[string][]float64{}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		w := max(j.End.Sub(j.Submit).Seconds()-j.Run.Seconds(), 0)
		by[j.User] = append(by[j.User], w)
	}
	out := make([]UserWait, 0, len(by))
	for u, ws := range by {
		out = append(out, UserWait{User: u, Jobs: len(ws), AvgWait: mean(ws), P95Wait: percentile(ws, 0.95)})
	}
	slices.SortFunc(out, func(a, b UserWait) int { return cmp.Compare(a.User, b.User) })
	return out
}

func userWaitSpread(res *Result, wait []float64) float64 {
	by := map[string][]float64{}
	for i := range res.Jobs {
		by[res.Jobs[i].User] = append(by[res.Jobs[i].User], wait[i])
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, ws := range by {
		p := percentile(ws, 0.95)
		lo, hi = min(lo, p), max(hi, p)
	}
	return hi - lo
}

func finishTimeFairness(res *Result, jct []float64, tau, capacity float64) []float64 {
	active := NewActiveUsers(len(res.Jobs), func(i int) (string, time.Time, time.Time) {
		j := &res.Jobs[i]
		return j.User, j.Submit, j.End
	})
	rho := make([]float64, len(res.Jobs))
	for i := range res.Jobs {
		j := &res.Jobs[i]
		a, b := j.Submit.UnixNano(), j.End.UnixNano()
		users := 1.0
		if b > a {
			users = max(1, active.Mean(j.Submit, j.End))
		}
		tid := max(j.Run.Seconds(), tau) * max(1, float64(j.Units)*users/capacity)
		rho[i] = jct[i] / tid
	}
	return rho
}

// windowJain is Measure's Jain index: its mean over the windows of length
// w from first on that have two or more users backlogged throughout, and
// the number of such windows.
func windowJain(res *Result, first time.Time, w time.Duration, shares *policy.Shares) (float64, int) {
	t0, wn := first.UnixNano(), int64(w)
	type key struct {
		user   string
		window int64
	}
	// Per user, the spans with a job pending: before its first start and
	// between its runs.
	pend := map[policy.Assoc][][2]int64{}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		a := policy.Assoc{Account: j.Account, User: j.User}
		if j.Runs == nil {
			pend[a] = append(pend[a], [2]int64{j.Submit.UnixNano(), j.Start.UnixNano()})
			continue
		}
		from := j.Submit.UnixNano()
		for _, r := range j.Runs {
			pend[a] = append(pend[a], [2]int64{from, r.From.UnixNano()})
			from = r.To.UnixNano()
		}
	}
	// The windows each user is backlogged throughout.
	backlogged := map[int64][]policy.Assoc{}
	covered := map[policy.Assoc][][2]int64{} // ranges of window indices, inclusive
	for a, ss := range pend {
		for _, s := range union(ss) {
			k0 := (s[0] - t0 + wn - 1) / wn
			k1 := (s[1]-t0)/wn - 1
			if k1 < k0 {
				continue
			}
			covered[a] = append(covered[a], [2]int64{k0, k1})
			for k := k0; k <= k1; k++ {
				backlogged[k] = append(backlogged[k], a)
			}
		}
	}
	// Service received in those windows.
	svc := map[key]float64{}
	isCovered := func(a policy.Assoc, k int64) bool {
		rs := covered[a]
		i, _ := slices.BinarySearchFunc(rs, k, func(r [2]int64, k int64) int { return cmp.Compare(r[1], k) })
		return i < len(rs) && rs[i][0] <= k
	}
	addRun := func(j *JobResult, from, to int64) {
		a := policy.Assoc{Account: j.Account, User: j.User}
		if len(covered[a]) == 0 {
			return
		}
		for k := (from - t0) / wn; k*wn+t0 < to; k++ {
			lo, hi := max(from, t0+k*wn), min(to, t0+(k+1)*wn)
			if hi > lo && isCovered(a, k) {
				svc[key{a.Account + "\x00" + a.User, k}] += float64(j.Units) * float64(hi-lo) / 1e9
			}
		}
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.Runs == nil {
			addRun(j, j.Start.UnixNano(), j.End.UnixNano())
			continue
		}
		for _, r := range j.Runs {
			addRun(j, r.From.UnixNano(), r.To.UnixNano())
		}
	}
	windows := make([]int64, 0, len(backlogged))
	for k, us := range backlogged {
		if len(us) >= 2 {
			windows = append(windows, k)
		}
	}
	slices.Sort(windows)
	sum, count := 0.0, 0
	for _, k := range windows {
		us := backlogged[k]
		slices.SortFunc(us, compareAssoc) // sums in a fixed order
		acctShares := map[string]float64{}
		userShares := map[string]float64{}
		totalAcct := 0.0
		for _, a := range us {
			if _, ok := acctShares[a.Account]; !ok {
				acctShares[a.Account] = shares.Account(a.Account)
				totalAcct += acctShares[a.Account]
			}
			userShares[a.Account] += shares.User(a)
		}
		var sx, sxx float64
		n := 0
		for _, a := range us {
			e := 0.0
			if totalAcct > 0 && userShares[a.Account] > 0 {
				e = acctShares[a.Account] / totalAcct * shares.User(a) / userShares[a.Account]
			}
			if e <= 0 {
				continue // zero-share users are not owed service
			}
			x := svc[key{a.Account + "\x00" + a.User, k}] / e
			sx += x
			sxx += x * x
			n++
		}
		if n < 2 || sxx == 0 {
			continue
		}
		sum += sx * sx / (float64(n) * sxx)
		count++
	}
	if count == 0 {
		return 1, 0
	}
	return sum / float64(count), count
}

func compareAssoc(a, b policy.Assoc) int {
	if c := cmp.Compare(a.Account, b.Account); c != 0 {
		return c
	}
	return cmp.Compare(a.User, b.User)
}
