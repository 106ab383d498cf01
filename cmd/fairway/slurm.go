package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/fairway-hpc/fairway/slurmctl"
)

// slurmSettings is how a command reaches slurmrestd (serve, ingest).
type slurmSettings struct {
	URL, User     string
	TokenFile     string // JWT file, re-read when it changes
	TokenEnv      string // the JWT from $SLURM_JWT, never logged
	ScontrolToken bool   // mint and renew with `scontrol token`
	APIVersion    string // pinned version, "" to negotiate
	MaxBody       int64  // largest answer read; 0: slurmctl's default
}

// newSlurmClient picks the token source (scontrol, file, else environment)
// and connects, negotiating the API version unless pinned.
func newSlurmClient(ctx context.Context, s slurmSettings, log *slog.Logger) (*slurmctl.Client, error) {
	var tokens slurmctl.TokenSource
	switch {
	case s.ScontrolToken:
		st, err := slurmctl.NewScontrolToken(slurmctl.ScontrolTokenConfig{User: s.User}, log.With("component", "token"))
		if err != nil {
			return nil, err
		}
		tokens = st
	case s.TokenFile != "":
		tokens = slurmctl.FileToken(s.TokenFile)
	default:
		tokens = slurmctl.StaticToken(s.TokenEnv)
	}
	client, err := slurmctl.New(ctx, slurmctl.Config{URL: s.URL, User: s.User, Token: tokens, Version: s.APIVersion, MaxResponseBytes: s.MaxBody},
		log.With("component", "slurmctl"))
	if err != nil {
		return nil, fmt.Errorf("slurmrestd at %s: %w", s.URL, err)
	}
	return client, nil
}
