package slurmctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TokenSource supplies the JWT sent as X-SLURM-USER-TOKEN.
type TokenSource interface {
	// Token returns a token that is not known to be expired. Errors wrap
	// ErrToken and never contain the token. Safe for concurrent use.
	Token(ctx context.Context) (string, error)
}

// invalidator is implemented by sources that can fetch a new token when
// Slurm rejects the current one.
type invalidator interface{ Invalidate() }

// StaticToken is a fixed token, e.g. from the SLURM_JWT environment
// variable. It is checked for shape and expiry before every use.
func StaticToken(tok string) TokenSource { return staticToken(strings.TrimSpace(tok)) }

type staticToken string

func (s staticToken) Token(context.Context) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty token", ErrToken)
	}
	if err := checkExpiry(string(s), time.Now()); err != nil {
		return "", fmt.Errorf("%w: %v", ErrToken, err)
	}
	return string(s), nil
}

// FileToken reads the token from a file, again whenever the file's
// modification time or size changes (or Slurm rejected the token), so an
// external renewer (cron, the lab script) can replace it without restarting
// Fairway. The file must be owned by the user Fairway runs as and must not
// be readable or writable by others (mode 0600 or 0640): the token is
// SlurmUser's, and whoever reads it can rewrite every job's priority. The
// path must name the file itself, not a symbolic link; the renewer should
// replace it by rename, as `lab token` does.
func FileToken(path string) TokenSource { return &fileToken{path: path} }

type fileToken struct {
	path string
	// checked, when set (tests), runs after the checks and before the
	// read, where a check-then-read-by-path would be raced.
	checked func()

	mu    sync.Mutex
	mod   time.Time
	size  int64
	token string
}

// maxTokenFile is the most read of a token file: a Slurm JWT is a few
// hundred bytes, so more is not a token.
const maxTokenFile = 64 << 10

func (f *fileToken) Token(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// One open, then every check and the read on that descriptor: checking
	// the path and reading it again would let the file be replaced between
	// the two (by whoever may write the directory). O_NOFOLLOW refuses a
	// symbolic link, which could point at another file the service user
	// owns; O_NONBLOCK keeps a FIFO put in its place from blocking the
	// cycle (fstat then finds it is not a regular file).
	fd, err := syscall.Open(f.path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("%w: token file %s is a symbolic link: name the file itself", ErrToken, f.path)
	}
	if err != nil {
		return "", fmt.Errorf("%w: token file: open %s: %v", ErrToken, f.path, err)
	}
	file := os.NewFile(uintptr(fd), f.path)
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: token file: %v", ErrToken, err)
	}
	if err := checkSecretFile(f.path, st); err != nil {
		return "", fmt.Errorf("%w: %v", ErrToken, err)
	}
	if f.checked != nil {
		f.checked()
	}
	if f.token == "" || !st.ModTime().Equal(f.mod) || st.Size() != f.size {
		b, err := io.ReadAll(io.LimitReader(file, maxTokenFile+1))
		if err != nil {
			return "", fmt.Errorf("%w: token file: %v", ErrToken, err)
		}
		if len(b) > maxTokenFile {
			return "", fmt.Errorf("%w: token file %s is larger than %d bytes: not a token", ErrToken, f.path, maxTokenFile)
		}
		tok := strings.TrimSpace(string(b))
		tok = strings.TrimPrefix(tok, "SLURM_JWT=") // `scontrol token` output saved as is
		if tok == "" {
			return "", fmt.Errorf("%w: token file %s is empty", ErrToken, f.path)
		}
		f.token, f.mod, f.size = tok, st.ModTime(), st.Size()
	}
	if err := checkExpiry(f.token, time.Now()); err != nil {
		return "", fmt.Errorf("%w: token file %s: %v", ErrToken, f.path, err)
	}
	return f.token, nil
}

// Invalidate makes the next Token call read the file again.
func (f *fileToken) Invalidate() {
	f.mu.Lock()
	f.token = ""
	f.mu.Unlock()
}

