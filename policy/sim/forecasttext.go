package sim

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ForecastSummary is what `simulate --forecast` reports: one policy's
// start-time forecasts on a workload, measured at each moment
// (MeasureForecast), with the workload and settings they were made under.
type ForecastSummary struct {
	Trace     string             `json:"trace"`
	Format    string             `json:"format"`
	Jobs      int                `json:"jobs"`
	Cluster   ClusterInfo        `json:"cluster"`
	Backfill  Backfill           `json:"backfill"`
	Predictor string             `json:"predictor"`
	Policy    string             `json:"policy"`
	Moments   []ForecastAccuracy `json:"moments"`
}

// SummarizeForecast measures the start-time forecasts of policyName on w
// (MeasureForecast) under c's predictor, backfill and progress; oracle
// adds the forecasts played with true run times.
func SummarizeForecast(ctx context.Context, w *Workload, c CompareConfig, policyName string, oracle bool) (*ForecastSummary, error) {
	sc, err := c.SimConfig(ctx, w, policyName)
	if err != nil {
		return nil, err
	}
	rep, err := MeasureForecast(w.Jobs, sc, ForecastParams{Oracle: oracle})
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", policyName, err)
	}
	return &ForecastSummary{Trace: w.Name, Format: w.Format, Jobs: len(rep.Result.Jobs), Cluster: InfoOf(w.Cluster),
		Backfill: c.Backfill, Predictor: c.Predictor, Policy: policyName, Moments: rep.Moments}, nil
}

// WriteMarkdown writes the comparison as a Markdown table, readable on a
// terminal and ready for docs/FORECAST.md, ending with whether the target
// is met.
func (r *ForecastSummary) WriteMarkdown(w io.Writer) error {
	backfill := "EASY backfill"
	if r.Backfill == NoBackfill {
		backfill = "no backfill"
	}
	fmt.Fprintf(w, "### %s\n\n%d jobs on %d nodes × %d %s, policy %s, %s, predictor %s.\n\n", r.Trace, r.Jobs,
		r.Cluster.Nodes, r.Cluster.PerNode, r.Cluster.Unit, r.Policy, backfill, r.Predictor)
	fmt.Fprintln(w, "| forecast made | forecasts | method | median abs error | mean abs error | p90 abs error | within ±max(10 min, 20% of wait) | median signed error | median vs limits |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, m := range r.Moments {
		ratio := func(e *ForecastErrors) string {
			if m.Limits.MedianAbs > 0 {
				return fmt.Sprintf("%.2f×", e.MedianAbs/m.Limits.MedianAbs)
			}
			return "n/a"
		}
		row := func(moment, forecasts, method string, e *ForecastErrors, ratio string) {
			var b strings.Builder
			for _, c := range []string{moment, forecasts, method, roundDur(e.MedianAbs), roundDur(e.MeanAbs), roundDur(e.P90Abs),
				fmt.Sprintf("%.1f%%", 100*e.Within), roundDur(e.MedianSigned), ratio} {
				b.WriteString("|")
				if c != "" {
					b.WriteString(" " + c)
				}
				b.WriteString(" ")
			}
			fmt.Fprintln(w, b.String()+"|")
		}
		row(momentLabel(m.Moment), strconv.Itoa(m.Forecasts), "predicted", &m.Predicted, ratio(&m.Predicted))
		row("", "", "limits", &m.Limits, "")
		if m.TrueRunning != nil && m.TrueRuns != nil {
			row("", "", "oracle: true run times of running jobs", m.TrueRunning, ratio(m.TrueRunning))
			row("", "", "oracle: true run times of all jobs", m.TrueRuns, ratio(m.TrueRuns))
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n\n", forecastVerdict(r.Moments))
	return err
}

// forecastVerdict says whether the forecast from predicted run times meets
// the target: at most half the median absolute error of the
// time-limit forecast, at submit time (over the jobs that waited: for the
// others both are exact) and over the hourly re-forecasts.
func forecastVerdict(ms []ForecastAccuracy) string {
	var parts []string
	met := true
	for _, m := range ms {
		if m.Moment != MomentSubmitWaited && m.Moment != MomentHourly {
			continue
		}
		if m.Forecasts == 0 || m.Limits.MedianAbs == 0 {
			parts = append(parts, momentLabel(m.Moment)+": not measurable")
			met = false
			continue
		}
		ratio := m.Predicted.MedianAbs / m.Limits.MedianAbs
		met = met && ratio <= 0.5
		parts = append(parts, fmt.Sprintf("%s %.2f×", momentLabel(m.Moment), ratio))
	}
	verdict := "missed"
	if met {
		verdict = "met"
	}
	return fmt.Sprintf("Target (predicted median abs error ≤ 0.5× the time-limit forecast's): **%s** (%s).", verdict, strings.Join(parts, ", "))
}

// momentLabel is how the table names a moment.
func momentLabel(m string) string {
	switch m {
	case MomentSubmit:
		return "at submit, all jobs"
	case MomentSubmitWaited:
		return "at submit, jobs that waited"
	case MomentHourly:
		return "after each hour waited"
	}
	return m
}

// roundDur prints seconds as a duration rounded to what matters at its size.
func roundDur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
