package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// Options tune Build.
type Options struct {
	// Cluster is the cluster's size and unit (GPUs, or processors for a
	// CPU cluster). Nodes 0: unknown, and the report estimates the
	// capacity as the most units in use at once, saying so.
	Cluster sim.Cluster
	// Layout, when set, is the cluster's nodes, partitions and GPU types
	// (report --partitions): it gives the capacity, and the counterfactual
	// replays each job only in its recorded partition and on its GPU type
	// (ReplayWorkload, as simulate --from-db does). Not with Cluster.Nodes
	// and PerNode.
	Layout *sim.Layout
	// ShardsPerGPU counts a shard-only job as shards/ShardsPerGPU of a
	// GPU (policy.Service); 0 counts it as one GPU.
	ShardsPerGPU int
	// Now is when the report is made: a month not over yet is counted up
	// to Now. Zero means the month is over.
	Now time.Time
	// Counterfactual runs the simulations of the month (seconds to a
	// minute for 100,000 jobs).
	Counterfactual bool
	// SimPolicy and SimPredictor are Fairway's policy and predictor in the
	// counterfactual; "" takes the ones the decision log used most, or
	// policy.Default and "fairway" when there is no log. SimPredictor
	// "none" runs without a predictor.
	SimPolicy    string
	SimPredictor string
	// Progress, when set, is passed to the simulator (sim.Config.Progress)
	// for the Fairway run, the longer one.
	Progress func(done, total int) error
	// TopIdle is how many of the idlest jobs are listed (10 when 0).
	TopIdle int
	// Tau is the floor on run time in ρ and bounded slowdown (10 s when 0).
	Tau time.Duration
	// IdleWatts is what one idle node draws, for the power section's
	// energy estimate (0: no estimate).
	IdleWatts float64
}

// ErrBadOptions is wrapped by Build's complaints about its Options.
var ErrBadOptions = errors.New("bad report options")

