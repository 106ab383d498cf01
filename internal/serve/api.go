package serve

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The job API's limits, by default. The answers come from memory in
// microseconds, so these bound what one client (a script polling in a
// loop, a portal page reloading) can take of the serve process, not what
// a person clicking needs.
const (
	DefaultAPIRate        = 10.0 // requests per second per caller, sustained
	DefaultAPIBurst       = 20   // requests per caller at once, after a pause
	DefaultAPIMaxInFlight = 32   // requests answered at the same time, all callers
	// DefaultPageSize and MaxPageSize are /v1/queue's page sizes: by
	// default and at most.
	DefaultPageSize = 100
	MaxPageSize     = 1000
	// MaxStartEvents bounds each list of /v1/jobs/{id}'s start (must end,
	// must start, backfill); the counts count them all.
	MaxStartEvents = 100
	// maxRateKeys bounds the per-caller buckets kept; idle ones (full
	// again) are dropped first.
	maxRateKeys = 10000
)

// APIConfig configures the read-only job API.
type APIConfig struct {
	// UserHeader, when set, is the request header in which the site's
	// proxy (Open OnDemand, a web portal) names the authenticated user:
	// the API then answers only about that user's jobs, the analogue of
	// Slurm's PrivateData=jobs. The header is trusted as is, so the API
	// must then be reachable only through that proxy, which must set it
	// on every request and strip any the client sent.
	UserHeader string
	// AllUsers, without UserHeader, shows every pending job to whoever
	// reaches the address, as squeue does without PrivateData=jobs. One
	// of the two must be chosen: the API has no default audience.
	AllUsers bool
	// Rate and Burst limit each caller (the trusted user, else the
	// client address) to Rate requests a second after Burst at once;
	// past it the answer is 429 with Retry-After. MaxInFlight bounds the
	// requests answered at once (made, not yet sent: a slow client's
	// answer waits outside); past it the answer is 503 with
	// Retry-After. Zero values take the defaults above.
	Rate        float64
	Burst       int
	MaxInFlight int
}

// withDefaults fills the limits left zero.
func (c APIConfig) withDefaults() APIConfig {
	if c.Rate == 0 {
		c.Rate = DefaultAPIRate
	}
	if c.Burst == 0 {
		c.Burst = DefaultAPIBurst
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultAPIMaxInFlight
	}
	return c
}

// NewAPI returns the read-only JSON API, answered from the last cycle's
// forecast (last), never from Slurm or the database:
//
//	GET /v1/jobs/{id}                    one pending job: rank, expected start, the time-limit bound,
//	                                     what must end or start before it
//	GET /v1/queue?user=U&account=A       the pending jobs, in squeue's order, a page at a time
//	             &limit=N&cursor=C       (next_cursor of the previous page)
func NewAPI(cfg APIConfig, last func() *QueueForecast) http.Handler {
	return newAPI(cfg, last, time.Now)
}

// newAPI is NewAPI on the clock now (the rate limit's). Limits left zero
// take the defaults; a config that names no audience (neither UserHeader
// nor AllUsers, which serve's settings refuse) answers every request
// 403.
func newAPI(cfg APIConfig, last func() *QueueForecast, now func() time.Time) *api {
	cfg = cfg.withDefaults()
	a := &api{cfg: cfg, last: last, now: now, slots: make(chan struct{}, max(cfg.MaxInFlight, 1)),
		limit: &rateLimiter{rate: cfg.Rate, burst: float64(cfg.Burst), buckets: map[string]*bucket{}}}
	a.mux.HandleFunc("GET /v1/jobs/{id}", a.job)
	a.mux.HandleFunc("GET /v1/queue", a.queue)
	return a
}

type api struct {
	cfg   APIConfig
	last  func() *QueueForecast
	now   func() time.Time
	mux   http.ServeMux
	slots chan struct{} // one per request being answered
	limit *rateLimiter
}

