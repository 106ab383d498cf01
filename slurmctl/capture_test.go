package slurmctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
)

// The real slurmrestd answers of Slurm 24.11.7 and 26.05.3 in the shared
// data (../shared/data/slurmrestd, README and MANIFEST.md there), read in
// place: every release x version combination they hold is replayed.

// release is one captured Slurm release.
type release struct {
	name     string // "26.05.3"
	dir      string
	versions []string // what it serves, oldest first
	cluster  string
	newest   string
}

func captureReleases(t testing.TB) []release {
	t.Helper()
	root := shareddata.Dir(t, "data", "slurmrestd")
	return []release{
		{name: "24.11.7", dir: filepath.Join(root, "slurm-24.11.7"), versions: []string{V0040, V0041, V0042}, cluster: "fwlab24", newest: V0042},
		{name: "26.05.3", dir: filepath.Join(root, "slurm-26.05.3"), versions: []string{V0042, V0043, V0044, V0045}, cluster: "fwlab", newest: V0045},
	}
}

// combo is one release x version.
type combo struct {
	release
	version string
}

func (c combo) String() string { return c.name + "/" + c.version }

func captureCombos(t testing.TB) []combo {
	var out []combo
	for _, r := range captureReleases(t) {
		for _, v := range r.versions {
			out = append(out, combo{r, v})
		}
	}
	if len(out) != 7 {
		t.Fatalf("%d release x version combinations, want the 7 captured", len(out))
	}
	return out
}

// captured reads a captured answer and its HTTP status (from the .headers
// file beside it).
func captured(t testing.TB, dir, name string) reply {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("capture %s: %v", name, err)
	}
	h, err := os.Open(filepath.Join(dir, name+".headers"))
	if err != nil {
		t.Fatalf("capture %s: %v", name, err)
	}
	defer h.Close()
	sc := bufio.NewScanner(h)
	sc.Scan()
	f := strings.Fields(sc.Text()) // HTTP/1.1 511 Network Authentication Required
	if len(f) < 2 {
		t.Fatalf("capture %s.headers: status line %q", name, sc.Text())
	}
	st, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("capture %s.headers: status line %q", name, sc.Text())
	}
	return reply{status: st, body: body}
}

func (c combo) reply(t testing.TB, name string) reply {
	t.Helper()
	return captured(t, filepath.Join(c.dir, c.version), name)
}

// path is the request path for this combo's version.
func (c combo) path(method, rest string) string {
	return method + " /" + rest[:strings.Index(rest, "/")] + "/" + c.version + rest[strings.Index(rest, "/"):]
}

// readRoutes answers the reads of a serve cycle and of explain from the
// captures of c.
func (c combo) readRoutes(t testing.TB) map[string][]reply {
	return map[string][]reply{
		c.path("GET", "slurm/jobs"):       {c.reply(t, "jobs.json")},
		c.path("GET", "slurm/nodes"):      {c.reply(t, "nodes.json")},
		c.path("GET", "slurm/partitions"): {c.reply(t, "partitions.json")},
		c.path("GET", "slurm/ping"):       {c.reply(t, "ping.json")},
		c.path("GET", "slurm/shares"):     {c.reply(t, "shares.json")},
		c.path("GET", "slurm/job/13"):     {c.reply(t, "job.pending-13.json")},
		c.path("GET", "slurm/job/6"):      {c.reply(t, "job.running-6.json")},
		c.path("GET", "slurm/job/10"):     {c.reply(t, "job.array-10.json")},
		c.path("GET", "slurm/job/18"):     {c.reply(t, "job.het-18.json")},
		c.path("GET", "slurm/job/16"):     {c.reply(t, "job.held-16.json")},
		c.path("GET", "slurm/job/999999"): {c.reply(t, "err.job-nonexistent-999999.json")},
		c.path("GET", "slurmdb/jobs"):     {c.reply(t, "slurmdb.jobs.fairway-query.json")},
		"GET /openapi/v3":                 {captured(t, c.dir, "openapi-v3.json")},
	}
}

