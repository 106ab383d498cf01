package report

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// Scenario names, in the order Counterfactual lists them.
const (
	ScenarioActual    = "actual"
	ScenarioFairshare = "fairshare"
	ScenarioFairway   = "fairway"
)

// counterfactual replays the jobs submitted and started this month that
// have ended (Load reads no job that started only next month), with their
// real run times, through policy/sim twice on the same cluster: under
// Slurm's plain fair-share and under Fairway's policy. What really happened
// to the same jobs is measured the same way (sim.Measure), so the three
// columns compare like with like. Both simulations start from an empty
// cluster and fair-share history: the first days are easier than they were.
func counterfactual(d *Data, a *analysis, opt Options, ch Changes) (*Counterfactual, error) {
	polName, predName := opt.SimPolicy, opt.SimPredictor
	if polName == "" {
		polName = ch.Policy
	}
	if polName == "" {
		polName = policy.Default
	}
	if predName == "" {
		predName = ch.Predictor
		if ch.Policy == "" {
			predName = "fairway" // no log: serve's default
		}
	}
	if predName == "" {
		predName = "none"
	}
	from, to := d.Month.Start(), d.Month.End()
	var jobs []policy.Job
	for i := range d.Jobs {
		j := d.Jobs[i]
		if j.Submit.Before(from) || !j.Submit.Before(to) || j.Start.IsZero() || !j.End.After(j.Start) {
			continue
		}
		j.Account = a.acct[i]
		jobs = append(jobs, j)
	}
	// Build sized opt.Cluster (given, estimated or the layout's), so the
	// history is not asked for a size here. An estimate of no unit is a
	// month in which no job held one (all cancelled while pending, of no
	// run time, or asking for none): nothing to simulate, not a machine for
	// ReplayWorkload to size from the history, which would fail the report.
	if opt.Layout == nil && opt.Cluster.Capacity() <= 0 {
		return nil, fmt.Errorf("counterfactual: no job of the month held any %s: %w", opt.Cluster.Unit, sim.ErrNoJobs)
	}
	w, err := ReplayWorkload(d.Cluster, jobs, opt.Cluster.Unit, opt.Cluster.Nodes, opt.Cluster.PerNode, opt.Layout)
	if err != nil {
		return nil, fmt.Errorf("counterfactual: %w", err)
	}
	jobs, cluster := w.Jobs, w.Cluster
	runs := []struct {
		name, pol, pred string
		progress        func(int, int) error
		res             *sim.Result
		err             error
	}{
		{name: ScenarioFairshare, pol: "fairshare", pred: "none"},
		{name: ScenarioFairway, pol: polName, pred: predName, progress: opt.Progress},
	}
	var wg sync.WaitGroup
	for i := range runs {
		r := &runs[i]
		p, err := policy.New(r.pol, nil)
		if err != nil {
			return nil, fmt.Errorf("counterfactual: %w", err)
		}
		var pr policy.Predictor
		if r.pred != "none" {
			if pr, err = predict.New(r.pred, predict.Params{}); err != nil {
				return nil, fmt.Errorf("counterfactual: %w", err)
			}
		}
		cfg := sim.Config{Cluster: cluster, Policy: p, Predictor: pr, Shares: a.shares, Progress: r.progress}
		wg.Go(func() { r.res, r.err = sim.Run(jobs, cfg) })
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("simulate %s: %w", r.pol, r.err)
		}
	}

	// What happened to the jobs the simulator kept.
	kept := map[int64]bool{}
	for _, j := range runs[0].res.Jobs {
		kept[j.ID] = true
	}
	actual := &sim.Result{Policy: "actual", Cluster: cluster}
	for i := range jobs {
		j := &jobs[i]
		if !kept[j.ID] {
			continue
		}
		kept[j.ID] = false // the simulator keeps the first of duplicate ids
		actual.Jobs = append(actual.Jobs, sim.JobResult{ID: j.ID, User: j.User, Account: j.Account,
			Units: cluster.Need(j), Submit: j.Submit, Start: j.Start, End: j.End, Run: j.RunTime(), Limit: j.TimeLimit})
	}

	cf := &Counterfactual{Jobs: len(actual.Jobs), Cluster: cluster, CutAtLimit: sim.CutAtDefaultLimit(jobs)}
	if len(runs[0].res.Skipped) > 0 {
		cf.Skipped = runs[0].res.Skipped
	}
	mp := sim.MetricsParams{Tau: opt.Tau, Shares: a.shares}
	results := []*sim.Result{actual, runs[0].res, runs[1].res}
	labels := []string{"What happened", "Simulated: Slurm fair-share",
		fmt.Sprintf("Simulated: Fairway (%s, predictor %s)", polName, predName)}
	names := []string{ScenarioActual, ScenarioFairshare, ScenarioFairway}
	perAcct := map[string][][]float64{}
	for s, res := range results {
		m := sim.Measure(res, mp)
		var waits []float64
		for _, j := range res.Jobs {
			w := max(j.End.Sub(j.Submit).Seconds()-j.Run.Seconds(), 0)
			waits = append(waits, w)
			if perAcct[j.Account] == nil {
				perAcct[j.Account] = make([][]float64, len(results))
			}
			perAcct[j.Account][s] = append(perAcct[j.Account][s], w)
		}
		jainV := NaN()
		if m.JainWindows > 0 {
			jainV = Num(m.Jain)
		}
		cf.Scenarios = append(cf.Scenarios, Scenario{Name: names[s], Label: labels[s],
			MedianWait: Num(quantile(waits, 0.5)), AvgWait: Num(m.AvgWait), P95Wait: Num(m.P95Wait),
			AvgBSLD: Num(m.AvgBSLD), Jain: jainV, JainWindows: m.JainWindows, P95Rho: Num(m.P95Rho)})
	}
	for _, acc := range sortedKeys(perAcct) {
		ws := perAcct[acc]
		sa := ScenarioAccount{Account: acc, Jobs: len(ws[0])}
		for s := range ws {
			sa.MedianWait = append(sa.MedianWait, Num(quantile(ws[s], 0.5)))
		}
		cf.Accounts = append(cf.Accounts, sa)
	}
	slices.SortStableFunc(cf.Accounts, func(x, y ScenarioAccount) int { return cmp.Compare(y.Jobs, x.Jobs) })
	return cf, nil
}

// layoutNote says which cluster the counterfactual replayed the month on
// when it was given partitions, and names the jobs no node of them could
// run, as simulate warns of them.
func layoutNote(cf *Counterfactual) string {
	n := fmt.Sprintf("The counterfactual replayed the month on the cluster's partitions (report --partitions): %s; each job ran only in its recorded partition and on its GPU type.",
		sim.InfoOf(cf.Cluster))
	for _, k := range sortedKeys(cf.Skipped) {
		switch k {
		case sim.SkipNoRun, sim.SkipNoUnits, sim.SkipTooLarge, sim.SkipDuplicate:
			continue
		}
		n += fmt.Sprintf(" %s left out, no node of the cluster can run them: %s.", plural.N(cf.Skipped[k], "job", "jobs"), k)
	}
	return n
}
