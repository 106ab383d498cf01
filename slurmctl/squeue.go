package slurmctl

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// squeueFormat prints only fields Slurm writes and validates, each ended by
// "|" (no width: nothing padded or cut). A job's text fields (comment, mail
// user, work dir, name) are user input and are not asked for: in a line of
// words a comment "x TRES=gres/shard=8" read as a shard count. With -O,
// JobID is the job's own id, also for an array's tasks.
const squeueFormat = "JobID:|,tres-per-node:|,tres-alloc:|,NumNodes:|"

// JobShards returns how many GPU shards jobID holds per node (0 for a
// whole-GPU job), from `squeue --noheader --states=all --jobs=ID
// --Format=...` run at squeue: one line of the job's own fields. squeue
// --json was the first choice, but Slurm 22.05's ignores --jobs and prints
// the whole queue, a few KB a job, which held jobs with long comments
// pushed past the prolog's budget. The caller checks that squeue is a path
// it may run.
func (c Commands) JobShards(ctx context.Context, squeue string, jobID int64) (int, error) {
	out, err := c.output(ctx, filepath.Base(squeue), squeue, "--noheader", "--states=all", "--jobs="+strconv.FormatInt(jobID, 10), "--Format="+squeueFormat)
	if err != nil {
		return 0, err
	}
	return jobShardsText(out, jobID)
}

// squeueJob is what the prolog reads of one job from squeue.
type squeueJob struct {
	JobID       int64
	TresPerNode string // gres:shard:3 (22.05), gres/shard:3 (newer)
	TresAlloc   string
	NodeCount   int64
}

// jobShardsText finds jobID in squeue's squeueFormat output and returns its
// shards per node: from tres_per_node, else the allocated gres/shard TRES
// divided by the node count; 0 for a job without shards. `--jobs=ID` of an
// array's first task lists the whole array, so lines of other jobs are
// skipped; a line that is not four fields is an error, and the job itself
// must be there.
func jobShardsText(out []byte, jobID int64) (int, error) {
	text := strings.TrimRight(string(out), "\n")
	if text == "" {
		return 0, fmt.Errorf("squeue: job %d not listed", jobID)
	}
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 5 || f[4] != "" {
			return 0, fmt.Errorf("squeue: line %q: want 4 fields ended by |", line)
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("squeue: line %q: job id %q is not a number", line, f[0])
		}
		if id != jobID {
			continue
		}
		j := squeueJob{JobID: id, TresPerNode: naToEmpty(f[1]), TresAlloc: naToEmpty(f[2])}
		if j.NodeCount, err = strconv.ParseInt(f[3], 10, 64); err != nil || j.NodeCount < 0 {
			return 0, fmt.Errorf("squeue: job %d: node count %q is not a count", jobID, f[3])
		}
		return jobShards(j)
	}
	return 0, fmt.Errorf("squeue: job %d not listed", jobID)
}

// naToEmpty is s without squeue's "N/A" for an unset field.
func naToEmpty(s string) string {
	if s == "N/A" {
		return ""
	}
	return s
}

func jobShards(j squeueJob) (int, error) {
	for _, g := range strings.Split(j.TresPerNode, ",") {
		g = strings.Replace(g, "gres/", "gres:", 1)
		parts := strings.Split(g, ":")
		if len(parts) >= 3 && parts[0] == "gres" && parts[1] == "shard" {
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil || n < 0 {
				return 0, fmt.Errorf("job %d: tres_per_node %q: bad shard count", j.JobID, g)
			}
			return n, nil
		}
	}
	for _, t := range strings.Split(j.TresAlloc, ",") {
		k, v, _ := strings.Cut(t, "=")
		if k == "gres/shard" || strings.HasPrefix(k, "gres/shard:") {
			total, err := strconv.Atoi(v)
			if err != nil || total < 0 {
				return 0, fmt.Errorf("job %d: tres_alloc_str %q: bad shard count", j.JobID, t)
			}
			nodes := max(int(j.NodeCount), 1)
			return (total + nodes - 1) / nodes, nil
		}
	}
	return 0, nil
}
