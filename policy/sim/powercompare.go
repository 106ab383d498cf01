package sim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/policy/power"
)

// PowerSettings are the power rules ComparePower replays.
type PowerSettings struct {
	Resume time.Duration // the resume delay charged to jobs on powered-down nodes
	Step   time.Duration // the rules' step; 0: 10 minutes
	// Buffers are the artifact's predictive rule's, driven by the GBT
	// forecast of the simulated node usage (power.Retrained);
	// SuspendTimes Slurm's idle-time rule's.
	Buffers      []int
	SuspendTimes []time.Duration
	// HybridIdle are the hybrid rule's idle times: Slurm's idle clock that
	// powers no node down below the forecast of the next step (the GBT's,
	// as the artifact's rule; buffer 0; it holds, it does not resume ahead: the setting
	// `fairway power eval` chose on Philly).
	HybridIdle []time.Duration
	// Nowcast, when on, adds beside each hybrid row the same hybrid with
	// the trend nowcast (power.Nowcast), so the table shows what it does
	// to the waits.
	Nowcast power.Nowcast
}

// PowerRow is one simulation of ComparePower: no power saving (Power nil)
// or one rule.
type PowerRow struct {
	Rule             string
	Power            *PowerResult
	AvgWait, P95Wait float64 // seconds
}

// ComparePower simulates w under one policy without power saving and with
// each rule of ps, and measures the power table and the waits of each, so
// that what the saving costs the users shows beside what it saves.
func ComparePower(ctx context.Context, w *Workload, cfg CompareConfig, name string, ps PowerSettings) ([]PowerRow, error) {
	step := ps.Step
	if step <= 0 {
		step = 10 * time.Minute
	}
	if time.Hour*24%step != 0 {
		return nil, fmt.Errorf("power step %v: want a whole number of steps in a day", step)
	}
	type rule struct {
		name      string
		new       func(s *power.Series) power.Rule
		idleAfter time.Duration
		nowcast   power.Nowcast
	}
	rules := []rule{{name: "no power saving"}}
	for _, d := range ps.SuspendTimes {
		// Each node on its own idle clock, powered down the instant it
		// runs out, as slurmctld does (not at a step's end).
		rules = append(rules, rule{name: (&power.IdleTime{SuspendTime: d}).Name(), idleAfter: d})
	}
	lags, err := power.LagsFor(step)
	if err != nil {
		return nil, fmt.Errorf("simulate --power: %w", err)
	}
	// Each simulation forecasts its own node usage as it unfolds, with the
	// forecaster `fairway power eval` drives the hybrid with: the GBT
	// refit daily on the usage so far, the same time yesterday until there
	// are two weeks of it.
	forecast := func(s *power.Series, n int) func(int) []float64 { return usageForecast(s, lags, n) }
	for _, d := range ps.HybridIdle {
		name := "hybrid " + strings.TrimPrefix((&power.IdleTime{SuspendTime: d}).Name(), "idle-time ") + ", buffer 0"
		rules = append(rules, rule{name: name, idleAfter: d, new: func(s *power.Series) power.Rule {
			return &ForecastFloor{Lookahead: 1, Label: name, Forecast: forecast(s, 1)}
		}})
		if ps.Nowcast.On() {
			name := name + ", " + ps.Nowcast.String()
			rules = append(rules, rule{name: name, idleAfter: d, nowcast: ps.Nowcast, new: func(s *power.Series) power.Rule {
				return &ForecastFloor{Lookahead: 1, Label: name, Forecast: forecast(s, 1)}
			}})
		}
	}
	for _, b := range ps.Buffers {
		rules = append(rules, rule{name: fmt.Sprintf("artifact, buffer %d", b), new: func(s *power.Series) power.Rule {
			p := power.ArtifactPredictive(nil)
			p.Buffer, p.Label = b, fmt.Sprintf("artifact, buffer %d", b)
			p.Forecast = forecast(s, 2*p.Future)
			return p
		}})
	}
	var out []PowerRow
	for _, r := range rules {
		sc, err := cfg.SimConfig(ctx, w, name)
		if err != nil {
			return nil, err
		}
		if sc.Preempt {
			return nil, fmt.Errorf("simulate --power: %s runs preemptively; power saving with preemption is not modelled", name)
		}
		if r.new != nil || r.idleAfter > 0 {
			sc.Power = &Power{NewRule: r.new, Step: step, Resume: ps.Resume, IdleAfter: r.idleAfter, NoAhead: true, Nowcast: r.nowcast}
		}
		res, err := Run(w.Jobs, sc)
		if err != nil {
			return nil, fmt.Errorf("simulate %s, %s: %w", name, r.name, err)
		}
		m := Measure(res, MetricsParams{})
		out = append(out, PowerRow{Rule: r.name, Power: res.Power, AvgWait: m.AvgWait, P95Wait: m.P95Wait})
	}
	return out, nil
}

