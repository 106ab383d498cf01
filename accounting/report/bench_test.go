package report_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// benchMonth is the month the benchmark's workload fills.
var benchMonth = report.Month{Year: 2026, Month: time.October}

// benchCluster is 128 nodes × 8 GPUs: a month of the synthetic Helios-like
// workload at 0.9 offered load is then a little over 100,000 jobs.
var benchCluster = sim.Cluster{Nodes: 128, PerNode: 8, Unit: sim.GPUs}

// synthFixture fills a fresh database with a month of GPU jobs: sim.Synth's
// workload (calibrated to Helios, SC'21), scheduled by the simulator under
// fair-share so that jobs wait as on a busy cluster, users grouped into 12
// accounts, imported through Store.Import; then predictions, a decision
// log (one row per job) and per-GPU epilog records as kthFixture makes them.
func synthFixture(b *testing.B, jobs int) *fixture {
	b.Helper()
	pool, store := freshDB(b)
	ctx := context.Background()
	const cluster = "bench"
	gen, err := sim.Synth(sim.SynthParams{Jobs: jobs, Users: 300, Nodes: benchCluster.Nodes, GPUsPerNode: benchCluster.PerNode,
		Load: 0.9, Seed: 7, Start: benchMonth.Start()})
	if err != nil {
		b.Fatal(err)
	}
	fs, err := policy.New("fairshare", nil)
	if err != nil {
		b.Fatal(err)
	}
	res, err := sim.Run(gen, sim.Config{Cluster: benchCluster, Policy: fs})
	if err != nil {
		b.Fatal(err)
	}
	byID := make(map[int64]*policy.Job, len(gen))
	for i := range gen {
		byID[gen[i].ID] = &gen[i]
	}
	var ran []policy.Job
	for _, r := range res.Jobs {
		j := *byID[r.ID]
		j.Cluster, j.Start, j.End, j.Partition = cluster, r.Start, r.End, "gpu"
		h := fnv.New32a()
		h.Write([]byte(j.User))
		j.Account = fmt.Sprintf("group%02d", h.Sum32()%12)
		ran = append(ran, j)
	}
	if _, err := store.Import(ctx, accounting.NewJobsSource(ran, nil, 0), accounting.ImportOptions{Source: "synthetic"}); err != nil {
		b.Fatal(err)
	}
	stored, err := store.FinishedJobs(ctx, cluster, time.Time{}, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	fx := &fixture{Pool: pool, Store: store, Cluster: cluster, Jobs: stored}
	fx.shares(b)
	fx.predictions(b, "tsafrir")
	fx.decisions(b, "fair-qssf", "tsafrir", benchCluster, true)
	fx.gpuUsage(b, 8)
	return fx
}

// BenchmarkReport times `fairway report` on a month of 100,000 jobs: reading
// the month and the one before from PostgreSQL, building every figure,
// running the two simulations of the counterfactual, and writing the HTML
// page with its plots (target: under 10 s).
func BenchmarkReport(b *testing.B) {
	const n = 112000
	fx := synthFixture(b, n)
	src := report.NewSource(fx.Pool, fx.Store)
	ctx := context.Background()
	for _, cf := range []bool{true, false} {
		b.Run(fmt.Sprintf("jobs=100000/counterfactual=%t", cf), func(b *testing.B) {
			opt := report.Options{Cluster: benchCluster, Now: benchMonth.End(), Counterfactual: cf}
			one := func() *report.Report {
				cur, err := src.Load(ctx, fx.Cluster, benchMonth, true)
				if err != nil {
					b.Fatal(err)
				}
				prev, err := src.Load(ctx, fx.Cluster, benchMonth.Prev(), false)
				if err != nil {
					b.Fatal(err)
				}
				r, err := report.Build(cur, prev, opt)
				if err != nil {
					b.Fatal(err)
				}
				figs, err := report.Figures(r)
				if err != nil {
					b.Fatal(err)
				}
				if err := report.WriteHTML(io.Discard, r, figs); err != nil {
					b.Fatal(err)
				}
				return r
			}
			r := one()
			if r.Summary.Jobs < 100000 {
				b.Fatalf("the month has %d jobs, want at least 100,000", r.Summary.Jobs)
			}
			if cf && (r.Counterfactual == nil || r.Counterfactual.Jobs < 100000) {
				b.Fatalf("counterfactual %+v, want 100,000 jobs simulated", r.Counterfactual)
			}
			b.Logf("%d jobs ended in %s, %d accounts, %d users, %d decisions, %d epilog records",
				r.Summary.Jobs, benchMonth, len(r.Accounts), len(r.Users), r.Changes.Rows, r.Efficiency.Records)
			b.ResetTimer()
			for b.Loop() {
				one()
			}
		})
	}
}