// Build computes the report of cur, with prev (nil when not loaded) the
// month before for comparison. It is pure apart from the simulations, which
// run concurrently.
func Build(cur, prev *Data, opt Options) (*Report, error) {
	if opt.TopIdle <= 0 {
		opt.TopIdle = 10
	}
	if opt.Tau <= 0 {
		opt.Tau = 10 * time.Second
	}
	if opt.Cluster.Unit == "" {
		opt.Cluster.Unit = sim.GPUs
	}
	if opt.Cluster.Nodes < 0 || opt.Cluster.PerNode < 0 || (opt.Cluster.Nodes > 0) != (opt.Cluster.PerNode > 0) {
		return nil, fmt.Errorf("%w: cluster %d nodes × %d units: give both or neither", ErrBadOptions, opt.Cluster.Nodes, opt.Cluster.PerNode)
	}
	if opt.Layout != nil {
		if opt.Cluster.Nodes != 0 {
			return nil, fmt.Errorf("%w: cluster %d nodes × %d units and a layout: give one", ErrBadOptions, opt.Cluster.Nodes, opt.Cluster.PerNode)
		}
		opt.Cluster = opt.Cluster.WithLayout(opt.Layout)
	}
	svc := opt.Cluster.Service()
	svc.ShardsPerGPU = opt.ShardsPerGPU

	r := &Report{Cluster: cur.Cluster, Month: cur.Month.String(), Title: cur.Month.Title(), Unit: "GPU"}
	if opt.Cluster.Unit == sim.CPUs {
		r.Unit = "processor"
	}
	r.AsOf = cur.Month.End()
	if !opt.Now.IsZero() && opt.Now.Before(r.AsOf) {
		r.AsOf = opt.Now.UTC()
		r.Notes = append(r.Notes, fmt.Sprintf("The month is not over: figures count up to %s, and jobs still running are not counted yet.", r.AsOf.Format("2006-01-02 15:04 MST")))
	}

	if n := stillRunning(cur); n > 0 && r.AsOf.Equal(cur.Month.End()) {
		r.Notes = append(r.Notes, fmt.Sprintf("serve's last cycle of the month (%s) saw %s running, of which up to %d had not ended when this report was made: their %s-hours in the month are not counted. Make the report again once they have ended.",
			cur.Cycles.LastAt.Format("2006-01-02 15:04 MST"), plural.N(cur.Cycles.LastRunning, "job", "jobs"), n, r.Unit))
	}

	if !cur.KeptSince.IsZero() && cur.Month.Start().Before(cur.KeptSince) {
		r.Notes = append(r.Notes, fmt.Sprintf("The database keeps jobs from %s on (serve --retention-job-months): this month's figures are incomplete or empty.", cur.KeptSince.Format("January 2006")))
	}
	r.Capacity = Capacity{Nodes: opt.Cluster.Nodes, PerNode: opt.Cluster.PerNode, Units: float64(opt.Cluster.Capacity())}
	if opt.Cluster.Nodes == 0 {
		// The month before is measured against the same capacity, so the
		// estimate must hold its peak too: a busier month before would
		// otherwise show a utilization above 100%.
		peak := peakUnits(cur.Jobs, svc)
		if prev != nil {
			peak = max(peak, peakUnits(prev.Jobs, svc))
		}
		r.Capacity = Capacity{Units: peak, Nodes: 1, PerNode: int(math.Ceil(peak)), Estimated: true}
		opt.Cluster.Nodes, opt.Cluster.PerNode = 1, int(math.Ceil(peak))
		r.Notes = append(r.Notes, fmt.Sprintf("The cluster's size was not given (fairway report --nodes, --per-node): it is taken as the most %ss in use at once this month or the month before, %.0f, so utilization is an upper bound.", r.Unit, peak))
	}

	a := analyse(cur, svc, r.Capacity.Units, opt.Tau, r.AsOf)
	r.Summary = a.summary()
	if prev != nil && len(prev.Jobs) > 0 {
		pa := analyse(prev, svc, r.Capacity.Units, opt.Tau, prev.Month.End())
		s := pa.summary()
		r.Previous = &s
	}
	r.Daily = a.daily()
	r.States = a.states()
	r.Accounts, r.Users = a.rows()
	r.waits = a.waitsByAccount()
	r.Predictions = predictions(cur)
	r.Efficiency = efficiency(cur, a, opt.TopIdle)
	r.Changes = changes(cur)
	r.Power = powerSection(cur, r.AsOf, opt.IdleWatts)
	if opt.Counterfactual {
		cf, err := counterfactual(cur, a, opt, r.Changes)
		if err != nil && !errors.Is(err, sim.ErrNoJobs) {
			return nil, err
		}
		if err != nil {
			r.Notes = append(r.Notes, "No job of the month could be simulated: the counterfactual is left out.")
		}
		r.Counterfactual = cf
		if cf != nil && opt.Layout != nil {
			r.Notes = append(r.Notes, layoutNote(cf))
		}
		if cf != nil && cf.CutAtLimit > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s without a time limit ran longer than %s: the simulated scenarios cut them there, where Slurm let them run, so they hold their nodes for less time than in the month itself.",
				plural.N(cf.CutAtLimit, "job", "jobs"), sim.DefaultLimitText()))
		}
	}
	return r, nil
}

// analysis holds what Build derives from one month's jobs.
type analysis struct {
	d         *Data
	from, to  time.Time // the month, to clipped to AsOf
	svc       policy.Service
	capacity  float64
	shares    *policy.Shares
	top       func(string) string
	acct      []string  // per job: the top-level account
	hours     []float64 // per job: unit-hours inside [from, to)
	ended     []bool    // per job: ended in [from, to)
	wait      []float64 // per job: seconds, NaN when it never started
	rho       []float64 // per job: NaN when not defined
	totalHour float64
}

