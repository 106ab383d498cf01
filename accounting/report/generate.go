package report

import "context"

// GenerateConfig is one `fairway report` run: which cluster and month,
// what to compute and where to write it.
type GenerateConfig struct {
	Cluster string // "" when the database holds one cluster
	Month   Month  // the zero Month: the last month in which a job of the cluster ended
	Formats []string
	Out     string
	Options Options
	// Step, when set, is told the cluster and month resolved and what is
	// being done, for progress; Options.Progress reports the replay.
	Step func(cluster string, m Month, what string)
}

// Generated is what Generate wrote.
type Generated struct {
	Cluster string
	Month   Month
	Jobs    int      // the month's jobs (Summary.Jobs)
	Files   []string // in the order written
}

// Generate resolves the cluster and month, loads the month and the one
// before from src, builds the report and writes it into cfg.Out. The month before is loaded only for the summary's
// comparison, so it costs the jobs and the share tree alone. Cancelling
// ctx stops the replay between jobs when Options.Progress is nil.
func Generate(ctx context.Context, src *Source, cfg GenerateConfig) (*Generated, error) {
	cluster, month, err := src.Resolve(ctx, cfg.Cluster, cfg.Month)
	if err != nil {
		return nil, err
	}
	step := func(what string) {
		if cfg.Step != nil {
			cfg.Step(cluster, month, what)
		}
	}
	step("reading the accounting database")
	cur, err := src.Load(ctx, cluster, month, true)
	if err != nil {
		return nil, err
	}
	prev, err := src.Load(ctx, cluster, month.Prev(), false)
	if err != nil {
		return nil, err
	}
	opt := cfg.Options
	if opt.Progress == nil {
		opt.Progress = func(int, int) error { return ctx.Err() }
	}
	step("computing")
	r, err := Build(cur, prev, opt)
	if err != nil {
		return nil, err
	}
	step("writing")
	files, err := Write(cfg.Out, r, cfg.Formats)
	if err != nil {
		return nil, err
	}
	return &Generated{Cluster: cluster, Month: month, Jobs: r.Summary.Jobs, Files: files}, nil
}
