package slurmctl

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// slurmdbd's command-line readers. They return what the command printed;
// accounting parses it, since the same formats also come from slurmrestd's
// slurmdb answers and from files an operator imports. A path "" means the
// command on PATH; Runner's environment (ExecRunner.Env, e.g.
// SLURM_CONF=...) says which cluster answers.

// SacctJobsJSON runs `sacct --json -a -S since -E until [-M cluster]` for
// every user's jobs active in [since, until). sacct reads local time, so
// the window is given in it.
func (c Commands) SacctJobsJSON(ctx context.Context, path, cluster string, since, until time.Time) ([]byte, error) {
	if path == "" {
		path = "sacct"
	}
	const layout = "2006-01-02T15:04:05"
	args := []string{"--json", "-a", "-S", since.Local().Format(layout), "-E", until.Local().Format(layout)}
	if cluster != "" {
		args = append(args, "-M", cluster)
	}
	return c.output(ctx, path, path, args...)
}

// SacctUsageArgs are the sacct arguments (before -S/-E) of SacctUsage:
// every user's jobs and steps, '|'-separated, units as recorded
// (accounting.ParseSacctUsage reads them).
var SacctUsageArgs = []string{"-a", "-n", "-P", "--noconvert", "--format=JobIDRaw,ElapsedRaw,TotalCPU,MaxRSS"}

// SacctUsage runs sacct with SacctUsageArgs for the jobs active in [since,
// until): their elapsed and CPU time and their steps' MaxRSS.
func (c Commands) SacctUsage(ctx context.Context, path string, since, until time.Time) ([]byte, error) {
	if path == "" {
		path = "sacct"
	}
	args := append(append([]string{}, SacctUsageArgs...), "-S", since.Format("2006-01-02T15:04:05"), "-E", until.Format("2006-01-02T15:04:05"))
	stdout, stderr, err := c.runner().Run(ctx, nil, path, args...)
	if err != nil {
		return nil, fmt.Errorf("sacct usage: %w: %s", err, strings.TrimSpace(string(stderr)))
	}
	return stdout, nil
}

// SacctmgrAssocArgs are the sacctmgr arguments of SacctmgrAssociations:
// one association per line, '|'-separated, cluster|account|user|parent
// account|share (accounting.ParseAssociations reads them).
var SacctmgrAssocArgs = []string{"-nP", "show", "associations", "format=cluster,account,user,parentname,fairshare"}

// SacctmgrAssociations runs sacctmgr with SacctmgrAssocArgs: every
// cluster's associations with their shares.
func (c Commands) SacctmgrAssociations(ctx context.Context, path string) ([]byte, error) {
	if path == "" {
		path = "sacctmgr"
	}
	return c.output(ctx, path, path, SacctmgrAssocArgs...)
}