func analyse(d *Data, svc policy.Service, capacity float64, tau time.Duration, asOf time.Time) *analysis {
	a := &analysis{d: d, from: d.Month.Start(), to: asOf, svc: svc, capacity: capacity, top: func(s string) string { return s }}
	if d.Shares != nil {
		a.shares = d.Shares.Policy()
		a.top = d.Shares.Top
	} else {
		a.shares = &policy.Shares{}
	}
	n := len(d.Jobs)
	a.acct = make([]string, n)
	a.hours = make([]float64, n)
	a.ended = make([]bool, n)
	a.wait = make([]float64, n)
	a.rho = make([]float64, n)
	active := activeUsers(d.Jobs)
	for i := range d.Jobs {
		j := &d.Jobs[i]
		a.acct[i] = a.top(j.Account)
		a.ended[i] = !j.End.Before(a.from) && j.End.Before(a.to)
		a.wait[i], a.rho[i] = math.NaN(), math.NaN()
		if !j.Start.IsZero() {
			a.hours[i] = svc.Rate(j) * overlap(j.Start, j.End, a.from, a.to).Hours()
			a.totalHour += a.hours[i]
			if a.ended[i] {
				a.wait[i] = j.Start.Sub(j.Submit).Seconds()
				a.rho[i] = finishTimeFairness(j, svc.Rate(j), capacity, tau, active)
			}
		}
	}
	return a
}

// isCancelled and isFailed sort a job's end: Helios (Hu et al., SC'21, §3.3)
// counts GPU time spent on jobs that were cancelled or failed.
func isCancelled(s policy.State) bool { return s == policy.StateCancelled }

func isFailed(s policy.State) bool {
	return s.Finished() && s != policy.StateCompleted && s != policy.StateCancelled
}

// group accumulates the figures of an account or a user.
type group struct {
	hours, cancelled, failed float64
	jobs                     int
	users                    map[string]bool
	wait, rho                []float64
}

func (g *group) add(a *analysis, i int) {
	j := &a.d.Jobs[i]
	g.hours += a.hours[i]
	if isCancelled(j.State) {
		g.cancelled += a.hours[i]
	} else if isFailed(j.State) {
		g.failed += a.hours[i]
	}
	if g.users != nil {
		g.users[j.User] = true
	}
	if !a.ended[i] {
		return
	}
	g.jobs++
	if !math.IsNaN(a.wait[i]) {
		g.wait = append(g.wait, a.wait[i])
	}
	if !math.IsNaN(a.rho[i]) {
		g.rho = append(g.rho, a.rho[i])
	}
}

func (a *analysis) groups() (map[string]*group, map[policy.Assoc]*group) {
	accts := map[string]*group{}
	users := map[policy.Assoc]*group{}
	for i := range a.d.Jobs {
		if a.hours[i] == 0 && !a.ended[i] {
			continue
		}
		j := &a.d.Jobs[i]
		g := accts[a.acct[i]]
		if g == nil {
			g = &group{users: map[string]bool{}}
			accts[a.acct[i]] = g
		}
		g.add(a, i)
		k := policy.Assoc{Account: a.acct[i], User: j.User}
		u := users[k]
		if u == nil {
			u = &group{}
			users[k] = u
		}
		u.add(a, i)
	}
	return accts, users
}

// entitlements gives every account its entitled share of the cluster:
// shares over the sum of shares of the accounts in the share tree and of
// those with jobs this month (an account not in the tree has one share,
// as in Slurm).
func (a *analysis) entitlements(accts map[string]*group) map[string]float64 {
	names := map[string]bool{}
	for n := range accts {
		names[n] = true
	}
	for n := range a.shares.Accounts {
		names[n] = true
	}
	sorted := sortedKeys(names)
	total := 0.0
	for _, n := range sorted {
		total += a.shares.Account(n)
	}
	out := map[string]float64{}
	for _, n := range sorted {
		if total > 0 {
			out[n] = a.shares.Account(n) / total
		}
	}
	return out
}

