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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairway-hpc/fairway/internal/jsonfix"
)

// API versions this package speaks, newest first: the order negotiation
// tries them in. Which Slurm release serves which (SchedMD's
// src/plugins/data_parser per tag): 22.05 up to v0.0.38 (old openapi
// plugins), 23.02 v0.0.37-39, 23.11 v0.0.38-40, 24.05 v0.0.39-41, 24.11
// v0.0.40-42, 25.05 v0.0.40-43, 25.11 v0.0.41-44, 26.05 v0.0.42-45. From
// 23.11 on /slurmdb/ uses the same numbers as /slurm/.
const (
	V0045 = "v0.0.45" // Slurm 26.05
	V0044 = "v0.0.44" // Slurm 25.11-26.05
	V0043 = "v0.0.43" // Slurm 25.05-26.05
	V0042 = "v0.0.42" // Slurm 24.11-26.05
	V0041 = "v0.0.41" // Slurm 24.05-25.11
	V0040 = "v0.0.40" // Slurm 23.11-25.05
	V0038 = "v0.0.38" // Slurm 22.05-23.11 (Debian 12's 22.05.8 in the lab)
)

var versions = []string{V0045, V0044, V0043, V0042, V0041, V0040, V0038}

// NoSharesError is Shares on an API version without the /shares endpoint
// (v0.0.38); it is an ErrVersion. Instead names the way out, for a caller
// to put in its own words.
type NoSharesError struct {
	Version string
	Instead string
}

func (e *NoSharesError) Error() string {
	return fmt.Sprintf("%v: slurmrestd %s (Slurm 22.05's API) has no /shares endpoint; Slurm 23.11 and later serve /slurm/<v>/shares from v0.0.40 on: use %s here", ErrVersion, e.Version, e.Instead)
}

// Unwrap makes errors.Is(err, ErrVersion) hold.
func (e *NoSharesError) Unwrap() error { return ErrVersion }

// InsecureHTTPError refuses an http:// URL that names another host: the
// token would cross the network in clear text. Setting names what allows
// it anyway (Config.AllowInsecureHTTP), for a caller to put in its own
// words.
type InsecureHTTPError struct {
	URL     string // redacted
	Setting string
}

func (e *InsecureHTTPError) Error() string {
	return fmt.Sprintf("slurmrestd url %q: plain http to another host would send the Slurm token in clear text: "+
		"use https (a TLS proxy in front of slurmrestd), run Fairway on slurmrestd's host with http://127.0.0.1, "+
		"or accept the risk on a network you trust with %s", e.URL, e.Setting)
}

// Config configures a Client. URL, User and Token are required.
type Config struct {
	URL   string      // slurmrestd base URL, e.g. http://127.0.0.1:6820
	User  string      // sent as X-SLURM-USER-NAME
	Token TokenSource // sent as X-SLURM-USER-TOKEN

	// Version pins the API version (one of Versions()); empty means
	// negotiate with the server at New.
	Version string

	RequestTimeout time.Duration // per HTTP request; default 30s
	ReadAttempts   int           // tries per read, first included; default 4
	RetryBase      time.Duration // first backoff; default 250ms, doubled per retry
	RetryMax       time.Duration // backoff cap; default 4s
	// MaxResponseBytes caps one response body. Bodies are decoded as they
	// arrive (job records one at a time), so the cap bounds what a broken or
	// hostile server can make Fairway read, not what it holds. Default
	// DefaultMaxResponseBytes; size it to the cluster (see there).
	MaxResponseBytes int64

	// AllowInsecureHTTP lets an http:// URL name a host other than this
	// one (loopback). Refused otherwise: every request carries the token,
	// SlurmUser's on a serve host, and plain http sends it across the
	// network in clear text for anyone on the path to replay. Allowed, it
	// is warned about on every New.
	AllowInsecureHTTP bool

	// HTTPClient replaces the default client. The default follows no
	// redirect and uses no proxy (HTTP_PROXY and HTTPS_PROXY are ignored):
	// every request carries the token, which must go to slurmrestd and
	// nowhere else.
	HTTPClient *http.Client
}

