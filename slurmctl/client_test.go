package slurmctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testJWT builds a well-formed token expiring at exp. Only its shape and
// exp claim matter: the fake servers do not check signatures.
func testJWT(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
		enc(fmt.Appendf(nil, `{"exp":%d,"iat":%d,"sun":"root"}`, exp.Unix(), exp.Add(-time.Hour).Unix())) + "." +
		enc([]byte("signature-not-checked"))
}

// reply is one canned answer: a captured fixture (or raw bytes) and a status.
type reply struct {
	status int
	body   []byte
	delay  time.Duration
}

// replayServer answers each path from a list of replies, the last one
// repeating, and counts the requests per path.
type replayServer struct {
	*httptest.Server
	mu      sync.Mutex
	routes  map[string][]reply
	calls   map[string]int
	headers []http.Header
	bodies  [][]byte
	urls    []*url.URL
}

func newReplay(t testing.TB, routes map[string][]reply) *replayServer {
	t.Helper()
	s := &replayServer{routes: routes, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.EscapedPath()
		s.mu.Lock()
		rs, ok := s.routes[key]
		if !ok && key == "GET /openapi/v3" {
			// A pinned client's check at New (Client.checkPinned), which
			// a server without the spec passes: not one of the requests
			// a test counts, unless it routes the spec.
			s.mu.Unlock()
			http.NotFound(w, r)
			return
		}
		n := s.calls[key]
		s.calls[key]++
		s.headers = append(s.headers, r.Header.Clone())
		s.bodies = append(s.bodies, body)
		s.urls = append(s.urls, r.URL)
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		rep := rs[min(n, len(rs)-1)]
		if rep.delay > 0 {
			select {
			case <-time.After(rep.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *replayServer) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

func (s *replayServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

func testClient(t testing.TB, url, version string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{URL: url, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour))), Version: version,
		RequestTimeout: time.Second, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const jobsPath = "GET /slurm/v0.0.38/jobs"

// TestClient_Slurm2311DBConnect replays Slurm 23.11.11's answers to a
// forged token and to slurmdbd being down, which are the same (HTTP 500,
// error 7000): both are retried as an outage, and the error names both
// causes, so an admin with a wrong token is not sent to look only at
// slurmdbd.
func TestClient_Slurm2311DBConnect(t *testing.T) {
	const path = "GET /slurm/v0.0.40/jobs"
	for _, name := range []string{"jobs-forged-token.500.json", "jobs-slurmdbd-down.500.json"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "slurm-23.11.11", name))
			if err != nil {
				t.Fatal(err)
			}
			srv := newReplay(t, map[string][]reply{path: {{500, b, 0}}})
			c := testClient(t, srv.URL, V0040, nil)
			_, err = c.ListJobs(context.Background())
			if !errors.Is(err, ErrServer) || errors.Is(err, ErrTokenRejected) || !errors.Is(err, ErrSlurm) {
				t.Fatalf("ListJobs: %v, want ErrServer with Slurm's errors, not ErrTokenRejected", err)
			}
			for _, s := range []string{"slurmdbd is down or unreachable", "refused this token", "Unable to connect to database"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("ListJobs: %v: want it to say %q", err, s)
				}
			}
			if n := srv.count(path); n != 4 {
				t.Errorf("%d requests, want 4 (retried as an outage)", n)
			}
		})
	}
}

// TestClient_EmptyQueueIsQuiet replays Slurm 26.05.3's answer for an
// empty queue, which carries the warning "Zero jobs to dump": no jobs, no
// error, and nothing logged at WARN (serve reads the queue every cycle, and
// an idle cluster is not a fault).
func TestClient_EmptyQueueIsQuiet(t *testing.T) {
	const path = "GET /slurm/v0.0.45/jobs"
	empty, err := os.ReadFile(filepath.Join("testdata", "slurm-26.05.3", "jobs-empty.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := newReplay(t, map[string][]reply{path: {{200, empty, 0}}})
	var logged bytes.Buffer
	cfg := Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour))), Version: V0045,
		RequestTimeout: time.Second, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond}
	c, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.ListJobs(context.Background())
	if err != nil || len(jobs) != 0 {
		t.Fatalf("ListJobs: %d jobs, %v; want none and no error", len(jobs), err)
	}
	if logged.Len() > 0 {
		t.Errorf("an empty queue logged:\n%s", logged.String())
	}
}

