package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// showJob returns one field of `scontrol show job` (e.g. "TresPerNode").
func showJob(t *testing.T, e *lab.Env, id int64, field string) string {
	t.Helper()
	out := e.Run(t, "", "scontrol", "show", "job", strconv.FormatInt(id, 10))
	m := regexp.MustCompile(`(?:^|\s)` + field + `=(\S*)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("job %d: no %s in scontrol show job:\n%s", id, field, out)
	}
	return m[1]
}

// gresIs reports whether a TresPerNode value is the one GRES want
// ("shard:1") in either release's spelling: 22.05 writes gres:shard:1,
// later releases gres/shard:1.
func gresIs(got, want string) bool { return got == "gres:"+want || got == "gres/"+want }

// TestLab_RewriteShareAndCPUs is the lab test. History in a
// throwaway database marks alice's job name as low-utilization; serve's
// rewriter writes the table; the lab's job_submit.lua then turns a new
// submission of that name into shards, and it runs beside another shard job
// on the same GPU of the same node. A job without such history, and one that
// opts out, keep their whole GPU. Then serve changes a pending job's CPU
// count (dry run first: nothing changes), visible in `scontrol show job`,
// and leaves the opted-out job's alone.
func TestLab_RewriteShareAndCPUs(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	store, closeDB, err := openStore(ctx, e.Database(t), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	tag := fmt.Sprintf("fwrw%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	light := tag + "-light"

	// History: four runs of alice's `light`, each using 8% of an 80 GB GPU
	// and 3 GB of its memory. Job ids far above the lab's own.
	base := time.Now().Add(-6 * time.Hour).Truncate(time.Second)
	var jobs []policy.Job
	var usage []accounting.GPUUsage
	for i := range 4 {
		start := base.Add(time.Duration(i) * time.Hour)
		id := int64(900_000_000 + time.Now().UnixNano()%1e6*10 + int64(i))
		jobs = append(jobs, policy.Job{Cluster: e.Cluster, ID: id, ArrayTask: -1, User: "alice", Account: "physics", Partition: e.Partition,
			Name: light, Submit: start.Add(-time.Minute), Start: start, End: start.Add(40 * time.Minute), Nodes: 1, CPUs: 1, GPUs: 1,
			State: policy.StateCompleted})
		util, peak, total := 8.0, int64(3000), int64(81559)
		usage = append(usage, accounting.GPUUsage{Cluster: e.Cluster, JobID: id, Node: "gpu1", GPUMinor: i % 4, Started: start,
			Ended: start.Add(40*time.Minute + time.Second), UtilAvgPct: &util, MemPeakMB: &peak, MemTotalMB: &total})
	}
	if _, err := store.RecordFinished(ctx, "test", jobs); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordGPUUsage(ctx, usage); err != nil {
		t.Fatal(err)
	}

	table := filepath.Join(e.Dir, "etc", "fairway-rewrite.table")
	if _, err := os.Stat(table); err == nil {
		t.Fatalf("%s exists: another test or a serve is rewriting in the lab; this test needs the table to itself", table)
	}
	t.Cleanup(func() { _ = os.Remove(table) }) // no table: the lab rewrites nothing

	resize, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	live := &serve.Live{Resizes: resize, Recorder: store}
	cfg := serve.RewriteConfig{Partitions: []string{e.Partition}, Rules: map[string]bool{rewrite.RuleShare: true}, Table: table,
		TableMaxAge: 10 * time.Minute, HistoryDays: 2, RefreshEvery: 1, ShareMaxUtil: 50, MinHistory: 3, ShardsPerGPU: 4, Cluster: e.Cluster}
	rw, err := serve.NewRewriter(cfg, quietLogger(), store, resize)
	if err != nil {
		t.Fatal(err)
	}
	rep := rw.Cycle(ctx, 1, time.Now(), &slurmctl.Cluster{}, nil, nil, live)
	var shards int
	for _, r := range rep.Rules {
		if r.User == "alice" && r.Name == light {
			shards = r.Shards
		}
	}
	if !rep.TableWritten || shards != 1 { // 8% × 1.25 = 0.1 of 4 shards → 1
		t.Fatalf("share rules %+v, table written %v; want alice's %s at 1 shard", rep.Rules, rep.TableWritten, light)
	}
	// job_submit.lua re-reads the table every 5 s: probe with held
	// submissions of the same user and name until one is rewritten.
	waitFor(t, 30*time.Second, "job_submit.lua to apply the new table", func() bool {
		probe := e.Submit(t, "alice", "-J", light, "-p", e.Partition, "--hold", "--gres=gpu:1", "--wrap", "true")
		defer e.Run(t, "", "scancel", strconv.FormatInt(probe, 10))
		return gresIs(showJob(t, e, probe, "TresPerNode"), "shard:1")
	})

	out := func(name string) string { return filepath.Join(e.JobDir, name+".out") }
	script := `echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $SLURM_JOB_GPUS"; sleep 25`
	shared := e.Submit(t, "alice", "-J", light, "-p", e.Partition, "-w", "gpu1", "--gres=gpu:1", "-o", out(tag+"-a"), "--wrap", script)
	other := e.Submit(t, "bob", "-J", tag+"-other", "-p", e.Partition, "-w", "gpu1", "--gres=shard:2", "-o", out(tag+"-b"), "--wrap", script)
	noHistory := e.Submit(t, "alice", "-J", tag+"-nohist", "-p", e.Partition, "--begin=now+3600", "--gres=gpu:1", "-c", "1", "--wrap", "true")
	optOut := e.Submit(t, "alice", "-J", light, "-p", e.Partition, "--begin=now+3600", "--gres=gpu:1", "-c", "1",
		"--comment", "fairway:no-rewrite", "--wrap", "true")

	if got := showJob(t, e, shared, "TresPerNode"); !gresIs(got, "shard:1") {
		t.Errorf("job with low-utilization history: TresPerNode=%s, want gres:shard:1 (gres/shard:1 on 23.02 and later)", got)
	}
	for _, id := range []int64{noHistory, optOut} {
		if got := showJob(t, e, id, "TresPerNode"); !gresIs(got, "gpu:1") {
			t.Errorf("job %d: TresPerNode=%s, want gres:gpu:1 or gres/gpu:1 (left alone)", id, got)
		}
	}

	// Both shard jobs run at the same time, on one GPU of gpu1.
	together := false
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && !together {
		st := e.Run(t, "", "squeue", "-h", "-j", fmt.Sprintf("%d,%d", shared, other), "-o", "%T")
		together = strings.Count(st, "RUNNING") == 2
		if !together {
			time.Sleep(time.Second)
		}
	}
	if !together {
		t.Fatalf("the two shard jobs never ran at the same time (gpu1 busy with other work for 3 minutes?)")
	}
	e.WaitState(t, shared, 2*time.Minute, "COMPLETED")
	e.WaitState(t, other, 2*time.Minute, "COMPLETED")
	var seen []string
	for _, f := range []string{out(tag + "-a"), out(tag + "-b")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(f)
		seen = append(seen, strings.TrimSpace(string(b)))
	}
	fa, fb := strings.Fields(seen[0]), strings.Fields(seen[1])
	if len(fa) < 2 || len(fb) < 2 || fa[0] != fb[0] || fa[1] != fb[1] {
		t.Errorf("node and CUDA_VISIBLE_DEVICES of the two shard jobs: %q and %q, want the same device", seen[0], seen[1])
	}
	t.Logf("shared GPU: %q and %q", seen[0], seen[1])

	// CPUs: the pending job without history asks for 1 CPU with its GPU;
	// the GPU-proportional share of the lab's nodes is 8 CPUs / 4 GPUs = 2.
	client, err := slurmctl.New(ctx, slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []slurmctl.Job // only this test's jobs: the lab is shared
	for _, j := range cl.Jobs {
		if j.ID == noHistory || j.ID == optOut {
			mine = append(mine, j)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("read %d of this test's pending jobs, want 2", len(mine))
	}
	cl.Jobs = mine
	cpus := cfg
	cpus.Rules = map[string]bool{rewrite.RuleCPUs: true}
	cpus.Sacct = false
	for _, dry := range []bool{true, false} {
		rw, err := serve.NewRewriter(cpus, quietLogger(), store, resize)
		if err != nil {
			t.Fatal(err)
		}
		var sink serve.Sink = live
		if dry {
			sink = serve.NewPlanner(nil, nil)
		}
		rep := rw.Cycle(ctx, 1, time.Now(), cl, nil, nil, sink)
		if len(rep.Resize.Planned) != 1 || rep.Resize.Planned[0].JobID != noHistory || rep.Resize.Planned[0].CPUs != 2 {
			t.Fatalf("dry run %v: planned %+v, want job %d to 2 CPUs", dry, rep.Resize.Planned, noHistory)
		}
		want := map[bool]string{true: "1", false: "2"}[dry]
		if got := showJob(t, e, noHistory, "NumCPUs"); got != want {
			t.Errorf("dry run %v: NumCPUs=%s in scontrol show job, want %s", dry, got, want)
		}
	}
	if got := showJob(t, e, optOut, "NumCPUs"); got != "1" {
		t.Errorf("opted-out job: NumCPUs=%s, want 1 (untouched)", got)
	}
}
