package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAPI_ResponseHeaders: every answer, whatever its status, forbids
// caches from keeping it (a proxy's or a browser's cache would hand one
// user's jobs to the next caller of the same URL, and a forecast is stale
// a cycle later) and tells browsers not to sniff it as anything but JSON.
func TestAPI_ResponseHeaders(t *testing.T) {
	q := fcQueue(t)
	h := privateAPI(t, func() *QueueForecast { return q })
	tests := []struct {
		name, path string
		users      []string
		code       int
	}{
		{"own job", "/v1/jobs/2", []string{"bob"}, http.StatusOK},
		{"own queue", "/v1/queue", []string{"bob"}, http.StatusOK},
		{"not yours", "/v1/jobs/1", []string{"bob"}, http.StatusNotFound},
		{"bad id", "/v1/jobs/12_3", []string{"bob"}, http.StatusBadRequest},
		{"no user", "/v1/queue", nil, http.StatusUnauthorized},
		{"other queue", "/v1/queue?user=alice", []string{"bob"}, http.StatusForbidden},
		{"no such path", "/v1/nothing", []string{"bob"}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := getAPI(h, tt.path, tt.users...)
			if rec.Code != tt.code {
				t.Errorf("GET %s: %d %s, want %d", tt.path, rec.Code, rec.Body, tt.code)
			}
			for key, want := range map[string]string{"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
				if got := rec.Header().Get(key); got != want {
					t.Errorf("GET %s: %s %q, want %q", tt.path, key, got, want)
				}
			}
		})
	}
}

// stalledWriter is a client that does not read its answer: its first
// Write blocks until release is closed, as a write to a socket whose
// peer keeps its receive window shut blocks until WriteTimeout.
type stalledWriter struct {
	header  http.Header
	writing chan struct{} // closed when the first Write starts
	release chan struct{}
}

func (s *stalledWriter) Header() http.Header { return s.header }
func (s *stalledWriter) WriteHeader(int)     {}
func (s *stalledWriter) Write(p []byte) (int, error) {
	select {
	case <-s.writing:
	default:
		close(s.writing)
	}
	<-s.release
	return len(p), nil
}

// TestAPI_SlowReaderHoldsNoSlot: a client that does not read its answer
// does not keep a request slot while the answer waits to be sent, so that
// a few such clients (each held up to WriteTimeout) cannot have every
// other caller answered 503.
func TestAPI_SlowReaderHoldsNoSlot(t *testing.T) {
	q := fcQueue(t)
	h := NewAPI(APIConfig{UserHeader: "X-Remote-User", MaxInFlight: 1}, func() *QueueForecast { return q })
	slow := &stalledWriter{header: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := httptest.NewRequest(http.MethodGet, "/v1/queue", nil)
		req.Header.Set("X-Remote-User", "carol")
		h.ServeHTTP(slow, req)
	}()
	defer func() { close(slow.release); <-done }()
	select {
	case <-slow.writing:
	case <-time.After(10 * time.Second):
		t.Fatal("carol's answer was never written")
	}
	if rec := getAPI(h, "/v1/queue", "bob"); rec.Code != http.StatusOK {
		t.Errorf("bob while carol does not read: %d %s, want 200", rec.Code, rec.Body)
	}
}