// TestEmptyDumpWarnings: only warnings that all say there was nothing to
// dump are quiet; any other warning beside them is still logged.
func TestEmptyDumpWarnings(t *testing.T) {
	w := func(d string) wireError { return wireError{Description: d} }
	for _, tc := range []struct {
		name string
		ws   []wireError
		want bool
	}{
		{"none", nil, false},
		{"zero jobs", []wireError{w("Zero jobs to dump")}, true},
		{"zero jobs and steps", []wireError{w("Zero jobs to dump"), w("Zero steps to dump")}, true},
		{"zero jobs and an unknown field", []wireError{w("Zero jobs to dump"), w(`Ignoring unknown field "bogus_field" of type 64 bit integer in DATA_PARSER_JOB_DESC_MSG`)}, false},
		{"found nothing (slurmdbd's, handled by DBJobs)", []wireError{w("slurmdb_jobs_get() found nothing")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := emptyDumpWarnings(tc.ws); got != tc.want {
				t.Errorf("emptyDumpWarnings = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClient_ListJobsSendsHeaders(t *testing.T) {
	srv := newReplay(t, map[string][]reply{jobsPath: {{200, fixture(t, "jobs.200.json"), 0}}})
	tok := testJWT(time.Now().Add(time.Hour))
	c := testClient(t, srv.URL, V0038, func(c *Config) { c.Token = StaticToken(tok) })
	jobs, err := c.ListJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 16 {
		t.Errorf("ListJobs: %d jobs, want the 16 captured", len(jobs))
	}
	h := srv.headers[0]
	if h.Get("X-SLURM-USER-NAME") != "root" || h.Get("X-SLURM-USER-TOKEN") != tok {
		t.Errorf("headers: user %q, token set %v", h.Get("X-SLURM-USER-NAME"), h.Get("X-SLURM-USER-TOKEN") == tok)
	}
}

// TestClient_Errors replays captured failures (and the statuses the lab
// cannot produce: 403, 503, a stall, a closed port) and checks each gives
// its own error, retried only when a retry can help.
func TestClient_Errors(t *testing.T) {
	jobs := fixture(t, "jobs.200.json")
	for _, tc := range []struct {
		name      string
		replies   []reply
		closed    bool
		want      error
		notWant   error
		wantSlurm bool
		calls     int
	}{
		{name: "bad token (captured HTTP 500, errors -1)", replies: []reply{{500, fixture(t, "jobs-bad-token.500.json"), 0}},
			want: ErrTokenRejected, notWant: ErrServer, wantSlurm: true, calls: 1},
		{name: "no auth headers (captured HTTP 401)", replies: []reply{{401, fixture(t, "jobs-no-auth.401.txt"), 0}},
			want: ErrUnauthorized, calls: 1},
		{name: "forbidden", replies: []reply{{403, []byte("Forbidden"), 0}}, want: ErrForbidden, calls: 1},
		{name: "server error with a slurm error (captured HTTP 500)", replies: []reply{{500, fixture(t, "job-missing.500.json"), 0}},
			want: ErrServer, notWant: ErrTokenRejected, wantSlurm: true, calls: 4},
		{name: "unavailable", replies: []reply{{503, nil, 0}}, want: ErrServer, calls: 4},
		{name: "errors entry with HTTP 200 (captured)", replies: []reply{{200, fixture(t, "update-site-factor.200.json"), 0}},
			want: ErrSlurm, notWant: ErrServer, wantSlurm: true, calls: 1},
		{name: "truncated JSON", replies: []reply{{200, jobs[:len(jobs)/3], 0}}, want: ErrMalformed, calls: 1},
		{name: "text instead of JSON", replies: []reply{{200, fixture(t, "jobs-no-auth.401.txt"), 0}}, want: ErrMalformed, calls: 1},
		{name: "not found", replies: []reply{{404, nil, 0}}, want: ErrHTTP, calls: 1},
		{name: "timeout", replies: []reply{{200, jobs, 2 * time.Second}}, want: ErrTimeout, calls: 4},
		{name: "slurmrestd down", closed: true, want: ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReplay(t, map[string][]reply{jobsPath: tc.replies})
			c := testClient(t, srv.URL, V0038, func(c *Config) { c.RequestTimeout = 100 * time.Millisecond })
			if tc.closed {
				srv.Close()
			}
			_, err := c.ListJobs(context.Background())
			if !errors.Is(err, tc.want) {
				t.Fatalf("ListJobs: %v, want %v", err, tc.want)
			}
			if tc.notWant != nil && errors.Is(err, tc.notWant) {
				t.Errorf("ListJobs: %v is also %v", err, tc.notWant)
			}
			if errors.Is(err, ErrSlurm) != tc.wantSlurm {
				t.Errorf("ListJobs: %v: errors.Is(ErrSlurm) = %v, want %v", err, !tc.wantSlurm, tc.wantSlurm)
			}
			if !tc.closed && srv.count(jobsPath) != tc.calls {
				t.Errorf("%d requests, want %d", srv.count(jobsPath), tc.calls)
			}
			t.Logf("error: %v", err)
		})
	}
}

func TestClient_ReadRetriesThenSucceeds(t *testing.T) {
	srv := newReplay(t, map[string][]reply{jobsPath: {{503, nil, 0}, {502, nil, 0}, {200, fixture(t, "jobs.200.json"), 0}}})
	c := testClient(t, srv.URL, V0038, nil)
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatalf("ListJobs after two 5xx: %v", err)
	}
	if n := srv.count(jobsPath); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestClient_UpdateErrors replays the captured answers to updates with a
// token slurmctld rejects (1000) and for a job that has finished (2084).
func TestClient_UpdateErrors(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    error
		notWant error
	}{
		{"update-bad-token.500.json", ErrTokenRejected, ErrServer},
		{"update-finished.500.json", ErrServer, ErrTokenRejected},
		{"update-array.200.json", ErrSlurm, ErrServer},
	} {
		st := 200
		if strings.Contains(tc.file, ".500.") {
			st = 500
		}
		srv := newReplay(t, map[string][]reply{"POST /slurm/v0.0.38/job/12": {{st, fixture(t, tc.file), 0}}})
		p := int64(7)
		err := testClient(t, srv.URL, V0038, nil).UpdateJob(context.Background(), "12", JobUpdate{Priority: &p})
		if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) || !errors.Is(err, ErrSlurm) || srv.total() != 1 {
			t.Errorf("%s: %v after %d requests; want %v (not %v) with Slurm's errors, one request", tc.file, err, srv.total(), tc.want, tc.notWant)
		}
	}
}

func TestClient_WritesAreNotRetried(t *testing.T) {
	for _, st := range []int{500, 502, 503} {
		srv := newReplay(t, map[string][]reply{"POST /slurm/v0.0.38/job/12": {{st, nil, 0}}})
		c := testClient(t, srv.URL, V0038, nil)
		p := int64(7)
		err := c.UpdateJob(context.Background(), "12", JobUpdate{Priority: &p})
		if !errors.Is(err, ErrServer) || srv.total() != 1 {
			t.Errorf("HTTP %d: UpdateJob: %v after %d requests, want ErrServer after 1", st, err, srv.total())
		}
	}
}

func TestClient_UpdateBodies(t *testing.T) {
	p, s := int64(4242), int64(77)
	for _, tc := range []struct {
		version string
		u       JobUpdate
		want    string
	}{
		{V0038, JobUpdate{Priority: &p}, `{"priority":4242}`},
		{V0041, JobUpdate{Priority: &p}, `{"priority":{"set":true,"number":4242}}`},
		{V0040, JobUpdate{SiteFactor: &s}, `{"site_factor":2147483725}`}, // 2^31 + 77: slurmrestd subtracts NICE_OFFSET
		{V0041, JobUpdate{SiteFactor: &s}, `{"site_factor":2147483725}`},
		{V0045, JobUpdate{SiteFactor: &s}, `{"site_factor":2147483725}`},
		{V0045, JobUpdate{Priority: &p}, `{"priority":{"set":true,"number":4242}}`},
	} {
		b, err := tc.u.body(tc.version)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s body = %s, %v; want %s", tc.version, b, err, tc.want)
		}
	}
	zero := int64(0)
	for _, u := range []JobUpdate{{}, {Priority: &p, SiteFactor: &s}, {Priority: &zero}} {
		if _, err := u.body(V0041); err == nil {
			t.Errorf("body(%+v) accepted", u)
		}
	}
	if _, err := (JobUpdate{SiteFactor: &s}).body(V0038); err == nil {
		t.Error("site_factor accepted for v0.0.38, which rejects it")
	}
}

// TestClient_UpdateErrorsEntry replays the captured answer to a
// site_factor update on 22.05: HTTP 200 with errors. It must fail.
func TestClient_UpdateErrorsEntry(t *testing.T) {
	srv := newReplay(t, map[string][]reply{"POST /slurm/v0.0.38/job/54": {{200, fixture(t, "update-site-factor.200.json"), 0}}})
	c := testClient(t, srv.URL, V0038, nil)
	p := int64(5)
	err := c.UpdateJob(context.Background(), "54", JobUpdate{Priority: &p})
	if !errors.Is(err, ErrSlurm) || !strings.Contains(err.Error(), `Unknown key \"site_factor\"`) && !strings.Contains(err.Error(), `Unknown key "site_factor"`) {
		t.Errorf("UpdateJob: %v, want ErrSlurm naming the unknown key", err)
	}
	srv2 := newReplay(t, map[string][]reply{"POST /slurm/v0.0.38/job/54": {{200, fixture(t, "update-priority.200.json"), 0}}})
	if err := testClient(t, srv2.URL, V0038, nil).UpdateJob(context.Background(), "54", JobUpdate{Priority: &p}); err != nil {
		t.Errorf("UpdateJob with the captured success: %v", err)
	}
}

func TestClient_Negotiate(t *testing.T) {
	ping := fixture(t, "ping.200.json")
	for _, tc := range []struct {
		name   string
		routes map[string][]reply
		want   string
		err    error
	}{
		{"captured spec", map[string][]reply{"GET /openapi/v3": {{200, fixture(t, "openapi.200.json"), 0}}}, V0038, nil},
		{"no spec, v0.0.41 ping", map[string][]reply{"GET /slurm/v0.0.41/ping": {{200, ping, 0}}, "GET /slurm/v0.0.38/ping": {{200, ping, 0}}}, V0041, nil},
		{"no spec, v0.0.38 ping", map[string][]reply{"GET /slurm/v0.0.38/ping": {{200, ping, 0}}}, V0038, nil},
		{"nothing", map[string][]reply{}, "", ErrVersion},
		{"bad token on ping", map[string][]reply{"GET /slurm/v0.0.41/ping": {{500, fixture(t, "nodes-bad-token.500.json"), 0}}}, "", ErrTokenRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReplay(t, tc.routes)
			c, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(testJWT(time.Now().Add(time.Hour))),
				RetryBase: time.Millisecond, RetryMax: time.Millisecond}, nil)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("New: %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || c.Version() != tc.want {
				t.Fatalf("New: version %v, %v; want %s", c, err, tc.want)
			}
		})
	}
}

