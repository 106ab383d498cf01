package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// rewriteLab is what the resize lab tests share: a throwaway database (the
// rules' history: none), the scontrol resize writer, and a REST client.
type rewriteLab struct {
	e      *lab.Env
	store  *accounting.Store
	resize *slurmctl.ResizeWriter
	client *slurmctl.Client
}

func newRewriteLab(t *testing.T, e *lab.Env) *rewriteLab {
	t.Helper()
	ctx := context.Background()
	store, closeDB, err := openStore(ctx, e.Database(t), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeDB)
	resize, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	client, err := slurmctl.New(ctx, slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	return &rewriteLab{e: e, store: store, resize: resize, client: client}
}

// read reads the cluster through slurmrestd and keeps only the given jobs
// (the lab is shared: the rules must judge this test's jobs only). The
// nodes are kept whole: their free GPUs are the cluster's.
func (l *rewriteLab) read(t *testing.T, ids ...int64) *slurmctl.Cluster {
	t.Helper()
	cl, err := l.client.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mine []slurmctl.Job
	for _, j := range cl.Jobs {
		if slices.Contains(ids, j.ID) {
			mine = append(mine, j)
		}
	}
	if len(mine) != len(ids) {
		t.Fatalf("read %d of this test's jobs %v from slurmrestd, want %d", len(mine), ids, len(ids))
	}
	cl.Jobs = mine
	return cl
}

// cycle runs one rewriting cycle with the given rules on cl, live or as a
// dry run, and fails the test on a resize that Slurm refused.
func (l *rewriteLab) cycle(t *testing.T, rules []string, cl *slurmctl.Cluster, ranking []policy.Score, dry bool) *serve.RewriteReport {
	t.Helper()
	on := map[string]bool{}
	for _, r := range rules {
		on[r] = true
	}
	cfg := serve.RewriteConfig{Partitions: []string{l.e.Partition}, Rules: on, Table: filepath.Join(t.TempDir(), "fairway-rewrite.table"),
		TableMaxAge: 10 * time.Minute, HistoryDays: 2, RefreshEvery: 1, MinHistory: 3, ShardsPerGPU: 4, Cluster: l.e.Cluster}
	rw, err := serve.NewRewriter(cfg, quietLogger(), l.store, l.resize)
	if err != nil {
		t.Fatal(err)
	}
	var sink serve.Sink = &serve.Live{Resizes: l.resize, Recorder: l.store}
	if dry {
		sink = serve.NewPlanner(nil, nil)
	}
	rep := rw.Cycle(context.Background(), 1, time.Now(), cl, nil, ranking, sink)
	if len(rep.Resize.Failed) > 0 {
		t.Fatalf("Slurm rejected rewritten requests: %+v", rep.Resize.Failed)
	}
	return rep
}

// planned is a cycle's planned changes by job id.
func planned(rep *serve.RewriteReport) map[int64]slurmctl.ResizeChange {
	out := map[int64]slurmctl.ResizeChange{}
	for _, c := range rep.Resize.Planned {
		out[c.JobID] = c
	}
	return out
}

// jobField is one field of `scontrol show job`, and whether it is there.
func jobField(t *testing.T, e *lab.Env, id int64, field string) (string, bool) {
	t.Helper()
	out := e.Run(t, "", "scontrol", "show", "job", strconv.FormatInt(id, 10))
	m := regexp.MustCompile(`(?:^|\s)` + field + `=(\S*)`).FindStringSubmatch(out)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// startNow lets jobs submitted with --begin in the future start: the tests
// hold their jobs back that way until Fairway has resized them.
func startNow(t *testing.T, e *lab.Env, ids ...int64) {
	t.Helper()
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatInt(id, 10))
	}
	e.Run(t, "", "scontrol", "update", "jobid="+strings.Join(s, ","), "StartTime=now")
}

// sacctField is one field of a job's allocation record in sacct (-X).
func sacctField(t *testing.T, e *lab.Env, id int64, field string) string {
	t.Helper()
	return strings.TrimSpace(e.Run(t, "", "sacct", "-n", "-X", "-P", "-o", field, "-j", strconv.FormatInt(id, 10)))
}

