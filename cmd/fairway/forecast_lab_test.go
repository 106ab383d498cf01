package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/serve"
)

// forecastQueue is a lab queue for the start-time forecast surfaces: a
// blocker of alice's holding every GPU of the lab partition for at most 10
// minutes, then two jobs of carol's and one of bob's, each wanting a whole
// 4-GPU node.
type forecastQueue struct {
	blocker      int64
	blockerStart time.Time
	carol        []int64
	bob          int64
}

func newForecastQueue(t *testing.T, e *lab.Env, tag string) *forecastQueue {
	t.Helper()
	q := &forecastQueue{blocker: fillCluster(t, e, "alice", tag)}
	for range 2 {
		q.carol = append(q.carol, e.Submit(t, "carol", "-J", tag+"-carol", "-p", e.Partition, "--gres=gpu:4", "-t", "5", "--wrap", "sleep 2"))
	}
	q.bob = e.Submit(t, "bob", "-J", tag+"-bob", "-p", e.Partition, "--gres=gpu:4", "-t", "5", "--wrap", "sleep 2")
	out := e.Run(t, "", "squeue", "-h", "-j", strconv.FormatInt(q.blocker, 10), "-o", "%S")
	st, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(out), time.Local)
	if err != nil {
		t.Fatalf("blocker start %q: %v", out, err)
	}
	q.blockerStart = st
	return q
}

// labServeArgs are the flags explain and queue need to read the lab.
func labServeArgs(t *testing.T, e *lab.Env, dbURL string) []string {
	t.Setenv("SLURM_CONF", e.SlurmConf)
	return []string{"--cluster", e.Cluster, "--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser,
		"--slurm-token-file", e.TokenFile, "--database-url", dbURL, "--partitions", e.Partition,
		"--history-days", "1", "--buffer-dir", t.TempDir()}
}

// checkBlocked checks the forecast of the first job behind the blocker:
// by time limits it starts when the blocker's 10-minute limit ends (at the
// forecast's next one-minute step), and by predicted run times no later.
func checkBlocked(t *testing.T, q *forecastQueue, expected, bound *time.Time) {
	t.Helper()
	if expected == nil || bound == nil {
		t.Fatalf("no start forecast (expected %v, bound %v)", expected, bound)
	}
	end := q.blockerStart.Add(10 * time.Minute)
	if bound.Before(end) || bound.After(end.Add(time.Minute)) {
		t.Errorf("time-limit bound %s, want within a minute after the blocker's limit ends (%s)", bound, end)
	}
	if expected.After(*bound) {
		t.Errorf("expected start %s after the time-limit bound %s", expected, bound)
	}
}