// capturedView is what the manifests say of each job, checked in every
// combination. Priorities and nice are checked separately: the captures
// changed them as they went (MANIFEST.md, "State changes").
type capturedView struct {
	State      policy.State
	User       string
	Account    string
	Name       string
	GPUs       int
	GPUType    string
	Shards     int
	Nodes      int
	CPUs       int
	ArrayJob   int64
	ArrayTask  int
	ArrayTasks string
	TaskCount  int
	HetJob     bool
	Held       bool
	Reason     string // only for the held job; others move between Resources and Priority
	Deadline   bool
	Started    bool
	Ended      bool
	ExitCode   int
	Alloc      string // running: GRES allocation with device indices
}

func viewOf(j *Job) capturedView {
	v := capturedView{State: j.State, User: j.User, Account: j.Account, Name: j.Name, GPUs: j.GPUs, GPUType: j.GPUType,
		Shards: j.Shards, Nodes: j.Nodes, CPUs: j.CPUs, ArrayJob: j.ArrayJob, ArrayTask: j.ArrayTask, ArrayTasks: j.ArrayTasks,
		TaskCount: j.TaskCount, HetJob: j.HetJob, Held: j.Held, Deadline: !j.Deadline.IsZero(), Started: !j.Start.IsZero(),
		Ended: !j.End.IsZero(), ExitCode: j.ExitCode}
	if j.Held {
		v.Reason = j.Reason
	}
	for _, g := range j.GRESAlloc {
		v.Alloc += fmt.Sprintf("%s:%s:%d%v ", g.Name, g.Type, g.Count, g.Index)
	}
	v.Alloc = strings.TrimSpace(v.Alloc)
	return v
}

// manifestJobs is the queue of both MANIFEST.md files ("Queue at capture
// time"): same submission script, same ids.
func manifestJobs() map[int64]capturedView {
	done := func(user, acct, name string, gpus, shards int, st policy.State, exit int) capturedView {
		typ := ""
		if gpus > 0 {
			typ = "h100"
		}
		return capturedView{State: st, User: user, Account: acct, Name: name, GPUs: gpus, GPUType: typ, Shards: shards,
			Nodes: 1, CPUs: 1, ArrayTask: -1, TaskCount: 1, Started: true, Ended: true, ExitCode: exit}
	}
	run := func(user, acct, name string, gpus, shards int, alloc string) capturedView {
		v := done(user, acct, name, gpus, shards, policy.StateRunning, 0)
		v.Ended, v.Alloc = false, alloc
		return v
	}
	pend := func(user, acct, name string, gpus, shards int) capturedView {
		v := done(user, acct, name, gpus, shards, policy.StatePending, 0)
		v.Started, v.Ended = false, false
		return v
	}
	arrayTask := func(task int, idx string) capturedView {
		v := run("carol", "chem", "sweep", 1, 0, "gpu:h100:1["+idx+"]")
		v.ArrayJob, v.ArrayTask = 10, task
		return v
	}
	jobs := map[int64]capturedView{
		1:  done("alice", "physics", "prep-data", 1, 0, policy.StateCompleted, 0),
		2:  done("bob", "physics", "train-broken", 1, 0, policy.StateFailed, 3),
		3:  done("carol", "chem", "md-short", 0, 2, policy.StateCompleted, 0),
		4:  done("carol", "chem", "md-cancel", 1, 0, policy.StateCancelled, 128+15), // scancel: SIGTERM
		5:  done("alice", "physics", "eval-sig", 0, 0, policy.StateFailed, 128+9),
		6:  run("alice", "physics", "llm-pretrain", 2, 0, "gpu:h100:2[0 1]"),
		7:  run("bob", "physics", "vit-train", 2, 0, "gpu:h100:2[2 3]"),
		8:  run("carol", "chem", "md-sim", 0, 3, "shard::3[]"),
		9:  run("alice", "physics", "notebook", 0, 3, "shard::3[]"),
		11: arrayTask(0, "2"),
		12: arrayTask(1, "3"),
		13: pend("bob", "physics", "big-train", 4, 0),
		14: pend("alice", "physics", "finetune", 2, 0),
		15: pend("carol", "chem", "md-queue", 0, 3),
		17: pend("alice", "physics", "paper-deadline", 2, 0),
		20: pend("bob", "physics", "ablation", 1, 0),
		22: pend("bob", "physics", "gpus-flag", 3, 0),
	}
	arr := pend("carol", "chem", "sweep", 1, 0)
	arr.ArrayJob, arr.ArrayTasks, arr.TaskCount = 10, "2-9", 8
	jobs[10] = arr
	held := pend("bob", "physics", "later", 1, 0)
	held.Held, held.Reason = true, "JobHeldUser"
	jobs[16] = held
	dl := jobs[17]
	dl.Deadline = true
	jobs[17] = dl
	h0, h1 := pend("carol", "chem", "het-pipeline", 1, 0), pend("carol", "chem", "het-pipeline", 0, 2)
	h0.HetJob, h1.HetJob = true, true
	jobs[18], jobs[19] = h0, h1
	mp := pend("alice", "physics", "mp-job", 2, 0) // -n 2 --gpus-per-task=h100:1
	mp.CPUs = 2
	jobs[21] = mp
	return jobs
}

