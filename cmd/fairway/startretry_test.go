package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// TestConnectSlurm_WaitsForSlurmrestdAtStart: serve starts while nothing
// listens on slurmrestd's port (connection refused). It logs each attempt
// with the wait before the next, and connects once slurmrestd answers
// (the captured 26.05.3 spec) instead of exiting. The backoff doubles from
// the interval up to the cap. The test's sleep starts the server after the
// second failed attempt, so nothing waits on the clock.
func TestConnectSlurm_WaitsForSlurmrestdAtStart(t *testing.T) {
	spec := shareddata.Read(t, "data", "slurmrestd", "slurm-26.05.3", "openapi-v3.json")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused until the server below takes the port

	var srv *httptest.Server
	t.Cleanup(func() {
		if srv != nil {
			srv.Close()
		}
	})
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) == 2 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/openapi/v3" {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write(spec)
			}))
			srv.Listener = l
			srv.Start()
		}
		return nil
	}
	var logs bytes.Buffer
	cfg := serveConfig{
		Slurm:    slurmctl.ConnectConfig{URL: "http://" + addr, User: "root", TokenEnv: testToken(t)},
		Interval: 10 * time.Second, MaxBackoff: 15 * time.Second, WaitForSlurm: true, startSleep: sleep,
	}
	c, err := connectSlurm(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("connect while slurmrestd starts: %v\n%s", err, logs.String())
	}
	if c.Version() != slurmctl.V0045 {
		t.Errorf("negotiated %s, want %s", c.Version(), slurmctl.V0045)
	}
	if want := []time.Duration{10 * time.Second, 15 * time.Second}; len(waits) != 2 || waits[0] != want[0] || waits[1] != want[1] {
		t.Errorf("waits %v, want %v", waits, want)
	}
	out := logs.String()
	if n := strings.Count(out, "cannot reach Slurm at start; retrying"); n != 2 || !strings.Contains(out, "connection refused") ||
		!strings.Contains(out, "retry_in_seconds=10") || !strings.Contains(out, "attempts=3") {
		t.Errorf("log: %d retry lines, want 2 naming the refusal and the wait, then one saying it started:\n%s", n, out)
	}

	// One-shot commands (explain, queue, serve --once) do not wait, and
	// nothing waits out a failure that time does not fix.
	cfg.WaitForSlurm, waits = false, nil
	cfg.Slurm.URL = "http://" + closedAddr(t)
	if _, err := connectSlurm(context.Background(), cfg, slog.New(slog.DiscardHandler)); !errors.Is(err, slurmctl.ErrUnreachable) || len(waits) != 0 {
		t.Errorf("without WaitForSlurm: %v after %d waits, want ErrUnreachable at once", err, len(waits))
	}
	cfg.WaitForSlurm = true
	cfg.Slurm.URL = srv.URL
	cfg.Slurm.APIVersion = slurmctl.V0038 // 26.05 serves v0.0.42 to v0.0.45 only
	if _, err := connectSlurm(context.Background(), cfg, slog.New(slog.DiscardHandler)); !errors.Is(err, slurmctl.ErrVersion) || len(waits) != 0 {
		t.Errorf("unserved version: %v after %d waits, want ErrVersion at once", err, len(waits))
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
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
