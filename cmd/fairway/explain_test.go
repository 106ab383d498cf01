package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// Fakes for every adapter serve and explain touch; each counts its calls
// so a test can prove what was (not) written.

type countingSource struct{ cl *slurmctl.Cluster }

func (s *countingSource) Read(context.Context) (*slurmctl.Cluster, error) { return s.cl, nil }

type countingValues struct{ writes, primes int }

func (w *countingValues) Write(context.Context, []slurmctl.Job, map[int64]int64) (slurmctl.Report, error) {
	w.writes++
	return slurmctl.Report{}, nil
}
func (w *countingValues) Prime(context.Context) (int, error) { w.primes++; return 0, nil }

type countingResizer struct {
	comments map[int64]string
	resizes  int
}

func (r *countingResizer) Resize(context.Context, []slurmctl.Job, []slurmctl.Resize) (slurmctl.ResizeReport, error) {
	r.resizes++
	return slurmctl.ResizeReport{}, nil
}
func (r *countingResizer) Comments(context.Context) (map[int64]string, error) { return r.comments, nil }

// Limits answers with the lab's real sacctmgr and scontrol output of a
// cluster without limits (slurmctl/testdata/sacctmgr-22.05.8/nolimits).
func (r *countingResizer) Limits(context.Context) (*slurmctl.Limits, error) {
	var b [3][]byte
	for i, name := range []string{"associations.txt", "qos.txt", "partitions.txt"} {
		var err error
		if b[i], err = os.ReadFile(filepath.Join("..", "..", "slurmctl", "testdata", "sacctmgr-22.05.8", "nolimits", name)); err != nil {
			return nil, err
		}
	}
	return slurmctl.NewLimits(b[0], b[1], b[2])
}

type countingStore struct {
	samples   []rewrite.UsageSample
	decisions int
	cycles    int
	finished  int
	preds     int
	// history is what FinishedJobs returns, whatever the window.
	history []policy.Job
}

func (s *countingStore) RecordFinished(_ context.Context, _ string, jobs []policy.Job) (accounting.Summary, error) {
	s.finished += len(jobs)
	return accounting.Summary{}, nil
}
func (s *countingStore) RecordDecisions(_ context.Context, ds []accounting.Decision) (int, error) {
	s.decisions += len(ds)
	return len(ds), nil
}
func (s *countingStore) RecordCycle(context.Context, accounting.Cycle) error { s.cycles++; return nil }
func (s *countingStore) RecordPredictions(_ context.Context, ps []accounting.Prediction) error {
	s.preds += len(ps)
	return nil
}
func (s *countingStore) LoadShares(context.Context, string) (*accounting.ShareTree, error) {
	return nil, nil
}
func (s *countingStore) FinishedJobs(context.Context, string, time.Time, time.Time) ([]policy.Job, error) {
	return s.history, nil
}
func (s *countingStore) UsageSamples(context.Context, string, time.Time) ([]rewrite.UsageSample, error) {
	return s.samples, nil
}

// rewriteDeps is a cluster on which every rewrite rule has work: alice's
// `light` runs used little of their GPU (share rule), job 1 asks for fewer
// CPUs than its GPU share (cpus and memory rules), job 5 is elastic.
func rewriteDeps() (serveDeps, *countingValues, *countingResizer, *countingStore) {
	node := func(name string) slurmctl.Node {
		return slurmctl.Node{Name: name, State: []string{"IDLE"}, Partitions: []string{"gpu"}, CPUs: 8, MemoryMB: 16000, GPUs: 4, Shards: 16}
	}
	pending := func(id int64, user, name string, gpus, cpus int) slurmctl.Job {
		account := map[string]string{"alice": "physics", "bob": "physics", "carol": "chem"}[user] // the lab's associations
		return slurmctl.Job{Job: policy.Job{Cluster: "fairwaylab", ID: id, ArrayTask: -1, User: user, Account: account, QOS: "normal", Name: name, Partition: "gpu",
			GPUs: gpus, CPUs: cpus, MemoryMB: 1000, Nodes: 1, State: policy.StatePending, TimeLimit: time.Hour,
			Submit: time.Now().Add(-time.Duration(id) * time.Minute)}, TaskCount: 1}
	}
	cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1"), node("gpu2")},
		Jobs: []slurmctl.Job{pending(1, "alice", "light", 1, 1), pending(2, "bob", "heavy", 1, 1), pending(5, "carol", "el", 2, 2)}}
	var samples []rewrite.UsageSample
	for i := range 4 {
		samples = append(samples, rewrite.UsageSample{JobID: int64(100 + i), User: "alice", Name: "light", End: time.Now().Add(-time.Hour),
			State: policy.StateCompleted, GPUs: 1, CPUs: 2, Run: time.Hour, GPUUtilPct: 12, GPUMemPeakMB: 4000, GPUMemTotalMB: 81920,
			CPUsUsed: 1.5, MemUsedMB: 3000})
	}
	values, resizer, store := &countingValues{}, &countingResizer{comments: map[int64]string{5: "fairway:elastic=1-8"}}, &countingStore{samples: samples}
	return serveDeps{Source: &countingSource{cl}, Values: values, Resizes: resizer, Comments: resizer, Store: store, Leader: serve.AlwaysLeader{}},
		values, resizer, store
}