// waitValue polls get until it returns want, and fails the test with the
// last value after timeout.
func waitValue(t *testing.T, timeout time.Duration, what, want string, get func() string) string {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		if last = get(); last == want {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q after %s, want %q", what, last, timeout, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readOutput returns a finished job's output file, and removes it.
func readOutput(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path)
	return strings.TrimSpace(string(b))
}

// TestLab_RewriteMemory: serve's memory rule, on a real slurmctld, gives
// pending GPU jobs the GPU-proportional share of their nodes' memory (the
// lab's nodes: 16000 MB over 4 GPUs = 4000 MB per GPU) when they asked for
// less, whether they asked per node (--mem), per CPU (--mem-per-cpu) or
// not at all (DefMemPerCPU); Slurm accepts every change (none is refused),
// and the jobs then run with that memory (scontrol's MinMemoryNode,
// sacct's ReqMem and the job's own SLURM_MEM_PER_NODE). A job that asked
// for more than its share keeps it, one that opted out is not touched, and
// the dry run changes nothing. The lab users have no CPU or memory limits,
// so the limits guard withholds nothing.
func TestLab_RewriteMemory(t *testing.T) {
	e := lab.Get(t)
	l := newRewriteLab(t, e)
	tag := fmt.Sprintf("fwmem%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	out := func(name string) string { return filepath.Join(e.JobDir, tag+"-"+name+".out") }
	script := `echo "mem_per_node=$SLURM_MEM_PER_NODE"`
	// --begin keeps every job pending until the test lets it start.
	submit := func(name string, args ...string) int64 {
		base := []string{"-J", tag + "-" + name, "-p", e.Partition, "--begin=now+3600", "-t", "5", "-o", out(name)}
		return e.Submit(t, "alice", append(append(base, args...), "--wrap", script)...)
	}
	perNode := submit("node", "--gres=gpu:1", "-c", "1", "--mem=1000")
	perCPU := submit("cpu", "--gres=gpu:2", "-c", "2", "--mem-per-cpu=500")
	byDefault := submit("default", "--gres=gpu:1", "-c", "1")
	asksMore := submit("more", "--gres=gpu:1", "-c", "1", "--mem=6000")
	optOut := submit("optout", "--gres=gpu:1", "-c", "1", "--mem=1000", "--comment", "fairway:no-rewrite")
	ids := []int64{perNode, perCPU, byDefault, asksMore, optOut}
	want := map[int64]int64{perNode: 4000, perCPU: 8000, byDefault: 4000} // MB per node after the rule

	memory := []string{rewrite.RuleMemory}
	for _, dry := range []bool{true, false} {
		rep := l.cycle(t, memory, l.read(t, ids...), nil, dry)
		if len(rep.Withheld) > 0 {
			t.Fatalf("dry run %v: changes withheld %+v: the lab users should have no CPU or memory limits (a leftover sacctmgr limit?)", dry, rep.Withheld)
		}
		got := planned(rep)
		if len(got) != len(want) {
			t.Errorf("dry run %v: planned %+v, want only jobs %v resized", dry, rep.Resize.Planned, want)
		}
		for id, mb := range want {
			if c := got[id]; c.MemoryMB != mb || c.CPUs != 0 || c.GPUs != 0 {
				t.Errorf("dry run %v: job %d planned %+v, want memory %d MB and nothing else", dry, id, c, mb)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		for id, mb := range want {
			// A job that asked per CPU has no MinMemoryNode until the
			// rule sets one.
			got, _ := jobField(t, e, id, "MinMemoryNode")
			if target := fmt.Sprintf("%dM", mb); (got == target) == dry { // dry: must not have it; live: must
				t.Errorf("dry run %v: job %d MinMemoryNode=%q in scontrol show job, want %s", dry, id, got,
					map[bool]string{true: "it unchanged", false: target}[dry])
			}
		}
	}
	if got := showJob(t, e, asksMore, "MinMemoryNode"); got != "6000M" {
		t.Errorf("job asking for more than its share: MinMemoryNode=%s, want 6000M (never below the ask)", got)
	}
	if got := showJob(t, e, optOut, "MinMemoryNode"); got != "1000M" {
		t.Errorf("opted-out job: MinMemoryNode=%s, want 1000M (untouched)", got)
	}

	// Once Slurm holds the new values, a second cycle has nothing to do:
	// Fairway does not fight its own changes.
	if rep := l.cycle(t, memory, l.read(t, ids...), nil, false); len(rep.Resize.Planned) > 0 {
		t.Errorf("second cycle planned %+v, want nothing", rep.Resize.Planned)
	}

	// The resized jobs run with their new memory.
	run := []int64{perNode, perCPU, byDefault}
	startNow(t, e, run...)
	for _, id := range run {
		e.WaitState(t, id, 5*time.Minute, "COMPLETED")
	}
	for id, name := range map[int64]string{perNode: "node", perCPU: "cpu", byDefault: "default"} {
		mb := want[id]
		// slurmdbd may report the job COMPLETED before its record has the
		// request (22.05 showed ReqMem=16? for a moment): wait for it.
		req := waitValue(t, 30*time.Second, fmt.Sprintf("sacct ReqMem of job %d", id), fmt.Sprintf("%dM", mb),
			func() string { return sacctField(t, e, id, "ReqMem") })
		got, w := readOutput(t, out(name)), fmt.Sprintf("mem_per_node=%d", mb)
		if got != w {
			t.Errorf("job %d (%s) printed %q, want %q", id, name, got, w)
		}
		t.Logf("job %d (%s): ran with ReqMem=%s, printed %s", id, name, req, got)
	}
}

// TestLab_RewriteElastic: serve's elastic rule on a real slurmctld. Five of
// the lab's eight GPUs are busy (gpu1's four, one of gpu2's), and an
// elastic job (comment fairway:elastic=1-4) asks for 4 GPUs: it cannot
// start. Fairway ranks it behind a held job and one that may not start for
// an hour (--begin), which take nothing first, so it gets the 3 GPUs free
// on gpu2; Slurm accepts the change and the job runs on 3 GPUs, with the
// CPUs and memory of 3 GPUs when those rules are on too. In a dry run with
// a job that can start ranked ahead (2 GPUs), the elastic job would get
// only the 1 GPU that leaves. Jobs that are not elastic keep their GPU
// count.
func TestLab_RewriteElastic(t *testing.T) {
	e := lab.Get(t)
	l := newRewriteLab(t, e)
	tag := fmt.Sprintf("fwel%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	p := e.Partition

	waitQueueEmpty(t, e) // the free GPUs must be this test's to count
	busy1 := e.Submit(t, "bob", "-J", tag+"-busy1", "-p", p, "-w", "gpu1", "--gres=gpu:4", "-c", "1", "-t", "10", "--wrap", "sleep 600")
	busy2 := e.Submit(t, "bob", "-J", tag+"-busy2", "-p", p, "-w", "gpu2", "--gres=gpu:1", "-c", "1", "-t", "10", "--wrap", "sleep 600")
	waitJobState(t, e, busy1, time.Minute, "RUNNING")
	waitJobState(t, e, busy2, time.Minute, "RUNNING")

	held := e.Submit(t, "carol", "-J", tag+"-held", "-p", p, "--hold", "--gres=gpu:2", "-c", "1", "-t", "5", "--wrap", "true")
	later := e.Submit(t, "carol", "-J", tag+"-later", "-p", p, "--begin=now+3600", "--gres=gpu:2", "-c", "1", "-t", "5", "--wrap", "true")
	// Can start as far as Fairway knows (no begin time, no dependency), but
	// only on gpu1, which is full: it stays pending.
	ready := e.Submit(t, "carol", "-J", tag+"-ready", "-p", p, "-w", "gpu1", "--gres=gpu:2", "-c", "1", "-t", "5", "--wrap", "true")
	elasticOut := filepath.Join(e.JobDir, tag+"-elastic.out")
	elastic := e.Submit(t, "alice", "-J", tag+"-elastic", "-p", p, "--gres=gpu:4", "-c", "1", "-t", "5", "--comment", "fairway:elastic=1-4",
		"-o", elasticOut, "--wrap", `echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"`)
	ids := []int64{held, later, ready, elastic}
	waitFor(t, time.Minute, "the elastic job and the job pinned to gpu1 to wait for resources", func() bool {
		for _, id := range []int64{elastic, ready} {
			out, err := e.Try("", "squeue", "-h", "-j", strconv.FormatInt(id, 10), "-o", "%T %r")
			if err != nil || !strings.HasPrefix(out, "PENDING") {
				if strings.HasPrefix(out, "RUNNING") {
					t.Fatalf("job %d started: another session freed the lab's GPUs?", id)
				}
				return false
			}
			if r := strings.Fields(out); len(r) < 2 || r[1] == "None" {
				return false // not yet looked at by the scheduler
			}
		}
		return true
	})

	rank := func(order ...int64) []policy.Score {
		var s []policy.Score
		for _, id := range order {
			s = append(s, policy.Score{JobID: id})
		}
		return s
	}
	elasticRule := []string{rewrite.RuleElastic}
	cl := l.read(t, ids...)
	free := 0
	for _, n := range cl.Nodes {
		if slices.Contains(n.Partitions, p) {
			free += n.GPUs - n.AllocGPUs - (n.AllocShards+3)/4
		}
	}
	if free != 3 {
		t.Fatalf("%d GPUs free in the lab partition, want 3 (another session's jobs running?)", free)
	}
	for _, tc := range []struct {
		name  string
		order []int64
		want  int
	}{
		{"jobs that cannot start ranked ahead", []int64{held, later, elastic, ready}, 3},
		{"a job that can start ranked ahead", []int64{held, ready, elastic, later}, 1},
	} {
		rep := l.cycle(t, elasticRule, cl, rank(tc.order...), true)
		got := planned(rep)
		if c := got[elastic]; len(got) != 1 || c.GPUs != tc.want || c.From.GPUs != 4 {
			t.Errorf("dry run, %s: planned %+v, want only job %d from 4 to %d GPUs", tc.name, rep.Resize.Planned, elastic, tc.want)
		}
	}
	if got := showJob(t, e, elastic, "TresPerNode"); !gresIs(got, "gpu:4") {
		t.Fatalf("after the dry runs: elastic job TresPerNode=%s, want gres:gpu:4 (unchanged)", got)
	}

	// Live, with the CPU and memory rules on as well: the elastic job's
	// CPUs and memory follow its new GPU count (2 CPUs and 4000 MB per
	// GPU), all in one update that Slurm must accept.
	rep := l.cycle(t, []string{rewrite.RuleElastic, rewrite.RuleCPUs, rewrite.RuleMemory}, cl, rank(held, later, elastic, ready), false)
	applied := map[int64]slurmctl.ResizeChange{}
	for _, c := range rep.Resize.Applied {
		applied[c.JobID] = c
	}
	if c := applied[elastic]; c.GPUs != 3 || c.CPUs != 6 || c.MemoryMB != 12000 {
		t.Fatalf("live cycle: applied %+v; want job %d to 3 GPUs, 6 CPUs, 12000 MB", rep.Resize.Applied, elastic)
	}
	e.WaitState(t, elastic, 3*time.Minute, "COMPLETED")
	ran := readOutput(t, elasticOut)
	if f := strings.Fields(ran); len(f) != 2 || f[0] != "gpu2" || strings.Count(f[1], ",") != 2 {
		t.Errorf("elastic job printed %q, want gpu2 and three devices in CUDA_VISIBLE_DEVICES", ran)
	}
	// slurmdbd may report the job COMPLETED before its record has the
	// allocation: wait for it.
	alloc := ""
	waitFor(t, 30*time.Second, fmt.Sprintf("sacct AllocTRES of job %d to hold cpu=6, gres/gpu=3, mem=12000M", elastic), func() bool {
		alloc = sacctField(t, e, elastic, "AllocTRES") + ","
		return strings.Contains(alloc, ",cpu=6,") && strings.Contains(alloc, ",gres/gpu=3,") && strings.Contains(alloc, ",mem=12000M,")
	})
	t.Logf("elastic job %d ran on %q (node, CUDA_VISIBLE_DEVICES), sacct AllocTRES=%s", elastic, ran, strings.TrimSuffix(alloc, ","))
	for id, want := range map[int64]string{held: "gpu:2", later: "gpu:2", ready: "gpu:2"} {
		if got := showJob(t, e, id, "TresPerNode"); !gresIs(got, want) {
			t.Errorf("job %d, not elastic: TresPerNode=%s, want %s (untouched)", id, got, want)
		}
	}
}