// userEntitlements splits each account's entitlement among its users in
// the share tree and those with jobs, by their shares.
func (a *analysis) userEntitlements(users map[policy.Assoc]*group, acct map[string]float64) map[policy.Assoc]float64 {
	members := map[string]map[string]bool{}
	add := func(k policy.Assoc) {
		if members[k.Account] == nil {
			members[k.Account] = map[string]bool{}
		}
		members[k.Account][k.User] = true
	}
	for k := range users {
		add(k)
	}
	for k := range a.shares.Users {
		add(k)
	}
	out := map[policy.Assoc]float64{}
	for _, acc := range sortedKeys(members) {
		names := sortedKeys(members[acc])
		total := 0.0
		for _, u := range names {
			total += a.shares.User(policy.Assoc{Account: acc, User: u})
		}
		for _, u := range names {
			k := policy.Assoc{Account: acc, User: u}
			if total > 0 {
				out[k] = acct[acc] * a.shares.User(k) / total
			}
		}
	}
	return out
}

func (a *analysis) summary() Summary {
	s := Summary{Month: a.d.Month.String(), Hours: Num(a.totalHour)}
	hours := a.to.Sub(a.from).Hours()
	s.Available = Num(a.capacity * hours)
	s.Utilization = ratio(a.totalHour, a.capacity*hours)
	accts, users := a.groups()
	// users has a row per user and account: a user who ran jobs in two
	// accounts is still one user.
	people := map[string]bool{}
	for k := range users {
		people[k.User] = true
	}
	s.Accounts, s.Users = len(accts), len(people)
	var wait, rho []float64
	var cancelled, failed float64
	for i := range a.d.Jobs {
		if a.ended[i] {
			s.Jobs++
			if !math.IsNaN(a.wait[i]) {
				wait = append(wait, a.wait[i])
				s.Started++
			}
			if !math.IsNaN(a.rho[i]) {
				rho = append(rho, a.rho[i])
			}
		}
		if isCancelled(a.d.Jobs[i].State) {
			cancelled += a.hours[i]
		} else if isFailed(a.d.Jobs[i].State) {
			failed += a.hours[i]
		}
	}
	s.MedianWait, s.P95Wait = Num(quantile(wait, 0.5)), Num(quantile(wait, 0.95))
	s.MedianRho = Num(quantile(rho, 0.5))
	s.CancelledHours, s.FailedHours = Num(cancelled), Num(failed)
	s.Lost = ratio(cancelled+failed, a.totalHour)
	s.Jain = a.jain(accts)
	return s
}

// jain is Jain's index over the accounts with jobs this month of x =
// used share / entitled share: 1 when every account got exactly its
// entitlement's proportion, 1/n when one account got everything.
func (a *analysis) jain(accts map[string]*group) Num {
	if a.totalHour <= 0 {
		return NaN()
	}
	ent := a.entitlements(accts)
	var xs []float64
	for _, n := range sortedKeys(accts) {
		if e := ent[n]; e > 0 {
			xs = append(xs, accts[n].hours/a.totalHour/e)
		}
	}
	return Num(jain(xs))
}

func (a *analysis) daily() []Day {
	days := int(math.Ceil(a.to.Sub(a.from).Hours() / 24))
	h := make([]float64, days)
	for i := range a.d.Jobs {
		j := &a.d.Jobs[i]
		if a.hours[i] == 0 {
			continue
		}
		rate := a.svc.Rate(j)
		lo, hi := later(j.Start, a.from), earlier(j.End, a.to)
		for k := int(lo.Sub(a.from) / (24 * time.Hour)); k < days; k++ {
			d0 := a.from.Add(time.Duration(k) * 24 * time.Hour)
			if !d0.Before(hi) {
				break
			}
			h[k] += rate * overlap(lo, hi, d0, d0.Add(24*time.Hour)).Hours()
		}
	}
	out := make([]Day, days)
	for k := range out {
		d0 := a.from.Add(time.Duration(k) * 24 * time.Hour)
		span := earlier(a.to, d0.Add(24*time.Hour)).Sub(d0).Hours()
		out[k] = Day{Date: d0.Format("2006-01-02"), Hours: Num(h[k]), Utilization: ratio(h[k], a.capacity*span)}
	}
	return out
}

