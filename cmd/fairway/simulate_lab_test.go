package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/jackc/pgx/v5"
)

// TestLab_SimulateFromDB replays the lab's own history from the
// accounting database on its two partitions and its GPU type: 12 jobs, in
// gpu and gpuhi, half of them asking --gres=gpu:h100:N, are ingested from
// slurmdbd (the lab's AccountingStorageTRES lists gres/gpu:h100, so
// slurmdbd records the type: of the ones that asked for it, and of the
// untyped ones too, as the type they were given). `simulate --from-db`
// replays every one on the lab's layout (both partitions over 2 nodes × 4
// H100s, written in an order where neither is the default); on a layout
// whose gpuhi nodes are A100s it leaves out exactly gpuhi's jobs, each
// for want of an h100 node in gpuhi, and still replays gpu's; on a layout
// of gpu shrunk to one 1-GPU node it leaves out gpu's larger jobs; and
// without the lab's partitions no job can run, and the error says why.
func TestLab_SimulateFromDB(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	dbURL, conn := throwawayDB(t, e)
	tag := fmt.Sprintf("simdb%d", time.Now().UnixNano()%1e6)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	waitQueueEmpty(t, e)
	users := []string{"alice", "bob"}
	const hi = "gpuhi" // the lab's second partition, over the same nodes
	var ids []int64
	perPart := map[string]int{}
	for i := range 12 {
		part := e.Partition
		if i%3 == 2 {
			part = hi
		}
		gres := fmt.Sprintf("--gres=gpu:%d", 1+i%4)
		if i%2 == 0 {
			gres = fmt.Sprintf("--gres=gpu:h100:%d", 1+i%4)
		}
		perPart[part]++
		ids = append(ids, e.Submit(t, users[i%2], "-J", tag, "-p", part, gres, "-t", strconv.Itoa(1+i%3), "--wrap", "sleep 1"))
	}
	ingestLabJobs(t, e, dbURL, conn, tag, since, ids)
	// What the replay routes by: every job's partition and GPU type.
	rows, err := conn.Query(ctx, `SELECT partition, gpu_type, count(*) FROM job WHERE cluster = $1 AND name = $2 GROUP BY 1, 2 ORDER BY 1, 2`, e.Cluster, tag)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var part, typ string
		var n int
		if err := rows.Scan(&part, &typ, &n); err != nil {
			t.Fatal(err)
		}
		got[part+"/"+typ] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{e.Partition + "/h100": perPart[e.Partition], hi + "/h100": perPart[hi]}; !maps.Equal(got, want) {
		t.Fatalf("jobs by partition/GPU type in the database: %v, want %v (is gres/gpu:h100 in the lab's AccountingStorageTRES? contrib/lab/lab up)", got, want)
	}
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
	replayed := func(out string) int {
		t.Helper()
		m := jobsRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no job count in the header")
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	leftOut := func(out, reason string) int {
		t.Helper()
		m := regexp.MustCompile(`warning: (\d+) jobs left out, no node of the cluster can run them: ` + regexp.QuoteMeta(reason)).FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The lab's layout, debug first: the jobs are routed by the partition
	// the database recorded, not to the default, and by their type.
	ok := run("debug:nodes=1,per-node=4;" + hi + "+" + e.Partition + ":nodes=2,per-node=4,type=h100")
	if n := replayed(ok); n < len(ids) {
		t.Errorf("%d jobs replayed on the lab's layout, want at least our %d", n, len(ids))
	}
	if strings.Contains(ok, "warning:") {
		t.Errorf("the lab's layout: jobs left out")
	}
	// gpuhi's nodes of another type: its h100 jobs have nowhere to run,
	// gpu's still run on gpu's H100s.
	typed := run(e.Partition + ":nodes=2,per-node=4,type=h100;" + hi + ":nodes=2,per-node=4,type=a100")
	if n := leftOut(typed, `no h100 node in partition "`+hi+`"`); n < perPart[hi] {
		t.Errorf("gpuhi of A100s: %d jobs left out for want of an h100 node in gpuhi, want at least our %d", n, perPart[hi])
	}
	if n := replayed(typed); n < perPart[e.Partition] {
		t.Errorf("gpuhi of A100s: %d jobs replayed, want at least gpu's %d", n, perPart[e.Partition])
	}
	if strings.Contains(typed, `partition "`+e.Partition+`"`) {
		t.Errorf("gpuhi of A100s: a job of %s left out", e.Partition)
	}
	// The lab's partition shrunk to one 1-GPU node: its jobs of more
	// GPUs are left out, though debug's nodes could hold them.
	small := run("debug:nodes=2,per-node=4;" + hi + ":nodes=2,per-node=4,type=h100;" + e.Partition + ":nodes=1,per-node=1,type=h100")
	larger := 0
	for i := range ids {
		if i%3 != 2 && 1+i%4 > 1 {
			larger++
		}
	}
	if n := leftOut(small, `larger than partition "`+e.Partition+` (h100)"`); n < larger {
		t.Errorf("partition %s of one 1-GPU node: %d jobs left out as larger, want at least our %d", e.Partition, n, larger)
	}
	// Without the lab's partitions no job can run, and the error says why.
	out, err := runApp(t, "simulate", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since,
		"--policies", "fifo", "--parallel", "1", "--progress", "never", "--partitions", "debug:nodes=2,per-node=4")
	want := regexp.MustCompile(`no job to simulate \(left out: .*\b(\d+) partition "` + regexp.QuoteMeta(e.Partition) + `" not in the cluster`)
	var m []string
	if err != nil {
		m = want.FindStringSubmatch(err.Error())
	}
	if m == nil {
		t.Fatalf("a layout without partition %s: err %v, want %s\n%s", e.Partition, err, want, out)
	}
	if n, _ := strconv.Atoi(m[1]); n < perPart[e.Partition] {
		t.Errorf("a layout without partition %s: %d jobs left out, want at least our %d", e.Partition, n, perPart[e.Partition])
	}

	// slurmdbd named the node each job ran on: power eval --from-db
	// counts node use by them, and says that minutes of history are too
	// few for its split.
	var unnamed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM job WHERE cluster = $1 AND name = $2 AND start_time IS NOT NULL AND hosts IS NULL`, e.Cluster, tag).Scan(&unnamed); err != nil {
		t.Fatal(err)
	}
	if unnamed != 0 {
		t.Errorf("%d of our jobs that ran have no hosts stored", unnamed)
	}
	out, err = runApp(t, "power", "eval", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since)
	if err == nil || !strings.Contains(err.Error(), "whole days") {
		t.Fatalf("power eval --from-db on minutes of history: err %v, want one saying it is too short\n%s", err, out)
	}
	note := regexp.MustCompile(`node use of cluster ` + regexp.QuoteMeta(e.Cluster) + `: (\d+) jobs that ran since .*, (\d+) of them with their nodes named`).FindStringSubmatch(out)
	if note == nil {
		t.Fatalf("power eval --from-db: no line saying what it read:\n%s", out)
	}
	if ran, _ := strconv.Atoi(note[1]); ran < len(ids) || note[2] != note[1] {
		t.Errorf("power eval --from-db read %s jobs, %s with nodes named; want at least our %d, all named", note[1], note[2], len(ids))
	}
}

// TestLab_ReportPartitions writes the lab month's report (report.json)
// with --partitions, on jobs run in both of the lab's partitions, gpu and
// gpuhi, and ingested from slurmdbd: on the lab's layout the
// counterfactual replays every job on the layout's 8 GPUs; on a layout
// without gpuhi it leaves out gpuhi's jobs and names them, as simulate
// --from-db does, and the report's note says which partitions the month
// was replayed on.
func TestLab_ReportPartitions(t *testing.T) {
	e := lab.Get(t)
	dbURL, conn := throwawayDB(t, e)
	tag := fmt.Sprintf("repparts%d", time.Now().UnixNano()%1e6)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	month := time.Now().UTC().Format("2006-01")

	waitQueueEmpty(t, e)
	const hi = "gpuhi"
	perPart := map[string]int{}
	var ids []int64
	for i := range 6 {
		part := e.Partition
		if i%2 == 1 {
			part = hi
		}
		perPart[part]++
		ids = append(ids, e.Submit(t, "alice", "-J", tag, "-p", part, fmt.Sprintf("--gres=gpu:%d", 1+i%4), "-t", "1", "--wrap", "sleep 1"))
	}
	ingestLabJobs(t, e, dbURL, conn, tag, since, ids)

	type counterfactual struct {
		Jobs    int            `json:"jobs"`
		Skipped map[string]int `json:"skipped"`
		Cluster struct {
			Layout *struct{ Partitions []string }
		} `json:"cluster"`
	}
	report := func(spec string) (counterfactual, []string, float64) {
		t.Helper()
		dir := t.TempDir()
		out, err := runApp(t, "report", "--database-url", dbURL, "--cluster", e.Cluster, "--month", month, "--format", "json",
			"--out", dir, "--sim-policy", "fifo", "--sim-predictor", "none", "--progress", "never", "--partitions", spec)
		if err != nil {
			t.Fatalf("report --partitions %s: %v\n%s", spec, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Capacity       struct{ Units float64 } `json:"capacity"`
			Counterfactual *counterfactual         `json:"counterfactual"`
			Notes          []string                `json:"notes"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Counterfactual == nil {
			t.Fatalf("report --partitions %s: no counterfactual; notes %q", spec, r.Notes)
		}
		t.Logf("report --partitions %s: counterfactual of %d jobs, left out %v, notes %q", spec, r.Counterfactual.Jobs, r.Counterfactual.Skipped, r.Notes)
		return *r.Counterfactual, r.Notes, r.Capacity.Units
	}
	// The lab's nodes are H100s, and slurmdbd records the type a job was
	// given (AccountingStorageTRES lists gres/gpu:h100), so the layout
	// types them as the lab does.
	labLayout := e.Partition + "+" + hi + ":nodes=2,per-node=4,type=h100"
	all, notes, units := report(labLayout)
	// Other tests' CPU-only jobs in the lab's history ask for no GPU: left
	// out on a GPU cluster whatever its layout. No job may be left out for
	// its partition or GPU type.
	for why := range all.Skipped {
		if why != sim.SkipNoUnits {
			t.Errorf("the lab's layout: jobs left out: %v; want none but those asking for no GPU", all.Skipped)
		}
	}
	if all.Jobs < len(ids) {
		t.Errorf("the lab's layout: counterfactual of %d jobs; want at least our %d", all.Jobs, len(ids))
	}
	if l := all.Cluster.Layout; l == nil || strings.Join(l.Partitions, ",") != e.Partition+","+hi || units != 8 {
		t.Errorf("the lab's layout: counterfactual cluster %+v, capacity %g; want partitions %s,%s and 8 GPUs", l, units, e.Partition, hi)
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "partitions "+labLayout+";") }) {
		t.Errorf("the lab's layout: no note names it: %q", notes)
	}
	// Without gpuhi: its jobs are left out and named, gpu's still replay.
	noHi, notes, _ := report(e.Partition + ":nodes=2,per-node=4,type=h100;debug:nodes=1,per-node=4,type=h100")
	why := `partition "` + hi + `" not in the cluster`
	if n := noHi.Skipped[why]; n < perPart[hi] || noHi.Jobs != all.Jobs-n {
		t.Errorf("no gpuhi: %d jobs left out for %s and %d replayed; want at least our %d left out, the rest of %d replayed", n, why, noHi.Jobs, perPart[hi], all.Jobs)
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "left out, no node of the cluster can run them: "+why) }) {
		t.Errorf("no gpuhi: no note names the jobs left out: %q", notes)
	}
}