// JobAnswer is GET /v1/jobs/{id}'s answer.
type JobAnswer struct {
	At time.Time `json:"at"` // when the cycle answering was made
	JobForecast
	// Start lists what must end or start first, at most MaxStartEvents
	// of each kind; with the trusted user header only the caller's own
	// jobs are listed. The counts count them all.
	Start *StartForecast `json:"start"`
}

// QueueAnswer is GET /v1/queue's answer: one page of the jobs asked for.
type QueueAnswer struct {
	At     time.Time     `json:"at"`
	Policy string        `json:"policy"`
	Total  int           `json:"total"` // jobs asked for, on every page
	Jobs   []JobForecast `json:"jobs"`
	// NextCursor, when there are more, is the cursor parameter of the next
	// page. It holds for this forecast only (At): once the next cycle's
	// replaces it, the cursor is answered 410 and the listing starts again.
	NextCursor string `json:"next_cursor,omitempty"`
}

var (
	errNoCycle    = errors.New("no cycle has completed yet")
	errNoUser     = errors.New("the trusted user header is missing")
	errOtherUser  = errors.New("this is another user's queue")
	errNotYours   = errors.New("no pending job of yours that Fairway ranks has this id")
	errNoAudience = errors.New("the job API names no audience: serve sets neither a trusted user header nor all users")
	errBusy       = errors.New("too many requests in flight: try again shortly")
	errRate       = errors.New("too many requests from this caller: slow down")
)

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Answers are per user and stale a cycle later: a cache (the
	// portal's proxy, a browser) that kept one would hand one user's jobs
	// to the next caller of the same URL.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	select {
	case a.slots <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, errBusy)
		return
	}
	// The answer is made in memory and sent after the slot is given
	// back: a client that does not read (one write can then block until
	// WriteTimeout) would otherwise hold its slot, and a few such clients
	// all of them.
	ans := &answer{header: w.Header()}
	a.answer(ans, r)
	w.WriteHeader(cmp.Or(ans.code, http.StatusOK))
	_, _ = w.Write(ans.body.Bytes())
}

// answer answers r into ans holding one of the slots, which it gives
// back.
func (a *api) answer(ans *answer, r *http.Request) {
	defer func() { <-a.slots }()
	if wait, ok := a.limit.take(a.rateKey(r), a.now()); !ok {
		ans.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		writeError(ans, http.StatusTooManyRequests, errRate)
		return
	}
	a.mux.ServeHTTP(ans, r)
}

// answer is a response held whole until it is sent. Its header is the
// client's own.
type answer struct {
	header http.Header
	code   int // 0 until WriteHeader or Write
	body   bytes.Buffer
}

func (b *answer) Header() http.Header { return b.header }

