package slurmctl

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The tests here replay captured answers (capture_test.go) the way a
// slurmrestd in trouble sends them: stalled, cut, or refused half way.

// stallingServer sends the status and the first cut bytes of a captured
// answer, then sends nothing more until the client gives up: slurmrestd
// stuck behind a busy slurmctld after its headers went out.
func stallingServer(t *testing.T, rep reply, cut int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body[:cut])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClient_BodyStallsMidRecord: a jobs answer whose body stops in the
// middle of a job record is a timeout within the request timeout, retried
// like one. The decoder used to take the broken read for a bad record,
// skip it, and find the same half record again, for ever.
func TestClient_BodyStallsMidRecord(t *testing.T) {
	for _, c := range captureCombos(t) {
		if c.version != c.newest {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			jobs := c.reply(t, "jobs.json")
			srv := stallingServer(t, jobs, len(jobs.body)/2)
			cl := testClient(t, srv.URL, c.version, func(cfg *Config) { cfg.RequestTimeout = 100 * time.Millisecond })
			done := make(chan error, 1)
			go func() {
				_, err := cl.ListJobs(context.Background())
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("ListJobs: %v, want ErrTimeout", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ListJobs still running 10s after a stalled body, with a 100ms request timeout and 4 attempts")
			}
		})
	}
}
