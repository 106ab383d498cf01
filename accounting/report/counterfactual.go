package report

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

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

// counterfactual replays the jobs submitted this month that ran, with their
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
	slices.SortStableFunc(jobs, func(x, y policy.Job) int {
		if c := x.Submit.Compare(y.Submit); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
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
		cfg := sim.Config{Cluster: opt.Cluster, Policy: p, Predictor: pr, Shares: a.shares, Progress: r.progress}
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
	actual := &sim.Result{Policy: "actual", Cluster: opt.Cluster}
	for i := range jobs {
		j := &jobs[i]
		if !kept[j.ID] {
			continue
		}
		kept[j.ID] = false // the simulator keeps the first of duplicate ids
		actual.Jobs = append(actual.Jobs, sim.JobResult{ID: j.ID, User: j.User, Account: j.Account,
			Units: opt.Cluster.Need(j), Submit: j.Submit, Start: j.Start, End: j.End, Run: j.RunTime(), Limit: j.TimeLimit})
	}

	cf := &Counterfactual{Jobs: len(actual.Jobs), Cluster: opt.Cluster}
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