// TestCapture_Jobs replays /jobs of every combination and checks the
// translation of every job the manifests describe.
func TestCapture_Jobs(t *testing.T) {
	want := manifestJobs()
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			srv := newReplay(t, c.readRoutes(t))
			cl, err := testClient(t, srv.URL, c.version, nil).Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]capturedView{}
			for i := range cl.Jobs {
				j := &cl.Jobs[i]
				got[j.ID] = viewOf(j)
				if j.Cluster != c.cluster || j.Submit.IsZero() {
					t.Errorf("job %d: cluster %q, submit %v", j.ID, j.Cluster, j.Submit)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("jobs (-manifest +translated):\n%s", diff)
			}
			if cl.Slurm != c.name || cl.Version != c.version {
				t.Errorf("cluster read: Slurm %q, version %q; want %s, %s", cl.Slurm, cl.Version, c.name, c.version)
			}
			byID := map[int64]*Job{}
			for i := range cl.Jobs {
				byID[cl.Jobs[i].ID] = &cl.Jobs[i]
			}
			// Held: priority 0. Nice 100: 100 below the 10000 of its peers,
			// the whole capture long. Job 14 got nice 50 during the captures.
			if p := byID[16].Priority; p != 0 {
				t.Errorf("held job 16: priority %d, want 0", p)
			}
			if j := byID[20]; j.Nice != 100 || j.Priority != 9900 {
				t.Errorf("nice job 20: nice %d priority %d, want 100 and 9900", j.Nice, j.Priority)
			}
			// Only the pending, unheld, non-het records are writable; the
			// array's pending record is written through its plain id.
			if tg := byID[10].RESTTarget(c.version); tg != "10" {
				t.Errorf("array record 10: REST target %q, want 10", tg)
			}
			pending := cl.Pending()
			if len(pending) != 10 { // 10, 13, 14, 15, 17, 18, 19, 20, 21, 22 and not 16; het components included
				t.Errorf("%d pending jobs to rank, want 10", len(pending))
			}
			if g := cl.GPUs("gpu"); g != 8 {
				t.Errorf("GPUs(gpu) = %d, want 8", g)
			}
		})
	}
}

