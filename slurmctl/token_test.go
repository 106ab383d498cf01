package slurmctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStaticToken_Checks(t *testing.T) {
	good := testJWT(time.Now().Add(time.Hour))
	if got, err := StaticToken(" " + good + "\n").Token(context.Background()); err != nil || got != good {
		t.Errorf("valid token: %v", err)
	}
	expired := testJWT(time.Now().Add(-time.Minute))
	for name, tok := range map[string]string{"empty": "", "expired": expired, "not a JWT": "abc", "bad payload": "a.!!!.c"} {
		_, err := StaticToken(tok).Token(context.Background())
		if !errors.Is(err, ErrToken) {
			t.Errorf("%s: %v, want ErrToken", name, err)
		}
		if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error contains the token", name)
		}
	}
}

// TestClient_ExpiredTokenSendsNothing: an expired token fails before any
// request leaves.
func TestClient_ExpiredTokenSendsNothing(t *testing.T) {
	srv := newReplay(t, map[string][]reply{jobsPath: {{200, fixture(t, "jobs.200.json"), 0}}})
	c := testClient(t, srv.URL, V0038, func(c *Config) { c.Token = StaticToken(testJWT(time.Now().Add(-time.Second))) })
	_, err := c.ListJobs(context.Background())
	if !errors.Is(err, ErrToken) || srv.total() != 0 {
		t.Errorf("ListJobs: %v after %d requests; want ErrToken and no request", err, srv.total())
	}
}

