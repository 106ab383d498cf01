package sidecar

import (
	"context"
	"log/slog"
)

// PlanCycle runs one cycle of serve's runner, forecasts included, with
// every effect going to a Planner that keeps records in memory: nothing
// reaches Slurm, the table file or the database, whatever cfg says. It is
// how explain and queue rank the live queue exactly as serve does without
// being a second serve.
func PlanCycle(ctx context.Context, cfg ServeConfig, d Deps, log *slog.Logger) (*CycleResult, error) {
	cfg.Runner.BufferDir = "" // serve's spilled records are serve's to ship
	cfg.Runner.Forecast, cfg.Runner.ForecastAsync = true, false
	r, err := NewServeRunner(ctx, cfg, d, NewPlanner(nil, nil), log)
	if err != nil {
		return nil, err
	}
	return r.RunCycle(ctx)
}

// ExplainJob plans one cycle (PlanCycle) and explains job id's place in
// its ranking.
func ExplainJob(ctx context.Context, cfg ServeConfig, d Deps, id int64, log *slog.Logger) (*Explanation, error) {
	res, err := PlanCycle(ctx, cfg, d, log)
	if err != nil {
		return nil, err
	}
	return Explain(res, id)
}