func TestClient_ReadIsAllOrNothing(t *testing.T) {
	srv := newReplay(t, map[string][]reply{
		jobsPath:                         {{200, fixture(t, "jobs.200.json"), 0}},
		"GET /slurm/v0.0.38/nodes":       {{500, fixture(t, "nodes-bad-token.500.json"), 0}},
		"GET /slurm/v0.0.38/partitions":  {{200, fixture(t, "partitions.200.json"), 0}},
		"POST /slurm/v0.0.38/job/anyjob": {{200, fixture(t, "update-priority.200.json"), 0}},
	})
	c := testClient(t, srv.URL, V0038, nil)
	cl, err := c.Read(context.Background())
	if cl != nil || !errors.Is(err, ErrTokenRejected) {
		t.Fatalf("Read = %v, %v; want nil and ErrTokenRejected", cl, err)
	}
	if srv.count("GET /slurm/v0.0.38/partitions") != 0 {
		t.Error("Read went on after a failed read")
	}
}

// TestClient_TokenNeverLeaks makes a server echo the token back in every
// place the client turns into text, and checks no error and no log line
// carries it.
func TestClient_TokenNeverLeaks(t *testing.T) {
	tok := testJWT(time.Now().Add(time.Hour))
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			got := r.Header.Get("X-SLURM-USER-TOKEN")
			w.WriteHeader(status)
			if status == 401 {
				fmt.Fprintf(w, "Authentication failure for %s", got)
				return
			}
			fmt.Fprintf(w, `{"errors":[{"description":"token %s","error_number":-1,"error":"Unspecified error %s","source":"%s"}],"warnings":[{"description":"%s"}],"jobs":[]}`, got, got, got, got)
		}
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, st := range []int{200, 401, 500, 503} {
		srv := httptest.NewServer(echo(st))
		c, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(tok), Version: V0038,
			RetryBase: time.Millisecond, RetryMax: time.Millisecond}, log)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListJobs(context.Background())
		if err == nil {
			t.Fatalf("HTTP %d: no error", st)
		}
		if strings.Contains(err.Error(), tok) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), tok) {
			t.Errorf("HTTP %d: the error contains the token: %v", st, err)
		}
		srv.Close()
	}
	if strings.Contains(logs.String(), tok) {
		t.Errorf("the logs contain the token:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("the logs show no redacted warning; the test did not exercise the log path:\n%s", logs.String())
	}
}

