package slurmctl

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/google/go-cmp/cmp"
)

const dbJobsPath = "GET /slurmdb/v0.0.38/jobs"

// TestRecordDBJobs captures slurmdbd's answers to job history queries
// through slurmrestd: this run's finished jobs (completed, failed, an
// array) and one still running, a query that finds nothing, and one whose
// time Slurm cannot parse. (A job cancelled before it became eligible is in
// no time window, for sacct as for slurmrestd, so there is none here.) Run
// with `make record`.
func TestRecordDBJobs(t *testing.T) {
	if !*record {
		t.Skip("fixture capture; run with -record (make record)")
	}
	env := lab.Get(t)
	c := labClient(t, env, nil)
	dir := filepath.Join("testdata", c.Version())
	name := tag(t)
	since := time.Now().Add(-time.Second)
	sub := func(user, role string, args ...string) int64 {
		return env.Submit(t, user, append([]string{"-J", name + "-" + role, "-p", env.Partition}, args...)...)
	}
	sub("alice", "gpu", "--gres=gpu:1", "-t", "5", "--wrap", "sleep 1")
	sub("bob", "shardfail", "--gres=shard:2", "-t", "5", "--wrap", "sleep 1; exit 3")
	sub("carol", "array", "--array=0-1", "--gres=gpu:1", "-t", "5", "--wrap", "sleep 1")
	running := sub("bob", "running", "-t", "10", "--wrap", "sleep 600")
	env.WaitState(t, running, 2*time.Minute, "RUNNING")

	// slurmdbd records a job's end a moment after squeue shows it: poll
	// the query itself until the four finished records are in.
	var body []byte
	if !waitFor(3*time.Minute, func() bool {
		q := dbJobsQuery(c.Version(), env.Cluster, since, time.Now(), time.Now())
		st, b := rawCall(t, env, "GET", "/slurmdb/"+c.Version()+"/jobs?"+q.Encode(), env.Token, nil)
		if st != 200 {
			t.Fatalf("GET slurmdb jobs: HTTP %d: %s", st, b)
		}
		body = keepJobs(t, b, name)
		var r struct {
			Jobs []struct {
				State struct {
					Current string `json:"current"`
				} `json:"state"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, j := range r.Jobs {
			if j.State.Current != "RUNNING" && j.State.Current != "PENDING" {
				done++
			}
		}
		return len(r.Jobs) == 5 && done == 4
	}) {
		t.Fatalf("slurmdbd does not show this run's 4 finished jobs and 1 running after 3 minutes:\n%s", body)
	}
	writeFile(t, filepath.Join(dir, "dbjobs.200.json"), body)

	old := time.Now().AddDate(-5, 0, 0)
	q := dbJobsQuery(c.Version(), env.Cluster, old, old.Add(time.Hour), time.Now())
	st, b := rawCall(t, env, "GET", "/slurmdb/"+c.Version()+"/jobs?"+q.Encode(), env.Token, nil)
	writeFile(t, filepath.Join(dir, "dbjobs-nothing."+strconv.Itoa(st)+".json"), b)
	st, b = rawCall(t, env, "GET", "/slurmdb/"+c.Version()+"/jobs?start_time="+strconv.FormatInt(since.Unix(), 10), env.Token, nil)
	writeFile(t, filepath.Join(dir, "dbjobs-bad-time."+strconv.Itoa(st)+".json"), b)
}

func TestDBJobsQuery(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	// From v0.0.40 on the flags skip_steps would clear in 23.11 and early
	// 24.05 are named with their defaults.
	defaults := func(q url.Values) url.Values {
		q.Set("scheduler_unset", "true")
		q.Set("show_duplicates", "true")
		q.Set("disable_truncate_usage_time", "true")
		return q
	}
	for _, tc := range []struct {
		name         string
		version      string
		cluster      string
		since, until time.Time
		want         url.Values
	}{
		{"last hour", V0042, "lab", now.Add(-time.Hour), now,
			defaults(url.Values{"start_time": {"now-3900"}, "end_time": {"now+300"}, "skip_steps": {"true"}, "cluster": {"lab"}})},
		{"window in the past, every cluster", V0040, "", now.Add(-48 * time.Hour), now.Add(-24 * time.Hour),
			defaults(url.Values{"start_time": {"now-173100"}, "end_time": {"now-86100"}, "skip_steps": {"true"}})},
		{"sub-second times round", V0045, "lab", now.Add(-1500 * time.Millisecond), now.Add(-400 * time.Millisecond),
			defaults(url.Values{"start_time": {"now-302"}, "end_time": {"now+300"}, "skip_steps": {"true"}, "cluster": {"lab"}})},
		{"22.05's dbv0.0.38: skip_steps alone", V0038, "lab", now.Add(-time.Hour), now,
			url.Values{"start_time": {"now-3900"}, "end_time": {"now+300"}, "skip_steps": {"true"}, "cluster": {"lab"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, dbJobsQuery(tc.version, tc.cluster, tc.since, tc.until, now)); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
	// The encoded form is what slurmrestd 22.05 accepted in the lab: it
	// answers a raw ':' or '/' in a query value with HTTP 400, and a raw
	// '+' would read as a space.
	if got := dbJobsQuery(V0038, "lab", now.Add(-time.Hour), now, now).Encode(); got != "cluster=lab&end_time=now%2B300&skip_steps=true&start_time=now-3900" {
		t.Errorf("encoded query %q", got)
	}
}

func TestClient_DBJobs(t *testing.T) {
	jobs := fixture(t, "dbjobs.200.json")
	for _, tc := range []struct {
		name      string
		replies   []reply
		want      []byte
		wantErr   error
		wantSlurm bool
		wantText  string
		calls     int
	}{
		{name: "jobs (captured)", replies: []reply{{200, jobs, 0}}, want: jobs, calls: 1},
		{name: "retried after 5xx", replies: []reply{{503, nil, 0}, {200, jobs, 0}}, want: jobs, calls: 2},
		{name: "nothing found (captured HTTP 200, error 9003)", replies: []reply{{200, fixture(t, "dbjobs-nothing.200.json"), 0}}, calls: 1},
		{name: "unparsable time (captured HTTP 500, error 9000)", replies: []reply{{500, fixture(t, "dbjobs-bad-time.500.json"), 0}},
			wantErr: ErrServer, wantSlurm: true, wantText: "Unable to parse time format", calls: 4},
		{name: "errors entry with HTTP 200 (captured update answer)", replies: []reply{{200, fixture(t, "update-site-factor.200.json"), 0}},
			wantErr: ErrSlurm, wantSlurm: true, calls: 1},
		{name: "bad token (captured)", replies: []reply{{500, fixture(t, "jobs-bad-token.500.json"), 0}},
			wantErr: ErrTokenRejected, wantSlurm: true, calls: 1},
		{name: "truncated JSON", replies: []reply{{200, jobs[:len(jobs)/2], 0}}, wantErr: ErrMalformed, calls: 1},
		{name: "no jobs key (captured ping answer)", replies: []reply{{200, fixture(t, "ping.200.json"), 0}}, wantErr: ErrMalformed, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReplay(t, map[string][]reply{dbJobsPath: tc.replies})
			c := testClient(t, srv.URL, V0038, nil)
			sink := &recordSink{}
			found, err := c.DBJobs(context.Background(), "lab", time.Now().Add(-time.Hour), time.Now(), sink)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("DBJobs: %v, want %v", err, tc.wantErr)
			}
			if err != nil && errors.Is(err, ErrSlurm) != tc.wantSlurm {
				t.Errorf("DBJobs: %v: errors.Is(ErrSlurm) = %v, want %v", err, !tc.wantSlurm, tc.wantSlurm)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("DBJobs: %v, want it to say %q", err, tc.wantText)
			}
			if found != (tc.want != nil) {
				t.Errorf("DBJobs found %v, want %v", found, tc.want != nil)
			}
			if tc.want != nil {
				if diff := cmp.Diff(jobRecords(t, tc.want), sink.records); diff != "" {
					t.Errorf("records (-want +got):\n%s", diff)
				}
			}
			if n := srv.count(dbJobsPath); n != tc.calls {
				t.Errorf("%d requests, want %d", n, tc.calls)
			}
		})
	}
}

func TestClient_DBJobsRequest(t *testing.T) {
	jobs := fixture(t, "dbjobs.200.json")
	for _, v := range []string{V0038, V0040, V0041} {
		t.Run(v, func(t *testing.T) {
			path := "GET /slurmdb/" + v + "/jobs"
			srv := newReplay(t, map[string][]reply{path: {{200, jobs, 0}}})
			c := testClient(t, srv.URL, v, nil)
			now := time.Now()
			if _, err := c.DBJobs(context.Background(), "lab", now.Add(-2*time.Hour), now.Add(-time.Hour), &recordSink{}); err != nil {
				t.Fatal(err)
			}
			if srv.count(path) != 1 {
				t.Fatalf("requests %v, want one %s", srv.calls, path)
			}
			q := srv.urls[0].Query()
			// The request is built a moment after now: allow a second.
			start, _ := strconv.Atoi(strings.TrimPrefix(q.Get("start_time"), "now-"))
			end, _ := strconv.Atoi(strings.TrimPrefix(q.Get("end_time"), "now-"))
			if start < 7500 || start > 7501 || end < 3300 || end > 3301 || q.Get("skip_steps") != "true" || q.Get("cluster") != "lab" {
				t.Errorf("query %v: want start_time now-7500, end_time now-3300 (window plus %s), skip_steps, cluster", q, DBJobsMargin)
			}
		})
	}
}

func TestClient_DBJobsNoPlugin(t *testing.T) {
	srv := newReplay(t, map[string][]reply{})
	c := testClient(t, srv.URL, V0038, nil)
	_, err := c.DBJobs(context.Background(), "", time.Now().Add(-time.Hour), time.Now(), &recordSink{})
	if !errors.Is(err, ErrHTTP) || !strings.Contains(err.Error(), "openapi/dbv0.0.38") {
		t.Fatalf("DBJobs without the slurmdbd plugin: %v, want ErrHTTP naming openapi/dbv0.0.38", err)
	}
	if _, err := c.DBJobs(context.Background(), "", time.Now(), time.Now().Add(-time.Hour), &recordSink{}); err == nil {
		t.Error("DBJobs with a reversed window: no error")
	}
}

// TestClient_DBJobsTooLarge: slurmdbd's answer over the response cap (a
// busy day of a large cluster) is an error that says so through
// TooLarge, so that a history reader can ask for a shorter window instead
// of failing; other errors do not.
func TestClient_DBJobsTooLarge(t *testing.T) {
	jobs := fixture(t, "dbjobs.200.json")
	path := "GET /slurmdb/" + V0038 + "/jobs"
	srv := newReplay(t, map[string][]reply{path: {{200, jobs, 0}, {500, []byte("{}"), 0}}})
	c := testClient(t, srv.URL, V0038, func(cfg *Config) { cfg.MaxResponseBytes = int64(len(jobs)) / 2; cfg.ReadAttempts = 1 })
	now := time.Now()
	_, err := c.DBJobs(context.Background(), "", now.Add(-time.Hour), now, &recordSink{})
	var tl interface{ TooLarge() bool }
	if !errors.As(err, &tl) || !tl.TooLarge() || !errors.Is(err, ErrMalformed) {
		t.Errorf("answer over the cap: %v, want an ErrMalformed that reports TooLarge", err)
	}
	_, err = c.DBJobs(context.Background(), "", now.Add(-time.Hour), now, &recordSink{})
	if err == nil || errors.As(err, &tl) && tl.TooLarge() {
		t.Errorf("HTTP 500: %v, want an error not TooLarge", err)
	}
}

// recordSink keeps a copy of each record DBJobs hands it.
type recordSink struct {
	records  []json.RawMessage
	restarts int
}

func (s *recordSink) Restart() { s.records = nil; s.restarts++ }

func (s *recordSink) Record(raw json.RawMessage) {
	s.records = append(s.records, append(json.RawMessage(nil), raw...))
}

// jobRecords is the "jobs" array of an answer, record by record.
func jobRecords(t testing.TB, body []byte) []json.RawMessage {
	t.Helper()
	var doc struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Jobs
}