// checkSecretFile refuses a token file that others may read or write, or
// that belongs to another user than the one Fairway runs as.
func checkSecretFile(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o007 != 0 {
		return fmt.Errorf("token file %s has mode %04o: others may read or write it; run chmod 0600 %s", path, perm, path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(sys.Uid) != uid {
			return fmt.Errorf("token file %s is owned by uid %d, not by the user Fairway runs as (uid %d): chown it to the service user", path, sys.Uid, uid)
		}
	}
	return nil
}

// ScontrolTokenConfig configures ScontrolToken.
type ScontrolTokenConfig struct {
	User        string        // username= passed to scontrol token (the X-SLURM-USER-NAME user)
	Lifespan    time.Duration // lifespan= of each token; default 1h
	RenewBefore time.Duration // renew this long before expiry; default Lifespan/3
	Scontrol    string        // path of scontrol; default "scontrol"
	Runner      Runner        // default ExecRunner{}
	// CmdTimeout bounds each `scontrol token` run; default 30s, as long
	// as the request the token is for waits for its own answer.
	CmdTimeout time.Duration
}

// renewRetry is how long a ScontrolToken whose renewal failed keeps using
// the still valid token before it runs `scontrol token` again. Without
// it a slurmctld too busy to answer would hold every request of a cycle
// for a whole CmdTimeout in turn.
const renewRetry = time.Minute

// ScontrolToken mints tokens with `scontrol token username=U lifespan=S`
// and renews them before they expire. Only SlurmUser (or root) may mint a
// token for another user, so this is the source to use when Fairway runs as
// SlurmUser next to slurmctld.
type ScontrolToken struct {
	cfg ScontrolTokenConfig
	log *slog.Logger

	mu    sync.Mutex
	token string
	exp   time.Time
	retry time.Time // the last renewal failed: none again before it while token is valid
	now   func() time.Time
}

// NewScontrolToken checks cfg and returns the source. No token is minted
// until the first Token call.
func NewScontrolToken(cfg ScontrolTokenConfig, log *slog.Logger) (*ScontrolToken, error) {
	if cfg.User == "" {
		return nil, errors.New("scontrol token: user is empty")
	}
	if cfg.Lifespan == 0 {
		cfg.Lifespan = time.Hour
	}
	if cfg.Lifespan < time.Minute {
		return nil, fmt.Errorf("scontrol token: lifespan %s: want at least 1m", cfg.Lifespan)
	}
	if cfg.RenewBefore == 0 {
		cfg.RenewBefore = cfg.Lifespan / 3
	}
	if cfg.RenewBefore < 0 || cfg.RenewBefore >= cfg.Lifespan {
		return nil, fmt.Errorf("scontrol token: renew-before %s: want between 0 and the lifespan %s", cfg.RenewBefore, cfg.Lifespan)
	}
	fillCommands(&cfg.Runner, &cfg.CmdTimeout, 30*time.Second, program{&cfg.Scontrol, "scontrol"})
	if cfg.CmdTimeout < 0 {
		return nil, fmt.Errorf("scontrol token: command timeout %s: want positive", cfg.CmdTimeout)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ScontrolToken{cfg: cfg, log: log, now: time.Now}, nil
}

// Token returns the cached token, minting a new one when it is within
// RenewBefore of expiry. If renewal fails or times out (CmdTimeout) while
// the cached token is still valid, the cached one is returned, the
// failure logged, and renewal tried again renewRetry later; once it has
// expired the failure is returned.
func (s *ScontrolToken) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	valid := s.token != "" && now.Before(s.exp)
	if valid && (now.Before(s.exp.Add(-s.cfg.RenewBefore)) || now.Before(s.retry)) {
		return s.token, nil
	}
	tok, exp, err := s.mint(ctx, now)
	if err != nil {
		// The run may have lasted up to CmdTimeout, past the expiry.
		now = s.now()
		if s.token != "" && now.Before(s.exp) {
			s.retry = now.Add(renewRetry)
			s.log.Warn("token renewal failed; using the current token until it expires",
				"error", err, "expires_in_seconds", s.exp.Sub(now).Seconds(), "retry_in_seconds", renewRetry.Seconds())
			return s.token, nil
		}
		return "", err
	}
	s.token, s.exp, s.retry = tok, exp, time.Time{}
	s.log.Debug("minted slurm token", "user", s.cfg.User, "expires_in_seconds", exp.Sub(now).Seconds())
	return tok, nil
}

// Invalidate drops the cached token so the next Token call mints one.
func (s *ScontrolToken) Invalidate() {
	s.mu.Lock()
	s.token = ""
	s.mu.Unlock()
}

func (s *ScontrolToken) mint(ctx context.Context, now time.Time) (string, time.Time, error) {
	secs := int64(s.cfg.Lifespan / time.Second)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CmdTimeout)
	defer cancel()
	out, stderr, err := s.cfg.Runner.Run(cctx, nil, s.cfg.Scontrol, "token",
		"username="+s.cfg.User, "lifespan="+strconv.FormatInt(secs, 10))
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s (slurmctld busy or down?)", s.cfg.CmdTimeout)
	}
	// stdout holds the token: it never goes into an error or a log.
	tok := ""
	for _, line := range bytes.Split(out, []byte("\n")) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("SLURM_JWT=")); ok {
			tok = string(v)
		}
	}
	if err != nil || tok == "" {
		msg := strings.TrimSpace(redact(string(stderr), tok))
		if err == nil {
			err = errors.New("no SLURM_JWT= line in its output")
		}
		return "", time.Time{}, fmt.Errorf("%w: %s token username=%s: %v: %s", ErrToken, s.cfg.Scontrol, s.cfg.User, err, msg)
	}
	exp, perr := jwtExpiry(tok)
	if perr != nil {
		return "", time.Time{}, fmt.Errorf("%w: scontrol token printed %v", ErrToken, perr)
	}
	if exp.IsZero() {
		exp = now.Add(s.cfg.Lifespan)
	}
	return tok, exp, nil
}

// jwtExpiry returns the "exp" claim of a JWT (zero when absent). It does not
// verify the signature: only slurmctld holds the key.
func jwtExpiry(tok string) (time.Time, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("a token that is not a JWT (want three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, errors.New("a JWT whose payload is not base64url")
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, errors.New("a JWT whose payload is not JSON")
	}
	if claims.Exp == nil {
		return time.Time{}, nil
	}
	sec, err := claims.Exp.Int64()
	if err != nil {
		return time.Time{}, errors.New("a JWT whose exp claim is not an integer")
	}
	return time.Unix(sec, 0), nil
}

// checkExpiry says why tok cannot be used at now, or nil. It leaves out
// ErrToken: the caller wraps it once, with where the token came from.
func checkExpiry(tok string, now time.Time) error {
	exp, err := jwtExpiry(tok)
	if err != nil {
		return err
	}
	if !exp.IsZero() && !now.Before(exp) {
		return fmt.Errorf("token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	return nil
}