func (a *analysis) states() []StateRow {
	by := map[policy.State]*StateRow{}
	for i := range a.d.Jobs {
		if !a.ended[i] && a.hours[i] == 0 {
			continue
		}
		st := a.d.Jobs[i].State
		r := by[st]
		if r == nil {
			r = &StateRow{State: st.String()}
			by[st] = r
		}
		if a.ended[i] {
			r.Jobs++
		}
		r.Hours += Num(a.hours[i])
	}
	keys := make([]policy.State, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]StateRow, 0, len(keys))
	for _, k := range keys {
		r := *by[k]
		r.Share = ratio(float64(r.Hours), a.totalHour)
		out = append(out, r)
	}
	return out
}

// rows lists accounts by unit-hours (most first, then by name) and users
// by account in that order, then by unit-hours.
func (a *analysis) rows() ([]Row, []Row) {
	accts, users := a.groups()
	ent := a.entitlements(accts)
	uent := a.userEntitlements(users, ent)
	row := func(acct, user string, g *group, shares, entitled float64) Row {
		return Row{Account: acct, User: user, Shares: Num(shares), Entitled: Num(entitled),
			Used: ratio(g.hours, a.totalHour), Hours: Num(g.hours), Jobs: g.jobs, Users: len(g.users),
			MedianWait: Num(quantile(g.wait, 0.5)), P95Wait: Num(quantile(g.wait, 0.95)),
			MedianRho: Num(quantile(g.rho, 0.5)), Cancelled: Num(g.cancelled), Failed: Num(g.failed)}
	}
	names := sortedKeys(accts)
	slices.SortStableFunc(names, func(x, y string) int { return cmp.Compare(accts[y].hours, accts[x].hours) })
	order := map[string]int{}
	var ar []Row
	for i, n := range names {
		order[n] = i
		ar = append(ar, row(n, "", accts[n], a.shares.Account(n), ent[n]))
	}
	keys := make([]policy.Assoc, 0, len(users))
	for k := range users {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y policy.Assoc) int {
		if c := cmp.Compare(order[x.Account], order[y.Account]); c != 0 {
			return c
		}
		if c := cmp.Compare(users[y].hours, users[x].hours); c != 0 {
			return c
		}
		return cmp.Compare(x.User, y.User)
	})
	var ur []Row
	for _, k := range keys {
		ur = append(ur, row(k.Account, k.User, users[k], a.shares.User(k), uent[k]))
	}
	return ar, ur
}

