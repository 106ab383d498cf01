package serve

import (
	"net/http"
	"testing"
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
