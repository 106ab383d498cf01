package slurmctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// API versions this package speaks, newest first: the order negotiation
// tries them in.
const (
	V0041 = "v0.0.41" // Slurm 24.05-25.05, data_parser
	V0040 = "v0.0.40" // Slurm 23.11-24.11, data_parser
	V0038 = "v0.0.38" // Slurm 22.05 (the lab)
)

var versions = []string{V0041, V0040, V0038}

// Config configures a Client. URL, User and Token are required.
type Config struct {
	URL   string      // slurmrestd base URL, e.g. http://127.0.0.1:6820
	User  string      // sent as X-SLURM-USER-NAME
	Token TokenSource // sent as X-SLURM-USER-TOKEN

	// Version pins the API version ("v0.0.38", "v0.0.40", "v0.0.41"); empty
	// means negotiate with the server at New.
	Version string

	RequestTimeout   time.Duration // per HTTP request; default 30s
	ReadAttempts     int           // tries per read, first included; default 4
	RetryBase        time.Duration // first backoff; default 250ms, doubled per retry
	RetryMax         time.Duration // backoff cap; default 4s
	MaxResponseBytes int64         // default 1 GiB

	HTTPClient *http.Client // default: a client with keep-alive, no global timeout
}

// Client reads the cluster from slurmrestd and updates jobs. It is safe for
// concurrent use.
type Client struct {
	cfg     Config
	base    *url.URL
	version string
	http    *http.Client
	log     *slog.Logger
	sleep   func(context.Context, time.Duration) error
	lastTok atomic.Pointer[string] // the token last sent, for scrub
}

// New checks cfg, negotiates the API version (unless pinned) and returns a
// client. Negotiation reads GET /openapi/v3 and picks the newest supported
// version whose /slurm/<v>/jobs path it lists; if the spec is unavailable it
// probes GET /slurm/<v>/ping, newest first.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Client, error) {
	if cfg.URL == "" {
		return nil, errors.New("slurmrestd url is empty")
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("slurmrestd url %q: want http(s)://host:port", cfg.URL)
	}
	if cfg.User == "" {
		return nil, errors.New("slurmrestd user is empty")
	}
	if cfg.Token == nil {
		return nil, errors.New("slurmrestd token source is nil")
	}
	if cfg.Version != "" && !supported(cfg.Version) {
		return nil, fmt.Errorf("slurmrestd version %q: want one of %s", cfg.Version, strings.Join(versions, ", "))
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.ReadAttempts == 0 {
		cfg.ReadAttempts = 4
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 250 * time.Millisecond
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 4 * time.Second
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 1 << 30
	}
	if cfg.RequestTimeout < 0 || cfg.ReadAttempts < 1 || cfg.RetryBase < 0 || cfg.RetryMax < cfg.RetryBase || cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("slurmrestd client: timeout %s, attempts %d, backoff %s..%s, max body %d: want all positive and base <= max",
			cfg.RequestTimeout, cfg.ReadAttempts, cfg.RetryBase, cfg.RetryMax, cfg.MaxResponseBytes)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 4
		hc = &http.Client{Transport: tr}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, base: base, http: hc, log: log, sleep: sleepCtx}
	if cfg.Version != "" {
		c.version = cfg.Version
		return c, nil
	}
	v, err := c.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	c.version = v
	log.Info("slurmrestd api version negotiated", "version", v)
	return c, nil
}

func supported(v string) bool {
	for _, s := range versions {
		if s == v {
			return true
		}
	}
	return false
}

// Version is the API version in use.
func (c *Client) Version() string { return c.version }

