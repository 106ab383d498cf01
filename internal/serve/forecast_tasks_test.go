package serve

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// capture2411 reads the 24.11.7 capture's cluster (v0.0.42) through a
// client, as serve does, and the capture's time.
func capture2411(t *testing.T) (*slurmctl.Cluster, time.Time) {
	t.Helper()
	dir := shareddata.Dir(t, "data", "slurmrestd", "slurm-24.11.7")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := map[string]string{"/slurm/v0.0.42/jobs": "jobs.json", "/slurm/v0.0.42/nodes": "nodes.json",
			"/slurm/v0.0.42/partitions": "partitions.json"}[r.URL.Path]
		if name == "" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(dir, "v0.0.42", name))
	}))
	defer srv.Close()
	c, err := slurmctl.New(context.Background(), slurmctl.Config{URL: srv.URL, User: "root", Token: slurmctl.StaticToken(testToken(t)),
		Version: slurmctl.V0042}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	at, err := os.ReadFile(filepath.Join(dir, "cli", "captured-at.txt"))
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse(time.RFC3339, strings.TrimSpace(string(at)))
	if err != nil {
		t.Fatal(err)
	}
	return cl, now
}

// TestQueueForecast_ArrayTasksAndShards: in the 24.11.7 capture, job 10
// is an array's pending record 10_[2-9] (8 one-GPU tasks) and job 15 asks
// for 3 shards, on two nodes of 4 H100s split into 16 shards, whose GPUs
// and shards running jobs hold. The forecast plays the record as 8 jobs
// (they cannot all start at once: the first and the last task start at
// different times) and counts the shard job's shards (it waits for room
// instead of "fitting now" with 0 GPUs).
func TestQueueForecast_ArrayTasksAndShards(t *testing.T) {
	cl, now := capture2411(t)
	m := MachineOf(cl, nil)
	if m != (schedule.Machine{Nodes: 2, PerNode: 16, ShardsPerGPU: 4}) {
		t.Fatalf("machine %+v, want 2 nodes of 4 GPUs counted in 16 shards", m)
	}
	pending := cl.Pending()
	jobs := map[int64]*policy.Job{}
	var ranking []policy.Score
	for i := range pending {
		jobs[pending[i].ID] = &pending[i]
		ranking = append(ranking, policy.Score{JobID: pending[i].ID, Value: float64(-pending[i].ID)})
	}
	if jobs[10] == nil || jobs[10].Tasks != 8 || jobs[15] == nil || jobs[15].Shards != 3 {
		t.Fatalf("capture read: job 10 %+v, job 15 %+v; want 8 tasks and 3 shards", jobs[10], jobs[15])
	}
	snap := &policy.Snapshot{Now: now, Pending: pending, Running: cl.Running(), Predicted: map[int64]time.Duration{}}
	q, err := NewQueueForecast("fifo", m, snap, snap.Running, ranking)
	if err != nil {
		t.Fatal(err)
	}
	arr, ok := q.Job(10)
	if !ok || arr.Tasks != 8 || arr.GPUs != 1 || arr.ExpectedStart == nil || arr.LastTaskExpectedStart == nil ||
		!arr.LastTaskExpectedStart.After(*arr.ExpectedStart) {
		t.Errorf("array record 10: %+v; want 8 tasks of 1 GPU, the last starting after the first", arr)
	}
	sh, ok := q.Job(15)
	if !ok || sh.Shards != 3 || sh.ExpectedStart == nil || !sh.ExpectedStart.After(now) {
		t.Errorf("shard job 15: %+v; want it to wait for 3 shards to free, not start now", sh)
	}
	t.Logf("job 10: tasks start %s .. %s; job 15 starts %s (capture at %s)", arr.ExpectedStart.Format(time.TimeOnly),
		arr.LastTaskExpectedStart.Format(time.TimeOnly), sh.ExpectedStart.Format(time.TimeOnly), now.Format(time.TimeOnly))
}

// testToken is a well-formed JWT good for an hour; the fake servers do
// not check signatures.
func testToken(t *testing.T) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	exp := time.Now().Add(time.Hour)
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
		enc(fmt.Appendf(nil, `{"exp":%d,"iat":%d,"sun":"root"}`, exp.Unix(), exp.Add(-time.Hour).Unix())) + "." +
		enc([]byte("signature-not-checked"))
}