// everyRewriteFlag sets every rewriting flag serve and explain accept.
func everyRewriteFlag(table string) []string {
	return []string{"serve", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y", "--no-ha",
		"--rewrite-partitions", "gpu", "--rewrite-rules", "share,cpus,memory,elastic", "--rewrite-table", table,
		"--rewrite-table-max-age", "20m", "--rewrite-history-days", "30", "--rewrite-refresh-every", "1",
		"--rewrite-cpus-per-gpu", "2", "--rewrite-mem-per-gpu", "4000", "--rewrite-share-max-util", "50",
		"--rewrite-min-history", "3", "--rewrite-sacct=false"}
}

// TestExplain_WritesNothingWithEveryRewriteFlag: explain ranks through the
// same runner as serve, with every rewrite rule on, and makes no call to
// the Slurm writers, writes no table file and records nothing.
func TestExplain_WritesNothingWithEveryRewriteFlag(t *testing.T) {
	table := filepath.Join(t.TempDir(), "fairway-rewrite.table")
	cfg, err := settingsFromArgs(t, everyRewriteFlag(table))
	if err != nil {
		t.Fatal(err)
	}
	d, values, resizer, store := rewriteDeps()
	ex, err := explainJob(context.Background(), cfg, d, 2, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if ex.JobID != 2 || ex.Of != 3 {
		t.Fatalf("explanation of job %d of %d, want job 2 of 3", ex.JobID, ex.Of)
	}
	if values.writes+values.primes+resizer.resizes != 0 {
		t.Errorf("explain called Slurm: %d value writes, %d primes, %d resizes", values.writes, values.primes, resizer.resizes)
	}
	if _, err := os.Stat(table); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("explain wrote the table %s (stat: %v)", table, err)
	}
	if store.decisions+store.cycles+store.finished+store.preds != 0 {
		t.Errorf("explain recorded %d decisions, %d cycles, %d finished, %d predictions; want none",
			store.decisions, store.cycles, store.finished, store.preds)
	}
}