// predictions scores each predictor per partition on the jobs that ended
// this month, and users' own time limits beside them. The absolute error
// is |predicted − actual|; a prediction is within ±50% when that error is
// at most half the actual run time.
func predictions(d *Data) []PredictionRow {
	type key struct{ part, pred string }
	errs := map[key][]float64{}
	runs := map[key][]float64{}
	within := map[key]int{}
	add := func(k key, pred, actual float64) {
		e := math.Abs(pred - actual)
		errs[k] = append(errs[k], e)
		runs[k] = append(runs[k], actual)
		if e <= 0.5*actual {
			within[k]++
		}
	}
	for _, o := range d.Outcomes {
		add(key{o.Partition, o.Predictor}, o.Predicted, o.Actual)
	}
	from, to := d.Month.Start(), d.Month.End()
	for i := range d.Jobs {
		j := &d.Jobs[i]
		if j.TimeLimit > 0 && !j.Start.IsZero() && !j.End.Before(from) && j.End.Before(to) {
			add(key{j.Partition, limitPredictor}, j.TimeLimit.Seconds(), j.RunTime().Seconds())
		}
	}
	keys := make([]key, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int {
		if c := cmp.Compare(x.part, y.part); c != 0 {
			return c
		}
		// Users' time limits last in each partition, as the reference.
		if xl, yl := x.pred == limitPredictor, y.pred == limitPredictor; xl != yl {
			if xl {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.pred, y.pred)
	})
	out := make([]PredictionRow, 0, len(keys))
	for _, k := range keys {
		n := len(errs[k])
		out = append(out, PredictionRow{Partition: k.part, Predictor: k.pred, Jobs: n,
			MedAE: Num(quantile(errs[k], 0.5)), Within50: Num(float64(within[k]) / float64(n)),
			MedianRun: Num(quantile(runs[k], 0.5))})
	}
	return out
}

// limitPredictor names users' own time limits in the prediction table.
const limitPredictor = "time limit"

// efficiency compares allocated and busy GPU-hours from the epilog's
// whole-GPU records. A shard record's utilization is the whole device's,
// shared with other jobs, so it cannot be charged to one job: shard records
// are counted and left out.
func efficiency(d *Data, a *analysis, top int) Efficiency {
	e := Efficiency{}
	// Records name a job by id only: match each to the job with that id
	// whose run contains the record's end.
	byID := map[int64][]int{}
	for i := range d.Jobs {
		byID[d.Jobs[i].ID] = append(byID[d.Jobs[i].ID], i)
	}
	find := func(u *accounting.GPUUsage) int {
		best := -1
		for _, i := range byID[u.JobID] {
			j := &d.Jobs[i]
			if !j.Start.IsZero() && !u.Ended.Before(j.Start) && !u.Ended.After(j.End.Add(time.Hour)) {
				best = i
			}
		}
		return best
	}
	type jobAcc struct {
		idx                     int
		id                      int64
		gpus                    map[[2]string]bool
		held, busy, known, idle float64
	}
	jobs := map[[2]int64]*jobAcc{}
	accts := map[string]*EfficiencyRow{}
	acctJobs := map[string]map[[2]int64]bool{}
	var alloc, busy, unknown float64
	for k := range d.GPUUsage {
		u := &d.GPUUsage[k]
		if u.Shards > 0 {
			e.ShardRecords++
			continue
		}
		if u.Started.IsZero() || !u.Ended.After(u.Started) {
			continue
		}
		e.Records++
		h := u.Ended.Sub(u.Started).Hours()
		i := find(u)
		acct := "(job not in history)"
		if i >= 0 {
			acct = a.acct[i]
		}
		r := accts[acct]
		if r == nil {
			r = &EfficiencyRow{Account: acct}
			accts[acct] = r
			acctJobs[acct] = map[[2]int64]bool{}
		}
		jk := [2]int64{u.JobID, int64(i)}
		acctJobs[acct][jk] = true
		ja := jobs[jk]
		if ja == nil {
			ja = &jobAcc{idx: i, id: u.JobID, gpus: map[[2]string]bool{}}
			jobs[jk] = ja
		}
		ja.gpus[[2]string{u.Node, fmt.Sprint(u.GPUMinor)}] = true
		ja.held += h
		r.Allocated += Num(h)
		alloc += h
		if u.UtilAvgPct == nil {
			r.Unknown += Num(h)
			unknown += h
			continue
		}
		b := h * min(max(*u.UtilAvgPct, 0), 100) / 100
		r.Busy += Num(b)
		busy += b
		ja.known += h
		ja.busy += b
		ja.idle += h - b
	}
	e.Allocated, e.Busy, e.Unknown = Num(alloc), Num(busy), Num(unknown)
	e.Ratio = ratio(busy, alloc-unknown)
	for _, n := range sortedKeys(accts) {
		r := accts[n]
		r.Jobs = len(acctJobs[n])
		r.Ratio = ratio(float64(r.Busy), float64(r.Allocated-r.Unknown))
		e.Accounts = append(e.Accounts, *r)
	}
	slices.SortStableFunc(e.Accounts, func(x, y EfficiencyRow) int { return cmp.Compare(y.Allocated, x.Allocated) })
	idle := make([]*jobAcc, 0, len(jobs))
	for _, ja := range jobs {
		if ja.known > 0 {
			idle = append(idle, ja)
		}
	}
	slices.SortFunc(idle, func(x, y *jobAcc) int {
		if c := cmp.Compare(y.idle, x.idle); c != 0 {
			return c
		}
		if c := cmp.Compare(x.id, y.id); c != 0 {
			return c
		}
		return cmp.Compare(x.idx, y.idx)
	})
	for _, ja := range idle[:min(top, len(idle))] {
		ij := IdleJob{JobID: ja.id, GPUs: len(ja.gpus), Hours: Num(ja.held), AvgUtil: ratio(ja.busy, ja.known), Idle: Num(ja.idle)}
		if ja.idx >= 0 {
			j := &d.Jobs[ja.idx]
			ij.User, ij.Account, ij.State = j.User, a.acct[ja.idx], j.State.String()
		}
		e.IdleJobs = append(e.IdleJobs, ij)
	}
	return e
}

// changes sums up the decision log.
func changes(d *Data) Changes {
	c := Changes{Cycles: d.Cycles}
	pol, pred := map[string]int{}, map[string]int{}
	for _, jd := range d.Decisions {
		c.Rows += jd.Rows
		switch {
		case jd.Written >= 2:
			c.Jobs++
			c.Reranked++
		case jd.Written == 1:
			c.Jobs++
		case jd.Planned > 0:
			c.Planned++
		}
		pol[jd.Policy] += jd.Rows
		pred[jd.Predictor] += jd.Rows
	}
	c.Policy, c.Predictor = mostCommon(pol), mostCommon(pred)
	return c
}

// mostCommon is the key with the largest count, the first by name on ties.
func mostCommon(m map[string]int) string {
	best, n := "", 0
	for _, k := range sortedKeys(m) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

func ratio(a, b float64) Num {
	if b <= 0 {
		return NaN()
	}
	return Num(a / b)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// waitsByAccount lists each account's waits, most jobs first.
func (a *analysis) waitsByAccount() []accountWaits {
	accts, _ := a.groups()
	var out []accountWaits
	for _, n := range sortedKeys(accts) {
		if len(accts[n].wait) > 0 {
			out = append(out, accountWaits{account: n, waits: accts[n].wait})
		}
	}
	slices.SortStableFunc(out, func(x, y accountWaits) int { return cmp.Compare(len(y.waits), len(x.waits)) })
	return out
}

// powerSection sums up serve's power saving over the month, what Slurm
// took (live) and, apart, what a dry run only planned; nil when there is
// neither.
func powerSection(d *Data, asOf time.Time, idleWatts float64) []accounting.PowerSummary {
	var out []accounting.PowerSummary
	from := d.Month.Start()
	for _, dry := range []bool{false, true} {
		s := accounting.SummarisePower(d.PowerActions, from, asOf, idleWatts, dry)
		if s.NodeHoursOff > 0 || s.PowerDowns+s.PowerUps+s.Refused+s.LackCycles > 0 {
			out = append(out, s)
		}
	}
	return out
}

// stillRunning is how many of the jobs serve's last cycle of the month saw
// running are not in d: jobs the database holds only once they end, so a
// report made soon after the month (the timer runs on the 1st) lacks the
// hours in the month of the long ones. The jobs in d that were running at
// that cycle (started by it, ended after it) are those that have ended
// since, whether before the month's end or after: that cycle may be days
// before the end when serve was stopped or down then.
func stillRunning(d *Data) int {
	last := d.Cycles.LastAt
	if last.IsZero() {
		return 0
	}
	ended := 0
	for i := range d.Jobs {
		j := &d.Jobs[i]
		if !j.Start.IsZero() && !j.Start.After(last) && j.End.After(last) {
			ended++
		}
	}
	return d.Cycles.LastRunning - ended
}
