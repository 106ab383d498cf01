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

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// backfillCycles is sdiag's count of backfill cycles.
func backfillCycles(t *testing.T, e *lab.Env) int {
	t.Helper()
	out := e.Run(t, "", "sdiag")
	_, bf, ok := strings.Cut(out, "Backfilling stats")
	m := regexp.MustCompile(`Total cycles:\s*(\d+)`).FindStringSubmatch(bf)
	if !ok || m == nil {
		t.Fatalf("sdiag: no backfill cycle count in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// grpCPUUse reads an account's GrpTRES CPU limit and use from slurmctld:
// "GrpTRES=cpu=4(6)" is a limit of 4 with 6 in use.
func grpCPUUse(t *testing.T, e *lab.Env, account string) (limit, use string) {
	t.Helper()
	out := e.Run(t, "", "scontrol", "show", "assoc_mgr", "accounts="+account, "flags=assoc")
	for _, rec := range strings.Split(out, "ClusterName=")[1:] {
		if !strings.Contains(rec, "Account="+account+" UserName= ") {
			continue
		}
		if m := regexp.MustCompile(`GrpTRES=cpu=([^(,]+)\(([^)]*)\)`).FindStringSubmatch(rec); m != nil {
			return m[1], m[2]
		}
	}
	t.Fatalf("no GrpTRES cpu of account %s in scontrol show assoc_mgr:\n%s", account, out)
	return "", ""
}

// TestLab_ResizeKeepsGrpTRES is issue 27's finding 3 on the lab: a CPU
// change made as SlurmUser marks the job's CPUs admin-set, and Slurm then
// skips them in its limit checks. Bob, in an account of his own with
// GrpTRES=cpu=4, runs a 4-CPU job; his next job (1 CPU with a GPU) pends on
// AssocGrpCpuLimit. Serve's CPU rule would raise it to the GPU-proportional
// share (2 CPUs), and with it the job would start past the limit. Fairway
// must leave it alone, and after the scheduler has looked at it again the
// account must still use at most its 4 CPUs.
func TestLab_ResizeKeepsGrpTRES(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	if out := e.Run(t, "", "scontrol", "show", "config"); !regexp.MustCompile(`AccountingStorageEnforce\s*=\s*\S*limits`).MatchString(out) {
		t.Fatal("the lab does not enforce association limits (AccountingStorageEnforce without limits): restart it with this checkout's contrib/lab/lab (lab down; lab up)")
	}
	store, closeDB, err := openStore(ctx, e.Database(t), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()

	// An account of its own, so the limit touches no other test's jobs.
	acct := fmt.Sprintf("fwlim%d", os.Getpid()%100000)
	t.Cleanup(func() {
		// Submit's cleanups (registered later) cancel the jobs first; the
		// association can go once slurmctld has none of them left.
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if out, err := e.Try("", "squeue", "-h", "-A", acct); err == nil && strings.TrimSpace(out) == "" {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		for _, args := range [][]string{{"remove", "user", "bob", "account=" + acct}, {"remove", "account", acct}} {
			if out, err := e.Try("", "sacctmgr", append([]string{"-i"}, args...)...); err != nil {
				t.Errorf("cleanup: sacctmgr %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	e.Run(t, "", "sacctmgr", "-i", "add", "account", acct, "parent=physics", "cluster="+e.Cluster, "fairshare=1")
	e.Run(t, "", "sacctmgr", "-i", "add", "user", "bob", "account="+acct, "cluster="+e.Cluster)
	e.Run(t, "", "sacctmgr", "-i", "modify", "account", acct, "set", "GrpTRES=cpu=4")
	waitFor(t, 30*time.Second, "slurmctld to learn bob's association with "+acct, func() bool {
		out, err := e.Try("", "scontrol", "show", "assoc_mgr", "accounts="+acct, "users=bob", "flags=assoc")
		return err == nil && strings.Contains(out, "UserName=bob(") && strings.Contains(out, "GrpTRES=cpu=4(")
	})

	big := e.Submit(t, "bob", "-A", acct, "-p", e.Partition, "-J", acct+"-big", "-c", "4", "--gres=gpu:1", "--wrap", "sleep 600")
	e.WaitState(t, big, 3*time.Minute, "RUNNING")
	small := e.Submit(t, "bob", "-A", acct, "-p", e.Partition, "-J", acct+"-small", "-c", "1", "--gres=gpu:1", "--wrap", "sleep 600")
	id := strconv.FormatInt(small, 10)
	reason := ""
	waitFor(t, time.Minute, "bob's second job to pend on AssocGrpCpuLimit", func() bool {
		out, _ := e.Try("", "squeue", "-h", "-j", id, "-o", "%T %r")
		if strings.HasPrefix(out, "RUNNING") {
			t.Fatalf("job %d started beside a 4-CPU job under GrpTRES=cpu=4 before Fairway did anything: the lab does not enforce the limit", small)
		}
		reason = strings.TrimSpace(out)
		return reason == "PENDING AssocGrpCpuLimit"
	})

	// One rewriting cycle with the CPU rule on, on this test's pending job
	// only (the lab is shared): 8 CPUs / 4 GPUs per node would make it 2.
	resize, err := slurmctl.NewResizeWriter(slurmctl.ResizeConfig{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	client, err := slurmctl.New(ctx, slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []slurmctl.Job
	for _, j := range cl.Jobs {
		if j.ID == small {
			mine = append(mine, j)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("read %d records of job %d, want 1", len(mine), small)
	}
	cl.Jobs = mine
	cfg := serve.RewriteConfig{Partitions: []string{e.Partition}, Rules: map[string]bool{rewrite.RuleCPUs: true},
		Table: filepath.Join(t.TempDir(), "fairway-rewrite.table"), TableMaxAge: 10 * time.Minute, HistoryDays: 2, RefreshEvery: 1,
		MinHistory: 3, ShardsPerGPU: 4, Cluster: e.Cluster}
	rw, err := serve.NewRewriter(cfg, quietLogger(), store, resize)
	if err != nil {
		t.Fatal(err)
	}
	rep := rw.Cycle(ctx, 1, time.Now(), cl, nil, nil, &serve.Live{Resizes: resize, Recorder: store})
	for _, c := range rep.Resize.Planned {
		if c.JobID == small && (c.CPUs != 0 || c.MemoryMB != 0) {
			t.Errorf("Fairway resized job %d under GrpTRES=cpu=4: %+v (a CPU change by SlurmUser exempts it from the limit)", small, c)
		}
	}
	if got := showJob(t, e, small, "NumCPUs"); got != "1" {
		t.Errorf("job %d: NumCPUs=%s after the cycle, want 1 (left alone)", small, got)
	}

	// Slurm has had its say once the job has started, or two backfill
	// passes (bf_interval=5; they run while a job pends) have run since
	// the cycle: the job must still wait and the account hold at most its
	// 4 CPUs.
	start := backfillCycles(t, e)
	waitFor(t, 2*time.Minute, "job "+id+" to start, or two backfill passes after the rewriting cycle", func() bool {
		if out, _ := e.Try("", "squeue", "-h", "-j", id, "-o", "%T"); strings.TrimSpace(out) != "PENDING" {
			return true
		}
		n := backfillCycles(t, e)
		return n >= start+2 || n < start // sdiag's counters restart at midnight
	})
	state := strings.TrimSpace(e.Run(t, "", "squeue", "-h", "-j", id, "-o", "%T %C %r"))
	limit, use := grpCPUUse(t, e, acct)
	if !strings.HasPrefix(state, "PENDING") || limit != "4" || use != "4" {
		t.Errorf("after the rewriting cycle: job %d %q, account %s GrpTRES=cpu=%s(%s in use); want it pending and 4 CPUs in use",
			small, state, acct, limit, use)
	}
	t.Logf("job %d: %s; account %s: GrpTRES=cpu=%s(%s)", small, state, acct, limit, use)
}
