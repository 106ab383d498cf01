package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fairway-hpc/fairway/internal/progress"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// simulateForecast measures the start-time forecasts of one policy on the
// workload (sim.MeasureForecast) and prints the comparison; oracle adds
// the forecasts played with true run times.
func simulateForecast(ctx context.Context, cfg simulateConfig, policiesSet, oracle bool, out io.Writer, errOut *os.File) error {
	name, err := sim.ForecastPolicy(cfg.Policies, policiesSet, cfg.Preempt)
	if err != nil {
		return err
	}
	w, err := simWorkload(cfg.LoadWorkload())
	if err != nil {
		return err
	}
	var onProgress func(string, int, int)
	started := time.Now()
	if cfg.Progress {
		onProgress = progress.NewTally(errOut, "forecasting "+w.Name+" under "+name, "1 policy", "jobs", started).Update
	}
	fr, err := sim.SummarizeForecast(ctx, w, sim.CompareConfig{Predictor: cfg.Predictor, Backfill: cfg.Backfill, Progress: onProgress}, name, oracle)
	if onProgress != nil {
		fmt.Fprintf(errOut, "\r\033[Kmeasured forecasts in %s\n", time.Since(started).Round(time.Millisecond))
	}
	if err != nil {
		return err
	}
	if cfg.JSON {
		return printJSON(out, fr)
	}
	return fr.WriteMarkdown(out)
}
