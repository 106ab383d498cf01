package accounting

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// SharesClient is slurmrestd's road to the share tree;
// *slurmctl.Client implements it.
type SharesClient interface {
	Shares(ctx context.Context) ([]byte, error)
	Version() string
}

// SharesSource is where `fairway shares sync` reads the share tree from.
// Its errors name the flag, as the command's users set it.
type SharesSource struct {
	From     string // SharesFromSlurmdbd, SharesFromSlurmrestd or SharesFromConfig
	File     string // SharesFromConfig: the shares file
	Sacctmgr string // SharesFromSlurmdbd: the sacctmgr binary
	// Slurm runs sacctmgr for SharesFromSlurmdbd.
	Slurm AssociationsRunner
	// REST connects to slurmrestd for SharesFromSlurmrestd, returning the
	// client and its URL for errors. It is called only for that source,
	// once the other settings are checked, so that a mistake is named
	// before anything is contacted.
	REST func(ctx context.Context) (SharesClient, string, error)
}

// Read returns cluster's share tree from s and the source it is stored
// under: slurmrestd's tree is slurmdbd's associations, so it replaces that
// source (SharesFromSlurmrestd).
func (s SharesSource) Read(ctx context.Context, cluster string) ([]ShareNode, string, error) {
	switch s.From {
	case SharesFromSlurmdbd, SharesFromSlurmrestd:
		if s.File != "" {
			return nil, "", errors.New("--file: only with --from config")
		}
	case SharesFromConfig:
		if s.File == "" {
			return nil, "", errors.New("--file: required with --from config")
		}
	default:
		return nil, "", fmt.Errorf("--from %q: want slurmdbd, slurmrestd or config", s.From)
	}
	switch s.From {
	case SharesFromSlurmdbd:
		if s.Slurm == nil {
			return nil, "", errors.New("--from slurmdbd: no sacctmgr runner configured")
		}
		nodes, err := SacctmgrAssociations(ctx, s.Slurm, s.Sacctmgr, cluster)
		return nodes, SharesFromSlurmdbd, err
	case SharesFromSlurmrestd:
		nodes, err := s.readREST(ctx, cluster)
		return nodes, SharesFromSlurmdbd, err
	default:
		f, err := os.Open(s.File)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		nodes, err := ParseSharesConfig(s.File, f)
		return nodes, SharesFromConfig, err
	}
}

func (s SharesSource) readREST(ctx context.Context, cluster string) ([]ShareNode, error) {
	if s.REST == nil {
		return nil, errors.New("--from slurmrestd: no slurmrestd connection configured")
	}
	client, url, err := s.REST(ctx)
	if err != nil {
		return nil, err
	}
	body, err := client.Shares(ctx)
	if err != nil {
		return nil, fmt.Errorf("slurmrestd at %s: %w", url, err)
	}
	return ParseRESTShares("slurmrestd "+client.Version()+" shares", body, cluster)
}

// Via names, for people, where Read reads the tree: the road the user
// chose and, where it differs, the source the tree is stored under
// ("slurmdbd through slurmrestd").
func (s SharesSource) Via() string {
	switch s.From {
	case SharesFromSlurmrestd:
		return "slurmdbd through slurmrestd"
	case SharesFromConfig:
		return "the config file " + s.File
	}
	return s.From
}