func (c *Client) negotiate(ctx context.Context) (string, error) {
	body, _, err := c.do(ctx, http.MethodGet, "/openapi/v3", nil, true)
	if err == nil {
		var spec struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		if jerr := json.Unmarshal(body, &spec); jerr == nil && len(spec.Paths) > 0 {
			for _, v := range versions {
				for p := range spec.Paths {
					if strings.HasPrefix(p, "/slurm/"+v+"/jobs") {
						return v, nil
					}
				}
			}
			return "", fmt.Errorf("%w: /openapi/v3 lists none of %s", ErrVersion, strings.Join(versions, ", "))
		}
	}
	if errors.Is(err, ErrToken) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", fmt.Errorf("negotiate api version: %w", err)
	}
	c.log.Debug("no usable /openapi/v3; probing ping endpoints", "error", err)
	var last error = err
	for _, v := range versions {
		_, _, perr := c.do(ctx, http.MethodGet, "/slurm/"+v+"/ping", nil, false)
		if perr == nil {
			return v, nil
		}
		var ae *APIError
		if errors.As(perr, &ae) && ae.Status == http.StatusNotFound {
			continue
		}
		last = perr
		if !errors.Is(perr, ErrHTTP) {
			// Auth, transport or server trouble: probing further would not
			// help, and that error is the one to report.
			return "", fmt.Errorf("negotiate api version: %w", perr)
		}
	}
	return "", fmt.Errorf("negotiate api version: %w (last error: %v)", ErrVersion, last)
}

// Ping checks that slurmrestd answers and slurmctld is reachable through it.
func (c *Client) Ping(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/slurm/"+c.version+"/ping", nil, true)
	return err
}

// ListJobs returns every job record slurmctld holds (pending, running and
// recently finished), translated. Array and heterogeneous records are
// described on Job.
func (c *Client) ListJobs(ctx context.Context) ([]Job, error) {
	op := "/slurm/" + c.version + "/jobs"
	body, status, err := c.do(ctx, http.MethodGet, op, nil, true)
	if err != nil {
		return nil, err
	}
	jobs, env, err := parseJobs(body)
	if err := c.check("GET "+op, status, env, err); err != nil {
		return nil, err
	}
	return jobs, nil
}

// ListNodes returns every node.
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	op := "/slurm/" + c.version + "/nodes"
	body, status, err := c.do(ctx, http.MethodGet, op, nil, true)
	if err != nil {
		return nil, err
	}
	nodes, env, err := parseNodes(body)
	if err := c.check("GET "+op, status, env, err); err != nil {
		return nil, err
	}
	return nodes, nil
}

// ListPartitions returns every partition.
func (c *Client) ListPartitions(ctx context.Context) ([]Partition, error) {
	op := "/slurm/" + c.version + "/partitions"
	body, status, err := c.do(ctx, http.MethodGet, op, nil, true)
	if err != nil {
		return nil, err
	}
	parts, env, err := parsePartitions(body, c.version)
	if err := c.check("GET "+op, status, env, err); err != nil {
		return nil, err
	}
	return parts, nil
}

// Read takes one snapshot of the cluster: jobs, nodes and partitions. If
// any read fails, Read returns nil and the error, so a cycle never ranks or
// writes from a partial view.
func (c *Client) Read(ctx context.Context) (*Cluster, error) {
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster: list jobs: %w", err)
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster: list nodes: %w", err)
	}
	parts, err := c.ListPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("read cluster: list partitions: %w", err)
	}
	return &Cluster{Jobs: jobs, Nodes: nodes, Partitions: parts, Version: c.version}, nil
}

// JobUpdate is the one change Fairway makes to a job. Exactly one field is
// set; there is deliberately no way to express a hold, a cancel, or any
// other job field.
type JobUpdate struct {
	SiteFactor *int64 // v0.0.40+ only: 22.05 rejects "site_factor" ("Unknown key")
	Priority   *int64 // admin priority: freezes the job's priority (see Writer)
}

func (u JobUpdate) body(version string) ([]byte, error) {
	switch {
	case u.SiteFactor != nil && u.Priority != nil, u.SiteFactor == nil && u.Priority == nil:
		return nil, errors.New("job update: set exactly one of site factor and priority")
	case u.Priority != nil && *u.Priority < 1:
		return nil, fmt.Errorf("job update: priority %d would hold the job", *u.Priority)
	case u.SiteFactor != nil && version == V0038:
		return nil, fmt.Errorf("job update: slurmrestd %s has no site_factor (Slurm 22.05 rejects it); use scontrol", version)
	case u.SiteFactor != nil:
		return json.Marshal(struct {
			SiteFactor int64 `json:"site_factor"`
		}{*u.SiteFactor})
	case version == V0038:
		return json.Marshal(struct {
			Priority int64 `json:"priority"`
		}{*u.Priority})
	}
	type noValOut struct {
		Set    bool  `json:"set"`
		Number int64 `json:"number"`
	}
	return json.Marshal(struct {
		Priority noValOut `json:"priority"`
	}{noValOut{Set: true, Number: *u.Priority}})
}