// TestCapture_NodesPartitions checks the node and partition answers of
// every combination against the manifests' node state.
func TestCapture_NodesPartitions(t *testing.T) {
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			srv := newReplay(t, c.readRoutes(t))
			cl := testClient(t, srv.URL, c.version, nil)
			nodes, err := cl.ListNodes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			type nv struct {
				Name                    string
				Usable                  bool
				GPUs, Shards            int
				AllocGPUs, AllocShards  int
				CPUs                    int
				MemoryMB                int64
				GPUType                 string
				Partitions, StateSuffix string
			}
			var got []nv
			for i := range nodes {
				n := &nodes[i]
				got = append(got, nv{n.Name, n.Usable(), n.GPUs, n.Shards, n.AllocGPUs, n.AllocShards, n.CPUs, n.MemoryMB, n.GPUType,
					strings.Join(n.Partitions, ","), n.State[0]})
			}
			// gpu1: jobs 6 and 7 hold its 4 GPUs; gpu2: array tasks 11, 12
			// hold 2 GPUs, jobs 8 and 9 3 shards each.
			want := []nv{
				{"gpu1", true, 4, 16, 4, 0, 8, 16000, "h100", "gpu", "MIXED"},
				{"gpu2", true, 4, 16, 2, 6, 8, 16000, "h100", "gpu", "MIXED"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			parts, err := cl.ListPartitions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			wantParts := []Partition{{Name: "gpu", Nodes: "gpu[1-2]", State: "UP", TotalCPUs: 16, TotalNode: 2, GPUs: 8, Shards: 32, MaxTime: 24 * time.Hour,
				Default: c.version == V0045}} // flagged from v0.0.45 on
			if diff := cmp.Diff(wantParts, parts); diff != "" {
				t.Errorf("partitions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCapture_SingleJob replays GET /job/{id} for the pending, running,
// array, heterogeneous and held jobs.
func TestCapture_SingleJob(t *testing.T) {
	want := manifestJobs()
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			srv := newReplay(t, c.readRoutes(t))
			cl := testClient(t, srv.URL, c.version, nil)
			for id, wantIDs := range map[int64][]int64{13: {13}, 6: {6}, 10: {10, 11, 12}, 18: {18, 19}, 16: {16}} {
				recs, err := cl.GetJob(context.Background(), id)
				if err != nil {
					t.Fatalf("GetJob(%d): %v", id, err)
				}
				got := map[int64]capturedView{}
				for i := range recs {
					got[recs[i].ID] = viewOf(&recs[i])
				}
				w := map[int64]capturedView{}
				for _, k := range wantIDs {
					w[k] = want[k]
				}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("GetJob(%d) (-manifest +got):\n%s", id, diff)
				}
			}
			_, err := cl.GetJob(context.Background(), 999999)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 404 || !errors.Is(err, ErrHTTP) || len(ae.Slurm) == 0 || ae.Slurm[0].Number != 2017 {
				t.Errorf("GetJob(999999): %v, want HTTP 404 with error 2017", err)
			}
		})
	}
}

// TestCapture_Negotiate: each release's /openapi/v3 makes New pick the
// newest version both know, and log the release; every version a release
// serves can be pinned and read.
func TestCapture_Negotiate(t *testing.T) {
	for _, r := range captureReleases(t) {
		t.Run(r.name, func(t *testing.T) {
			c := combo{r, r.newest}
			srv := newReplay(t, c.readRoutes(t))
			var logs bytes.Buffer
			cl, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour)))},
				slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if cl.Version() != r.newest {
				t.Errorf("negotiated %s, want %s", cl.Version(), r.newest)
			}
			if !strings.Contains(logs.String(), "slurm_release="+r.name) {
				t.Errorf("the start log does not name Slurm %s:\n%s", r.name, logs.String())
			}
			for _, v := range r.versions {
				pc := combo{r, v}
				psrv := newReplay(t, pc.readRoutes(t))
				pinned := testClient(t, psrv.URL, v, nil)
				if cl, err := pinned.Read(context.Background()); err != nil || len(cl.Jobs) != 22 {
					t.Errorf("pinned %s: %v", v, err)
				}
			}
		})
	}
	// Versions a release does not serve: 404 (captured), an error naming
	// the status, no guessing.
	for _, tc := range []struct{ rel, file, version string }{
		{"24.11.7", "err.slurm-v0.0.38-jobs-404.json", V0038},
		{"26.05.3", "err.slurm-v0.0.41-jobs-404.json", V0041},
	} {
		for _, r := range captureReleases(t) {
			if r.name != tc.rel {
				continue
			}
			srv := newReplay(t, map[string][]reply{"GET /slurm/" + tc.version + "/jobs": {captured(t, r.dir, tc.file)}})
			_, err := testClient(t, srv.URL, tc.version, nil).ListJobs(context.Background())
			if !errors.Is(err, ErrHTTP) || !strings.Contains(err.Error(), "404") {
				t.Errorf("%s pinned %s: %v, want HTTP 404", r.name, tc.version, err)
			}
		}
	}
}