// DefaultMaxResponseBytes is the default body cap: 256 MiB. A job record is
// about 9.4 kB on Slurm 24.11-26.05 (207,518 bytes for 22 jobs in the
// 26.05.3 capture) and 3 kB on 22.05, so this holds about 27,000 records of
// the newer releases; a site with a larger MaxJobCount raises it
// (--slurm-max-body) to about 10 kB per job.
const DefaultMaxResponseBytes = 256 << 20

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

	release     atomic.Pointer[string] // Slurm release, once known
	skipped     atomic.Int64           // job records skipped as untranslatable, since New
	releaseOnce sync.Once
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
		return nil, fmt.Errorf("slurmrestd version %q: Fairway knows %s", cfg.Version, strings.Join(versions, ", "))
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
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.RequestTimeout < 0 || cfg.ReadAttempts < 1 || cfg.RetryBase < 0 || cfg.RetryMax < cfg.RetryBase || cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("slurmrestd client: timeout %s, attempts %d, backoff %s..%s, max body %d: want all positive and base <= max",
			cfg.RequestTimeout, cfg.ReadAttempts, cfg.RetryBase, cfg.RetryMax, cfg.MaxResponseBytes)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if base.Scheme == "http" && !isLoopbackHost(base.Hostname()) {
		if !cfg.AllowInsecureHTTP {
			return nil, &InsecureHTTPError{URL: base.Redacted(), Setting: "Config.AllowInsecureHTTP"}
		}
		log.Warn("slurmrestd over plain http to another host, as allowed: the Slurm token crosses the network in clear text",
			"url", base.Redacted())
	}
	c := &Client{cfg: cfg, base: base, http: hc, log: log, sleep: sleepCtx}
	if cfg.Version != "" {
		c.version = cfg.Version
		if err := c.checkPinned(ctx); err != nil {
			return nil, err
		}
		log.Info("slurmrestd api version pinned", "version", c.version, "slurm_release", c.Release())
		return c, nil
	}
	v, offered, err := c.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	c.version = v
	if c.Release() == "" {
		// 22.05's spec does not name the release; its ping's meta does.
		if body, _, perr := c.do(ctx, http.MethodGet, "/slurm/"+v+"/ping", nil, false); perr == nil {
			if env, err := decodeAnswer(bytes.NewReader(body), "ping", nil); err == nil {
				c.noteReleaseQuiet(env)
			}
		}
	}
	rel := c.Release()
	if rel == "" {
		rel = "unknown until the first answer"
	}
	log.Info("slurmrestd api version negotiated", "version", v, "slurm_release", rel, "offered", offered)
	return c, nil
}

// defaultHTTPClient keeps connections alive, follows no redirect (a 3xx
// comes back as the response, which is an error) and ignores proxy
// variables, so the token reaches slurmrestd and no other host.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	tr.Proxy = nil
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
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

// Release is the Slurm release slurmrestd reported ("26.05.3"), or "" until
// known: from the spec's info (25.05 on) at negotiation, else from the
// first answer's meta.
func (c *Client) Release() string {
	if r := c.release.Load(); r != nil {
		return *r
	}
	return ""
}

// SkippedRecords is how many job records were skipped since New because
// they could not be translated (each one logged).
func (c *Client) SkippedRecords() int64 { return c.skipped.Load() }

// noteRelease keeps the release from a response's meta and logs it once,
// for a client whose spec did not name it (22.05-24.11, or a pinned
// version).
func (c *Client) noteRelease(env *envelope) {
	if env == nil || env.Meta.Slurm.Release == "" || c.Release() != "" {
		return
	}
	rel := env.Meta.Slurm.Release
	c.release.CompareAndSwap(nil, &rel)
	c.releaseOnce.Do(func() {
		c.log.Info("slurm release", "slurm_release", rel, "version", c.version, "data_parser", env.Meta.Plugin.DataParser)
	})
}