// UpdateJob sends one job update for target (a job id, or "A_[tasks]" for
// an unsplit array record). It is never retried: a write whose outcome is
// unknown is left to the next cycle, which reads what Slurm holds.
func (c *Client) UpdateJob(ctx context.Context, target string, u JobUpdate) error {
	body, err := u.body(c.version)
	if err != nil {
		return err
	}
	path := "/slurm/" + c.version + "/job/" + url.PathEscape(target)
	resp, status, err := c.do(ctx, http.MethodPost, path, body, false)
	if err != nil {
		return err
	}
	var r wireUpdateResp
	var perr error
	if jerr := json.Unmarshal(resp, &r); jerr != nil {
		perr = fmt.Errorf("%w: job update: %v", ErrMalformed, jerr)
	}
	for _, res := range r.Results {
		if res.ErrorCode != 0 {
			r.Errors = append(r.Errors, wireError{Description: res.Why, ErrorNumber: &res.ErrorCode, Error: res.Error,
				Source: fmt.Sprintf("job %d", res.JobID)})
		}
	}
	return c.check("POST "+path, status, &r.envelope, perr)
}

// check turns a parsed 2xx response into an error when parsing failed or
// the errors array is not empty, and logs warnings.
func (c *Client) check(op string, status int, env *envelope, perr error) error {
	if perr != nil {
		return &APIError{Op: op, Status: status, Kind: ErrMalformed, Detail: c.scrub(strings.TrimPrefix(perr.Error(), ErrMalformed.Error()+": "))}
	}
	if env == nil {
		return nil
	}
	if len(env.Warnings) > 0 {
		ws := make([]string, len(env.Warnings))
		for i, w := range env.Warnings {
			ws[i] = c.scrub(w.slurm().String())
		}
		c.log.Warn("slurmrestd warnings", "op", op, "warnings", ws)
	}
	if len(env.Errors) == 0 {
		return nil
	}
	return &APIError{Op: op, Status: status, Kind: ErrSlurm, Slurm: c.slurmErrors(env.Errors)}
}

func (c *Client) slurmErrors(ws []wireError) []SlurmError {
	out := make([]SlurmError, len(ws))
	for i, w := range ws {
		e := w.slurm()
		e.Description, e.Error, e.Source = c.scrub(e.Description), c.scrub(e.Error), c.scrub(e.Source)
		out[i] = e
	}
	return out
}

// scrub removes the token last sent from s, in case a server or a proxy
// echoes it back.
func (c *Client) scrub(s string) string {
	if tok := c.lastTok.Load(); tok != nil {
		return redact(s, *tok)
	}
	return s
}

// do sends one request (retrying reads) and returns the body of a 2xx
// response. Every other outcome is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body []byte, retry bool) ([]byte, int, error) {
	op := method + " " + path
	attempts := 1
	if retry {
		attempts = c.cfg.ReadAttempts
	}
	renewed := false
	var err error
	for attempt := 1; ; attempt++ {
		var out []byte
		var status int
		out, status, err = c.once(ctx, op, method, path, body)
		if err == nil {
			return out, status, nil
		}
		if ctx.Err() != nil {
			return nil, status, err
		}
		// A token Slurm refused may just have been revoked or outlived a
		// clock skew: a renewable source gets one fresh try (reads only).
		if retry && !renewed && (errors.Is(err, ErrTokenRejected) || errors.Is(err, ErrUnauthorized)) {
			if inv, ok := c.cfg.Token.(invalidator); ok {
				inv.Invalidate()
				renewed = true
				c.log.Warn("slurm refused the token; renewing it once", "op", op)
				continue
			}
		}
		if !retry || attempt >= attempts || !transient(err) {
			return nil, status, err
		}
		d := backoff(c.cfg.RetryBase, c.cfg.RetryMax, attempt)
		c.log.Warn("slurmrestd read failed; retrying", "op", op, "attempt", attempt, "backoff_seconds", d.Seconds(), "error", err)
		if serr := c.sleep(ctx, d); serr != nil {
			return nil, status, err
		}
	}
}

