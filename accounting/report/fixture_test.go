package report_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/jackc/pgx/v5/pgxpool"
)

// freshDB is a database of the test's own on the lab's PostgreSQL with
// Fairway's schema (sql.Up), dropped when the test ends.
func freshDB(t testing.TB) (*pgxpool.Pool, *accounting.Store) {
	t.Helper()
	pool := lab.Get(t).DatabasePool(t)
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := store.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pool, store
}

// tracesDir is the shared traces folder; the test is skipped when it is
// absent (a fresh clone), and fails under CI=true.
func tracesDir(t testing.TB) string {
	t.Helper()
	return shareddata.Traces(t)
}

// swfWindow returns the header and the jobs of an SWF trace submitted in
// [from, to), as SWF text: a slice of the real trace, unchanged line by
// line, for the ingest path to read.
func swfWindow(t testing.TB, path string, from, to time.Time) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var start int64
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ";") {
			if v, ok := strings.CutPrefix(line, "; UnixStartTime:"); ok {
				start, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
			out.WriteString(line + "\n")
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		sub, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: submit %q: %v", path, fs[1], err)
		}
		at := time.Unix(start+sub, 0)
		if !at.Before(from) && at.Before(to) {
			out.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// fixture is a cluster's history in a fresh database, filled through the
// same code paths serve and the hooks write with.
type fixture struct {
	Pool    *pgxpool.Pool
	Store   *accounting.Store
	Cluster string
	Jobs    []policy.Job // as stored
}

// kthFixture imports the jobs of the KTH SP2 trace submitted in [from, to)
// through accounting's TraceSource and Store.Import (as `fairway ingest
// --from swf` does), and then fills the tables a trace cannot:
//
//   - the share tree: an administrator's config giving the three busiest
//     accounts 40, 20 and 10 shares (the others keep Slurm's default 1);
//   - predictions: the tsafrir predictor run online over the jobs, each
//     predicted at its submission from the jobs finished by then, stored
//     with Store.RecordPredictions as serve stores them;
//   - the decision log: the jobs replayed by policy/sim under fair-qssf, each
//     cycle's ranking mapped to site factors by policy.Assign and the changed
//     values logged as serve logs them (Store.RecordDecisions);
//   - epilog records: the trace has no NVML data, so each job that ran gets
//     one record per processor (up to 4) with utilizations drawn from a
//     seeded generator, some unknown and some on shared GPUs. Their values
//     mean nothing; they make the efficiency section compute something.
func kthFixture(t testing.TB, from, to time.Time) *fixture {
	t.Helper()
	path := filepath.Join(tracesDir(t), "KTH-SP2-filtered.swf.gz")
	pool, store := freshDB(t)
	ctx := context.Background()
	const cluster = "kth-sp2"
	src, err := accounting.NewTraceSource(bytes.NewReader(swfWindow(t, path, from, to)), trace.SWF, "KTH-SP2-filtered.swf", cluster, false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := store.Import(ctx, src, accounting.ImportOptions{Source: "swf"})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if sum.Inserted < 100 {
		t.Fatalf("import: %+v: want at least 100 jobs", sum)
	}
	jobs, err := store.FinishedJobs(ctx, cluster, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{Pool: pool, Store: store, Cluster: cluster, Jobs: jobs}
	fx.shares(t)
	fx.predictions(t, "tsafrir")
	fx.decisions(t, "fair-qssf", "tsafrir", sim.Cluster{Nodes: 1, PerNode: 100, Unit: sim.CPUs}, false)
	fx.gpuUsage(t, 4)
	return fx
}

func (fx *fixture) shares(t testing.TB) {
	t.Helper()
	count := map[string]int{}
	for _, j := range fx.Jobs {
		count[j.Account]++
	}
	accts := make([]string, 0, len(count))
	for a := range count {
		accts = append(accts, a)
	}
	slices.SortFunc(accts, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var cfg strings.Builder
	for i, s := range []int{40, 20, 10} {
		if i < len(accts) {
			fmt.Fprintf(&cfg, "%s %d\n", accts[i], s)
		}
	}
	nodes, err := accounting.ParseSharesConfig("shares.conf", strings.NewReader(cfg.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fx.Store.SyncShares(context.Background(), fx.Cluster, accounting.SharesFromConfig, nodes); err != nil {
		t.Fatal(err)
	}
}

func (fx *fixture) predictions(t testing.TB, name string) {
	t.Helper()
	pr, err := predict.New(name, predict.Params{})
	if err != nil {
		t.Fatal(err)
	}
	bySubmit := slices.Clone(fx.Jobs)
	slices.SortStableFunc(bySubmit, func(a, b policy.Job) int { return a.Submit.Compare(b.Submit) })
	byEnd := slices.Clone(fx.Jobs)
	slices.SortStableFunc(byEnd, func(a, b policy.Job) int { return a.End.Compare(b.End) })
	var ps []accounting.Prediction
	k := 0
	for i := range bySubmit {
		j := &bySubmit[i]
		for k < len(byEnd) && !byEnd[k].End.After(j.Submit) {
			pr.Observe(&byEnd[k])
			k++
		}
		if j.Start.IsZero() {
			continue
		}
		p := pr.Predict(j)
		ps = append(ps, accounting.Prediction{Cluster: fx.Cluster, JobID: j.ID, ArrayTask: j.ArrayTask, Submit: j.Submit,
			Predictor: name, At: j.Submit, Run: p.Run, Upper: p.Upper, Quantile: p.Quantile, Rule: p.Source, Partition: j.Partition})
	}
	if err := fx.Store.RecordPredictions(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
}

// decisions replays the jobs through the simulator and logs what serve
// would have: per cycle, the jobs whose site factor changed. firstOnly
// logs only each job's first decision (the benchmark's volume control).
func (fx *fixture) decisions(t testing.TB, pol, pred string, cl sim.Cluster, firstOnly bool) {
	t.Helper()
	p, err := policy.New(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := predict.New(pred, predict.Params{})
	if err != nil {
		t.Fatal(err)
	}
	var ds []accounting.Decision
	prev := map[int64]int64{}
	var cycle int64
	var assignErr error
	record := func(o *policy.Observation, s *policy.Snapshot, ranking []policy.Score) {
		cycle++
		values, err := policy.Assign(ranking, prev, policy.SiteFactorRange())
		if err != nil {
			assignErr = err
			return
		}
		next := make(map[int64]int64, len(ranking))
		for i, sc := range ranking {
			next[sc.JobID] = values[i]
			old, seen := prev[sc.JobID]
			if seen && old == values[i] {
				continue
			}
			if firstOnly && seen {
				continue
			}
			d := accounting.Decision{Cluster: fx.Cluster, At: o.Now, Cycle: cycle, JobID: sc.JobID, Policy: pol, Rank: i + 1,
				Score: sc.Value, Parts: sc.Parts.Map(), Predicted: s.Predicted[sc.JobID], Predictor: pred, Field: "site_factor", Value: values[i]}
			if seen {
				d.Previous = &old
			}
			ds = append(ds, d)
		}
		prev = next
	}
	if _, err := sim.Run(fx.Jobs, sim.Config{Cluster: cl, Policy: p, Predictor: pr, OnCycle: record}); err != nil {
		t.Fatalf("replay decisions: %v", err)
	}
	if assignErr != nil {
		t.Fatal(assignErr)
	}
	for len(ds) > 0 {
		n := min(len(ds), 20000)
		if _, err := fx.Store.RecordDecisions(context.Background(), ds[:n]); err != nil {
			t.Fatal(err)
		}
		ds = ds[n:]
	}
}

// gpuUsage writes seeded epilog records (see kthFixture): per job, one
// record per allocated unit up to perJob, each user with a typical
// utilization and every record some noise around it; one record in twenty
// has no utilization, one job in forty ran on shared GPUs.
func (fx *fixture) gpuUsage(t testing.TB, perJob int) {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(11, 29))
	typical := map[string]float64{}
	var us []accounting.GPUUsage
	for i := range fx.Jobs {
		j := &fx.Jobs[i]
		if j.Start.IsZero() || !j.End.After(j.Start) {
			continue
		}
		base, ok := typical[j.User]
		if !ok {
			base = 5 + 90*rng.Float64()
			typical[j.User] = base
		}
		units := max(j.GPUs, j.CPUs, 1)
		shards := 0
		if i%40 == 39 {
			shards = 2
		}
		for g := range min(units, perJob) {
			u := accounting.GPUUsage{Cluster: fx.Cluster, JobID: j.ID, Node: fmt.Sprintf("node%02d", j.ID%16), GPUMinor: g,
				Started: j.Start, Ended: j.End, UUID: fmt.Sprintf("GPU-%d-%d", j.ID%16, g), Model: "H100", Shards: shards}
			if rng.IntN(20) != 0 {
				v := min(100, max(0, base+20*(rng.Float64()-0.5)))
				u.UtilAvgPct = &v
				peak := min(100, v+10)
				u.UtilMaxPct = &peak
			}
			us = append(us, u)
		}
	}
	for len(us) > 0 {
		n := min(len(us), 10000) // fairway_record_gpu_usage takes at most 10,000 per call
		if _, err := fx.Store.RecordGPUUsage(context.Background(), us[:n]); err != nil {
			t.Fatal(err)
		}
		us = us[n:]
	}
}

// build loads month m of the fixture and builds its report.
func (fx *fixture) build(t testing.TB, m report.Month, opt report.Options) *report.Report {
	t.Helper()
	ctx := context.Background()
	src := report.NewSource(fx.Pool, fx.Store)
	cur, err := src.Load(ctx, fx.Cluster, m, true)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := src.Load(ctx, fx.Cluster, m.Prev(), false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build(cur, prev, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