// versionNumber is the last part of "v0.0.NN", -1 when v has another form.
func versionNumber(v string) int {
	rest, ok := strings.CutPrefix(v, "v0.0.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// specInfo is what negotiation reads of /openapi/v3.
type specInfo struct {
	Info struct {
		Version string `json:"version"` // "Slurm-24.11.7&openapi/slurmctld&..." on 23.11-24.11
		XSlurm  struct {
			Release string `json:"release"`
		} `json:"x-slurm"` // 25.05 on
	} `json:"info"`
	Paths map[string]json.RawMessage `json:"paths"`
}

// offeredVersions lists the /slurm/<v>/ versions a spec's paths name,
// newest first.
func offeredVersions(paths map[string]json.RawMessage) []string {
	seen := map[string]bool{}
	for p := range paths {
		rest, ok := strings.CutPrefix(p, "/slurm/")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, "/")
		if versionNumber(v) >= 0 {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b string) int { return versionNumber(b) - versionNumber(a) })
	return out
}

// pickVersion returns the newest version both sides know whose jobs path
// the spec lists, or an ErrVersion naming what the server offers and what
// Fairway knows.
func pickVersion(paths map[string]json.RawMessage, offered []string) (string, error) {
	for _, v := range versions {
		if servesJobs(paths, v) {
			return v, nil
		}
	}
	known := strings.Join(versions, ", ")
	if len(offered) == 0 {
		return "", fmt.Errorf("%w: /openapi/v3 lists no /slurm/<version>/ paths (is slurmrestd running openapi/slurmctld?); Fairway knows %s", ErrVersion, known)
	}
	newer := true
	for _, v := range offered {
		if versionNumber(v) <= versionNumber(versions[0]) {
			newer = false
		}
	}
	if newer {
		return "", fmt.Errorf("%w: slurmrestd offers only %s, newer than every version Fairway knows (%s): upgrade Fairway, or pin nothing and run a slurmrestd whose Slurm still serves %s",
			ErrVersion, strings.Join(offered, ", "), known, versions[0])
	}
	return "", fmt.Errorf("%w: slurmrestd offers %s; Fairway knows %s", ErrVersion, strings.Join(offered, ", "), known)
}

// releaseFromSpec reads the Slurm release from a spec's info: x-slurm
// (25.05 on) or the "Slurm-24.11.7&..." version string (23.11-24.11).
func releaseFromSpec(s *specInfo) string {
	if r := s.Info.XSlurm.Release; r != "" {
		return r
	}
	if rest, ok := strings.CutPrefix(s.Info.Version, "Slurm-"); ok {
		r, _, _ := strings.Cut(rest, "&")
		return r
	}
	return ""
}

// checkPinned reads the server's spec and fails when it does not list the
// pinned version's jobs path, naming the versions it serves: otherwise the
// first read would fail with a bare HTTP 404 ("Unable find requested URL").
// A spec that cannot be read (slurmrestd down, a token it wants first, a
// proxy without it) decides nothing: the pin stands and the first read
// says what is wrong.
func (c *Client) checkPinned(ctx context.Context) error {
	body, _, err := c.do(ctx, http.MethodGet, "/openapi/v3", nil, false)
	if err != nil {
		c.log.Debug("no /openapi/v3 to check the pinned version against", "version", c.version, "error", err)
		return nil
	}
	var spec specInfo
	if json.Unmarshal(body, &spec) != nil || len(spec.Paths) == 0 {
		return nil
	}
	rel := releaseFromSpec(&spec)
	if rel != "" {
		c.release.Store(&rel)
		c.releaseOnce.Do(func() {})
	}
	if servesJobs(spec.Paths, c.version) {
		return nil
	}
	offered := offeredVersions(spec.Paths)
	who := "this slurmrestd"
	if rel != "" {
		who += " (Slurm " + rel + ")"
	}
	var usable []string
	for _, v := range offered {
		if supported(v) && servesJobs(spec.Paths, v) {
			usable = append(usable, v)
		}
	}
	hint := "pin nothing to negotiate"
	switch {
	case len(usable) == len(offered):
		hint = "pin one of those, or pin nothing to negotiate"
	case len(usable) > 0:
		hint = "pin one of " + strings.Join(usable, ", ") + " (the ones Fairway knows), or pin nothing to negotiate"
	}
	if len(offered) == 0 {
		return fmt.Errorf("%w: pinned %s, but %s lists no /slurm/<version>/ paths (is it running openapi/slurmctld?)", ErrVersion, c.version, who)
	}
	return fmt.Errorf("%w: pinned %s, but %s serves %s: %s", ErrVersion, c.version, who, strings.Join(offered, ", "), hint)
}

// servesJobs says whether a spec's paths list version v's jobs path.
func servesJobs(paths map[string]json.RawMessage, v string) bool {
	_, a := paths["/slurm/"+v+"/jobs/"]
	_, b := paths["/slurm/"+v+"/jobs"]
	return a || b
}

func (c *Client) negotiate(ctx context.Context) (string, []string, error) {
	body, _, err := c.do(ctx, http.MethodGet, "/openapi/v3", nil, true)
	if err == nil {
		var spec specInfo
		if jerr := json.Unmarshal(body, &spec); jerr == nil && len(spec.Paths) > 0 {
			offered := offeredVersions(spec.Paths)
			v, verr := pickVersion(spec.Paths, offered)
			if verr != nil {
				return "", offered, verr
			}
			if rel := releaseFromSpec(&spec); rel != "" {
				c.release.Store(&rel)
				c.releaseOnce.Do(func() {})
			}
			return v, offered, nil
		}
	}
	for _, stop := range []error{ErrToken, ErrUnauthorized, ErrForbidden, ErrTokenRejected, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, stop) {
			// Probing ping endpoints would meet the same refusal.
			return "", nil, fmt.Errorf("negotiate api version: %w", err)
		}
	}
	c.log.Debug("no usable /openapi/v3; probing ping endpoints", "error", err)
	var last error = err
	for _, v := range versions {
		body, _, perr := c.do(ctx, http.MethodGet, "/slurm/"+v+"/ping", nil, false)
		if perr == nil {
			if env, err := decodeAnswer(bytes.NewReader(body), "ping", nil); err == nil {
				c.noteReleaseQuiet(env)
			}
			return v, []string{v}, nil
		}
		var ae *APIError
		if errors.As(perr, &ae) && ae.Status == http.StatusNotFound {
			continue
		}
		last = perr
		if !errors.Is(perr, ErrHTTP) {
			// Auth, transport or server trouble: probing further would not
			// help, and that error is the one to report.
			return "", nil, fmt.Errorf("negotiate api version: %w", perr)
		}
	}
	return "", nil, fmt.Errorf("negotiate api version: %w: no /slurm/<version>/ping of %s answered (last error: %v)", ErrVersion, strings.Join(versions, ", "), last)
}

