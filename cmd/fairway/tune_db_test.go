package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

func TestTune_FromDBBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.json")
	db := "postgres://x@127.0.0.1:1/x"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two sources", []string{"--from-db", "--database-url", db, "--trace", "t.swf"}, "--from-db and --trace: give one source"},
		{"no database", []string{"--from-db", "--database-url", ""}, "--from-db: no database: set --database-url or FAIRWAY_DATABASE_URL"},
		{"format without trace", []string{"--from-db", "--database-url", db, "--format", "swf"}, "--format: only with --trace"},
		{"two starts", []string{"--from-db", "--database-url", db, "--days", "3", "--months", "1"}, "--since, --days, --months: give at most one"},
		{"bad since", []string{"--from-db", "--database-url", db, "--since", "yesterday"}, `--since "yesterday": want RFC 3339`},
		{"bad until", []string{"--from-db", "--database-url", db, "--until", "soon"}, `--until "soon": want RFC 3339`},
		{"zero days", []string{"--from-db", "--database-url", db, "--days", "0"}, "--days 0: want at least 1"},
		{"empty period", []string{"--from-db", "--database-url", db, "--since", "2026-02-01", "--until", "2026-01-01"}, "an empty period"},
		{"bad unit", []string{"--from-db", "--database-url", db, "--unit", "tpu"}, `--unit "tpu": want gpu or cpu`},
		{"days without from-db", []string{"--trace", "t.swf", "--days", "3"}, "--days: only with --from-db"},
		{"no source", nil, "--trace: required (the history to tune on), or --from-db"},
		{"no server", []string{"--from-db", "--database-url", db}, "127.0.0.1:1"},
		{"bad partitions", []string{"--from-db", "--database-url", db, "--partitions", "gpu:nodes=1,per-node=x"}, `--partitions: partition entry 1 "gpu:nodes=1,per-node=x": per-node=x`},
		{"no partitions file", []string{"--from-db", "--database-url", db, "--partitions", "/nonexistent/parts"}, `--partitions "/nonexistent/parts": no such file`},
		{"partitions and nodes", []string{"--from-db", "--database-url", db, "--partitions", "gpu:nodes=1,per-node=4", "--nodes", "2"}, "--partitions: not with --nodes or --per-node"},
		{"partitions slurmrestd without url", []string{"--from-db", "--database-url", db, "--partitions", "slurmrestd"}, "--partitions slurmrestd: --slurm-url (FAIRWAY_SLURM_URL) is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_SLURM_URL", "")
			args := append([]string{"tune", "--out", out, "--progress", "never"}, tc.args...)
			got, err := runApp(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, got)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused run wrote %s", out)
			}
		})
	}
}

func TestHistoryCluster(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(gpus, cpus, nodes int, start, end int) policy.Job {
		return policy.Job{GPUs: gpus, CPUs: cpus, Nodes: nodes, Submit: t0,
			Start: t0.Add(time.Duration(start) * time.Hour), End: t0.Add(time.Duration(end) * time.Hour)}
	}
	gpuJobs := []policy.Job{
		job(8, 16, 2, 0, 2),              // 4 a node, 2 nodes
		job(4, 8, 1, 1, 3),               // with the first: 12 at once, so 3 nodes of 4
		job(2, 4, 1, 3, 4),               // starts as the second ends: never 14 at once
		job(0, 4, 1, 0, 9),               // no GPU: not counted on a GPU machine
		{GPUs: 16, Nodes: 1, Submit: t0}, // never ran: not counted
	}
	for _, tc := range []struct {
		name           string
		jobs           []policy.Job
		unit           sim.Unit
		nodes, perNode int
		want           sim.Cluster
		err            string
	}{
		{"gpus from the history", gpuJobs, "", 0, 0, sim.Cluster{Nodes: 3, PerNode: 4, Unit: sim.GPUs}, ""},
		{"flags win", gpuJobs, "", 10, 8, sim.Cluster{Nodes: 10, PerNode: 8, Unit: sim.GPUs}, ""},
		{"per node given", gpuJobs, "", 0, 8, sim.Cluster{Nodes: 2, PerNode: 8, Unit: sim.GPUs}, ""},
		{"cpus asked for", gpuJobs, sim.CPUs, 0, 0, sim.Cluster{Nodes: 4, PerNode: 8, Unit: sim.CPUs}, ""},
		{"no GPU job: processors", []policy.Job{job(0, 32, 1, 0, 1)}, "", 0, 0, sim.Cluster{Nodes: 1, PerNode: 32, Unit: sim.CPUs}, ""},
		{"nothing ran", []policy.Job{{CPUs: 4, Submit: t0}}, "", 0, 0, sim.Cluster{}, "no job of the history ran with cpus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := report.HistoryCluster(tc.jobs, tc.unit, tc.nodes, tc.perNode)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("historyCluster = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestTune_FromDB tunes on a cluster's history stored through the ingest
// path (the KTH trace as cluster "kth"): the file records the cluster, the
// period and the jobs, and the time split is the first 70% of the submits
// for training, the last 30% for validation. Errors name what the
// database holds.
func TestTune_FromDB(t *testing.T) {
	e := lab.Get(t)
	url := e.Database(t)
	tracePath := shareddata.Trace(t, "KTH-SP2-filtered.swf.gz")
	if out, err := runApp(t, "ingest", "--database-url", url, "--from", "swf", "--cluster", "kth", tracePath); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "kth.json")
	text, err := runApp(t, "tune", "--from-db", "--database-url", url, "--cluster", "kth", "--since", "1996-10-01", "--until", "1996-12-01",
		"--out", out, "--predictor", "none", "--generations", "1", "--population", "4", "--parallel", "2", "--progress", "never")
	t.Logf("tune --from-db:\n%s", text)
	if err != nil {
		t.Fatal(err)
	}
	f := readPolicyFile(t, out)
	tr := f.TrainedOn
	if !strings.HasPrefix(tr.Cluster, "kth: ") || tr.Source != "accounting database, jobs that ended between 1996-10-01 and 1996-12-01" ||
		tr.Jobs < 1000 || tr.From.Before(time.Date(1996, 9, 1, 0, 0, 0, 0, time.UTC)) || tr.To.After(time.Date(1996, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("trained_on %+v: want cluster kth, the period asked for and its jobs", tr)
	}
	// All of the period is looked at: 70% trains, the last 30% validates.
	want := fmt.Sprintf("looked at the first %d of %d jobs (none held out)", tr.Jobs, tr.Jobs)
	if !strings.Contains(f.Tuning.Windows, want) || !strings.Contains(text, "history: ") {
		t.Errorf("windows %q, want them to say %q", f.Tuning.Windows, want)
	}
	if len(f.Validation) == 0 {
		t.Errorf("no validation table in the file")
	}
	if strings.Contains(text, "next: judge it") {
		t.Errorf("nothing was held out, yet the output says how to judge it:\n%s", text)
	}

	empty := e.Database(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty database", []string{"--database-url", empty, "--cluster", "kth"}, "no jobs for cluster kth; the database holds no finished jobs (fairway ingest, or fairway serve, fills it)"},
		{"unknown cluster", []string{"--cluster", "nosuch"}, "no jobs for cluster nosuch; clusters in the database: kth (28481 jobs ending 1996-09-30 to 1997-08-29)"},
		{"empty period", []string{"--cluster", "kth", "--since", "2020-01-01"}, "no finished job of cluster kth ended since 2020-01-01; the database holds kth (28481 jobs"},
		{"too few", []string{"--cluster", "kth", "--since", "1996-10-01", "--until", "1996-10-01T06:00:00Z"}, "too few to split into training and validation windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.json")
			args := append([]string{"tune", "--from-db", "--database-url", url, "--out", bad, "--progress", "never", "--predictor", "none"}, tc.args...)
			got, err := runApp(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, got)
			}
			if _, err := os.Stat(bad); err == nil {
				t.Errorf("a refused run wrote %s", bad)
			}
		})
	}
}

