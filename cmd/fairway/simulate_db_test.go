package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// fakeHistory puts a database-less history in finishedHistory's (and
// ranHistory's) place for the test: it records the period asked for and answers jobs, which ran
// in partitions gpu (H100 and V100 nodes) and debug.
func fakeHistory(t *testing.T, jobs []policy.Job) *[2]time.Time {
	t.Helper()
	var asked [2]time.Time
	oldFinished, oldRan := finishedHistory, ranHistory
	finishedHistory = func(_ context.Context, url, cluster string, since, until time.Time) ([]policy.Job, string, error) {
		if url != "postgres://fake" || cluster != "alps" {
			return nil, "", fmt.Errorf("asked for %s at %s", cluster, url)
		}
		asked = [2]time.Time{since, until}
		return append([]policy.Job(nil), jobs...), cluster, nil
	}
	ranHistory = finishedHistory
	t.Cleanup(func() { finishedHistory, ranHistory = oldFinished, oldRan })
	return &asked
}

func dbJobs() []policy.Job {
	t0 := time.Date(2026, 10, 3, 8, 0, 0, 0, time.UTC)
	var jobs []policy.Job
	for i := range 30 {
		part, typ := "gpu", "h100"
		switch i % 3 {
		case 1:
			typ = "v100"
		case 2:
			part, typ = "debug", ""
		}
		sub := t0.Add(time.Duration(i) * 5 * time.Minute)
		jobs = append(jobs, policy.Job{ID: int64(100 + i), ArrayTask: -1, User: fmt.Sprintf("u%d", i%4), Account: "lab",
			Partition: part, GPUType: typ, GPUs: 1 + i%4, CPUs: 4, Nodes: 1, Submit: sub, Start: sub.Add(time.Minute),
			End: sub.Add(time.Duration(20+i) * time.Minute), TimeLimit: 2 * time.Hour, State: policy.StateCompleted})
	}
	jobs = append(jobs, policy.Job{ID: 999, ArrayTask: -1, User: "u9", Account: "lab", Partition: "gpu", GPUType: "a100", GPUs: 1,
		Submit: t0, Start: t0, End: t0.Add(time.Hour), State: policy.StateCompleted})
	return jobs
}

