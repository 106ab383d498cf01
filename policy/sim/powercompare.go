package sim

import (
	"context"
	"fmt"
	"io"
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
		name string
		new  func(s *power.Series) power.Rule
	}
	rules := []rule{{name: "no power saving"}}
	for _, d := range ps.SuspendTimes {
		rules = append(rules, rule{(&power.IdleTime{SuspendTime: d}).Name(), func(*power.Series) power.Rule { return &power.IdleTime{SuspendTime: d} }})
	}
	for _, b := range ps.Buffers {
		rules = append(rules, rule{fmt.Sprintf("artifact, buffer %d", b), func(s *power.Series) power.Rule {
			p := power.ArtifactPredictive(nil)
			p.Buffer, p.Label = b, fmt.Sprintf("artifact, buffer %d", b)
			yesterday := power.Seasonal{Label: "same time yesterday", Period: day}
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
		if r.new != nil {
			sc.Power = &Power{NewRule: r.new, Step: step, Resume: ps.Resume}
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
	_, err := fmt.Fprintln(w, "node demand: nodes with a running job, the busiest instant of each step; the artifact's rule forecasts it as the same time yesterday of the simulated usage")
	return err
}
