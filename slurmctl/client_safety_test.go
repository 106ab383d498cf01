package slurmctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// TestClient_NoRedirect: a redirect is never followed, so the token cannot
// be carried to another host; the 3xx is an error naming why.
func TestClient_NoRedirect(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-SLURM-USER-TOKEN") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(200)
	}))
	defer other.Close()
	for _, st := range []int{301, 302, 307, 308} {
		srv := httptest.NewServer(http.RedirectHandler(other.URL+"/slurm/v0.0.45/jobs", st))
		_, err := testClient(t, srv.URL, V0045, nil).ListJobs(context.Background())
		srv.Close()
		if !errors.Is(err, ErrHTTP) || !strings.Contains(err.Error(), "redirect refused") {
			t.Errorf("HTTP %d: %v, want a refused redirect", st, err)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the token reached the redirect target %d times", n)
	}
}

// TestClient_NoProxy: the default client ignores HTTP(S)_PROXY.
func TestClient_NoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	tr, ok := defaultHTTPClient().Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Fatalf("default transport %T has a proxy function", defaultHTTPClient().Transport)
	}
	req, _ := http.NewRequest("GET", "http://slurmrestd.example:6820/slurm/v0.0.45/jobs", nil)
	if u, _ := http.ProxyFromEnvironment(req); u == nil {
		t.Fatal("test setup: the environment names no proxy for this request")
	}
}

// TestFileToken_Permissions: a token file others can read, or that belongs
// to another user, is refused with an error saying how to fix it.
func TestFileToken_Permissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jwt")
	if err := os.WriteFile(path, []byte(testJWT(time.Now().Add(time.Hour))), 0o600); err != nil {
		t.Fatal(err)
	}
	src := FileToken(path)
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatalf("mode 0600: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatalf("mode 0640: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o604, 0o602} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := src.Token(context.Background())
		if !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "others may read or write it") || !strings.Contains(err.Error(), "chmod 0600") {
			t.Errorf("mode %04o: %v, want a refusal naming the fix", mode, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the owner check is exercised only where the test can chown")
		return
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Token(context.Background()); !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("file of another user: %v, want a refusal naming the owner", err)
	}
}

// TestClient_BodyCap: a body over the cap is refused while it streams in,
// with an error saying so; a body under it reads.
func TestClient_BodyCap(t *testing.T) {
	c := captureCombos(t)[6]
	jobs := c.reply(t, "jobs.json")
	srv := newReplay(t, map[string][]reply{"GET /slurm/v0.0.45/jobs": {jobs}})
	_, err := testClient(t, srv.URL, V0045, func(cfg *Config) { cfg.MaxResponseBytes = int64(len(jobs.body)) / 2 }).ListJobs(context.Background())
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("half-size cap: %v, want the cap named", err)
	}
	if n := srv.count("GET /slurm/v0.0.45/jobs"); n != 1 {
		t.Errorf("%d requests: an oversized body must not be retried", n)
	}
	if got, err := testClient(t, srv.URL, V0045, func(cfg *Config) { cfg.MaxResponseBytes = int64(len(jobs.body)) }).ListJobs(context.Background()); err != nil || len(got) != 22 {
		t.Errorf("cap = body size: %d jobs, %v", len(got), err)
	}
}

// TestClient_SkipsUntranslatableRecord: one job record slurmctl cannot
// read (a GRES request it cannot parse, a number that is not one) is
// skipped, logged and counted; the other 21 captured jobs are read.
func TestClient_SkipsUntranslatableRecord(t *testing.T) {
	c := captureCombos(t)[6]
	for name, spoil := range map[string]func(j map[string]any){
		"bad gres":     func(j map[string]any) { j["tres_per_node"] = "gres/gpu:h100:2(IDX:0" },
		"bad priority": func(j map[string]any) { j["priority"] = map[string]any{"set": true, "number": "high"} },
	} {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(c.reply(t, "jobs.json").body, &doc); err != nil {
				t.Fatal(err)
			}
			for _, ji := range doc["jobs"].([]any) {
				if j := ji.(map[string]any); j["job_id"].(float64) == 13 {
					spoil(j)
				}
			}
			body, _ := json.Marshal(doc)
			srv := newReplay(t, map[string][]reply{"GET /slurm/v0.0.45/jobs": {{200, body, 0}}})
			cl := testClient(t, srv.URL, V0045, nil)
			jobs, err := cl.ListJobs(context.Background())
			if err != nil || len(jobs) != 21 || cl.SkippedRecords() != 1 {
				t.Fatalf("ListJobs: %d jobs, %v, %d skipped; want 21, nil, 1", len(jobs), err, cl.SkippedRecords())
			}
			for _, j := range jobs {
				if j.ID == 13 {
					t.Error("the spoiled record 13 was kept")
				}
			}
			if _, _, err := parseJobs(body); err == nil {
				t.Error("parseJobs (strict) accepted the spoiled record")
			}
		})
	}
}

// TestClient_ErrorBodyClipped: a non-JSON error body is kept as 200 bytes
// of valid text, cut on a character boundary, with the token redacted
// before the cut: cut first, a token straddling byte 200 was no longer
// whole, so its start escaped the redaction, and a cut through a
// character left text the database refuses.
func TestClient_ErrorBodyClipped(t *testing.T) {
	tok := testJWT(time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"a character across the cut", strings.Repeat("x", 199) + "ééé", strings.Repeat("x", 199) + "..."},
		{"the token across the cut", strings.Repeat("x", 190) + tok + " tail", strings.Repeat("x", 190) + "[REDACTED]..."},
		{"invalid UTF-8", "bad \xff gateway", "bad \uFFFD gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			c, err := New(context.Background(), Config{URL: srv.URL, User: "root", Token: StaticToken(tok), Version: V0038,
				RetryBase: time.Millisecond, RetryMax: time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListJobs(context.Background())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("ListJobs: %v, want an *APIError", err)
			}
			if ae.Detail != tc.want || !utf8.ValidString(err.Error()) || strings.Contains(err.Error(), tok[:10]) {
				t.Errorf("detail %q, want %q (error %q)", ae.Detail, tc.want, err)
			}
		})
	}
}