// TestCapture_NegotiateOnlyNewer: a server that offers only versions newer
// than Fairway knows gets one error naming both lists. The spec is the
// captured 26.05.3 one with its versions renumbered 4 up (v0.0.46-49),
// since no such release exists yet to capture.
func TestCapture_NegotiateOnlyNewer(t *testing.T) {
	r := captureReleases(t)[1]
	spec := captured(t, r.dir, "openapi-v3.json").body
	for _, v := range []string{V0045, V0044, V0043, V0042} {
		n := versionNumber(v)
		spec = bytes.ReplaceAll(spec, []byte(v), []byte("v0.0."+strconv.Itoa(n+4)))
	}
	srv := newReplay(t, map[string][]reply{"GET /openapi/v3": {{200, spec, 0}}})
	_, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour)))}, nil)
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("New: %v, want ErrVersion", err)
	}
	for _, s := range []string{"offers only v0.0.49, v0.0.48, v0.0.47, v0.0.46", "newer than every version Fairway knows", "v0.0.45, v0.0.44", "v0.0.38"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

// TestCapture_ReadErrors replays every captured failure of a read.
func TestCapture_ReadErrors(t *testing.T) {
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			for _, tc := range []struct {
				file    string
				want    error
				notWant error
			}{
				{"err.jobs-notoken.json", ErrUnauthorized, ErrServer},
				{"err.jobs-noheaders.json", ErrUnauthorized, ErrServer},
				{"err.jobs-forged-token.json", ErrTokenRejected, ErrServer},
				{"err.jobs-garbage-token.json", ErrTokenRejected, ErrServer},
			} {
				srv := newReplay(t, map[string][]reply{c.path("GET", "slurm/jobs"): {c.reply(t, tc.file)}})
				_, err := testClient(t, srv.URL, c.version, nil).ListJobs(context.Background())
				if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) {
					t.Errorf("%s: %v, want %v", tc.file, err, tc.want)
				}
				if n := srv.total(); n != 1 {
					t.Errorf("%s: %d requests, want 1 (no retry of a refused token without a renewable source)", tc.file, n)
				}
			}
			srv := newReplay(t, map[string][]reply{"GET /openapi/v3": {captured(t, c.dir, "err.openapi-v3-noheaders.json")}})
			if _, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour)))}, nil); !errors.Is(err, ErrUnauthorized) {
				t.Errorf("negotiation without auth: %v, want ErrUnauthorized", err)
			}
		})
	}
}