// usageForecast is the forecast of n steps a power rule reads from the
// simulated usage s as it grows: power.Retrained, the GBT refit daily on
// the usage so far, the same time yesterday for the first two weeks.
func usageForecast(s *power.Series, l power.Lags, n int) func(int) []float64 {
	fc := power.NewRetrained(l)
	return func(i int) []float64 {
		out := make([]float64, n)
		fc.Forecast(s, i, out)
		return out
	}
}

// WritePowerText writes ComparePower's rows as one table.
func WritePowerText(w io.Writer, policyName string, resume time.Duration, rows []PowerRow) error {
	fmt.Fprintf(w, "power saving under %s, resume time %v (a job on a powered-down node starts when its nodes are up)\n", policyName, resume)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rule\tmean off\tnode-h off\tutil powered\tups/day\tresumed nodes\tjobs delayed\tboot wait h\tavg wait s\tp95 wait s\tavg wait +s\t")
	var base float64
	for i, r := range rows {
		if i == 0 {
			base = r.AvgWait
		}
		if r.Power == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%.0f\t%.0f\t-\t\n", r.Rule, r.AvgWait, r.P95Wait)
			continue
		}
		m := r.Power.Metrics
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.1f%%\t%.1f\t%d\t%d\t%.1f\t%.0f\t%.0f\t%+.0f\t\n", r.Rule, m.MeanOff, m.NodeHoursOff, 100*m.UtilPowered, m.UpsPerDay,
			r.Power.Resumes, r.Power.DelayedJobs, r.Power.Delay.Hours(), r.AvgWait, r.P95Wait, r.AvgWait-base)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "node demand: nodes with a running job, the busiest instant of each step; the artifact's rule and the hybrid forecast it with the GBT refit daily on the simulated usage so far (the same time yesterday for the first two weeks); idle-time and hybrid rows power each node down on its own idle clock; node-h off as the nodes were off"); err != nil {
		return err
	}
	// Only rows with the trend nowcast resume ahead: the line appears with
	// --nowcast alone, so the table without it is as before.
	for _, r := range rows {
		if r.Power != nil && r.Power.AheadResumes > 0 {
			if _, err := fmt.Fprintf(w, "trend nowcast, %s: %d nodes resumed ahead of demand (not in resumed nodes), %d of them went back down unused\n", r.Rule, r.Power.AheadResumes, r.Power.AheadExpired); err != nil {
				return err
			}
		}
	}
	return nil
}

// NodeUsage simulates w under one policy without power saving and returns
// its node usage a step at a time: the most nodes with a running job at
// any instant of each step, and the cluster's nodes, from the first
// simulated job's submit. `fairway power eval` reads it as a node sequence, so the
// forecaster and every rule can be judged on a simulated cluster's demand.
func NodeUsage(ctx context.Context, w *Workload, cfg CompareConfig, name string, step time.Duration) ([]power.Sample, error) {
	if step <= 0 {
		return nil, fmt.Errorf("node usage step %v: want a positive step", step)
	}
	sc, err := cfg.SimConfig(ctx, w, name)
	if err != nil {
		return nil, err
	}
	// The idle clock of a century powers nothing down: the steps are the
	// usage without power saving.
	sc.Power = &Power{Step: step, IdleAfter: 100 * 365 * 24 * time.Hour}
	res, err := Run(w.Jobs, sc)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", name, err)
	}
	if res.Power == nil || len(res.Jobs) == 0 {
		return nil, fmt.Errorf("simulate %s: no node usage", name)
	}
	start := res.Jobs[0].Submit // the simulation's origin: its steps count from there
	pending := queuedNodes(res.Jobs, sc.Cluster.PerNode, start, step, len(res.Power.Steps))
	out := make([]power.Sample, len(res.Power.Steps))
	for i, x := range res.Power.Steps {
		out[i] = power.Sample{Time: start.Add(time.Duration(i) * step), Active: x.Active, Total: x.Total, Pending: pending[i]}
	}
	return out, nil
}

// queuedNodes is, for each of n steps of step from start, the nodes asked
// for by the jobs queued at the step's end (submitted before it, first
// started at or after it): the pending demand a power rule reads from the
// queue. A job asks for the fewest nodes of perNode units that hold its
// units.
func queuedNodes(jobs []JobResult, perNode int, start time.Time, step time.Duration, n int) []int {
	type event struct {
		at time.Time
		d  int
	}
	perNode = max(perNode, 1)
	var ev []event
	for _, j := range jobs {
		if j.Start.IsZero() || !j.Start.After(j.Submit) {
			continue // never queued
		}
		nodes := max((j.Units+perNode-1)/perNode, 1)
		ev = append(ev, event{j.Submit, nodes}, event{j.Start, -nodes})
	}
	slices.SortFunc(ev, func(a, b event) int { return a.at.Compare(b.at) })
	out := make([]int, n)
	cur, k := 0, 0
	for i := range n {
		end := start.Add(time.Duration(i+1) * step)
		for k < len(ev) && ev[k].at.Before(end) {
			cur += ev[k].d
			k++
		}
		out[i] = cur
	}
	return out
}
