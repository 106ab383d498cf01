package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/texttest"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

func TestCycleResult_WriteText(t *testing.T) {
	for _, dry := range []bool{false, true} {
		g := newRig(t, Config{}, dry)
		res := g.cycle(t, job(1, "a", policy.StatePending, 0), job(2, "b", policy.StatePending, time.Second))
		var b strings.Builder
		if err := res.WriteText(&b, "fifo", "site_factor"); err != nil {
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
	if err := (*RewriteReport)(nil).WriteText(&b, true); err != nil || b.Len() != 0 {
		t.Fatalf("nil report (rewriting off): %q, %v; want nothing", b.String(), err)
	}
	rep := &RewriteReport{
		Rules:   []rewrite.ShareRule{{User: "alice", Name: "light", Shards: 4, Reason: "used 12% of a GPU"}},
		NoShare: []rewrite.ShareRule{{User: "bob", Name: "heavy", Reason: "uses 95% of its GPU"}},
		Proposals: []rewrite.Proposal{
			{JobID: 1, Rule: rewrite.RuleCPUs, CPUs: 16, From: 1, Reason: "cpus per GPU"},
			{JobID: 1, Rule: rewrite.RuleMemory, MemoryMB: 32000, From: 1000, Reason: "memory per GPU"},
			{JobID: 5, Rule: rewrite.RuleElastic, GPUs: 4, From: 2, Reason: "idle GPUs"}},
		Withheld: []Withheld{{Proposal: rewrite.Proposal{JobID: 6, Rule: rewrite.RuleCPUs, CPUs: 2, From: 1, Reason: "cpus per GPU"},
			Why: "Slurm limits apply (GrpTRES=cpu=4 on account lim)"}},
		Resize: slurmctl.ResizeReport{Planned: make([]slurmctl.ResizeChange, 2), Skipped: []slurmctl.Skip{{JobID: 7, Reason: "opted out"}}}}
	if err := rep.WriteText(&b, true); err != nil {
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
	g := newRig(t, Config{}, true)
	res := g.cycle(t, job(1, "a", policy.StatePending, 0))
	var b strings.Builder
	if err := res.WriteText(&b, "fifo", "site_factor"); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "policy fifo, 1 pending job ranked, 1 value changed (dry run: nothing written)" {
		t.Errorf("first line %q", first)
	}
}
