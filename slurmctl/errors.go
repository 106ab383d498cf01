package slurmctl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error the Client returns wraps exactly one of the
// transport/status kinds below (check with errors.Is); an error that carries
// entries of Slurm's "errors" array also wraps ErrSlurm.
var (
	// ErrUnauthorized: HTTP 401, slurmrestd refused the request before Slurm
	// saw it (missing or unusable X-SLURM-USER-* headers).
	ErrUnauthorized = errors.New("slurmrestd: unauthorized (HTTP 401)")
	// ErrForbidden: HTTP 403, the user may not do this.
	ErrForbidden = errors.New("slurmrestd: forbidden (HTTP 403)")
	// ErrTokenRejected: Slurm refused the token. Slurm 22.05 reports a bad
	// or expired JWT as HTTP 500 whose errors all carry error number -1
	// ("Unspecified error", reads) or 1000 ("Unexpected message received",
	// updates); 24.11 and 26.05 as HTTP 511 with error 1007 ("Protocol
	// authentication error") from slurmctld, and HTTP 502 with error 7000
	// ("Unable to connect to database") from slurmdbd. Those are reported
	// here, not as ErrServer, and are not retried (except once after
	// renewing a renewable token).
	ErrTokenRejected = errors.New("slurmctld rejected the token")
	// ErrServer: any other HTTP 5xx. Reads retry it.
	ErrServer = errors.New("slurmrestd: server error (HTTP 5xx)")
	// ErrHTTP: an HTTP status none of the above explains (e.g. 404).
	ErrHTTP = errors.New("slurmrestd: unexpected HTTP status")
	// ErrTimeout: no complete response within Config.RequestTimeout.
	ErrTimeout = errors.New("slurmrestd: timeout")
	// ErrUnreachable: the connection failed or broke (slurmrestd down,
	// refused, reset). Reads retry it.
	ErrUnreachable = errors.New("slurmrestd: unreachable")
	// ErrMalformed: the body is not the JSON this package expects.
	ErrMalformed = errors.New("slurmrestd: malformed response")
	// ErrSlurm: the response's "errors" array is not empty. With HTTP 200
	// this is still a failure: slurmrestd reports most failures that way.
	ErrSlurm = errors.New("slurm reported errors")
	// ErrToken: no usable token on our side (missing, unreadable, not a
	// JWT, expired, or renewal failed). Nothing was sent.
	ErrToken = errors.New("slurm token unusable")
	// ErrVersion: the server offers none of the supported API versions.
	ErrVersion = errors.New("no supported slurmrestd API version")
	// ErrRejected: a job update answered HTTP 200 with only warnings,
	// meaning slurmrestd ignored (part of) it, e.g. an unknown key.
	ErrRejected = errors.New("slurmrestd ignored the update")
)

// SlurmError is one entry of a response's "errors" array. slurmrestd 22.05
// uses two spellings ({description, error_number, error, source} for jobs,
// {error, errno} for nodes and partitions); both decode into this.
type SlurmError struct {
	Description string
	Number      int
	Error       string
	Source      string
}

func (e SlurmError) String() string {
	var parts []string
	if e.Source != "" {
		parts = append(parts, e.Source)
	}
	head := e.Error
	if e.Number != 0 {
		head = strings.TrimSpace(fmt.Sprintf("%s (%d)", e.Error, e.Number))
	}
	if head != "" {
		parts = append(parts, head)
	}
	if e.Description != "" {
		parts = append(parts, e.Description)
	}
	if len(parts) == 0 {
		return "unspecified error"
	}
	return strings.Join(parts, ": ")
}

// APIError is a failed slurmrestd call. Kind is one of the sentinel errors;
// Slurm holds the response's "errors" entries, if any. The token never
// appears in it: every string from the server is scrubbed of it.
type APIError struct {
	Op     string // e.g. "GET /slurm/v0.0.38/jobs"
	Status int    // HTTP status, 0 when no response arrived
	Kind   error
	Slurm  []SlurmError
	Detail string // extra context (transport error text, body excerpt)
	// large: the body was refused for being over Config.MaxResponseBytes.
	large bool
}

// TooLarge reports whether the response was refused for being larger than
// Config.MaxResponseBytes (Kind is then ErrMalformed): a read of a time
// window, such as DBJobs, may ask for a shorter one instead.
func (e *APIError) TooLarge() bool { return e.large }

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	for i, s := range e.Slurm {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// Unwrap gives Kind and, when Slurm errors are present, ErrSlurm.
func (e *APIError) Unwrap() []error {
	if len(e.Slurm) > 0 && e.Kind != ErrSlurm {
		return []error{e.Kind, ErrSlurm}
	}
	return []error{e.Kind}
}

// transient reports whether a read may be retried after err.
func transient(err error) bool {
	return errors.Is(err, ErrServer) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnreachable)
}

// redact removes every occurrence of secret from s.
// clip is s cut to at most n bytes on a character boundary, with "..."
// when cut, and with any invalid UTF-8 replaced: an error body is stored
// and logged as text, and a cut through a character made it invalid.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func redact(s, secret string) string {
	if secret == "" || !strings.Contains(s, secret) {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}
