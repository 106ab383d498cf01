package accounting_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// labHistory is the lab's slurmdbd as a HistorySource: through sacct, or
// through slurmrestd with a real slurmctl.Client.
func labHistory(t *testing.T, e *lab.Env, via string) accounting.HistorySource {
	t.Helper()
	if via == "sacct" {
		return &accounting.SacctHistory{Cluster: e.Cluster, Slurm: slurmctl.Commands{Runner: slurmctl.ExecRunner{SlurmConf: e.SlurmConf}}}
	}
	c, err := slurmctl.New(context.Background(), slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, nil)
	if err != nil {
		t.Fatalf("connect to the lab's slurmrestd: %v", err)
	}
	return &accounting.RESTHistory{Client: c, Cluster: e.Cluster}
}

// TestSyncHistory_Lab runs two jobs on the lab and pulls slurmdbd's history
// into a fresh database, once through sacct and once through slurmrestd:
// the jobs appear with their users, accounts and GPUs; pulling the same
// window again changes nothing; a later pull moves the watermark on.
func TestSyncHistory_Lab(t *testing.T) {
	for _, via := range []string{"sacct", "slurmrestd"} {
		t.Run(via, func(t *testing.T) { testSyncHistoryLab(t, via) })
	}
}

func testSyncHistoryLab(t *testing.T, via string) {
	e := lab.Get(t)
	src := labHistory(t, e, via)
	store, pool := freshStore(t)
	ctx := context.Background()
	tag := randomTag("fwacct-")
	began := time.Now().Add(-2 * time.Second)

	gpuJob := e.Submit(t, "alice", "-J", tag+"-gpu", "-p", e.Partition, "--gres=gpu:1", "--wrap", "sleep 1")
	shardJob := e.Submit(t, "carol", "-J", tag+"-shard", "-p", e.Partition, "--gres=shard:2", "--wrap", "sleep 1")
	e.WaitState(t, gpuJob, 3*time.Minute, "COMPLETED")
	e.WaitState(t, shardJob, 3*time.Minute, "COMPLETED")

	// One window [began, until): the first sync starts at Initial, and
	// every later one at the watermark (until) less Overlap.
	began = began.Truncate(time.Second)
	until := time.Now().Add(time.Second).Truncate(time.Second)
	opt := accounting.SyncOptions{Cluster: e.Cluster, Initial: began, Now: until, Overlap: until.Sub(began)}
	first, since, _, err := store.SyncHistory(ctx, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !since.Equal(began) || first.Rejected != 0 {
		t.Fatalf("first sync from %v: %+v; want from %v, nothing rejected", since, first, began)
	}
	// slurmdbd may answer a time-window query a moment later than the
	// per-job query WaitState polls (the production overlap covers this):
	// sync the same window until both jobs are in, idempotently.
	for deadline := time.Now().Add(30 * time.Second); ; {
		n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = ANY($2)`, e.Cluster, []int64{gpuJob, shardJob})
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
		if _, _, _, err := store.SyncHistory(ctx, src, opt); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		User, Account, State, Source string
		GPUs, Shards                 int
	}
	got := map[int64]row{}
	rows, err := pool.Query(ctx, `SELECT job_id, user_name, account, state, source, gpus, shards FROM job WHERE job_id = ANY($1) AND cluster = $2`,
		[]int64{gpuJob, shardJob}, e.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var r row
		if err := rows.Scan(&id, &r.User, &r.Account, &r.State, &r.Source, &r.GPUs, &r.Shards); err != nil {
			t.Fatal(err)
		}
		got[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[int64]row{
		gpuJob:   {User: "alice", Account: "physics", State: "COMPLETED", Source: "slurmdbd", GPUs: 1},
		shardJob: {User: "carol", Account: "chem", State: "COMPLETED", Source: "slurmdbd", Shards: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lab jobs in the job table (-want +got):\n%s", diff)
	}

	// The same window again.
	before := tableState(t, pool)
	second, _, _, err := store.SyncHistory(ctx, src, opt)
	if err != nil {
		t.Fatal(err)
	}
	if second.Inserted != 0 || second.Updated != 0 || second.Unchanged < 2 {
		t.Errorf("second sync of the same window: %+v, want nothing new", second)
	}
	if diff := cmp.Diff(before, tableState(t, pool)); diff != "" {
		t.Errorf("tables changed by re-reading the same window (-before +after):\n%s", diff)
	}

	later := until.Add(time.Minute)
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: e.Cluster, Now: later}); err != nil {
		t.Fatal(err)
	}
	wm, ok, err := store.Watermark(ctx, e.Cluster, "slurmdbd")
	if err != nil || !ok || !wm.Equal(later.UTC().Truncate(time.Second)) {
		t.Errorf("watermark = %v, %v, %v; want %v", wm, ok, err, later.UTC().Truncate(time.Second))
	}
}

// TestSyncHistory_LabKeepsDeadline runs a job with sbatch --deadline on the
// lab and records it as serve does, read from slurmctld through slurmrestd
// with its deadline; then it pulls slurmdbd's history, through sacct and
// through slurmrestd. slurmdbd's record of the job has no deadline and
// lands on the same row (same key), which keeps the deadline.
func TestSyncHistory_LabKeepsDeadline(t *testing.T) {
	for _, via := range []string{"sacct", "slurmrestd"} {
		t.Run(via, func(t *testing.T) { testSyncHistoryLabKeepsDeadline(t, via) })
	}
}

func testSyncHistoryLabKeepsDeadline(t *testing.T, via string) {
	e := lab.Get(t)
	src := labHistory(t, e, via)
	store, pool := freshStore(t)
	ctx := context.Background()
	tag := randomTag("fwdeadline-")
	began := time.Now().Add(-2 * time.Second).Truncate(time.Second)

	id := e.Submit(t, "alice", "-J", tag, "-p", e.Partition, "--deadline=now+3hours", "-t", "5", "--wrap", "sleep 1")
	e.WaitState(t, id, 3*time.Minute, "COMPLETED")

	// What serve records: the finished job as slurmctld reports it.
	c, err := slurmctl.New(ctx, slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fromCtld policy.Job
	for _, j := range listed {
		if j.ID == id {
			fromCtld = j.Job
		}
	}
	if fromCtld.ID != id || !fromCtld.State.Finished() || fromCtld.Deadline.IsZero() {
		t.Fatalf("slurmctld reports job %d as %+v; want it finished, with a deadline", id, fromCtld)
	}
	if sum, err := store.RecordFinished(ctx, "slurmctld", []policy.Job{fromCtld}); err != nil || sum.Inserted != 1 {
		t.Fatalf("record from slurmctld: %+v, %v; want 1 inserted", sum, err)
	}

	// Wait until slurmdbd's window query returns the job, then sync.
	until := time.Now().Add(time.Second).Truncate(time.Second)
	var fromDBD policy.Job
	for deadline := time.Now().Add(30 * time.Second); fromDBD.ID == 0; time.Sleep(time.Second) {
		jobs, _, err := src.FinishedJobs(ctx, began, until)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == id {
				fromDBD = j
			}
		}
		if fromDBD.ID == 0 && time.Now().After(deadline) {
			t.Fatalf("slurmdbd did not return job %d for [%v, %v)", id, began, until)
		}
	}
	if !fromDBD.Deadline.IsZero() {
		t.Errorf("job %d from slurmdbd via %s has deadline %v: read it in sacctJob", id, via, fromDBD.Deadline)
	}
	if _, _, _, err := store.SyncHistory(ctx, src, accounting.SyncOptions{Cluster: e.Cluster, Initial: began, Now: until}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id); n != 1 {
		t.Fatalf("%d rows for job %d after the sync, want 1: slurmctld's and slurmdbd's records have different keys", n, id)
	}
	jobs, err := store.FinishedJobs(ctx, e.Cluster, began, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got policy.Job
	for _, j := range jobs {
		if j.ID == id {
			got = j
		}
	}
	// slurmdbd's record, with the deadline only slurmctld knew.
	want := fromDBD
	want.Deadline = fromCtld.Deadline
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("job %d after the sync (-want +loaded):\n%s", id, diff)
	}
	var source string
	if err := pool.QueryRow(ctx, `SELECT source FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id).Scan(&source); err != nil {
		t.Fatal(err)
	}
	t.Logf("job %d: deadline %v kept; row last written by %s", id, got.Deadline, source)
}

// randomTag is prefix and 8 random hex digits: a job name no other test
// run on the shared lab uses.
func randomTag(prefix string) string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return prefix + hex.EncodeToString(rnd[:])
}