// TestLab_ExplainStart: `fairway explain` prints a job's expected start,
// the time-limit bound and the jobs that must end first.
func TestLab_ExplainStart(t *testing.T) {
	e := lab.Get(t)
	dbURL, _ := throwawayDB(t, e)
	q := newForecastQueue(t, e, fmt.Sprintf("fcE%d", time.Now().UnixNano()%1e6))
	args := labServeArgs(t, e, dbURL)

	firsts := 0
	for _, id := range append([]int64{q.bob}, q.carol...) {
		out, err := runApp(t, append(append([]string{"explain"}, args...), "--json", strconv.FormatInt(id, 10))...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ex serve.Explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		if ex.Start == nil {
			t.Fatalf("no start forecast in %s", out)
		}
		if ex.Rank == 1 {
			firsts++
			checkBlocked(t, q, ex.Start.Expected, ex.Start.LimitBound)
		}
		if len(ex.Start.MustEnd) == 0 || ex.Start.MustEnd[0].JobID != q.blocker {
			t.Errorf("job %d: must end first %+v, want the blocker %d first", id, ex.Start.MustEnd, q.blocker)
		}
		if ex.Rank > 1 && len(ex.Start.MustStart) != ex.Rank-1 {
			t.Errorf("job %d ranked %d: %d jobs must start first, want the %d ahead (none fits beside another)", id, ex.Rank, len(ex.Start.MustStart), ex.Rank-1)
		}
	}
	if firsts != 1 {
		t.Errorf("%d of the 3 queued jobs ranked first", firsts)
	}
	text, err := runApp(t, append(append([]string{"explain"}, args...), strconv.FormatInt(q.carol[1], 10))...)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, want := range []string{"expected start: ", "with time limits, as squeue --start plans", "must end first: " + strconv.FormatInt(q.blocker, 10)} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}

// TestLab_Queue: `fairway queue --user carol --json` lists exactly carol's
// pending jobs in rank order, each with a forecast and a reason.
func TestLab_Queue(t *testing.T) {
	e := lab.Get(t)
	dbURL, _ := throwawayDB(t, e)
	q := newForecastQueue(t, e, fmt.Sprintf("fcQ%d", time.Now().UnixNano()%1e6))
	args := labServeArgs(t, e, dbURL)

	out, err := runApp(t, append(append([]string{"queue"}, args...), "--user", "carol", "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ans serve.QueueAnswer
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	var ids []int64
	for i, j := range ans.Jobs {
		ids = append(ids, j.JobID)
		// 0 s is a run time: the lab's history is mostly jobs that end at once.
		if j.User != "carol" || j.Reason == "" || j.PredictedRunS < 0 || j.PredictedRunS > j.TimeLimitS || j.WaitS < 0 {
			t.Errorf("job %+v: want carol's, with a reason, a run time within the limit and a wait", j)
		}
		if i > 0 && j.Rank <= ans.Jobs[i-1].Rank {
			t.Errorf("job %d rank %d after rank %d: not in squeue's order", j.JobID, j.Rank, ans.Jobs[i-1].Rank)
		}
		if j.ExpectedStart == nil || j.ExpectedStart.Before(ans.At) {
			t.Errorf("job %d expected at %v, before the forecast (%s)", j.JobID, j.ExpectedStart, ans.At)
		}
	}
	if len(ids) != 2 || !(ids[0] == q.carol[0] || ids[0] == q.carol[1]) || !(ids[1] == q.carol[0] || ids[1] == q.carol[1]) {
		t.Errorf("queue --user carol lists %v, want carol's %v", ids, q.carol)
	}
	out, err = runApp(t, append(append([]string{"queue"}, args...), "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || len(ans.Jobs) != 3 || ans.Jobs[0].Rank != 1 {
		t.Fatalf("whole queue: %v, %s", err, out)
	}
	checkBlocked(t, q, ans.Jobs[0].ExpectedStart, ans.Jobs[0].LimitStart)
	account := ""
	for _, j := range ans.Jobs {
		if j.JobID == q.bob {
			account = j.Account
		}
	}
	text, err := runApp(t, append(append([]string{"queue"}, args...), "--account", account)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	t.Logf("fairway queue --account %s:\n%s", account, text)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "JOBID") || !slices.ContainsFunc(lines[1:], func(l string) bool {
		return strings.HasPrefix(l, strconv.FormatInt(q.bob, 10)+" ")
	}) {
		t.Errorf("queue --account %s lacks the header or bob's job %d:\n%s", account, q.bob, text)
	}
}

// TestLab_ServeJobAPI: serve answers /v1/jobs/{id} and /v1/queue from its
// last cycle; with --http-user-header it answers only for the user the
// header names; and the forecast-error histogram counts jobs as they
// start.
func TestLab_ServeJobAPI(t *testing.T) {
	e := lab.Get(t)
	dbURL, _ := throwawayDB(t, e)
	bin := buildFairway(t)
	q := newForecastQueue(t, e, fmt.Sprintf("fcH%d", time.Now().UnixNano()%1e6))
	p := startServe(t, bin, e, dbURL, "--dry-run", "--http-user-header", "X-Remote-User")

	get := func(path, user string) (int, []byte) {
		req, err := http.NewRequest(http.MethodGet, "http://"+p.api+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		return resp.StatusCode, []byte(b.String())
	}
	var ans serve.QueueAnswer
	waitFor(t, 30*time.Second, "the API to answer carol's queue", func() bool {
		code, body := get("/v1/queue", "carol")
		return code == http.StatusOK && json.Unmarshal(body, &ans) == nil && len(ans.Jobs) == 2
	})
	for _, j := range ans.Jobs {
		if j.User != "carol" || j.ExpectedStart == nil {
			t.Errorf("carol's queue holds %+v", j)
		}
	}
	bob := "/v1/jobs/" + strconv.FormatInt(q.bob, 10)
	code, body := get(bob, "bob")
	var job serve.JobAnswer
	if code != http.StatusOK || json.Unmarshal(body, &job) != nil || job.JobID != q.bob || job.Start == nil || job.Start.Expected == nil {
		t.Errorf("bob's own job: %d %s", code, body)
	}
	for _, c := range []struct {
		path, user string
		want       int
	}{
		{bob, "carol", http.StatusNotFound},                   // another user's job: as if absent
		{"/v1/queue?user=bob", "carol", http.StatusForbidden}, // another user's queue
		{bob, "", http.StatusUnauthorized},                    // no trusted header
		{"/v1/jobs/1", "carol", http.StatusNotFound},          // no such pending job
	} {
		if code, body := get(c.path, c.user); code != c.want {
			t.Errorf("GET %s as %q: %d %s, want %d", c.path, c.user, code, body, c.want)
		}
	}

	// Release the cluster: as the queued jobs start, the forecast error
	// of each is observed.
	e.Run(t, "", "scancel", strconv.FormatInt(q.blocker, 10))
	waitFor(t, 60*time.Second, "forecast errors observed for started jobs", func() bool {
		return forecastErrorCount(p, "predicted", "last") >= 1
	})
}

// forecastErrorCount reads fairway_forecast_abs_error_seconds_count for
// one method and forecast from the process's /metrics; -1 when absent.
func forecastErrorCount(p *serveProc, method, made string) float64 {
	resp, err := http.Get("http://" + p.listen + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	want := fmt.Sprintf(`fairway_forecast_abs_error_seconds_count{made="%s",method="%s"}`, made, method)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == want {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}
