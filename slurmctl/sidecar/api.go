package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// APIConfig configures the read-only job API.
type APIConfig struct {
	// UserHeader, when set, is the request header in which the site's
	// proxy (Open OnDemand, a web portal) names the authenticated user:
	// the API then answers only about that user's jobs, the analogue of
	// Slurm's PrivateData=jobs. The header is trusted as is, so the API
	// must then be reachable only through that proxy, which must set it
	// on every request and strip any the client sent. Empty: every job is
	// visible to whoever reaches the address, as squeue shows them.
	UserHeader string
}

// NewAPI returns the read-only JSON API, answered from the last cycle's
// forecast (last), never from Slurm or the database:
//
//	GET /v1/jobs/{id}               one pending job: rank, expected start, the time-limit bound,
//	                                the jobs that must end or start before it
//	GET /v1/queue?user=U&account=A  the pending jobs, in squeue's order
func NewAPI(cfg APIConfig, last func() *QueueForecast) http.Handler {
	a := &api{cfg: cfg, last: last}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}", a.job)
	mux.HandleFunc("GET /v1/queue", a.queue)
	return mux
}

type api struct {
	cfg  APIConfig
	last func() *QueueForecast
}

// JobAnswer is GET /v1/jobs/{id}'s answer.
type JobAnswer struct {
	At time.Time `json:"at"` // when the cycle answering was made
	JobForecast
	Start *StartForecast `json:"start"`
}

// QueueAnswer is GET /v1/queue's answer.
type QueueAnswer struct {
	At     time.Time     `json:"at"`
	Policy string        `json:"policy"`
	Jobs   []JobForecast `json:"jobs"`
}

var (
	errNoCycle   = errors.New("no cycle has completed yet")
	errNoUser    = errors.New("the trusted user header is missing")
	errOtherUser = errors.New("this job belongs to another user")
)

// caller is the user the request is answered for: "" when the API is
// open, or an error when privacy is on and the header is missing.
func (a *api) caller(r *http.Request) (string, error) {
	if a.cfg.UserHeader == "" {
		return "", nil
	}
	u := r.Header.Get(a.cfg.UserHeader)
	if u == "" {
		return "", errNoUser
	}
	return u, nil
}

func (a *api) job(w http.ResponseWriter, r *http.Request) {
	user, err := a.caller(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("job id %q: want a positive integer", r.PathValue("id")))
		return
	}
	q := a.last()
	if q == nil {
		writeError(w, http.StatusServiceUnavailable, errNoCycle)
		return
	}
	jf, ok := q.Job(id)
	switch {
	case ok && user != "" && jf.User != user:
		writeError(w, http.StatusForbidden, errOtherUser)
		return
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Errorf("job %d is not among the pending jobs Fairway ranks", id))
		return
	}
	start, _ := q.Start(id)
	writeJSON(w, JobAnswer{At: q.At, JobForecast: jf, Start: start})
}

func (a *api) queue(w http.ResponseWriter, r *http.Request) {
	caller, err := a.caller(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err)
		return
	}
	user := r.URL.Query().Get("user")
	switch {
	case caller != "" && user == "":
		user = caller
	case caller != "" && user != caller:
		writeError(w, http.StatusForbidden, fmt.Errorf("user %q: %w", user, errOtherUser))
		return
	}
	q := a.last()
	if q == nil {
		writeError(w, http.StatusServiceUnavailable, errNoCycle)
		return
	}
	writeJSON(w, QueueAnswer{At: q.At, Policy: q.Policy, Jobs: q.Filter(user, r.URL.Query().Get("account"))})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// StartAPI serves h on addr until the returned server is shut down.
func StartAPI(addr string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	return listenAndServe(addr, "--http-addr", "job API server", h, log)
}
