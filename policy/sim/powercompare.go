package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairway-hpc/fairway/policy/power"
)

// PowerSettings are the power rules ComparePower replays.
type PowerSettings struct {
	Resume time.Duration // the resume delay charged to jobs on powered-down nodes
	Step   time.Duration // the rules' step; 0: 10 minutes
	// Buffers are the artifact's predictive rule's, driven by a
	// same-time-yesterday forecast of the simulated node usage;
	// SuspendTimes Slurm's idle-time rule's.
	Buffers      []int
	SuspendTimes []time.Duration
	// HybridIdle are the hybrid rule's idle times: Slurm's idle clock that
	// powers no node down below the same-time-yesterday forecast of the
	// next step (buffer 0; it holds, it does not resume ahead: the setting
	// `fairway power eval` chose on Philly).
	HybridIdle []time.Duration
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
	day := int(24 * time.Hour / step)
	type rule struct {
		name      string
		new       func(s *power.Series) power.Rule
		idleAfter time.Duration
	}
	rules := []rule{{name: "no power saving"}}
	for _, d := range ps.SuspendTimes {
		// Each node on its own idle clock, powered down the instant it
		// runs out, as slurmctld does (not at a step's end).
		rules = append(rules, rule{name: (&power.IdleTime{SuspendTime: d}).Name(), idleAfter: d})
	}
	yesterday := power.Seasonal{Label: "same time yesterday", Period: day}
	for _, d := range ps.HybridIdle {
		name := "hybrid " + strings.TrimPrefix((&power.IdleTime{SuspendTime: d}).Name(), "idle-time ") + ", buffer 0"
		rules = append(rules, rule{name: name, idleAfter: d, new: func(s *power.Series) power.Rule {
			return &ForecastFloor{Lookahead: 1, Label: name, Forecast: func(i int) []float64 {
				out := make([]float64, 1)
				yesterday.Forecast(s, i, out)
				return out
			}}
		}})
	}
	for _, b := range ps.Buffers {
		rules = append(rules, rule{name: fmt.Sprintf("artifact, buffer %d", b), new: func(s *power.Series) power.Rule {
			p := power.ArtifactPredictive(nil)
			p.Buffer, p.Label = b, fmt.Sprintf("artifact, buffer %d", b)
			p.Forecast = func(i int) []float64 {
				out := make([]float64, 2*p.Future)
				yesterday.Forecast(s, i, out)
				return out
			}
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
			sc.Power = &Power{NewRule: r.new, Step: step, Resume: ps.Resume, IdleAfter: r.idleAfter, NoAhead: true}
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
	_, err := fmt.Fprintln(w, "node demand: nodes with a running job, the busiest instant of each step; the artifact's rule and the hybrid forecast it as the same time yesterday of the simulated usage; idle-time and hybrid rows power each node down on its own idle clock; node-h off as the nodes were off")
	return err
}