// backoff is full-jitter exponential backoff: uniform in [d/2, d] with
// d = base·2^(attempt-1) capped at max.
func backoff(base, maxd time.Duration, attempt int) time.Duration {
	d := base << min(attempt-1, 30)
	if d > maxd || d <= 0 {
		d = maxd
	}
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1) //nolint:gosec // jitter, not crypto
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) once(ctx context.Context, op, method, path string, body []byte) ([]byte, int, error) {
	tok, err := c.cfg.Token.Token(ctx)
	if err != nil {
		return nil, 0, &APIError{Op: op, Kind: ErrToken, Detail: strings.TrimPrefix(err.Error(), ErrToken.Error()+": ")}
	}
	c.lastTok.Store(&tok)
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, 0, &APIError{Op: op, Kind: ErrHTTP, Detail: err.Error()}
	}
	req.Header.Set("X-SLURM-USER-NAME", c.cfg.User)
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, c.transportError(ctx, rctx, op, err, tok)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, resp.StatusCode, c.transportError(ctx, rctx, op, err, tok)
	}
	c.log.Debug("slurmrestd", "op", op, "status", resp.StatusCode, "bytes", len(out), "duration_seconds", time.Since(start).Seconds())
	if int64(len(out)) > c.cfg.MaxResponseBytes {
		return nil, resp.StatusCode, &APIError{Op: op, Status: resp.StatusCode, Kind: ErrMalformed,
			Detail: fmt.Sprintf("body larger than %d bytes", c.cfg.MaxResponseBytes)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return out, resp.StatusCode, nil
	}
	return nil, resp.StatusCode, c.statusError(op, resp.StatusCode, out, tok)
}

func (c *Client) transportError(ctx, rctx context.Context, op string, err error, tok string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	detail := redact(err.Error(), tok)
	var ne net.Error
	if errors.Is(rctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &APIError{Op: op, Kind: ErrTimeout, Detail: fmt.Sprintf("no response within %s", c.cfg.RequestTimeout)}
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		detail = "connection refused (is slurmrestd running?)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		detail = "connection lost before a complete response: " + detail
	}
	return &APIError{Op: op, Kind: ErrUnreachable, Detail: detail}
}

// statusError classifies a non-2xx response. Its body, when JSON, carries
// Slurm's errors, which are kept (scrubbed).
func (c *Client) statusError(op string, status int, body []byte, tok string) error {
	var env envelope
	var slurm []SlurmError
	detail := ""
	if json.Unmarshal(body, &env) == nil {
		slurm = c.slurmErrors(env.Errors)
	} else if t := strings.TrimSpace(string(body)); t != "" {
		if len(t) > 200 {
			t = t[:200] + "..."
		}
		detail = redact(t, tok)
	}
	e := &APIError{Op: op, Status: status, Slurm: slurm, Detail: detail}
	switch {
	case status == http.StatusUnauthorized:
		e.Kind = ErrUnauthorized
	case status == http.StatusForbidden:
		e.Kind = ErrForbidden
	case status >= 500 && tokenRejected(slurm):
		e.Kind = ErrTokenRejected
		e.Detail = "slurmctld refused the request without a reason, which is how Slurm 22.05 reports a bad or expired token"
	case status >= 500:
		e.Kind = ErrServer
	default:
		e.Kind = ErrHTTP
	}
	return e
}

// tokenRejected recognises 22.05's answer to a token slurmctld refuses
// (observed in the lab with a corrupted signature): every error is -1
// ("Unspecified error") on a read, 1000 ("Unexpected message received") on
// a job update. slurmctld being down gives 1001 ("Unable to contact slurm
// controller") instead, and a refused update of a real job its own code
// (e.g. 2084, "Job has already finished").
func tokenRejected(errs []SlurmError) bool {
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if e.Number != -1 && e.Number != 1000 {
			return false
		}
	}
	return true
}