// TestTune_FromDBPartitions tunes on a (fake) database history replayed
// on the cluster's partitions: the replay is simulate --from-db's (jobs
// routed by their recorded partition and GPU type), and the summary and
// the file say which partitions it ran on; the job of a GPU type no node
// has is named, as simulate names it.
func TestTune_FromDBPartitions(t *testing.T) {
	fakeHistory(t, dbJobs())
	out := filepath.Join(t.TempDir(), "alps.json")
	const layout = "gpu:nodes=1,per-node=4,type=h100;gpu:nodes=1,per-node=4,type=v100;debug:nodes=1,per-node=4"
	text, err := runApp(t, "tune", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--out", out,
		"--partitions", layout, "--predictor", "none", "--generations", "1", "--population", "4", "--parallel", "1", "--progress", "never")
	t.Logf("tune --from-db --partitions:\n%s", text)
	if err != nil {
		t.Fatal(err)
	}
	want := "history: 31 jobs of cluster alps from the accounting database, jobs that ended at any time; replayed on 3 nodes of gpus in partitions " + layout + " (--partitions), each job in its recorded partition and on its GPU type"
	warn := `warning: 1 jobs left out, no node of the cluster can run them: no a100 node in partition "gpu"`
	for _, w := range []string{want, warn} {
		if !strings.Contains(text, w) {
			t.Errorf("summary lacks %q", w)
		}
	}
	f := readPolicyFile(t, out)
	if want := "alps: 3 nodes of gpus in partitions " + layout; f.TrainedOn.Cluster != want {
		t.Errorf("trained_on cluster %q, want %q", f.TrainedOn.Cluster, want)
	}
}

// TestTune_FromDBLeftOut: the jobs of a database history the replay
// cannot run (one cancelled while pending, one whose end precedes its
// start after a clock step, one asking for no GPU) are counted in a
// `left out:` line, as simulate counts them, and the windows count only
// the jobs replayed: 31 of the 34, the last 10 of them held out.
func TestTune_FromDBLeftOut(t *testing.T) {
	jobs := dbJobs()
	t0 := jobs[0].Submit
	odd := func(id int64, f func(*policy.Job)) policy.Job {
		j := policy.Job{ID: id, ArrayTask: -1, User: "u1", Account: "lab", Partition: "gpu", GPUs: 1, CPUs: 4, Nodes: 1,
			Submit: t0.Add(time.Minute), Start: t0.Add(2 * time.Minute), End: t0.Add(time.Hour), TimeLimit: 2 * time.Hour, State: policy.StateCompleted}
		f(&j)
		return j
	}
	jobs = append(jobs,
		odd(2001, func(j *policy.Job) { j.Start, j.State = time.Time{}, policy.StateCancelled }),
		odd(2002, func(j *policy.Job) { j.End = j.Start.Add(-time.Second) }),
		odd(2003, func(j *policy.Job) { j.GPUs = 0 }))
	fakeHistory(t, jobs)
	out := filepath.Join(t.TempDir(), "alps.json")
	text, err := runApp(t, "tune", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--out", out, "--train", "0.7",
		"--predictor", "none", "--generations", "1", "--population", "4", "--parallel", "1", "--progress", "never")
	t.Logf("tune --from-db:\n%s", text)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nleft out: 1 asks for no units of the cluster's kind; 2 no run time\n",
		"looked at the first 21 of 31 jobs (the last 10 held out for the final evaluation)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}