// TestCapture_SlurmdbJobs replays /slurmdb/<v>/jobs: Fairway's own query,
// an empty result, and a forged token (HTTP 502, error 7000).
func TestCapture_SlurmdbJobs(t *testing.T) {
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			since, until := time.Now().Add(-25*time.Hour), time.Now()
			srv := newReplay(t, map[string][]reply{c.path("GET", "slurmdb/jobs"): {c.reply(t, "slurmdb.jobs.fairway-query.json")}})
			sink := &recordSink{}
			found, err := testClient(t, srv.URL, c.version, nil).DBJobs(context.Background(), c.cluster, since, until, sink)
			if err != nil || !found || !slices.ContainsFunc(sink.records, func(r json.RawMessage) bool { return bytes.Contains(r, []byte(`"train-broken"`)) }) {
				t.Fatalf("DBJobs: %v (%d records)", err, len(sink.records))
			}
			if q := srv.urls[0].Query(); !strings.HasPrefix(q.Get("start_time"), "now-") || q.Get("cluster") != c.cluster || q.Get("skip_steps") != "true" {
				t.Errorf("query %s", srv.urls[0].RawQuery)
			}
			// Nothing found: no jobs and no warning logged (slurmrestd sends
			// "slurmdb_jobs_get() found nothing" as a warning, which was
			// logged at WARN for every empty day of an ingest).
			srv = newReplay(t, map[string][]reply{c.path("GET", "slurmdb/jobs"): {c.reply(t, "slurmdb.jobs.nothing-found-users-root.json")}})
			var logged bytes.Buffer
			cfg := Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour))), Version: c.version,
				RequestTimeout: time.Second, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond}
			quiet, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				t.Fatal(err)
			}
			if found, err := quiet.DBJobs(context.Background(), c.cluster, since, until, &recordSink{}); err != nil || found {
				t.Errorf("DBJobs, nothing found: found %v, %v; want none and no error", found, err)
			}
			if logged.Len() > 0 {
				t.Errorf("DBJobs, nothing found, logged:\n%s", logged.String())
			}
			srv = newReplay(t, map[string][]reply{c.path("GET", "slurmdb/jobs"): {c.reply(t, "slurmdb.err.jobs-forged-token.json")}})
			if _, err := testClient(t, srv.URL, c.version, nil).DBJobs(context.Background(), c.cluster, since, until, &recordSink{}); !errors.Is(err, ErrTokenRejected) || errors.Is(err, ErrServer) || srv.total() != 1 {
				t.Errorf("DBJobs, forged token: %v after %d requests, want ErrTokenRejected after 1", err, srv.total())
			}
		})
	}
}

// TestCapture_UpdateAnswers replays every captured answer to an update.
func TestCapture_UpdateAnswers(t *testing.T) {
	for _, c := range captureCombos(t) {
		t.Run(c.String(), func(t *testing.T) {
			for _, tc := range []struct {
				file     string
				target   string
				want     error // nil: success
				perJob   bool  // the Writer fails this job alone and goes on
				priority bool
			}{
				{file: "update.priority-22.json", target: "22", priority: true},
				{file: "update.site_factor-14.json", target: "14"},
				{file: "update.site_factor-array-plain-10.json", target: "10"},
				{file: "update.site_factor-het-18.json", target: "18"},
				{file: "update.nice-14.json", target: "14"},
				{file: "err.update-bad-field-14.json", target: "14", want: ErrRejected, perJob: true},
				{file: "err.update-bad-type-14.json", target: "14", want: ErrHTTP, perJob: true},
				{file: "err.update-nonexistent-999999.json", target: "999999", want: ErrHTTP, perJob: true},
				{file: "update.site_factor-array-10-pending-tasks.json", target: "10_[2-9]", want: ErrHTTP, perJob: true},
				{file: "err.update-forged-token-14.json", target: "14", want: ErrTokenRejected},
			} {
				path := "POST /slurm/" + c.version + "/job/" + strings.NewReplacer("[", "%5B", "]", "%5D").Replace(tc.target)
				srv := newReplay(t, map[string][]reply{path: {c.reply(t, tc.file)}})
				v := int64(4200)
				u := JobUpdate{SiteFactor: &v}
				if tc.priority {
					u = JobUpdate{Priority: &v}
				}
				err := testClient(t, srv.URL, c.version, nil).UpdateJob(context.Background(), tc.target, u)
				switch {
				case tc.want == nil && err != nil:
					t.Errorf("%s: %v, want success", tc.file, err)
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Errorf("%s: %v, want %v", tc.file, err, tc.want)
				case tc.want != nil && jobRejected(err) != tc.perJob:
					t.Errorf("%s: %v: per-job rejection %v, want %v", tc.file, err, !tc.perJob, tc.perJob)
				}
			}
		})
	}
	// v0.0.40 ignores a plain-integer priority with a warning: a failure.
	r := captureReleases(t)[0]
	c := combo{r, V0040}
	srv := newReplay(t, map[string][]reply{"POST /slurm/v0.0.40/job/22": {c.reply(t, "update.priority-plain-22.json")}})
	v := int64(400000)
	if err := testClient(t, srv.URL, V0040, nil).UpdateJob(context.Background(), "22", JobUpdate{Priority: &v}); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "Expected OpenAPI type=object") {
		t.Errorf("v0.0.40 answer with a type warning: %v, want ErrRejected quoting it", err)
	}
}

