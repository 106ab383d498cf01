package prolog

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Job is what a hook knows about the job it runs for, read from the
// environment slurmd gives Prolog and Epilog (with PrologFlags=Alloc).
type Job struct {
	ID   int64
	UID  int // -1 when slurmd did not say
	User string
	Node string // SLURMD_NODENAME
	// GPUs are the minor numbers N of the job's /dev/nvidiaN on this node.
	// Slurm 22.05 gives shard jobs the GPU their shards live on here too.
	GPUs []int
	// Shards is the job's shard count on this node when the environment
	// says (SLURM_SHARDS_ON_NODE), else -1: slurmd 22.05 does not put it in
	// the prolog environment, and a shard job then looks like a one-GPU job.
	Shards int
	// ExitCode is SLURM_JOB_EXIT_CODE in the epilog, -1 elsewhere.
	ExitCode int
}

// ErrNotAJob means the environment has no SLURM_JOB_ID: the hook was not
// started by slurmd.
var ErrNotAJob = errors.New("no SLURM_JOB_ID: not run by slurmd as a prolog or epilog")

// JobFromEnv reads a Job from slurmd's hook environment. The job's GPUs come
// from SLURM_JOB_GPUS, or CUDA_VISIBLE_DEVICES when that is absent; in the
// prolog and epilog both hold device numbers (the N of /dev/nvidiaN), not
// NVML indices. A job without GPUs on this node has no GPUs and no error.
func JobFromEnv(getenv func(string) string) (Job, error) {
	j := Job{UID: -1, Shards: -1, ExitCode: -1}
	id := strings.TrimSpace(getenv("SLURM_JOB_ID"))
	if id == "" {
		return j, ErrNotAJob
	}
	var err error
	if j.ID, err = strconv.ParseInt(id, 10, 64); err != nil || j.ID <= 0 {
		return j, fmt.Errorf("SLURM_JOB_ID=%q: want a positive job id", id)
	}
	if s := getenv("SLURM_JOB_UID"); s != "" {
		if j.UID, err = strconv.Atoi(s); err != nil {
			return j, fmt.Errorf("SLURM_JOB_UID=%q: want a number", s)
		}
	}
	j.User = getenv("SLURM_JOB_USER")
	j.Node = getenv("SLURMD_NODENAME")
	name, list := "SLURM_JOB_GPUS", getenv("SLURM_JOB_GPUS")
	if list == "" {
		name, list = "CUDA_VISIBLE_DEVICES", getenv("CUDA_VISIBLE_DEVICES")
	}
	if j.GPUs, err = ParseDeviceList(list); err != nil {
		return j, fmt.Errorf("%s: %w", name, err)
	}
	if s := getenv("SLURM_SHARDS_ON_NODE"); s != "" {
		if j.Shards, err = strconv.Atoi(s); err != nil || j.Shards < 0 {
			return j, fmt.Errorf("SLURM_SHARDS_ON_NODE=%q: want a count", s)
		}
	}
	if s := getenv("SLURM_JOB_EXIT_CODE"); s != "" {
		if j.ExitCode, err = strconv.Atoi(s); err != nil {
			return j, fmt.Errorf("SLURM_JOB_EXIT_CODE=%q: want a number", s)
		}
	}
	return j, nil
}

// ParseDeviceList parses a device list such as "0,1", "2" or "0-3,6" into
// sorted, distinct device numbers. An empty list, or CUDA's "NoDevFiles",
// gives none.
func ParseDeviceList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "NoDevFiles" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q: want device numbers like 0,1 or 0-3", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1024 {
				return nil, fmt.Errorf("%q: bad range %q", s, part)
			}
		}
		for d := a; d <= b; d++ {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}