// TestServeDryRun_WritesNothingWithEveryRewriteFlag: serve --dry-run plans
// the values, the table and the resizes (so the test is not vacuous) and
// writes none of them; the shadow decision log still reaches the database.
func TestServeDryRun_WritesNothingWithEveryRewriteFlag(t *testing.T) {
	table := filepath.Join(t.TempDir(), "fairway-rewrite.table")
	cfg, err := settingsFromArgs(t, append(everyRewriteFlag(table), "--dry-run"))
	if err != nil {
		t.Fatal(err)
	}
	d, values, resizer, store := rewriteDeps()
	r, err := newServeRunner(context.Background(), cfg, d, serve.Parts{Sink: newSink(cfg, d)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := r.RunCycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Record.Planned || res.Rewrite == nil {
			t.Fatalf("dry run recorded as writing: cycle %+v, rewrite %+v", res.Record, res.Rewrite)
		}
		if len(res.Rewrite.Rules) == 0 || len(res.Rewrite.Resize.Planned) == 0 {
			t.Fatalf("nothing to rewrite (%d share rules, %d resizes planned): the test proves nothing", len(res.Rewrite.Rules), len(res.Rewrite.Resize.Planned))
		}
	}
	if values.writes+values.primes+resizer.resizes != 0 {
		t.Errorf("dry run called Slurm: %d value writes, %d primes, %d resizes", values.writes, values.primes, resizer.resizes)
	}
	if _, err := os.Stat(table); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run wrote the table %s (stat: %v)", table, err)
	}
	if store.decisions == 0 || store.cycles != 2 {
		t.Errorf("dry run recorded %d decisions, %d cycles; want the shadow log (>0, 2)", store.decisions, store.cycles)
	}

	// The same settings without --dry-run do write: the fakes see it.
	cfg.Planned = false
	d, values, resizer, _ = rewriteDeps()
	r, err = newServeRunner(context.Background(), cfg, d, serve.Parts{Sink: newSink(cfg, d)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunCycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if values.writes == 0 || resizer.resizes == 0 {
		t.Errorf("serve without --dry-run: %d value writes, %d resizes; want both", values.writes, resizer.resizes)
	}
	if _, err := os.Stat(table); err != nil {
		t.Errorf("serve without --dry-run wrote no table: %v", err)
	}
}

// historyStore is a countingStore whose history is what was recorded, as
// the accounting database's is.
type historyStore struct {
	countingStore
	jobs []policy.Job
}

func (s *historyStore) RecordFinished(_ context.Context, _ string, jobs []policy.Job) (accounting.Summary, error) {
	s.finished += len(jobs)
	s.jobs = append(s.jobs, jobs...)
	return accounting.Summary{}, nil
}

func (s *historyStore) FinishedJobs(_ context.Context, _ string, since, until time.Time) ([]policy.Job, error) {
	var out []policy.Job
	for _, j := range s.jobs {
		if !j.End.Before(since) && j.End.Before(until) {
			out = append(out, j)
		}
	}
	return out, nil
}

// TestServeAndExplain_RankFromTheSameHistory: `serve --dry-run --once`
// then `explain` on the same cluster, database and clock give every job
// the same score. Slurm still lists finished jobs the database lacks;
// serve's first cycle stores them. serve warmed up from the database
// alone (0 jobs) and explain, just after, from the 9 serve had stored, so
// the two disagreed on the same job's score.
func TestServeAndExplain_RankFromTheSameHistory(t *testing.T) {
	now := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	node := func(name string) slurmctl.Node {
		return slurmctl.Node{Name: name, State: []string{"MIXED"}, Partitions: []string{"gpu"}, CPUs: 8, MemoryMB: 16000, GPUs: 4}
	}
	job := func(id int64, user, name string, gpus int, st policy.State) slurmctl.Job {
		return slurmctl.Job{Job: policy.Job{ID: id, ArrayTask: -1, User: user, Account: "physics", Name: name, Partition: "gpu",
			GPUs: gpus, CPUs: 1, Nodes: 1, State: st, TimeLimit: time.Hour, Submit: now.Add(-2 * time.Hour)}, TaskCount: 1}
	}
	cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{node("gpu1"), node("gpu2")}}
	for i := range 9 { // alice's finished runs: 10 minutes on 4 GPUs each
		j := job(int64(100+i), "alice", "train", 4, policy.StateCompleted)
		j.Start = now.Add(-time.Duration(90-5*i) * time.Minute)
		j.End = j.Start.Add(10 * time.Minute)
		cl.Jobs = append(cl.Jobs, j)
	}
	run := job(120, "carol", "sim", 4, policy.StateRunning)
	run.Start = now.Add(-5 * time.Minute)
	cl.Jobs = append(cl.Jobs, run, job(131, "alice", "train", 4, policy.StatePending), job(132, "bob", "train", 1, policy.StatePending),
		job(133, "bob", "eval", 2, policy.StatePending))
	store := &historyStore{}
	d := serveDeps{Source: &countingSource{cl}, Values: &countingValues{}, Resizes: &countingResizer{}, Comments: &countingResizer{},
		Store: store, Leader: serve.AlwaysLeader{}, Now: clock}
	cfg, err := settingsFromArgs(t, []string{"serve", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y", "--no-ha", "--dry-run"})
	if err != nil {
		t.Fatal(err)
	}

	served := runCycle(t, cfg, d)
	if len(store.jobs) != 9 {
		t.Fatalf("serve's cycle stored %d finished jobs, want the 9 Slurm lists (else the test proves nothing)", len(store.jobs))
	}
	explained, err := planCycle(context.Background(), cfg, d, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(served.Ranked, explained.Ranked); diff != "" {
		t.Errorf("serve and explain rank the same queue differently (-serve +explain):\n%s", diff)
	}
	ex, err := serve.Explain(explained, 131)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range served.Ranked {
		if sc.JobID == 131 && sc.Value != ex.Score {
			t.Errorf("job 131: serve's score %g, explain's %g", sc.Value, ex.Score)
		}
	}
}

func (s *countingStore) FinishedJob(context.Context, string, int64) (*policy.Job, error) {
	return nil, nil
}

func (s *historyStore) FinishedJob(_ context.Context, _ string, id int64) (*policy.Job, error) {
	for i := range s.jobs {
		if s.jobs[i].ID == id {
			return &s.jobs[i], nil
		}
	}
	return nil, nil
}

// TestExplain_NotQueuedSaysWhy: a job that is not ranked gets the reason:
// running, finished (as Slurm lists it, or as the history has it once
// Slurm forgot it), held, left out by partition, or unknown. All of them
// got the same "not among the pending jobs Fairway ranks (finished,
// running, held, ...?)".
func TestExplain_NotQueuedSaysWhy(t *testing.T) {
	t.Setenv("TZ", "UTC")
	now := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	job := func(id int64, part string, st policy.State) slurmctl.Job {
		return slurmctl.Job{Job: policy.Job{ID: id, ArrayTask: -1, User: "bob", Account: "physics", Name: "x", Partition: part,
			GPUs: 1, CPUs: 1, Nodes: 1, State: st, TimeLimit: time.Hour, Submit: now.Add(-2 * time.Hour)}, TaskCount: 1}
	}
	running, done, held := job(120, "gpu", policy.StateRunning), job(100, "gpu", policy.StateCompleted), job(140, "gpu", policy.StatePending)
	running.Start = now.Add(-5 * time.Minute)
	done.Start, done.End = now.Add(-time.Hour), now.Add(-30*time.Minute)
	held.Held = true
	cl := &slurmctl.Cluster{Nodes: []slurmctl.Node{{Name: "gpu1", State: []string{"MIXED"}, Partitions: []string{"gpu", "debug"}, CPUs: 8, GPUs: 4}},
		Jobs: []slurmctl.Job{running, done, held, job(141, "debug", policy.StatePending), job(142, "gpu", policy.StatePending)}}
	forgotten := job(50, "gpu", policy.StateFailed).Job
	forgotten.Start, forgotten.End = now.Add(-48*time.Hour), now.Add(-47*time.Hour)
	store := &historyStore{jobs: []policy.Job{forgotten}}
	d := serveDeps{Source: &countingSource{cl}, Values: &countingValues{}, Resizes: &countingResizer{}, Comments: &countingResizer{},
		Store: store, Leader: serve.AlwaysLeader{}}
	cfg, err := settingsFromArgs(t, []string{"explain", "--cluster", "c", "--slurm-url", "http://x", "--database-url", "postgres://x/y",
		"--exclude-partitions", "debug", "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{120, "job 120 is not in the queue: it is running, since 2026-11-25T22:55:00Z"},
		{100, "job 100 is not in the queue: it finished at 2026-11-25T22:30:00Z (COMPLETED)"},
		{50, "job 50 is not in the queue: it finished at 2026-11-24T00:00:00Z (FAILED), per Fairway's job history"},
		{140, "job 140 is held: Fairway ranks it once it is released (scontrol release 140)"},
		{141, "job 141 is pending in partition debug, but Fairway does not rank it: --partitions, --exclude-partitions or --exempt-qos leave it out"},
		{999, "job 999 is not known to Slurm: no job with that id is queued, running or recently finished"},
	} {
		_, err := explainJob(context.Background(), cfg, d, tc.id, quietLogger())
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("explain %d: %v\nwant it to start with %q", tc.id, err, tc.want)
		}
	}
	if ex, err := explainJob(context.Background(), cfg, d, 142, quietLogger()); err != nil || ex.JobID != 142 {
		t.Errorf("explain 142 (pending, ranked): %v", err)
	}
}

func TestWriteNodeActions(t *testing.T) {
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.Local)
	acts := []accounting.PowerAction{
		{At: at, Cycle: 4, Node: "gpu2", Action: "power-down", Reason: "idle above need: keep 1 powered", Parts: map[string]float64{"target": 1, "busy": 1}},
		{At: at.Add(time.Minute), Cycle: 6, Node: "gpu2", Action: "power-up", Reason: "jobs waiting for nodes need 1, 0 idle powered", Error: "Invalid node state specified"},
		{At: at.Add(2 * time.Minute), Cycle: 8, Node: "gpu2", Action: "power-down", Reason: "idle above need", Planned: true, Parts: map[string]float64{"target": 2}},
	}
	var b strings.Builder
	if err := writeNodeActions(&b, "lab", "gpu2", acts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node gpu2 of lab: 3 power actions", "idle above need: keep 1 powered",
		"refused: Invalid node state specified", "dry run", "the latest decision was made from: target=2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := writeNodeActions(&b, "lab", "gpu9", nil); err != nil || !strings.Contains(b.String(), "no power action") {
		t.Errorf("no actions: %q, %v", b.String(), err)
	}
}