// TestCapture_Shares replays /slurm/<v>/shares in every combination (24.11's
// v0.0.40 and v0.0.41 print a bare Infinity, which must come out as valid
// JSON), and v0.0.38 gets a clear error without a request.
func TestCapture_Shares(t *testing.T) {
	for _, c := range captureCombos(t) {
		srv := newReplay(t, c.readRoutes(t))
		body, err := testClient(t, srv.URL, c.version, nil).Shares(context.Background())
		if err != nil || !json.Valid(body) || !bytes.Contains(body, []byte(`"physics"`)) {
			t.Errorf("%s: Shares: %v (%d bytes, valid JSON %v)", c, err, len(body), json.Valid(body))
		}
	}
	srv := newReplay(t, map[string][]reply{})
	_, err := testClient(t, srv.URL, V0038, nil).Shares(context.Background())
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "from slurmdbd (sacctmgr)") || srv.total() != 0 {
		t.Errorf("v0.0.38: %v after %d requests, want a clear error and none", err, srv.total())
	}
}

// TestCapture_PinnedVersionNotServed: pinning a version the release does
// not serve fails at connect, naming what it serves, instead of at the
// first read with a bare HTTP 404. The server answers the release's
// captured spec, and every other path with the release's captured 404.
func TestCapture_PinnedVersionNotServed(t *testing.T) {
	for _, tc := range []struct {
		rel, notFound, pin, serves string
	}{
		{"24.11.7", "err.slurm-v0.0.38-jobs-404.json", V0045, "v0.0.42, v0.0.41, v0.0.40"},
		{"24.11.7", "err.slurm-v0.0.38-jobs-404.json", V0038, "v0.0.42, v0.0.41, v0.0.40"},
		{"26.05.3", "err.slurm-v0.0.41-jobs-404.json", V0041, "v0.0.45, v0.0.44, v0.0.43, v0.0.42"},
	} {
		for _, r := range captureReleases(t) {
			if r.name != tc.rel {
				continue
			}
			t.Run(tc.rel+"/"+tc.pin, func(t *testing.T) {
				spec := captured(t, r.dir, "openapi-v3.json")
				nf := captured(t, r.dir, tc.notFound)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					rep := nf
					if req.URL.Path == "/openapi/v3" {
						rep = spec
					}
					w.WriteHeader(rep.status)
					_, _ = w.Write(rep.body)
				}))
				defer srv.Close()
				_, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour))),
					Version: tc.pin, RetryBase: time.Millisecond, RetryMax: time.Millisecond}, nil)
				if !errors.Is(err, ErrVersion) {
					t.Fatalf("New pinned %s: %v, want ErrVersion at connect", tc.pin, err)
				}
				for _, want := range []string{"pinned " + tc.pin, "Slurm " + tc.rel, "serves " + tc.serves} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				t.Logf("%v", err)
			})
		}
	}
	// A version the release serves connects, pinned.
	r := captureReleases(t)[0]
	spec := captured(t, r.dir, "openapi-v3.json")
	srv := newReplay(t, map[string][]reply{"GET /openapi/v3": {spec}})
	if c := testClient(t, srv.URL, V0040, nil); c.Release() != "24.11.7" {
		t.Errorf("pinned v0.0.40 on 24.11.7: release %q, want it read from the spec", c.Release())
	}
}
