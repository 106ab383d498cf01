package slurmctl

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// slurmdbd's command-line readers. They return what the command printed;
// accounting parses it, since the same formats also come from slurmrestd's
// slurmdb answers and from files an operator imports. A path "" means the
// command on PATH; Runner's environment (ExecRunner.Env, e.g.
// SLURM_CONF=...) says which cluster answers.

// SacctJobsJSON runs `sacct --json -a -D -S since -E until [-M cluster]` for
// every user's jobs active in [since, until] (sacctWindow says how the
// window is written).
func (c Commands) SacctJobsJSON(ctx context.Context, path, cluster string, since, until time.Time) ([]byte, error) {
	if path == "" {
		path = "sacct"
	}
	start, end := sacctWindow(since, until, time.Now())
	// -D: every run of a requeued job, each its own record; without it
	// 26.05 prints only the last (22.05 printed all runs in a window).
	args := []string{"--json", "-a", "-D", "-S", start, "-E", end}
	if cluster != "" {
		args = append(args, "-M", cluster)
	}
	return c.output(ctx, path, path, args...)
}

// SacctMargin widens the window SacctJobsJSON asks sacct for on both sides:
// it covers the moment between sacctWindow reading this host's clock and
// sacct reading it, and the rounding to seconds. The caller keeps the jobs
// it wants by their own times (accounting's endedIn).
const SacctMargin = time.Minute

// sacctWindow returns sacct's -S and -E for [since, until] asked at now,
// widened by SacctMargin, relative to now ("now-N" seconds, "now+N" for a
// time to come), the form DBJobs uses for the same reason: sacct reads an
// absolute time in local time with no zone, and in the hour a change back
// from daylight saving time repeats, a wall-clock time names two instants
// an hour apart, of which sacct's mktime may take either. Read an hour
// early, -E left out the jobs that ended in the window's last hour while
// the watermark moved past them.
func sacctWindow(since, until, now time.Time) (start, end string) {
	rel := func(t time.Time) string {
		s := int64(now.Sub(t).Round(time.Second) / time.Second)
		if s < 0 {
			return "now+" + strconv.FormatInt(-s, 10)
		}
		return "now-" + strconv.FormatInt(s, 10)
	}
	return rel(since.Add(-SacctMargin)), rel(until.Add(SacctMargin))
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
	start, end := sacctWindow(since, until, time.Now())
	args := append(append([]string{}, SacctUsageArgs...), "-S", start, "-E", end)
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
