package lab_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// restVersion is the REST API version the lab's slurmrestd and Fairway
// both speak (v0.0.38 on Debian's 22.05, the newest data_parser version
// with FAIRWAY_LAB_SLURM_PREFIX pointing at a newer Slurm).
func restVersion(t *testing.T, e *lab.Env) string {
	t.Helper()
	c, err := slurmctl.New(t.Context(), slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, nil)
	if err != nil {
		t.Fatalf("negotiate with the lab's slurmrestd: %v", err)
	}
	return c.Version()
}

// restGet fetches path from the lab's slurmrestd with the lab's JWT and
// decodes the JSON body, failing on transport errors, non-200 or a non-empty
// errors array.
func restGet(t *testing.T, e *lab.Env, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.RESTURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SLURM-USER-NAME", e.RESTUser)
	req.Header.Set("X-SLURM-USER-TOKEN", e.Token)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	var env struct {
		Errors []json.RawMessage `json:"errors"`
	}
	body := json.NewDecoder(resp.Body)
	var raw json.RawMessage
	if err := body.Decode(&raw); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("GET %s: decode errors: %v", path, err)
	}
	if len(env.Errors) > 0 {
		t.Fatalf("GET %s: slurmrestd errors: %s", path, env.Errors)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
}

// TestLab_JobsRunOnGPUsAsTwoUsers submits GPU jobs as two Unix users from
// different accounts, checks that Slurm handed each its fake GPUs, reads the
// jobs back through slurmrestd with a JWT, and reads a finished job from
// slurmdbd through slurmrestd's slurmdbd plugin.
func TestLab_JobsRunOnGPUsAsTwoUsers(t *testing.T) {
	e := lab.Get(t)
	if len(e.Users) < 3 {
		t.Fatalf("lab has %d users, want at least 3", len(e.Users))
	}
	accounts := map[string]bool{}
	for _, u := range e.Users {
		accounts[u.Account] = true
	}
	if len(accounts) < 2 {
		t.Fatalf("lab users span %d accounts, want at least 2", len(accounts))
	}
	// One user from each of two different accounts.
	u1 := e.Users[0]
	var u2 lab.User
	for _, u := range e.Users {
		if u.Account != u1.Account {
			u2 = u
			break
		}
	}

	tag := fmt.Sprintf("labtest-%d", time.Now().UnixNano())
	type sub struct {
		user lab.User
		gres string
		id   int64
		out  string
	}
	subs := []*sub{{user: u1, gres: "gpu:2"}, {user: u2, gres: "gpu:1"}, {user: u2, gres: "shard:3"}}
	for i, s := range subs {
		s.out = filepath.Join(e.JobDir, fmt.Sprintf("%s-%d.out", tag, i))
		s.id = e.Submit(t, s.user.Name, "--job-name="+tag, "-p", e.Partition, "--gres="+s.gres, "-t", "2",
			"-o", s.out, "--wrap", `echo "user=$(id -un) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS=$SLURM_JOB_GPUS SHARDS=$SLURM_SHARDS_ON_NODE"`)
	}
	for _, s := range subs {
		e.WaitState(t, s.id, 90*time.Second, "COMPLETED")
		b, err := os.ReadFile(s.out)
		if err != nil {
			t.Fatalf("job %d output: %v", s.id, err)
		}
		out := strings.TrimSpace(string(b))
		t.Logf("job %d (%s, %s): %s", s.id, s.user.Name, s.gres, out)
		if !strings.Contains(out, "user="+s.user.Name+" ") {
			t.Errorf("job %d ran as %q, want user %s", s.id, out, s.user.Name)
		}
		var cvd string
		for _, f := range strings.Fields(out) {
			if v, ok := strings.CutPrefix(f, "CUDA_VISIBLE_DEVICES="); ok {
				cvd = v
			}
		}
		wantN := 1
		if s.gres == "gpu:2" {
			wantN = 2
		}
		if got := len(strings.Split(cvd, ",")); cvd == "" || got != wantN {
			t.Errorf("job %d (%s): CUDA_VISIBLE_DEVICES=%q, want %d device(s)", s.id, s.gres, cvd, wantN)
		}
		if s.gres == "shard:3" && !strings.Contains(out, "SHARDS=3") {
			t.Errorf("shard job %d: %q, want SLURM_SHARDS_ON_NODE=3", s.id, out)
		}
	}

	// Through slurmrestd with the JWT: the finished jobs are still in
	// slurmctld's memory (MinJobAge=30).
	v := restVersion(t, e)
	var live struct {
		Jobs []struct {
			JobID     int64           `json:"job_id"`
			UserName  string          `json:"user_name"`
			Account   string          `json:"account"`
			JobState  json.RawMessage `json:"job_state"` // "COMPLETED" on v0.0.38, ["COMPLETED"] later
			Name      string          `json:"name"`
			TRESAlloc string          `json:"tres_alloc_str"`
		} `json:"jobs"`
	}
	restGet(t, e, "/slurm/"+v+"/jobs", &live)
	seen := map[int64]bool{}
	for _, j := range live.Jobs {
		for _, s := range subs {
			if j.JobID == s.id {
				seen[j.JobID] = true
				if j.UserName != s.user.Name || j.Account != s.user.Account || j.Name != tag {
					t.Errorf("REST job %d: user %q account %q name %q, want %q %q %q", j.JobID, j.UserName, j.Account, j.Name, s.user.Name, s.user.Account, tag)
				}
				if want := "gres/" + strings.Split(s.gres, ":")[0] + "="; !strings.Contains(j.TRESAlloc, want) {
					t.Errorf("REST job %d: tres_alloc_str %q lacks %s", j.JobID, j.TRESAlloc, want)
				}
			}
		}
	}
	if len(seen) != len(subs) {
		t.Errorf("slurmrestd listed %d of our %d jobs", len(seen), len(subs))
	}

	// From slurmdbd through slurmrestd (dbv0.0.38 on 22.05, openapi/slurmdbd
	// later). slurmdbd receives job records asynchronously; poll briefly.
	id := subs[0].id
	var hist struct {
		Jobs []struct {
			JobID   int64  `json:"job_id"`
			User    string `json:"user"`
			Account string `json:"account"`
			State   struct {
				Current json.RawMessage `json:"current"` // a string on v0.0.38, a list later
			} `json:"state"`
			Time struct {
				Elapsed int64 `json:"elapsed"`
				Start   int64 `json:"start"`
				End     int64 `json:"end"`
			} `json:"time"`
		} `json:"jobs"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		restGet(t, e, fmt.Sprintf("/slurmdb/%s/job/%d", v, id), &hist)
		if len(hist.Jobs) == 1 && strings.Contains(string(hist.Jobs[0].State.Current), `"COMPLETED"`) && hist.Jobs[0].Time.End > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmdbd: job %d not recorded as finished after 30s: %+v", id, hist.Jobs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	h := hist.Jobs[0]
	if h.JobID != id || h.User != u1.Name || h.Account != u1.Account {
		t.Errorf("slurmdbd job: id %d user %q account %q, want %d %q %q", h.JobID, h.User, h.Account, id, u1.Name, u1.Account)
	}
}

// TestLab_RESTRejectsMissingAndBadTokens checks the auth behaviour the
// slurmctl client relies on: no token gives 401, a forged one is refused.
func TestLab_RESTRejectsMissingAndBadTokens(t *testing.T) {
	e := lab.Get(t)
	v := restVersion(t, e)
	// A real read: 24.11 and 26.05 answer /ping with HTTP 200 even to a
	// forged token (26.05's body says "responding": false), so ping says
	// nothing about authentication.
	path := "/slurm/" + v + "/jobs"
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"no-headers", nil, false},
		{"forged-token", map[string]string{"X-SLURM-USER-NAME": "root", "X-SLURM-USER-TOKEN": "eyJhbGciOiJIUzI1NiJ9.e30.forged"}, false},
		{"lab-token", map[string]string{"X-SLURM-USER-NAME": e.RESTUser, "X-SLURM-USER-TOKEN": e.Token}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.RESTURL+path, nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == http.StatusOK; got != tc.ok {
				t.Fatalf("GET %s: HTTP %d; want 200 only with the lab's token", path, resp.StatusCode)
			}
			t.Logf("status %d", resp.StatusCode)
		})
	}
}

// TestLab_SubmitDoesNotPassRootsToken submits as bob through both doors
// tests and users have, Env.Submit and `lab submit`, with root's SLURM_JWT
// in the environment as `lab env` exports it. Slurm 24.11+ sbatch
// authenticates with a SLURM_JWT it finds, so a leaked token makes the job
// root's; on every release the job's environment would show it. Each job
// must run as bob, with no SLURM_JWT.
func TestLab_SubmitDoesNotPassRootsToken(t *testing.T) {
	e := lab.Get(t)
	t.Setenv("SLURM_JWT", e.Token)
	check := `test "$(id -un)" = bob && test -z "${SLURM_JWT:-}"`
	viaEnv := e.Submit(t, "bob", "-p", e.Partition, "-t", "1", "--wrap", check)

	script, err := filepath.Abs("lab")
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Try("", script, "submit", "bob", "-p", e.Partition, "-t", "1", "--wrap", check)
	if err != nil {
		t.Fatalf("lab submit: %v", err)
	}
	viaScript, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("lab submit printed %q, want a job id", out)
	}
	t.Cleanup(func() { _, _ = e.Try("", "scancel", strconv.FormatInt(viaScript, 10)) })

	for door, id := range map[string]int64{"Env.Submit": viaEnv, "lab submit": viaScript} {
		state := e.WaitState(t, id, 90*time.Second, "COMPLETED", "FAILED")
		user := strings.TrimSpace(e.Run(t, "", "sacct", "-n", "-X", "-P", "-o", "User", "-j", strconv.FormatInt(id, 10)))
		if state != "COMPLETED" || user != "bob" {
			t.Errorf("%s: job %d ran as %q and ended %s; want bob, COMPLETED (no SLURM_JWT in its environment)", door, id, user, state)
		}
	}
}

// TestLabScript_StatesReady feeds the lab script's readiness check the node
// states sinfo prints: a node planned by backfill (`mix-`, on a busy lab)
// is ready; a node down, drained, powered off or not responding is not.
func TestLabScript_StatesReady(t *testing.T) {
	for _, tc := range []struct {
		sinfo string
		ready bool
	}{
		{"gpu1 idle\ngpu2 idle", true},
		{"gpu1 mix-\ngpu2 alloc", true},
		{"gpu1 alloc-\ngpu2 plnd", true},
		{"gpu1 idle\ngpu1 idle\ngpu2 comp", true}, // a node in two partitions
		{"gpu1 idle*\ngpu2 idle", false},
		{"gpu1 idle~\ngpu2 idle", false},
		{"gpu1 down\ngpu2 idle", false},
		{"gpu1 drain\ngpu2 idle", false},
		{"gpu1 idle", false},
	} {
		cmd := exec.Command("bash", "-c", "LAB_SOURCE_ONLY=1 source ./lab && states_ready")
		cmd.Stdin = strings.NewReader(tc.sinfo + "\n")
		out, err := cmd.CombinedOutput()
		if got := err == nil; got != tc.ready {
			t.Errorf("states_ready on %q: ready %v, want %v (%v %s)", tc.sinfo, got, tc.ready, err, out)
		}
	}
}

// TestLabScript_MultipleSlurmd feeds the lab's check lines of `scontrol
// show config`: a Slurm built without multiple-slurmd support (no
// MULTIPLE_SLURMD line) runs the lab's first node only, so lab up must stop
// and say why instead of leaving a second node slurmctld never reaches.
func TestLabScript_MultipleSlurmd(t *testing.T) {
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{"MpiParams               = (null)\nMULTIPLE_SLURMD         = Yes\nNEXT_JOB_ID             = 12\n", true}, // 22.05
		{"MpiParams               = (null)\nNEXT_JOB_ID             = 12\n", false},
		{"MpiParams               = (null)\nMULTIPLE_SLURMD         = yes\nNEXT_JOB_ID             = 12\n", true}, // 26.05
		{"", false}, // slurmctld did not answer
	} {
		cmd := exec.Command("bash", "-c", "LAB_SOURCE_ONLY=1 source ./lab && slurm_version() { echo 26.05.3; } && scontrol() { cat; } && check_multiple_slurmd")
		cmd.Stdin = strings.NewReader(tc.config)
		out, err := cmd.CombinedOutput()
		if got := err == nil; got != tc.ok {
			t.Errorf("check_multiple_slurmd on %q: ok %v, want %v (%v %s)", tc.config, got, tc.ok, err, out)
		}
		if !tc.ok && !strings.Contains(string(out), "without multiple-slurmd support") {
			t.Errorf("check_multiple_slurmd on %q: %q, want it to say the Slurm lacks multiple-slurmd support", tc.config, out)
		}
	}
}

// TestLab_DownWithAnotherLabDir runs `lab down` with a FAIRWAY_LAB_DIR
// that no lab was started with: on the running lab's ports it must fail
// and name the process that holds them (it used to exit 0 silently,
// stopping nothing); on a free port range it says nothing runs there.
func TestLab_DownWithAnotherLabDir(t *testing.T) {
	e := lab.Get(t)
	down := func(portBase string) (string, error) {
		cmd := exec.Command("./lab", "down")
		cmd.Env = append(os.Environ(), "FAIRWAY_LAB_DIR="+t.TempDir(), "FAIRWAY_LAB_PORT_BASE="+portBase)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	base := os.Getenv("FAIRWAY_LAB_PORT_BASE")
	if base == "" {
		base = "16800"
	}
	out, err := down(base)
	if err == nil || !strings.Contains(out, "is held by") || !strings.Contains(out, "another FAIRWAY_LAB_DIR") {
		t.Errorf("lab down with another lab's ports busy: %v, %q; want a failure naming the port's holder", err, out)
	}
	out, err = down("41000")
	if err != nil || !strings.Contains(out, "nothing running under") {
		t.Errorf("lab down on a free port range: %v, %q; want exit 0 saying nothing runs there", err, out)
	}
	if _, err := e.Try("", "scontrol", "ping"); err != nil {
		t.Errorf("the lab after the other lab down: %v", err)
	}
}