func TestFileToken_ReReadsOnChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwt")
	a, b := testJWT(time.Now().Add(time.Hour)), testJWT(time.Now().Add(2*time.Hour))
	if err := os.WriteFile(path, []byte(a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := FileToken(path)
	if got, err := src.Token(context.Background()); err != nil || got != a {
		t.Fatalf("first read: %v", err)
	}
	if err := os.WriteFile(path, []byte("SLURM_JWT="+b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	if got, err := src.Token(context.Background()); err != nil || got != b {
		t.Errorf("after rewrite: got the new token %v, %v", got == b, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Token(context.Background()); !errors.Is(err, ErrToken) {
		t.Errorf("missing file: %v, want ErrToken", err)
	}
}

// fakeScontrol plays `scontrol token`: it prints SLURM_JWT=<token> with
// the next expiry, or fails.
type fakeScontrol struct {
	exps  []time.Time
	fail  bool
	calls int
	args  [][]string
}

func (f *fakeScontrol) Run(_ context.Context, _ []byte, name string, args ...string) ([]byte, []byte, error) {
	f.calls++
	f.args = append(f.args, append([]string{name}, args...))
	if f.fail {
		// A failing scontrol that still printed a token must not leak it.
		return []byte("SLURM_JWT=" + testJWT(time.Now().Add(time.Hour)) + "\n"), []byte("scontrol: error: Unable to contact slurm controller"), errors.New("exit status 1")
	}
	exp := f.exps[min(f.calls-1, len(f.exps)-1)]
	return []byte("SLURM_JWT=" + testJWT(exp) + "\n"), nil, nil
}

func TestScontrolToken_RenewsBeforeExpiry(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start
	fake := &fakeScontrol{exps: []time.Time{now.Add(time.Hour), now.Add(2 * time.Hour)}}
	src, err := NewScontrolToken(ScontrolTokenConfig{User: "root", Lifespan: time.Hour, Runner: fake}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	first, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := strings.Join(fake.args[0], " "); diff != "scontrol token username=root lifespan=3600" {
		t.Errorf("ran %q", diff)
	}
	now = now.Add(39 * time.Minute) // 21m left, more than Lifespan/3: cached
	if tok, _ := src.Token(context.Background()); tok != first || fake.calls != 1 {
		t.Errorf("renewed too early: %d calls", fake.calls)
	}
	now = now.Add(2 * time.Minute) // 19m left: renew
	second, err := src.Token(context.Background())
	if err != nil || second == first || fake.calls != 2 {
		t.Errorf("no renewal within the last third: %d calls, %v", fake.calls, err)
	}

	// Renewal failing: keep the current token while it is valid, then fail.
	fake.fail = true
	now = start.Add(90 * time.Minute) // 30m left of the token that expires at start+2h
	if tok, err := src.Token(context.Background()); err != nil || tok != second {
		t.Errorf("renewal failure with a valid token: %v", err)
	}
	now = start.Add(121 * time.Minute)
	_, err = src.Token(context.Background())
	if !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Errorf("renewal failure after expiry: %v, want ErrToken with scontrol's message", err)
	}
	if strings.Contains(err.Error(), "SLURM_JWT") || strings.Contains(err.Error(), ".") && strings.Contains(err.Error(), "eyJ") {
		t.Errorf("error shows token material: %v", err)
	}
	src.Invalidate()
}

// hungScontrol is `scontrol token` against a slurmctld too busy to
// answer: it returns only when its context ends. Run without a deadline
// it fails at once instead, so that a test of a missing timeout fails
// rather than hangs.
type hungScontrol struct {
	calls      int
	noDeadline bool
}

func (h *hungScontrol) Run(ctx context.Context, _ []byte, _ string, _ ...string) ([]byte, []byte, error) {
	h.calls++
	if _, ok := ctx.Deadline(); !ok {
		h.noDeadline = true
		return nil, nil, errors.New("run without a timeout")
	}
	<-ctx.Done()
	return nil, nil, errors.New("signal: killed")
}

// TestScontrolToken_HungRenewalKeepsTheValidToken: in the last third of
// the token's life `scontrol token` hangs (slurmctld busy). The renewal
// gives up after CmdTimeout, the still valid token is used, and the next
// renewal waits renewRetry rather than holding each request for another
// CmdTimeout; once the token expired the timeout is the error.
func TestScontrolToken_HungRenewalKeepsTheValidToken(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start
	src, err := NewScontrolToken(ScontrolTokenConfig{User: "root", Lifespan: time.Hour, CmdTimeout: 10 * time.Millisecond,
		Runner: &fakeScontrol{exps: []time.Time{start.Add(time.Hour)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	first, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hung := &hungScontrol{}
	src.cfg.Runner = hung
	for _, step := range []struct {
		at    time.Duration // since start
		calls int           // scontrol runs so far
		fail  bool
	}{
		{41 * time.Minute, 1, false}, // 19m left: renew, which hangs
		{41*time.Minute + time.Second, 1, false},
		{41*time.Minute + renewRetry, 2, false},
		{61 * time.Minute, 3, true}, // expired
	} {
		now = start.Add(step.at)
		tok, err := src.Token(context.Background())
		switch {
		case hung.noDeadline:
			t.Fatalf("at %s: scontrol token ran without a timeout", step.at)
		case hung.calls != step.calls:
			t.Errorf("at %s: %d scontrol runs, want %d", step.at, hung.calls, step.calls)
		case step.fail && (!errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "no answer within 10ms")):
			t.Errorf("at %s: %v, want ErrToken saying scontrol did not answer", step.at, err)
		case !step.fail && (err != nil || tok != first):
			t.Errorf("at %s: %v, want the valid token", step.at, err)
		}
	}
}

// slowScontrol is `scontrol token` that fails after a while, the while
// passing on the source's clock (now).
type slowScontrol struct {
	now  *time.Time
	took time.Duration
}

func (s *slowScontrol) Run(context.Context, []byte, string, ...string) ([]byte, []byte, error) {
	*s.now = s.now.Add(s.took)
	return nil, []byte("scontrol: error: Socket timed out on send/recv operation"), errors.New("signal: killed")
}

// TestScontrolToken_RenewalOutlivingTheTokenIsAnError: 10s before the
// token expires, the renewal runs for the whole CmdTimeout (30s) and
// fails. The token expired meanwhile: the failure is the answer, not the
// token, which slurmrestd would refuse.
func TestScontrolToken_RenewalOutlivingTheTokenIsAnError(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start
	src, err := NewScontrolToken(ScontrolTokenConfig{User: "root", Lifespan: time.Hour,
		Runner: &fakeScontrol{exps: []time.Time{start.Add(time.Hour)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.cfg.Runner = &slowScontrol{now: &now, took: src.cfg.CmdTimeout}
	now = start.Add(time.Hour - 10*time.Second)
	tok, err := src.Token(context.Background())
	if !errors.Is(err, ErrToken) {
		t.Fatalf("at %s, after a renewal that failed 30s later: token (expired %v), %v; want ErrToken",
			now.Sub(start), checkExpiry(tok, now) != nil, err)
	}
}

// TestClient_RenewsOnceWhenRejected: a token slurmctld rejects is renewed
// and the read tried again, once.
func TestClient_RenewsOnceWhenRejected(t *testing.T) {
	srv := newReplay(t, map[string][]reply{jobsPath: {{500, fixture(t, "jobs-bad-token.500.json"), 0}, {200, fixture(t, "jobs.200.json"), 0}}})
	fake := &fakeScontrol{exps: []time.Time{time.Now().Add(time.Hour)}}
	src, err := NewScontrolToken(ScontrolTokenConfig{User: "root", Runner: fake}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := testClient(t, srv.URL, V0038, func(c *Config) { c.Token = src })
	if _, err := c.ListJobs(context.Background()); err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if fake.calls != 2 || srv.count(jobsPath) != 2 {
		t.Errorf("%d mints, %d requests; want 2 and 2", fake.calls, srv.count(jobsPath))
	}
}

func TestNewScontrolToken_Config(t *testing.T) {
	for _, cfg := range []ScontrolTokenConfig{{}, {User: "root", Lifespan: time.Second}, {User: "root", Lifespan: time.Hour, RenewBefore: 2 * time.Hour}} {
		if _, err := NewScontrolToken(cfg, nil); err == nil {
			t.Errorf("accepted %+v", cfg)
		}
	}
}

// TestFileToken_RefusesSymlink: a token path that is a symbolic link is
// refused, even to a file that would pass the checks: the link could name
// any other file the service user owns.
func TestFileToken_RefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real"), filepath.Join(dir, "jwt")
	if err := os.WriteFile(target, []byte(testJWT(time.Now().Add(time.Hour))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	tok, err := FileToken(link).Token(context.Background())
	if !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("token through a symlink: got a token %v, err %v; want ErrToken naming the link", tok != "", err)
	}
}

// TestFileToken_ChecksWhatItReads: the owner and mode checks and the read
// use one open file, so a file put in place after the checks (here a
// world-readable one, renamed over the path) is never what is read.
func TestFileToken_ChecksWhatItReads(t *testing.T) {
	dir := t.TempDir()
	path, swap := filepath.Join(dir, "jwt"), filepath.Join(dir, "swap")
	good, planted := testJWT(time.Now().Add(time.Hour)), testJWT(time.Now().Add(2*time.Hour))
	if err := os.WriteFile(path, []byte(good+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(swap, []byte(planted+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(swap, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	src := &fileToken{path: path}
	src.checked = func() {
		src.checked = nil
		if err := os.Rename(swap, path); err != nil {
			t.Error(err)
		}
	}
	if got, err := src.Token(context.Background()); err != nil || got != good {
		t.Errorf("got the checked file's token %v, the planted one %v, err %v", got == good, got == planted, err)
	}
	// Read again, the planted file is checked itself, and refused.
	if _, err := src.Token(context.Background()); !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "mode 0666") {
		t.Errorf("world-writable token file: %v, want ErrToken naming the mode", err)
	}
}

// TestFileToken_RefusesFIFO: a FIFO in the token's place is refused at
// once instead of blocking the cycle on open.
func TestFileToken_RefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwt")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FileToken(path).Token(context.Background()); !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v, want ErrToken: not a regular file", err)
	}
}

// TestNew_PlainHTTPToAnotherHost: an http:// URL naming another host is
// refused unless allowed, since every request carries the token; allowed,
// it is warned about. Loopback and https need nothing.
func TestNew_PlainHTTPToAnotherHost(t *testing.T) {
	tests := []struct {
		url   string
		allow bool
		ok    bool
		warn  bool
	}{
		{"http://10.1.2.3:6820", false, false, false},
		{"http://slurm.example.org:6820/", false, false, false},
		{"http://127.0.0.2.example.org:6820", false, false, false}, // a name, not a loopback address
		{"http://10.1.2.3:6820", true, true, true},
		{"http://127.0.0.1:6820", false, true, false},
		{"http://[::1]:6820", false, true, false},
		{"http://localhost:6820", false, true, false},
		{"https://slurm.example.org:6820", false, true, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s allow=%v", tt.url, tt.allow), func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			_, err := New(context.Background(), Config{URL: tt.url, User: "slurm", Token: StaticToken(testJWT(time.Now().Add(time.Hour))),
				Version: V0044, AllowInsecureHTTP: tt.allow}, log)
			if tt.ok != (err == nil) {
				t.Fatalf("New: %v, want ok %v", err, tt.ok)
			}
			var ie *InsecureHTTPError
			if err != nil && (!strings.Contains(err.Error(), "clear text") || !errors.As(err, &ie) || ie.Setting != "Config.AllowInsecureHTTP") {
				t.Errorf("the error %q does not say why and what to set", err)
			}
			if warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "clear text"); warned != tt.warn {
				t.Errorf("warned %v, want %v: %s", warned, tt.warn, logs.String())
			}
		})
	}
}

// TestClient_BadTokenFileSaysItOnce: a token file holding no usable JWT
// fails before any request, with one line naming the file and why, not
// "slurm token unusable: token file F: slurm token unusable: ...".
func TestClient_BadTokenFileSaysItOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwt")
	for _, tc := range []struct {
		name, tok, why string
	}{
		{"not a JWT", "garbage", "a token that is not a JWT (want three dot-separated parts)"},
		{"bad payload", "garbage.token.here", "a JWT whose payload is not base64url"},
		{"expired", testJWT(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), "token expired at 2026-01-02T03:04:05Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.tok+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			srv := newReplay(t, map[string][]reply{jobsPath: {{200, fixture(t, "jobs.200.json"), 0}}})
			c := testClient(t, srv.URL, V0038, func(c *Config) { c.Token = FileToken(path) })
			_, err := c.ListJobs(context.Background())
			if !errors.Is(err, ErrToken) || srv.total() != 0 {
				t.Fatalf("ListJobs: %v after %d requests; want ErrToken and no request", err, srv.total())
			}
			want := fmt.Sprintf("slurm token unusable: token file %s: %s", path, tc.why)
			if got := err.Error(); !strings.HasSuffix(got, want) || strings.Count(got, ErrToken.Error()) != 1 {
				t.Errorf("error\n %s\nwant it to end in\n %s\nsaying %q once", got, want, ErrToken.Error())
			}
		})
	}
}
