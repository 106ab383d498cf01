package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/internal/texttest"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// appliedValues is a ValueWriter that Slurm takes every value from.
type appliedValues struct{}

func (appliedValues) Write(_ context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	var rep slurmctl.Report
	for _, j := range jobs {
		if v, ok := want[j.ID]; ok {
			rep.Planned = append(rep.Planned, slurmctl.Change{JobID: j.ID, Target: j.Target(), To: v})
		}
	}
	rep.Applied = rep.Planned
	return rep, nil
}

func (appliedValues) Prime(context.Context) (int, error) { return 0, nil }

// textJob is a pending one-GPU job of user submitted at t0+submit.
func textJob(id int64, user string, submit time.Duration) slurmctl.Job {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	return slurmctl.Job{Job: policy.Job{ID: id, ArrayTask: -1, User: user, Account: "acct-" + user, Partition: "gpu",
		Submit: t0.Add(submit), State: policy.StatePending, GPUs: 1, TimeLimit: time.Hour}}
}

// fifoCycle runs one fifo cycle on jobs, writing through Live or, with
// dry, planning through a Planner.
func fifoCycle(t *testing.T, dry bool, jobs ...slurmctl.Job) *serve.CycleResult {
	t.Helper()
	pol, err := policy.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	var sink serve.Sink = &serve.Live{Values: appliedValues{}, Recorder: &countingStore{}}
	if dry {
		sink = serve.NewPlanner(&countingStore{}, nil)
	}
	cfg := serve.Config{Cluster: "c", Policy: "fifo", Field: "site_factor", Range: policy.SiteFactorRange()}
	r := serve.New(cfg, serve.Parts{Source: &countingSource{cl: &slurmctl.Cluster{Jobs: jobs}}, Sink: sink, Leader: serve.AlwaysLeader{}, Engine: eng,
		Now: func() time.Time { return time.Date(2026, 11, 2, 9, 1, 0, 0, time.UTC) }}, quietLogger())
	res, err := r.RunCycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCycleResult_WriteText(t *testing.T) {
	for _, dry := range []bool{false, true} {
		res := fifoCycle(t, dry, textJob(1, "a", 0), textJob(2, "b", time.Second))
		var b strings.Builder
		if err := writeCycleText(&b, res, "fifo", "site_factor", dry); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		mode := "written: 2 applied, 0 failed"
		if dry {
			mode = "dry run: nothing written"
		}
		lines := strings.Split(strings.TrimSpace(got), "\n")
		if len(lines) != 4 || lines[0] != "policy fifo, 2 pending jobs ranked, 2 values changed ("+mode+")" ||
			!strings.HasPrefix(lines[1], "RANK  JOB  USER  ACCOUNT  GPUS  PREDICTED  SCORE") || !strings.Contains(lines[1], "SITE_FACTOR  CHANGED") {
			t.Fatalf("dry %v:\n%s", dry, got)
		}
		// fifo: the earlier submit first, each with the value decided
		for i, want := range []string{"1     1    a     acct-a", "2     2    b     acct-b"} {
			if !strings.HasPrefix(lines[2+i], want) || !strings.HasSuffix(lines[2+i], "true") {
				t.Errorf("dry %v row %d: %q, want it to start with %q and end with true", dry, i+1, lines[2+i], want)
			}
		}
		if strings.Contains(got, "rewrite:") {
			t.Errorf("rewriting off, yet printed:\n%s", got)
		}
	}
}

func TestRewriteReport_WriteText(t *testing.T) {
	var b strings.Builder
	if err := writeRewriteText(&b, nil, true); err != nil || b.Len() != 0 {
		t.Fatalf("nil report (rewriting off): %q, %v; want nothing", b.String(), err)
	}
	rep := &serve.RewriteReport{
		Rules:   []rewrite.ShareRule{{User: "alice", Name: "light", Shards: 4, Reason: "used 12% of a GPU"}},
		NoShare: []rewrite.ShareRule{{User: "bob", Name: "heavy", Reason: "uses 95% of its GPU"}},
		Proposals: []rewrite.Proposal{
			{JobID: 1, Rule: rewrite.RuleCPUs, CPUs: 16, From: 1, Reason: "cpus per GPU"},
			{JobID: 1, Rule: rewrite.RuleMemory, MemoryMB: 32000, From: 1000, Reason: "memory per GPU"},
			{JobID: 5, Rule: rewrite.RuleElastic, GPUs: 4, From: 2, Reason: "idle GPUs"}},
		Withheld: []serve.Withheld{{Proposal: rewrite.Proposal{JobID: 6, Rule: rewrite.RuleCPUs, CPUs: 2, From: 1, Reason: "cpus per GPU"},
			Why: "Slurm limits apply (GrpTRES=cpu=4 on account lim)"}},
		Resize: slurmctl.ResizeReport{Planned: make([]slurmctl.ResizeChange, 2), Skipped: []slurmctl.Skip{{JobID: 7, Reason: "opted out"}}}}
	if err := writeRewriteText(&b, rep, true); err != nil {
		t.Fatal(err)
	}
	texttest.Check(t, b.String(), []string{
		"\nrewrite: 1 share rule (table not written), 2 job changes planned, 0 applied, 0 failed, 1 withheld under Slurm limits (dry run: nothing written)\n",
		"USER   JOB NAME  SHARDS  REASON\nalice  light     4       used 12% of a GPU\nbob    heavy     -       not shared: uses 95% of its GPU\n",
		"JOB  RULE     FROM  TO     REASON\n1    cpus     1     16     cpus per GPU\n1    memory   1000  32000  memory per GPU\n" +
			"5    elastic  2     4      idle GPUs\n6    cpus     1     2      not changed: Slurm limits apply (GrpTRES=cpu=4 on account lim)\n" +
			"7    -                     not changed: opted out\n",
	}, nil)
}

// TestCycleResult_WriteText_OneJob: a count of one is singular ("1
// pending job ranked, 1 value changed"; it said "1 pending jobs ranked").
func TestCycleResult_WriteText_OneJob(t *testing.T) {
	res := fifoCycle(t, true, textJob(1, "a", 0))
	var b strings.Builder
	if err := writeCycleText(&b, res, "fifo", "site_factor", true); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "policy fifo, 1 pending job ranked, 1 value changed (dry run: nothing written)" {
		t.Errorf("first line %q", first)
	}
}

// TestGPUsText: the GPUS column says what the number alone hides.
func TestGPUsText(t *testing.T) {
	for want, j := range map[string]policy.Job{
		"4":                {GPUs: 4},
		"0 (3 shards)":     {Shards: 3},
		"8 (8 tasks × 1)":  {GPUs: 1, Tasks: 8},
		"2 (2 + 4 shards)": {GPUs: 2, Shards: 4},
	} {
		if got := gpusText(&j); got != want {
			t.Errorf("gpusText(%+v) = %q, want %q", j, got, want)
		}
	}
}

// TestRewriteText_HostileJobName: a job name is any user's (sbatch -J) and
// reaches serve --once's and --dry-run's output from the usage history. An
// escape sequence in it must not reach the admin's terminal, and a newline
// and tabs must not forge a share rule row for another user.
func TestRewriteText_HostileJobName(t *testing.T) {
	rep := &serve.RewriteReport{NoShare: []rewrite.ShareRule{
		{User: "mallory", Name: "x\x1b]0;owned\x07\x1b[2J\x1b[H", Reason: "2 whole-GPU runs measured, 3 needed"},
		{User: "mallory", Name: "y\nalice\ttrain\t4\t1 whole-GPU runs used 3% of the GPU", Reason: "user or job name cannot be written to the table"},
		{User: "bob", Name: "résumé-train", Reason: "2 whole-GPU runs measured, 3 needed"},
	}}
	var b bytes.Buffer
	if err := writeRewriteText(&b, rep, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("terminal control characters from a job name printed raw:\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "alice") {
			t.Errorf("a job name forged a row for alice: %q", l)
		}
	}
	for _, want := range []string{`"x\x1b]0;owned\a\x1b[2J\x1b[H"`, `"y\nalice\ttrain\t4\t1 whole-GPU runs used 3% of the GPU"`, "résumé-train  "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}