// TestSimulate_FromDB replays a month of a (fake) accounting database on
// the cluster's partitions: the month becomes the period read, the jobs
// keep their partitions and GPU types, and a job of a type no node has
// is named in a warning.
func TestSimulate_FromDB(t *testing.T) {
	asked := fakeHistory(t, dbJobs())
	out, err := runApp(t, "simulate", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--month", "2026-10",
		"--policies", "fifo,fairshare", "--parallel", "1", "--progress", "never",
		"--partitions", "gpu:nodes=1,per-node=4,type=h100;gpu:nodes=1,per-node=4,type=v100;debug:nodes=1,per-node=4")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantPeriod := [2]time.Time{time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	if *asked != wantPeriod {
		t.Errorf("period read %v, want %v", *asked, wantPeriod)
	}
	for _, want := range []string{
		"alps, jobs that ended between 2026-10-01 and 2026-11-01 (accounting database): 30 jobs on 3 nodes of gpus in partitions gpu:nodes=1,per-node=4,type=h100;gpu:nodes=1,per-node=4,type=v100;debug:nodes=1,per-node=4",
		`warning: 1 jobs left out, no node of the cluster can run them: no a100 node in partition "gpu"`,
		" fifo ", " fairshare ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without --partitions the machine is sized from the history, one pool.
	out, err = runApp(t, "simulate", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps",
		"--since", "2026-10-01", "--policies", "fifo", "--parallel", "1", "--progress", "never")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "alps, jobs that ended since 2026-10-01 (accounting database): 31 jobs on ") {
		t.Errorf("one pool: output\n%s", out)
	}
}

func TestSimulate_FromDBBad(t *testing.T) {
	fakeHistory(t, dbJobs())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--month", "2026-13"}, `--month "2026-13": want YYYY-MM`},
		{[]string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--month", "2026-10", "--since", "2026-10-02"}, "--month: not with --since"},
		{[]string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--power"}, "--from-db: not with --power"},
		{[]string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--trace", "x.swf"}, "--from-db and --trace"},
		{[]string{"--from-db", "--database-url", "postgres://fake", "--cluster", "other"}, "--from-db: asked for other"},
		{[]string{"--month", "2026-10"}, "--month: only with --from-db"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := runApp(t, append([]string{"simulate", "--parallel", "1", "--progress", "never", "--policies", "fifo"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestFromDB_CutWarning: a history job without a time limit that ran
// longer than the 7 days a replay gives such jobs is cut there; simulate
// and tune say so, and say nothing when no job is.
func TestFromDB_CutWarning(t *testing.T) {
	const warn = "warning: 1 jobs without a time limit ran longer than 7 days; the replay cuts them there (as timeouts), where Slurm let them run"
	long := dbJobs()
	t0 := long[0].Submit
	long = append(long, policy.Job{ID: 998, ArrayTask: -1, User: "u1", Account: "lab", Partition: "debug", GPUs: 1, CPUs: 4, Nodes: 1,
		Submit: t0, Start: t0, End: t0.Add(8 * 24 * time.Hour), State: policy.StateCompleted})
	for _, tc := range []struct {
		name string
		jobs []policy.Job
		warn bool
	}{{"every job within 7 days", dbJobs(), false}, {"one of 8 days without a limit", long, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fakeHistory(t, tc.jobs)
			db := []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--predictor", "none", "--parallel", "1", "--progress", "never"}
			sim, err := runApp(t, append([]string{"simulate", "--policies", "fifo"}, db...)...)
			if err != nil {
				t.Fatalf("simulate: %v\n%s", err, sim)
			}
			tuned, err := runApp(t, append([]string{"tune", "--out", filepath.Join(t.TempDir(), "p.json"), "--generations", "1", "--population", "4"}, db...)...)
			if err != nil {
				t.Fatalf("tune: %v\n%s", err, tuned)
			}
			for cmd, out := range map[string]string{"simulate": sim, "tune": tuned} {
				if strings.Contains(out, warn) != tc.warn {
					t.Errorf("%s: the warning %q shown = %v, want %v; output:\n%s", cmd, warn, !tc.warn, tc.warn, out)
				}
			}
		})
	}
}

// TestSimulate_FromDBSplit tunes on the first 70% of a (fake) database
// history and judges the file on the 30% it held out with simulate
// --from-db --split: the replay is of exactly the held-out jobs, and its
// last line is the time split's verdict for the file's row.
func TestSimulate_FromDBSplit(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 2, Load: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	fakeHistory(t, jobs)
	db := []string{"--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--nodes", "8", "--per-node", "8",
		"--predictor", "none", "--parallel", "2", "--progress", "never"}
	file := filepath.Join(t.TempDir(), "p.json")
	text, err := runApp(t, append([]string{"tune", "--train", "0.7", "--out", file, "--generations", "1"}, db...)...)
	if err != nil {
		t.Fatalf("tune: %v\n%s", err, text)
	}
	const held = "the last 450 held out for the final evaluation"
	if !strings.Contains(text, held) {
		t.Fatalf("tune output lacks %q:\n%s", held, text)
	}
	out, err := runApp(t, append([]string{"simulate", "--split", "0.7", "--policy-file", file, "--policies", "fifo"}, db...)...)
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	t.Logf("simulate --from-db --split:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, want := range []string{"alps, jobs that ended", "time split at 0.7: replays the last 450 jobs", " fairshare ", " tuned "} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate output lacks %q:\n%s", want, out)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "criterion for tuned: ") {
		t.Errorf("last line %q, want the time split's verdict for tuned", last)
	}
	// RLScheduler's sequences read the database the same way, and judge
	// the file's row against F1 and SJF by limit.
	out, err = runApp(t, append([]string{"simulate", "--sequences", "2", "--length", "200", "--policies", "f1,sjf-limit", "--policy-file", file}, db...)...)
	if err != nil {
		t.Fatalf("simulate --sequences: %v\n%s", err, out)
	}
	if want := "RLScheduler's protocol: 2 sequences × 200 jobs, seed 1, drawn from submits [0, 1) (jobs 0–1499)"; !strings.Contains(out, want) {
		t.Errorf("simulate --sequences output lacks %q:\n%s", want, out)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "RLScheduler's criterion for tuned: ") || !strings.Contains(last, " against f1 ") {
		t.Errorf("last line %q, want RLScheduler's criterion for tuned", last)
	}
}

// TestSimulate_FromDBSplitUnroutable: under --split, as in the plain
// comparison, a history job that no node of the --partitions layout can
// run (an a100 job where the layout has none) is counted as left out and
// named in a warning, not replayed silently by no policy.
func TestSimulate_FromDBSplitUnroutable(t *testing.T) {
	jobs := dbJobs()
	// The a100 job is submitted last, so that it falls in the replayed part.
	last := jobs[len(jobs)-2].Submit
	jobs[len(jobs)-1].Submit, jobs[len(jobs)-1].Start, jobs[len(jobs)-1].End = last.Add(time.Minute), last.Add(2*time.Minute), last.Add(time.Hour)
	fakeHistory(t, jobs)
	out, err := runApp(t, "simulate", "--from-db", "--database-url", "postgres://fake", "--cluster", "alps", "--split", "0.5",
		"--policies", "fifo,fairshare", "--parallel", "1", "--progress", "never", "--predictor", "none",
		"--partitions", "gpu:nodes=1,per-node=4,type=h100;gpu:nodes=1,per-node=4,type=v100;debug:nodes=1,per-node=4")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		`left out: 1 no a100 node in partition "gpu"`,
		`warning: 1 jobs left out, no node of the cluster can run them: no a100 node in partition "gpu"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestTune_NextLineFromDB: the line tune --from-db --train 0.7 ends with
// names the period it read as simulate takes it (--days resolved into
// --since, the open end closed at the instant the history was read, as
// simulate has no --days), and the predictor it tuned with; simulate
// run with those flags replays exactly the jobs held out.
func TestTune_NextLineFromDB(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 2, Load: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	asked := fakeHistory(t, jobs)
	machine := []string{"--database-url", "postgres://fake", "--cluster", "alps", "--nodes", "8", "--per-node", "8", "--parallel", "2", "--progress", "never"}
	file := filepath.Join(t.TempDir(), "p.json")
	text, err := runApp(t, append([]string{"tune", "--from-db", "--days", "30", "--train", "0.7", "--predictor", "none", "--out", file, "--generations", "1"}, machine...)...)
	if err != nil {
		t.Fatalf("tune: %v\n%s", err, text)
	}
	read := *asked
	_, line, ok := strings.Cut(text, "next: judge it on the 450 jobs held out: fairway simulate ")
	if !ok {
		t.Fatalf("tune output lacks the next line:\n%s", text)
	}
	line, _, _ = strings.Cut(line, "\n")
	flags, rest, ok := strings.Cut(line, " with this history's other flags, ")
	if !ok {
		t.Fatalf("next line %q: want the period's flags, then \"with this history's other flags, \"", line)
	}
	if strings.Contains(flags, "--days") || !strings.HasPrefix(flags, "--from-db --since "+read[0].UTC().Format(time.RFC3339Nano)+" --until ") {
		t.Errorf("next line %q: want --from-db --since %s --until the instant read", line, read[0].UTC().Format(time.RFC3339Nano))
	}
	if want := "--split 0.7 --predictor none --policy-file " + file; rest != want {
		t.Errorf("next line ends %q, want %q", rest, want)
	}
	args := append(append([]string{"simulate"}, strings.Fields(flags)...), machine...)
	args = append(args, strings.Fields(rest)...)
	out, err := runApp(t, append(args, "--policies", "fifo")...)
	if err != nil {
		t.Fatalf("simulate %v: %v\n%s", args, err, out)
	}
	if !asked[0].Equal(read[0]) || asked[1].IsZero() {
		t.Errorf("simulate read %v, tune %v: want the same start and an end", *asked, read)
	}
	if want := "time split at 0.7: replays the last 450 jobs"; !strings.Contains(out, want) {
		t.Errorf("simulate output lacks %q:\n%s", want, out)
	}
}