// TestLab_SimulatePartitionsFromSlurmrestd reads the layout from the lab's
// real slurmrestd (`simulate --partitions slurmrestd`): both partitions,
// gpu (the default) and gpuhi, over the two nodes of 4 H100s; and replays
// the lab's history on it: jobs of both partitions, asking h100 or any
// GPU, all run.
func TestLab_SimulatePartitionsFromSlurmrestd(t *testing.T) {
	e := lab.Get(t)
	dbURL, conn := throwawayDB(t, e)
	tag := fmt.Sprintf("simrest%d", time.Now().UnixNano()%1e6)
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	waitQueueEmpty(t, e)
	var ids []int64
	for i, part := range []string{e.Partition, "gpuhi", e.Partition, "gpuhi"} {
		gres := fmt.Sprintf("--gres=gpu:h100:%d", 1+i)
		if i%2 == 1 {
			gres = fmt.Sprintf("--gres=gpu:%d", 1+i)
		}
		ids = append(ids, e.Submit(t, "alice", "-J", tag, "-p", part, gres, "-t", "1", "--wrap", "sleep 1"))
	}
	ingestLabJobs(t, e, dbURL, conn, tag, since, ids)
	rest := []string{"--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile}
	out, err := runApp(t, append([]string{"simulate", "--from-db", "--database-url", dbURL, "--cluster", e.Cluster, "--since", since,
		"--policies", "fifo", "--parallel", "1", "--progress", "never", "--partitions", "slurmrestd"}, rest...)...)
	t.Logf("simulate --from-db --partitions slurmrestd:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\(accounting database\): (\d+) jobs on 2 nodes of gpus in partitions ` +
		regexp.QuoteMeta(e.Partition+"+gpuhi:nodes=2,per-node=4,type=h100") + `, `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the header does not name the lab's layout, %s+gpuhi:nodes=2,per-node=4,type=h100 (the default first)", e.Partition)
	}
	if n, _ := strconv.Atoi(m[1]); n < len(ids) {
		t.Errorf("%d jobs replayed on the live layout, want at least our %d", n, len(ids))
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("the live layout: jobs left out")
	}
}

// ingestLabJobs waits for the lab jobs ids (named tag) to complete and
// ingests slurmdbd's records since since into dbURL until all of them are
// stored; SLURM_CONF is the lab's for the rest of the test.
func ingestLabJobs(t *testing.T, e *lab.Env, dbURL string, conn *pgx.Conn, tag, since string, ids []int64) {
	t.Helper()
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
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM job WHERE cluster = $1 AND name = $2 AND end_time IS NOT NULL`,
			e.Cluster, tag).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		return stored == len(ids)
	})
}