// TestSyncHistory_LabCancelledWhilePending cancels a held job on the lab and
// pulls slurmdbd's history into one database through sacct, slurmrestd and
// sacct again. Slurm sends such a job with a start time (NO_VAL from sacct
// on 24.11+, the query window's end from slurmrestd): the row must have no
// start after every pull, and the later pulls change nothing.
func TestSyncHistory_LabCancelledWhilePending(t *testing.T) {
	e := lab.Get(t)
	store, pool := freshStore(t)
	ctx := context.Background()
	began := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	// A job waiting for resources is eligible, so slurmdbd's window query
	// lists it (a held one never is): one job takes gpu1's four GPUs, a
	// second waits for one of them and is cancelled.
	tag := randomTag("fwcancel-")
	blocker := e.Submit(t, "bob", "-J", tag, "-p", e.Partition, "-w", "gpu1", "--gres=gpu:4", "-t", "2", "--wrap", "sleep 120")
	e.WaitState(t, blocker, time.Minute, "RUNNING")
	id := e.Submit(t, "bob", "-J", tag, "-p", e.Partition, "-w", "gpu1", "--gres=gpu:1", "-t", "1", "--wrap", "true")
	e.Run(t, "", "scancel", strconv.FormatInt(id, 10))
	e.WaitState(t, id, time.Minute, "CANCELLED")
	e.Run(t, "", "scancel", strconv.FormatInt(blocker, 10))
	until := time.Now().Add(time.Second).Truncate(time.Second)
	opt := accounting.SyncOptions{Cluster: e.Cluster, Initial: began, Now: until, Overlap: until.Sub(began)}

	for i, via := range []string{"sacct", "slurmrestd", "sacct"} {
		src := labHistory(t, e, via)
		var sum accounting.Summary
		// slurmdbd may list the job a moment after sacct -j does.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
			var err error
			if sum, _, _, err = store.SyncHistory(ctx, src, opt); err != nil {
				t.Fatal(err)
			}
			if countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id) == 1 || time.Now().After(deadline) {
				break
			}
		}
		var state string
		var start *time.Time
		if err := pool.QueryRow(ctx, `SELECT state, start_time FROM job WHERE cluster = $1 AND job_id = $2`, e.Cluster, id).Scan(&state, &start); err != nil {
			t.Fatalf("pull %d via %s: job %d: %v", i+1, via, id, err)
		}
		if state != "CANCELLED" || start != nil {
			t.Errorf("pull %d via %s: job %d is %s with start %v; want CANCELLED with no start", i+1, via, id, state, start)
		}
		if i > 0 && sum.Updated != 0 {
			t.Errorf("pull %d via %s of the same window: %+v; want nothing updated", i+1, via, sum)
		}
	}
}

// TestSacctHistory_NoRunner: without a runner SacctHistory runs nothing
// and says so.
func TestSacctHistory_NoRunner(t *testing.T) {
	_, _, err := (&accounting.SacctHistory{}).FinishedJobs(context.Background(), time.Now().Add(-time.Hour), time.Now())
	if err == nil || !strings.Contains(err.Error(), "no sacct runner configured") {
		t.Errorf("FinishedJobs = %v, want an error naming the missing runner", err)
	}
}