func (b *answer) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *answer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// rateKey is whom a request is counted against: the trusted user when
// the header names one, else the client's address.
func (a *api) rateKey(r *http.Request) string {
	if a.cfg.UserHeader != "" {
		if v := r.Header.Values(a.cfg.UserHeader); len(v) == 1 && v[0] != "" {
			return "user " + v[0]
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr " + host
}

// caller is the user the request is answered for: "" when every user's
// jobs are shown, else the one value of the trusted header. A missing
// header is 401; two or more values (a client's header the proxy
// appended to instead of replacing, or a list in one line) are 400, never
// a guess at which one the proxy set.
func (a *api) caller(r *http.Request) (string, int, error) {
	switch {
	case a.cfg.UserHeader == "" && a.cfg.AllUsers:
		return "", 0, nil
	case a.cfg.UserHeader == "":
		return "", http.StatusForbidden, errNoAudience
	}
	v := r.Header.Values(a.cfg.UserHeader)
	switch {
	case len(v) == 0 || len(v) == 1 && strings.TrimSpace(v[0]) == "":
		return "", http.StatusUnauthorized, errNoUser
	case len(v) > 1:
		return "", http.StatusBadRequest, fmt.Errorf("the trusted user header %s came %d times: want exactly one", a.cfg.UserHeader, len(v))
	case strings.ContainsAny(v[0], ", \t"):
		return "", http.StatusBadRequest, fmt.Errorf("the trusted user header %s holds a list or spaces: want exactly one user name", a.cfg.UserHeader)
	}
	return v[0], 0, nil
}

func (a *api) job(w http.ResponseWriter, r *http.Request) {
	user, code, err := a.caller(r)
	if err != nil {
		writeError(w, code, err)
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
	if !ok || user != "" && jf.User != user {
		// Another user's job gets the answer a missing one gets, so that
		// the API does not say which job ids exist.
		msg := fmt.Errorf("job %d is not among the pending jobs Fairway ranks", id)
		if user != "" {
			msg = errNotYours
		}
		writeError(w, http.StatusNotFound, msg)
		return
	}
	start, _ := q.StartFor(id, user, MaxStartEvents)
	writeJSON(w, JobAnswer{At: q.At, JobForecast: jf, Start: start})
}

func (a *api) queue(w http.ResponseWriter, r *http.Request) {
	caller, code, err := a.caller(r)
	if err != nil {
		writeError(w, code, err)
		return
	}
	query := r.URL.Query()
	user := query.Get("user")
	switch {
	case caller != "" && user == "":
		user = caller
	case caller != "" && user != caller:
		writeError(w, http.StatusForbidden, fmt.Errorf("user %q: %w", user, errOtherUser))
		return
	}
	limit := DefaultPageSize
	if s := query.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > MaxPageSize {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want 1 to %d", s, MaxPageSize))
			return
		}
	}
	q := a.last()
	if q == nil {
		writeError(w, http.StatusServiceUnavailable, errNoCycle)
		return
	}
	offset := 0
	if s := query.Get("cursor"); s != "" {
		at, off, err := parseCursor(s)
		switch {
		case err != nil:
			writeError(w, http.StatusBadRequest, err)
			return
		case !at.Equal(q.At):
			writeError(w, http.StatusGone, fmt.Errorf("cursor: its forecast (%s) has been replaced by the one of %s: list again without a cursor",
				at.UTC().Format(time.RFC3339), q.At.UTC().Format(time.RFC3339)))
			return
		}
		offset = off
	}
	jobs, total := q.Page(user, query.Get("account"), offset, limit)
	if offset > total {
		writeError(w, http.StatusBadRequest, fmt.Errorf("cursor: past the %d jobs listed", total))
		return
	}
	ans := QueueAnswer{At: q.At, Policy: q.Policy, Total: total, Jobs: jobs}
	if end := offset + len(jobs); end < total {
		ans.NextCursor = formatCursor(q.At, end)
	}
	writeJSON(w, ans)
}

// A cursor is the forecast's time and the offset of the next job, in
// base64url so that clients pass it on as it is.
func formatCursor(at time.Time, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixNano(), 10) + "." + strconv.Itoa(offset)))
}

func parseCursor(s string) (time.Time, int, error) {
	bad := fmt.Errorf("cursor %q: not a next_cursor this API gave", s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, 0, bad
	}
	ns, off, ok := strings.Cut(string(b), ".")
	n, err1 := strconv.ParseInt(ns, 10, 64)
	o, err2 := strconv.Atoi(off)
	if !ok || err1 != nil || err2 != nil || o < 0 {
		return time.Time{}, 0, bad
	}
	return time.Unix(0, n), o, nil
}

// rateLimiter is a token bucket per caller.
type rateLimiter struct {
	rate, burst float64
	mu          sync.Mutex
	buckets     map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take spends one request of key's bucket at now, or says how long until
// one is there.
func (l *rateLimiter) take(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxRateKeys {
			for k, b := range l.buckets {
				if l.refill(b, now) >= l.burst {
					delete(l.buckets, k)
				}
			}
		}
		if len(l.buckets) >= maxRateKeys {
			return time.Second, false
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if l.refill(b, now) >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
}

func (l *rateLimiter) refill(b *bucket, now time.Time) float64 {
	if now.After(b.at) {
		b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
		b.at = now
	}
	return b.tokens
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
	return listenAndServe(addr, "job API server", h, log)
}