// noteReleaseQuiet keeps the release without logging: New logs it with the
// version.
func (c *Client) noteReleaseQuiet(env *envelope) {
	if rel := env.Meta.Slurm.Release; rel != "" {
		c.release.Store(&rel)
		c.releaseOnce.Do(func() {})
	}
}

// Ping checks that slurmrestd answers and slurmctld is reachable through it.
func (c *Client) Ping(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/slurm/"+c.version+"/ping", nil, true)
	return err
}

// ListJobs returns every job record slurmctld holds (pending, running and
// recently finished), translated. Array and heterogeneous records are
// described on Job. A record that cannot be translated is skipped, logged
// and counted (SkippedRecords), so one odd job cannot stop the cycle for
// all; a body that is not JSON, or where every record fails, is an error.
func (c *Client) ListJobs(ctx context.Context) ([]Job, error) {
	jobs, _, err := c.listJobs(ctx, "/slurm/"+c.version+"/jobs")
	return jobs, err
}

// listJobsSkipped is ListJobs that also returns the records it skipped.
func (c *Client) listJobsSkipped(ctx context.Context) ([]Job, []SkippedRecord, error) {
	return c.listJobs(ctx, "/slurm/"+c.version+"/jobs")
}

// GetJob returns the records of one job id (GET /slurm/<v>/job/{id}): the
// job itself, or an array's records or a heterogeneous job's components.
func (c *Client) GetJob(ctx context.Context, id int64) ([]Job, error) {
	jobs, _, err := c.listJobs(ctx, "/slurm/"+c.version+"/job/"+strconv.FormatInt(id, 10))
	return jobs, err
}

