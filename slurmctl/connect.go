package slurmctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// ErrTwoTokenSources is Connect's answer to a config that names both
// scontrol and a token file: one of them would be ignored without a word,
// and the one that wins (scontrol) fails where the process is not
// SlurmUser, which is why a token file was set.
var ErrTwoTokenSources = errors.New("two slurmrestd token sources: mint with scontrol (--scontrol-token, FAIRWAY_SCONTROL_TOKEN) or read a token file (--slurm-token-file), not both")

// ConnectConfig is how a command reaches slurmrestd (serve, ingest).
type ConnectConfig struct {
	URL, User     string
	TokenFile     string // JWT file, re-read when it changes
	TokenEnv      string // the JWT from $SLURM_JWT, never logged
	ScontrolToken bool   // mint and renew with `scontrol token`
	APIVersion    string // pinned version, "" to negotiate
	MaxBody       int64  // largest answer read; 0: DefaultMaxResponseBytes
	// AllowInsecureHTTP: Config.AllowInsecureHTTP.
	AllowInsecureHTTP bool
}

// HasToken says whether c names any token source.
func (c ConnectConfig) HasToken() bool {
	return c.TokenFile != "" || c.TokenEnv != "" || c.ScontrolToken
}

// Connect picks the token source (scontrol, file, else environment) and
// connects, negotiating the API version unless pinned.
func Connect(ctx context.Context, c ConnectConfig, log *slog.Logger) (*Client, error) {
	if c.ScontrolToken && c.TokenFile != "" {
		return nil, ErrTwoTokenSources
	}
	var tokens TokenSource
	switch {
	case c.ScontrolToken:
		st, err := NewScontrolToken(ScontrolTokenConfig{User: c.User}, log.With("component", "token"))
		if err != nil {
			return nil, err
		}
		tokens = st
	case c.TokenFile != "":
		tokens = FileToken(c.TokenFile)
	default:
		tokens = StaticToken(c.TokenEnv)
	}
	client, err := New(ctx, Config{URL: c.URL, User: c.User, Token: tokens, Version: c.APIVersion, MaxResponseBytes: c.MaxBody,
		AllowInsecureHTTP: c.AllowInsecureHTTP},
		log.With("component", "slurmctl"))
	if err != nil {
		return nil, fmt.Errorf("slurmrestd at %s: %w", c.URL, err)
	}
	return client, nil
}
