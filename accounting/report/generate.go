package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/plural"
	"github.com/fairway-hpc/fairway/internal/progress"
)

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

// Run opens the accounting database at url and generates cfg's report.
// With show set, the stage under way and the replay's advance are drawn on
// show as one line that the next one overwrites; the line is ended before
// Run returns.
func Run(ctx context.Context, url string, cfg GenerateConfig, show io.Writer, log *slog.Logger) (*Generated, error) {
	pool, store, err := accounting.Open(ctx, url, log)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	shown := false // a progress line waits for its newline
	if show != nil {
		var cluster string
		var month Month
		var stepStart time.Time
		line := func(cluster string, m Month, what string) {
			fmt.Fprintf(show, "\r\033[Kreport %s %s: %s", cluster, m, what)
		}
		cfg.Step = func(c string, m Month, what string) {
			cluster, month, stepStart, shown = c, m, time.Now(), true
			line(c, m, what)
		}
		cfg.Options.Progress = func(done, total int) error {
			line(cluster, month, fmt.Sprintf("replaying the month: %d of %s under Fairway's policy; %s", done, plural.N(total, "job", "jobs"), progress.ETA(stepStart, time.Now(), done, total)))
			return ctx.Err()
		}
	}
	start := time.Now()
	g, err := Generate(ctx, NewSource(pool, store), cfg)
	if shown {
		fmt.Fprintln(show)
	}
	if err != nil {
		return nil, err
	}
	log.Info("report written", "cluster", g.Cluster, "month", g.Month.String(), "jobs", g.Jobs,
		"files", len(g.Files), "duration_seconds", time.Since(start).Seconds())
	return g, nil
}

// ParseFormats reads --format's comma-separated list of Formats.
func ParseFormats(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(","+strings.Join(Formats, ",")+",", ","+f+",") {
			return nil, fieldErr("Formats", fmt.Sprintf("%q", f), fmt.Errorf("want some of %s", strings.Join(Formats, ", ")))
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fieldErr("Formats", "", errors.New("empty"))
	}
	return out, nil
}