func (c *Client) listJobs(ctx context.Context, op string) ([]Job, []SkippedRecord, error) {
	var res jobsResult
	status, err := c.stream(ctx, http.MethodGet, op, true, func(r io.Reader) error {
		var derr error
		res, derr = decodeJobs(r)
		return derr
	})
	if err != nil {
		return nil, nil, err
	}
	if err := c.check("GET "+op, status, res.Env, nil); err != nil {
		return nil, nil, err
	}
	for _, sk := range res.Skipped {
		c.log.Warn("skipped a job record that cannot be translated", "op", op, "job_id", sk.JobID, "error", c.scrub(sk.Err.Error()))
	}
	c.skipped.Add(int64(len(res.Skipped)))
	return res.Jobs, res.Skipped, nil
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

// Shares returns the body of GET /slurm/<v>/shares (Slurm 23.11 on, the
// tree `sshare` prints) after the usual checks, bare Infinity values turned
// into null; package accounting parses it. v0.0.38 has no such endpoint:
// that is an error naming the way out.
func (c *Client) Shares(ctx context.Context) ([]byte, error) {
	if c.version == V0038 {
		return nil, &NoSharesError{Version: c.version, Instead: "the share tree from slurmdbd (sacctmgr)"}
	}
	op := "/slurm/" + c.version + "/shares"
	body, status, err := c.do(ctx, http.MethodGet, op, nil, true)
	if err != nil {
		return nil, err
	}
	body = jsonfix.NonFinite(body) // 24.11's v0.0.40/41 print "level": Infinity
	env, perr := payloadEnvelope(body, "shares")
	if err := c.check("GET "+op, status, env, perr); err != nil {
		return nil, err
	}
	return body, nil
}

// payloadEnvelope decodes the envelope of an answer whose payload, under
// key, is handed on undecoded. A body that is not JSON, or that has neither
// the key nor errors, is ErrMalformed.
func payloadEnvelope(body []byte, key string) (*envelope, error) {
	seen := false
	env, err := decodeAnswer(bytes.NewReader(body), key, func(k string, _ *json.Decoder) (bool, error) {
		seen = seen || k == key
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !seen && len(env.Errors) == 0 {
		return env, fmt.Errorf("%w: no %q key", ErrMalformed, key)
	}
	return env, nil
}

// Read takes one snapshot of the cluster: jobs, nodes and partitions. If
// any read fails, Read returns nil and the error, so a cycle never ranks or
// writes from a partial view.
func (c *Client) Read(ctx context.Context) (*Cluster, error) {
	jobs, skipped, err := c.listJobsSkipped(ctx)
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
	return &Cluster{Jobs: jobs, Nodes: nodes, Partitions: parts, Version: c.version, Slurm: c.Release(), Skipped: skipped}, nil
}

// JobUpdate is the one change Fairway makes to a job. Exactly one field is
// set; there is deliberately no way to express a hold, a cancel, or any
// other job field.
type JobUpdate struct {
	// SiteFactor is the site factor Slurm should hold (v0.0.40+ only: 22.05
	// rejects "site_factor" with "Unknown key"). It goes on the wire as
	// NiceOffset + value: slurmrestd stores the number it gets minus 2^31
	// (scontrol adds the offset itself, the REST parser does not), so a
	// plain {"site_factor": 4200} is stored as 4200 - 2^31 and collapses
	// the job's priority to 1 (captured on 24.11.7 and 26.05.3, every
	// version v0.0.40-v0.0.45).
	SiteFactor *int64
	Priority   *int64 // admin priority: freezes the job's priority (see Writer)
	// HandBack resets the job's priority to multifactor's (priority
	// INFINITE, as `scontrol release` sends) and sets its nice to
	// *HandBack, in one update: slurmctld applies the priority first
	// (which zeroes the nice) and then the nice, which it drops while the
	// priority is admin-set. v0.0.40+ only: v0.0.38 refuses INFINITE
	// ("Priority too large"). On a held job this is a release, so the
	// Writer sends it only to a job it has just read not held.
	HandBack *int64
}

// NiceOffset is Slurm's NICE_OFFSET (2^31): how site factors and nice
// values are stored unsigned.
const NiceOffset = 1 << 31

func (u JobUpdate) body(version string) ([]byte, error) {
	set := 0
	for _, p := range []*int64{u.SiteFactor, u.Priority, u.HandBack} {
		if p != nil {
			set++
		}
	}
	switch {
	case set != 1:
		return nil, errors.New("job update: set exactly one of site factor, priority and hand-back")
	case u.HandBack != nil && version == V0038:
		return nil, fmt.Errorf("job update: slurmrestd %s cannot hand a priority back (Slurm 22.05 refuses priority INFINITE); use scontrol release", version)
	case u.HandBack != nil && (*u.HandBack <= -(NiceOffset-3) || *u.HandBack >= NiceOffset-3):
		return nil, fmt.Errorf("job update: nice %d outside Slurm's range (+/- 2147483645)", *u.HandBack)
	case u.HandBack != nil:
		return json.Marshal(struct {
			Priority noValOut `json:"priority"`
			Nice     int64    `json:"nice"`
		}{noValOut{Infinite: true}, *u.HandBack})
	case u.Priority != nil && *u.Priority < 1:
		return nil, fmt.Errorf("job update: priority %d would hold the job", *u.Priority)
	case u.SiteFactor != nil && version == V0038:
		return nil, fmt.Errorf("job update: slurmrestd %s has no site_factor (Slurm 22.05 rejects it); use scontrol", version)
	case u.SiteFactor != nil && (*u.SiteFactor <= -NiceOffset || *u.SiteFactor >= NiceOffset-1):
		return nil, fmt.Errorf("job update: site factor %d outside Slurm's range (-2^31, 2^31-1)", *u.SiteFactor)
	case u.SiteFactor != nil:
		return json.Marshal(struct {
			SiteFactor int64 `json:"site_factor"`
		}{NiceOffset + *u.SiteFactor})
	case version == V0038:
		return json.Marshal(struct {
			Priority int64 `json:"priority"`
		}{*u.Priority})
	}
	return json.Marshal(struct {
		Priority noValOut `json:"priority"`
	}{noValOut{Set: true, Number: *u.Priority}})
}

// noValOut is the {"set", "infinite", "number"} form of a number that
// v0.0.40+ reads (a plain integer priority is ignored with a warning on
// v0.0.40).
type noValOut struct {
	Set      bool  `json:"set"`
	Infinite bool  `json:"infinite,omitempty"`
	Number   int64 `json:"number"`
}

// UpdateJob sends one job update for target (a job id; on v0.0.38 also
// "A_[tasks]" for an unsplit array record, see Job.RESTTarget). It is never
// retried, but for one fresh try after a rejected token (slurmrestd refused
// it before Slurm acted): a write whose outcome is unknown is left to the
// next cycle, which reads what Slurm holds.
//
// A warning in the answer is a failure (ErrRejected): slurmrestd answers
// HTTP 200 with only a warning when it ignored part of the update (an
// unknown key, "Ignoring unknown field"; v0.0.40 given a plain integer
// priority, "Expected OpenAPI type=object"), and every captured successful
// update has none.
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
	env, perr := decodeAnswer(bytes.NewReader(resp), "job update", func(key string, dec *json.Decoder) (bool, error) {
		if key != "results" {
			return false, nil
		}
		return true, dec.Decode(&r.Results)
	})
	if env != nil {
		r.envelope = *env
	}
	for _, res := range r.Results {
		if res.ErrorCode != 0 {
			r.Errors = append(r.Errors, wireError{Description: res.Why, ErrorNumber: &res.ErrorCode, Error: res.Error,
				Source: fmt.Sprintf("job %d", res.JobID.value())})
		}
	}
	if err := c.check("POST "+path, status, &r.envelope, perr); err != nil {
		return err
	}
	if len(r.Warnings) > 0 {
		return &APIError{Op: "POST " + path, Status: status, Kind: ErrRejected, Slurm: c.slurmErrors(r.Warnings),
			Detail: "slurmrestd ignored (part of) the update"}
	}
	return nil
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
	c.noteRelease(env)
	if len(env.Warnings) > 0 {
		ws := make([]string, len(env.Warnings))
		for i, w := range env.Warnings {
			ws[i] = c.scrub(w.slurm().String())
		}
		// Slurm 23.11 and later warn "Zero jobs to dump" whenever the
		// queue is empty: on an idle cluster that would be a warning
		// every cycle about nothing wrong.
		level := slog.LevelWarn
		if emptyDumpWarnings(env.Warnings) {
			level = slog.LevelDebug
		}
		c.log.Log(context.Background(), level, "slurmrestd warnings", "op", op, "warnings", ws)
	}
	if len(env.Errors) == 0 {
		return nil
	}
	return &APIError{Op: op, Status: status, Kind: ErrSlurm, Slurm: c.slurmErrors(env.Errors)}
}

// emptyDumpWarnings reports whether every warning is data_parser's note
// that it had nothing to dump ("Zero jobs to dump", and the same for
// steps, licenses ...), which only says the answer is empty.
func emptyDumpWarnings(ws []wireError) bool {
	if len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		d := w.slurm().Description
		if !strings.HasPrefix(d, "Zero ") || !strings.HasSuffix(d, " to dump") {
			return false
		}
	}
	return true
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
	var out []byte
	status, err := c.call(ctx, method, path, body, retry, func(r io.Reader) error {
		var rerr error
		out, rerr = io.ReadAll(r)
		return rerr
	})
	if err != nil {
		return nil, status, err
	}
	return out, status, nil
}

// stream is do for a body without payload whose 2xx answer sink decodes as
// it arrives. sink may run once per attempt and must start afresh each
// time; its error is ErrMalformed (bad JSON, body over the cap) or, when
// the connection broke, ErrUnreachable.
func (c *Client) stream(ctx context.Context, method, path string, retry bool, sink func(io.Reader) error) (int, error) {
	return c.call(ctx, method, path, nil, retry, sink)
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, retry bool, sink func(io.Reader) error) (int, error) {
	op := method + " " + path
	attempts := 1
	if retry {
		attempts = c.cfg.ReadAttempts
	}
	renewed := false
	var err error
	for attempt := 1; ; attempt++ {
		var status int
		status, err = c.once(ctx, op, method, path, body, sink)
		if err == nil {
			return status, nil
		}
		if ctx.Err() != nil {
			return status, err
		}
		// A token Slurm refused may just have been revoked or outlived a
		// clock skew: a renewable source gets one fresh try. Writes too:
		// a refused token means slurmrestd or slurmctld refused the
		// request before acting on it.
		if !renewed && (errors.Is(err, ErrTokenRejected) || errors.Is(err, ErrUnauthorized)) {
			if inv, ok := c.cfg.Token.(invalidator); ok {
				inv.Invalidate()
				renewed = true
				c.log.Warn("slurm refused the token; renewing it once", "op", op, "status", status)
				continue
			}
		}
		if !retry || attempt >= attempts || !transient(err) {
			return status, err
		}
		d := backoff(c.cfg.RetryBase, c.cfg.RetryMax, attempt)
		c.log.Warn("slurmrestd read failed; retrying", "op", op, "attempt", attempt, "backoff_seconds", d.Seconds(), "error", err)
		if serr := c.sleep(ctx, d); serr != nil {
			return status, err
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

// errBodyTooLarge is what capReader returns past Config.MaxResponseBytes.
var errBodyTooLarge = errors.New("body too large")

// capReader reads at most max bytes of r and tells a transport failure
// (broken connection) from the end of the body, so a decoder's error can be
// classified.
type capReader struct {
	r     io.Reader
	left  int64
	n     int64
	rerr  error // a read error other than EOF: the connection broke
	large bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.large = true
			return 0, errBodyTooLarge
		}
		if err != nil && err != io.EOF {
			c.rerr = err
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.rerr = err
	}
	return n, err
}

func (c *Client) once(ctx context.Context, op, method, path string, body []byte, sink func(io.Reader) error) (int, error) {
	tok, err := c.cfg.Token.Token(ctx)
	if err != nil {
		return 0, &APIError{Op: op, Kind: ErrToken, Detail: strings.TrimPrefix(err.Error(), ErrToken.Error()+": ")}
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
		return 0, &APIError{Op: op, Kind: ErrHTTP, Detail: err.Error()}
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
		return 0, c.transportError(ctx, rctx, op, err, tok)
	}
	defer resp.Body.Close()
	cr := &capReader{r: resp.Body, left: c.cfg.MaxResponseBytes}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		serr := sink(cr)
		if serr == nil {
			// Drain what the decoder left (trailing whitespace) so the
			// connection can be reused, within the cap.
			_, serr = io.Copy(io.Discard, cr)
		}
		c.log.Debug("slurmrestd", "op", op, "status", resp.StatusCode, "bytes", cr.n, "duration_seconds", time.Since(start).Seconds())
		switch {
		case serr == nil:
			return resp.StatusCode, nil
		case cr.large || errors.Is(serr, errBodyTooLarge):
			return resp.StatusCode, &APIError{Op: op, Status: resp.StatusCode, Kind: ErrMalformed, large: true,
				Detail: fmt.Sprintf("body larger than %d bytes (the response cap; raise it for a cluster this size)", c.cfg.MaxResponseBytes)}
		case cr.rerr != nil:
			return resp.StatusCode, c.transportError(ctx, rctx, op, cr.rerr, tok)
		case errors.Is(serr, ErrMalformed):
			return resp.StatusCode, &APIError{Op: op, Status: resp.StatusCode, Kind: ErrMalformed,
				Detail: c.scrub(strings.TrimPrefix(serr.Error(), ErrMalformed.Error()+": "))}
		default:
			return resp.StatusCode, &APIError{Op: op, Status: resp.StatusCode, Kind: ErrMalformed, Detail: redact(serr.Error(), tok)}
		}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Never followed: the request carried the token.
		return resp.StatusCode, &APIError{Op: op, Status: resp.StatusCode, Kind: ErrHTTP,
			Detail: "redirect refused (the token goes to slurmrestd only; point the URL at slurmrestd itself)"}
	}
	out, err := io.ReadAll(cr)
	if err != nil && !cr.large {
		return resp.StatusCode, c.transportError(ctx, rctx, op, err, tok)
	}
	c.log.Debug("slurmrestd", "op", op, "status", resp.StatusCode, "bytes", len(out), "duration_seconds", time.Since(start).Seconds())
	return resp.StatusCode, c.statusError(op, resp.StatusCode, out, tok)
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
	var slurm []SlurmError
	detail := ""
	if env, err := decodeAnswer(bytes.NewReader(body), "error answer", nil); err == nil {
		slurm = c.slurmErrors(env.Errors)
	} else if t := strings.TrimSpace(string(body)); t != "" {
		detail = clip(redact(t, tok), 200)
	}
	e := &APIError{Op: op, Status: status, Slurm: slurm, Detail: detail}
	switch {
	case status == http.StatusUnauthorized:
		e.Kind = ErrUnauthorized
	case status == http.StatusForbidden:
		e.Kind = ErrForbidden
	case status == http.StatusNetworkAuthenticationRequired:
		e.Kind = ErrTokenRejected
		e.Detail = "slurmctld refused the token (HTTP 511, Protocol authentication error)"
	case status == http.StatusBadGateway && allNumbered(slurm, errDBConnect):
		e.Kind = ErrTokenRejected
		e.Detail = "slurmdbd refused the connection (HTTP 502, error 7000), which is how Slurm 24.11 and later report a token slurmdbd rejects"
	case status >= 500 && allNumbered(slurm, errDBConnect):
		// Slurm 23.11 opens a slurmdbd connection with the request's
		// token for every request, /slurm/ ones too, and answers HTTP 500
		// with error 7000 both when slurmdbd is down and when it refuses
		// the token: nothing in the answer tells them apart, so it is
		// retried as an outage and says both.
		e.Kind = ErrServer
		e.Detail = "slurmrestd could not open its slurmdbd connection (error 7000): slurmdbd is down or unreachable, or it refused this token (Slurm 23.11 checks every request's token with slurmdbd; its log then says \"Protocol authentication error\")"
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
	return allNumbered(errs, -1, 1000)
}

// errDBConnect is slurmdbd's "Unable to connect to database": what a
// forged or expired token gets from /slurmdb/ on 24.11 and 26.05 (HTTP 502),
// and any request on 23.11 when slurmdbd is down or refuses the token (HTTP
// 500).
const errDBConnect = 7000

// allNumbered reports whether errs is not empty and every entry's number is
// one of nums.
func allNumbered(errs []SlurmError, nums ...int) bool {
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if !slices.Contains(nums, e.Number) {
			return false
		}
	}
	return true
}

// isLoopbackHost says whether host (a URL's, without port) is this machine:
// "localhost" or a loopback address. Other names are not resolved: DNS may
// answer differently later, or to someone else.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