func TestClient_ConfigErrors(t *testing.T) {
	tok := StaticToken(testJWT(time.Now().Add(time.Hour)))
	for _, cfg := range []Config{
		{User: "root", Token: tok},
		{URL: "ftp://x", User: "root", Token: tok},
		{URL: "http://127.0.0.1:1", Token: tok},
		{URL: "http://127.0.0.1:1", User: "root"},
		{URL: "http://127.0.0.1:1", User: "root", Token: tok, Version: "v0.0.39"},
		{URL: "http://127.0.0.1:1", User: "root", Token: tok, Version: V0038, RetryBase: time.Second, RetryMax: time.Millisecond},
	} {
		if _, err := New(context.Background(), cfg, nil); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestBackoff_Bounds(t *testing.T) {
	var seen atomic.Bool
	for attempt := 1; attempt <= 40; attempt++ {
		d := backoff(250*time.Millisecond, 4*time.Second, attempt)
		want := min(250*time.Millisecond<<min(attempt-1, 30), 4*time.Second)
		if d < want/2 || d > want {
			t.Errorf("attempt %d: %s outside [%s, %s]", attempt, d, want/2, want)
		}
		if d != want {
			seen.Store(true)
		}
	}
	if !seen.Load() {
		t.Error("no jitter")
	}
}
