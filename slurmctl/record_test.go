package slurmctl

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
)

var record = flag.Bool("record", false, "capture slurmrestd responses from the lab into testdata (make record)")

// rawCall sends one request with the given token ("" sends no auth
// headers) and returns the status and body as they came.
func rawCall(t *testing.T, env *lab.Env, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, env.RESTURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-SLURM-USER-NAME", env.RESTUser)
		req.Header.Set("X-SLURM-USER-TOKEN", token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// corrupt returns tok with its signature altered: still a well-formed,
// unexpired JWT, which only slurmctld can tell is bad.
func corrupt(tok string) string {
	i := strings.LastIndexByte(tok, '.')
	sig := []byte(tok[i+1:])
	for k := range sig {
		if sig[k] == 'A' {
			sig[k] = 'B'
		} else {
			sig[k] = 'A'
		}
	}
	return tok[:i+1] + string(sig)
}

// TestRecord captures the fixtures the unit tests replay: it submits a mix
// of the lab users' jobs (running and pending, GPUs and shards, arrays, a
// heterogeneous job, a held job, begin-time and dependency waits), saves
// what slurmrestd answers, then a set of failing calls. Only this run's jobs
// are kept in jobs.200.json. Run with `make record`.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("fixture capture; run with -record (make record)")
	}
	env := lab.Get(t)
	c := labClient(t, env, nil)
	dir := filepath.Join("testdata", c.Version())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(name string, status int, body []byte) {
		t.Helper()
		file := filepath.Join(dir, fmt.Sprintf("%s.%d.%s", name, status, ext(body)))
		if err := os.WriteFile(file, body, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s (%d bytes)", file, len(body))
	}
	tok := env.Token
	v := "/slurm/" + c.Version()
	name := tag(t)

	st, body := rawCall(t, env, "GET", "/openapi/v3", tok, nil)
	save("openapi", st, body)
	st, body = rawCall(t, env, "GET", v+"/ping", tok, nil)
	save("ping", st, body)

	// Running: gpu1 gets bob's shard job and two tasks of alice's array
	// (8 CPUs in all); carol takes gpu2 whole. Everything else pends.
	var all []int64
	sub := func(user, role string, args ...string) int64 {
		id := env.Submit(t, user, append([]string{"-J", name + "-" + role}, append(args, "--wrap", "sleep 600")...)...)
		all = append(all, id)
		return id
	}
	shard := sub("bob", "run-shard", "-w", "gpu1", "-c", "2", "--gres=shard:3", "-t", "20")
	arr := sub("alice", "array", "-w", "gpu1", "-c", "3", "--gres=gpu:h100:1", "--array=0-4", "-t", "20")
	excl := sub("carol", "run-excl", "-w", "gpu2", "--exclusive", "--gres=gpu:h100:4", "-t", "20")
	waitRunning(t, env, []int64{shard, excl}, 60*time.Second)
	if !waitFor(60*time.Second, func() bool {
		n := 0
		for _, s := range squeue(t, env, []int64{arr}) {
			if s[0] == "RUNNING" {
				n++
			}
		}
		return n >= 2
	}) {
		t.Fatalf("array %d: tasks 0 and 1 did not start", arr)
	}
	multi := sub("alice", "pend-multinode", "-N", "2", "--gres=gpu:h100:2", "--mem=2G", "-t", "30")
	sub("bob", "pend-untyped", "--gres=gpu:1", "-t", "15", "--qos=normal")
	sub("carol", "pend-shard", "--gres=shard:5", "-t", "10")
	sub("carol", "pend-gpus", "--gpus=2", "-t", "10")
	sub("bob", "pend-pertask", "-n", "2", "--gpus-per-task=1", "-t", "10")
	all = append(all, env.Submit(t, "bob", "-J", name+"-het", "-c", "1", "--gres=gpu:1", "-t", "10", ":", "-c", "1", "-t", "10", "--wrap", "sleep 600"))
	limited := sub("bob", "array-limited", "--array=0-9%2", "--gres=gpu:1", "-t", "5")
	sub("carol", "held", "--hold", "--gres=shard:5", "-t", "10")
	begin := sub("alice", "begin", "--begin=now+1hour", "-t", "5")
	sub("alice", "dependency", "--dependency=afterok:"+strconv.FormatInt(multi, 10), "-t", "5")
	// Capture a settled queue: every pending job has been looked at by the
	// scheduler and carries its reason (not "None").
	if !waitFor(90*time.Second, func() bool {
		for _, st := range squeue(t, env, all) {
			if st[0] == "PENDING" && st[1] == "None" {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("pending jobs still without a reason after 90s: %v", squeue(t, env, all))
	}

	st, body = rawCall(t, env, "GET", v+"/jobs", tok, nil)
	if st != 200 {
		t.Fatalf("GET jobs: HTTP %d", st)
	}
	save("jobs", st, keepJobs(t, body, name))
	st, body = rawCall(t, env, "GET", v+"/nodes", tok, nil)
	save("nodes", st, body)
	st, body = rawCall(t, env, "GET", v+"/partitions", tok, nil)
	save("partitions", st, body)

	// Failing and write calls, all on this run's jobs.
	mine := func(role string) int64 {
		out := env.Run(t, "", "squeue", "-h", "-n", name+"-"+role, "-o", "%A")
		id, err := strconv.ParseInt(strings.Fields(out)[0], 10, 64)
		if err != nil {
			t.Fatalf("squeue %s: %q", role, out)
		}
		return id
	}
	untyped, pshard := mine("pend-untyped"), mine("pend-shard")
	st, body = rawCall(t, env, "POST", v+"/job/"+strconv.FormatInt(untyped, 10), tok, []byte(`{"site_factor": 5}`))
	save("update-site-factor", st, body)
	st, body = rawCall(t, env, "POST", v+"/job/"+strconv.FormatInt(pshard, 10), tok, []byte(`{"priority": 4242}`))
	save("update-priority", st, body)
	st, body = rawCall(t, env, "POST", v+"/job/"+strconv.FormatInt(limited, 10)+"_%5B0-9%5D", tok, []byte(`{"priority": 4243}`))
	save("update-array", st, body)
	st, body = rawCall(t, env, "GET", v+"/job/4294967000", tok, nil)
	save("job-missing", st, body)
	st, body = rawCall(t, env, "GET", v+"/jobs", corrupt(tok), nil)
	save("jobs-bad-token", st, body)
	st, body = rawCall(t, env, "GET", v+"/nodes", corrupt(tok), nil)
	save("nodes-bad-token", st, body)
	st, body = rawCall(t, env, "POST", v+"/job/"+strconv.FormatInt(untyped, 10), corrupt(tok), []byte(`{"priority": 4244}`))
	save("update-bad-token", st, body)
	gpus := mine("pend-gpus")
	env.Run(t, "", "scancel", strconv.FormatInt(gpus, 10))
	env.WaitState(t, gpus, 30*time.Second, "CANCELLED")
	st, body = rawCall(t, env, "POST", v+"/job/"+strconv.FormatInt(gpus, 10), tok, []byte(`{"priority": 4245}`))
	save("update-finished", st, body)
	st, body = rawCall(t, env, "GET", v+"/jobs", "", nil)
	save("jobs-no-auth", st, body)

	// sprio after two site factors, and scontrol's stderr for a batch with
	// a finished job and a job that never existed.
	env.Run(t, "", "scontrol", "update", "jobid="+strconv.FormatInt(multi, 10), "sitefactor=1234")
	env.Run(t, "", "scontrol", "update", "jobid="+strconv.FormatInt(untyped, 10), "sitefactor=77")
	out := env.Run(t, "", "sprio", "-h", "-j", idList([]int64{multi, untyped, arr}), "-o", "%i %S")
	writeFile(t, filepath.Join(dir, "sprio.txt"), []byte(out))
	env.Run(t, "", "scancel", strconv.FormatInt(begin, 10))
	env.WaitState(t, begin, 30*time.Second, "CANCELLED")
	stdin := scontrolBatch([]Change{
		{Target: strconv.FormatInt(multi, 10), To: 1235},
		{Target: strconv.FormatInt(begin, 10), To: 1235},
		{Target: "4294967000", To: 9},
		{Target: strconv.FormatInt(arr, 10) + "_[2-4]", To: 9},
	}, 200)
	_, stderr, err := (ExecRunner{SlurmConf: env.SlurmConf}).Run(t.Context(), stdin, "scontrol")
	t.Logf("scontrol batch: %v", err)
	writeFile(t, filepath.Join(dir, "scontrol-batch.stdin"), stdin)
	writeFile(t, filepath.Join(dir, "scontrol-batch.stderr"), stderr)
}

func ext(b []byte) string {
	if json.Valid(b) {
		return "json"
	}
	return "txt"
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s (%d bytes)", path, len(b))
}

// keepJobs keeps the records whose name starts with prefix, each verbatim.
func keepJobs(t *testing.T, body []byte, prefix string) []byte {
	t.Helper()
	var r struct {
		Meta   json.RawMessage   `json:"meta"`
		Errors json.RawMessage   `json:"errors"`
		Jobs   []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("jobs: %v", err)
	}
	kept := r.Jobs[:0]
	for _, j := range r.Jobs {
		var n struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(j, &n); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(n.Name, prefix) {
			kept = append(kept, j)
		}
	}
	r.Jobs = kept
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}
