package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/fairway-hpc/fairway/slurmctl"
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
	ex, err := Explain(res, id)
	var nq *NotQueuedError
	if errors.As(err, &nq) && res.Read != nil && !slices.ContainsFunc(res.Read.Jobs, func(j slurmctl.Job) bool { return j.ID == id }) {
		// Slurm forgot it (MinJobAge); the history may know how it ended.
		j, ferr := d.Store.FinishedJob(ctx, cfg.Runner.Cluster, id)
		if ferr != nil {
			return nil, fmt.Errorf("%w (and the job history could not be read: %w)", err, ferr)
		}
		fromHistory(nq, j)
	}
	return ex, err
}
