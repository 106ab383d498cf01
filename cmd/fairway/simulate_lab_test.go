package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
)

// TestLab_SimulateFromDB replays the lab's own history from the
// accounting database on its partition: 8 jobs are ingested from slurmdbd;
// `simulate --from-db` replays them on a layout where the lab's partition
// (2 nodes × 4 H100s) is not the default, and on a layout without it
// leaves them out with a warning naming the partition. (The lab's
// AccountingStorageTRES lists gres/gpu untyped, so its database records
// no GPU type: type routing is covered by the fake-history test.)
func TestLab_SimulateFromDB(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, conn := throwawayDB(t, e)
	tag := fmt.Sprintf("simdb%d", time.Now().UnixNano()%1e6)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	waitQueueEmpty(t, e)
	users := []string{"alice", "bob"}
	var ids []int64
	for i := range 8 {
		gres := fmt.Sprintf("--gres=gpu:%d", 1+i%4)
		if i%2 == 0 {
			gres = fmt.Sprintf("--gres=gpu:h100:%d", 1+i%4)
		}
		ids = append(ids, e.Submit(t, users[i%2], "-J", tag, "-p", e.Partition, gres, "-t", strconv.Itoa(1+i%3), "--wrap", "sleep 1"))
	}
	for _, id := range ids {
		if st := e.WaitState(t, id, 3*time.Minute, "COMPLETED"); st != "COMPLETED" {
			t.Fatalf("job %d ended %s, want COMPLETED", id, st)
		}
	}
	t.Setenv("SLURM_CONF", e.SlurmConf)
	waitFor(t, 2*time.Minute, "the jobs in the database", func() bool {
		out, err := runApp(t, "ingest", "--progress", "never", "--database-url", dbURL, "--from", "slurmdbd", "--cluster", e.Cluster,
			"--since", since, "--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile)
		if err != nil {
			t.Fatalf("ingest: %v\n%s", err, out)
		}
		stored := 0
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND name = $2 AND end_time IS NOT NULL`,
			e.Cluster, tag).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		return stored == len(ids)
	})
	run := func(spec string) string {
		t.Helper()
		out, err := runApp(t, "simulate", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since,
			"--policies", "fifo,fairshare", "--parallel", "1", "--progress", "never", "--partitions", spec)
		t.Logf("simulate --from-db --partitions %s:\n%s", spec, out)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	jobsRe := regexp.MustCompile(`\(accounting database\): (\d+) jobs on `)
	// The lab's partition second: the jobs are routed by the partition
	// the database recorded, not to the default.
	ok := run("debug:nodes=1,per-node=4;" + e.Partition + ":nodes=2,per-node=4,type=h100")
	m := jobsRe.FindStringSubmatch(ok)
	if m == nil {
		t.Fatalf("no job count in the header")
	}
	if n, _ := strconv.Atoi(m[1]); n < len(ids) {
		t.Errorf("%d jobs replayed on the lab's layout, want at least our %d", n, len(ids))
	}
	if strings.Contains(ok, "warning:") {
		t.Errorf("the lab's layout: jobs left out")
	}
	// The lab's partition shrunk to one 1-GPU node: its jobs of more
	// GPUs are left out, though debug's nodes could hold them.
	small := run("debug:nodes=2,per-node=4;" + e.Partition + ":nodes=1,per-node=1")
	warn := regexp.MustCompile(`warning: (\d+) jobs left out, no node of the cluster can run them: larger than partition "` + regexp.QuoteMeta(e.Partition) + `"`).FindStringSubmatch(small)
	if warn == nil {
		t.Fatalf("partition %s of one 1-GPU node: no warning about the larger jobs", e.Partition)
	}
	if n, _ := strconv.Atoi(warn[1]); n < 6 {
		t.Errorf("partition %s of one 1-GPU node: %d jobs left out as larger, want at least our 6", e.Partition, n)
	}
	// Without the lab's partition no job can run, and the error says why.
	out, err := runApp(t, "simulate", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since,
		"--policies", "fifo", "--parallel", "1", "--progress", "never", "--partitions", "debug:nodes=2,per-node=4")
	want := regexp.MustCompile(`no job to simulate \(left out: .*\b(\d+) partition "` + regexp.QuoteMeta(e.Partition) + `" not in the cluster`)
	m = nil
	if err != nil {
		m = want.FindStringSubmatch(err.Error())
	}
	if m == nil {
		t.Fatalf("a layout without partition %s: err %v, want %s\n%s", e.Partition, err, want, out)
	}
	if n, _ := strconv.Atoi(m[1]); n < len(ids) {
		t.Errorf("a layout without partition %s: %d jobs left out, want at least our %d", e.Partition, n, len(ids))
	}
}
