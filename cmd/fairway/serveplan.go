package main

import (
	"context"
	"log/slog"

	"github.com/fairway-hpc/fairway/internal/serve"
)

// planCycle runs one cycle of serve's runner, forecasts included, with
// every effect going to a Planner that keeps records in memory: nothing
// reaches Slurm, the table file or the database, whatever cfg says. It is
// how explain and queue rank the live queue exactly as serve does without
// being a second serve.
func planCycle(ctx context.Context, cfg serveConfig, d serveDeps, log *slog.Logger) (*serve.CycleResult, error) {
	cfg.Runner.BufferDir = "" // serve's spilled records are serve's to ship
	cfg.Runner.Forecast, cfg.Runner.ForecastAsync = true, false
	r, err := newServeRunner(ctx, cfg, d, serve.Parts{Sink: serve.NewPlanner(nil, nil)}, log)
	if err != nil {
		return nil, err
	}
	return r.RunCycle(ctx)
}

// explainJob plans one cycle (planCycle) and explains job id's place in
// its ranking.
func explainJob(ctx context.Context, cfg serveConfig, d serveDeps, id int64, log *slog.Logger) (*serve.Explanation, error) {
	res, err := planCycle(ctx, cfg, d, log)
	if err != nil {
		return nil, err
	}
	ex, err := serve.ExplainCycle(ctx, res, id, d.Store, cfg.Runner.Cluster)
	return ex, flagError(err)
}
