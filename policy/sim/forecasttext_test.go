package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/texttest"
)

func TestForecastSummary_WriteMarkdown(t *testing.T) {
	errs := func(med float64) ForecastErrors {
		return ForecastErrors{MedianAbs: med, MeanAbs: 2 * med, P90Abs: 4 * med, MedianSigned: -med / 2, Within: 0.25}
	}
	base := func() *ForecastSummary {
		return &ForecastSummary{Trace: "KTH", Jobs: 100, Cluster: ClusterInfo{Nodes: 1, PerNode: 100, Unit: "cpus"}, Backfill: EASY,
			Predictor: "tsafrir", Policy: "fair-sjf", Moments: []ForecastAccuracy{
				{Moment: MomentSubmit, Forecasts: 100, Predicted: errs(30), Limits: errs(60)},
				{Moment: MomentSubmitWaited, Forecasts: 40, Predicted: errs(1800), Limits: errs(7200)},
				{Moment: MomentHourly, Forecasts: 10, Predicted: errs(3600), Limits: errs(7200)},
			}}
	}
	for _, tc := range []struct {
		name       string
		edit       func(*ForecastSummary)
		want, none []string
	}{
		{"met", func(*ForecastSummary) {}, []string{
			"### KTH\n\n100 jobs on 1 nodes × 100 cpus, policy fair-sjf, EASY backfill, predictor tsafrir.\n\n",
			"| at submit, all jobs | 100 | predicted | 30s | 1m0s | 2m0s | 25.0% | -15s | 0.50× |\n| | | limits | 1m0s |",
			"| at submit, jobs that waited | 40 | predicted | 30m0s | 1h0m0s | 2h0m0s | 25.0% | -15m0s | 0.25× |",
			"**met** (at submit, jobs that waited 0.25×, after each hour waited 0.50×)."},
			[]string{"oracle"}},
		{"missed, with oracle rows", func(r *ForecastSummary) {
			r.Backfill = NoBackfill
			m := &r.Moments[2]
			m.Predicted = errs(5400)
			tr, ta := errs(1200), errs(600)
			m.TrueRunning, m.TrueRuns = &tr, &ta
		}, []string{"no backfill", "| | | oracle: true run times of running jobs | 20m0s |", "| 0.17× |",
			"| | | oracle: true run times of all jobs | 10m0s |", "**missed** (at submit, jobs that waited 0.25×, after each hour waited 0.75×)."},
			nil},
		{"not measurable", func(r *ForecastSummary) { r.Moments[2].Forecasts = 0 }, []string{
			"**missed** (at submit, jobs that waited 0.25×, after each hour waited: not measurable)."}, nil},
		{"sub-second errors", func(r *ForecastSummary) { r.Moments[0].Predicted = errs(0.0123) }, []string{"| predicted | 12ms |"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			tc.edit(r)
			var b strings.Builder
			if err := r.WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			texttest.Check(t, b.String(), tc.want, tc.none)
		})
	}
}

func TestSummarizeForecast(t *testing.T) {
	w, err := SynthWorkload("synthetic", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := CompareConfig{Predictor: "tsafrir", Backfill: EASY}
	for _, oracle := range []bool{false, true} {
		s, err := SummarizeForecast(context.Background(), w, c, "fair-sjf", oracle)
		if err != nil {
			t.Fatal(err)
		}
		if s.Policy != "fair-sjf" || s.Predictor != "tsafrir" || s.Backfill != EASY || s.Jobs != len(w.Jobs) || s.Cluster != InfoOf(w.Cluster) {
			t.Errorf("summary %+v: want fair-sjf, tsafrir, EASY, %d jobs on %+v", s, len(w.Jobs), InfoOf(w.Cluster))
		}
		if len(s.Moments) != 3 {
			t.Fatalf("%d moments, want 3", len(s.Moments))
		}
		for _, m := range s.Moments {
			if m.Forecasts == 0 || (m.TrueRuns != nil) != oracle {
				t.Errorf("oracle %v, %s: %d forecasts, oracle rows %v", oracle, m.Moment, m.Forecasts, m.TrueRuns != nil)
			}
		}
	}
	if _, err := SummarizeForecast(context.Background(), w, c, "lottery", false); err == nil {
		t.Error("an unknown policy was measured")
	}
}
