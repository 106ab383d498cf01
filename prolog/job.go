package prolog

import (
	"errors"
	"fmt"
	"math"
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
//
// Without a job id or a readable GPU list the hook cannot tell what to act
// on, and err says why. The other variables are details the hooks can do
// without: one that does not parse leaves its field unknown (-1) and is
// named in unread, so that a format slurmd changes one day costs a field,
// not the node's checks and the job's usage record.
func JobFromEnv(getenv func(string) string) (j Job, unread []error, err error) {
	j = Job{UID: -1, Shards: -1, ExitCode: -1}
	id := strings.TrimSpace(getenv("SLURM_JOB_ID"))
	if id == "" {
		return j, nil, ErrNotAJob
	}
	if j.ID, err = strconv.ParseInt(id, 10, 64); err != nil || j.ID <= 0 {
		return j, nil, fmt.Errorf("SLURM_JOB_ID=%q: want a positive job id", id)
	}
	j.User = getenv("SLURM_JOB_USER")
	j.Node = getenv("SLURMD_NODENAME")
	name, list := "SLURM_JOB_GPUS", getenv("SLURM_JOB_GPUS")
	if list == "" {
		name, list = "CUDA_VISIBLE_DEVICES", getenv("CUDA_VISIBLE_DEVICES")
	}
	if j.GPUs, err = ParseDeviceList(list); err != nil {
		return j, nil, fmt.Errorf("%s: %w", name, err)
	}
	count := func(name, want string, min int, dst *int) {
		s := getenv(name)
		if s == "" {
			return
		}
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= min {
			*dst = n
			return
		}
		unread = append(unread, fmt.Errorf("%s=%q: want %s", name, s, want))
	}
	count("SLURM_JOB_UID", "a user id", 0, &j.UID)
	count("SLURM_SHARDS_ON_NODE", "a count", 0, &j.Shards)
	count("SLURM_JOB_EXIT_CODE", "a number", math.MinInt, &j.ExitCode)
	return j, unread, nil
}

// maxDevice is above any GPU device number a node has (the N of
// /dev/nvidiaN): a larger one is not a device, and bounds the loop below.
const maxDevice = 1<<16 - 1

// maxJobDevices is more GPUs than any node has. A longer list is not
// Slurm's: the epilog would spool one record per device, each fsynced,
// far past its time budget.
const maxJobDevices = 1024

// ParseDeviceList parses a device list such as "0,1", "2" or "0-3,6" into
// sorted, distinct device numbers. An empty list, or CUDA's "NoDevFiles",
// gives none. An error names the entry at fault and why.
func ParseDeviceList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "NoDevFiles" {
		return nil, nil
	}
	device := func(what, v string) (int, error) {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 || d > maxDevice {
			return 0, fmt.Errorf("%s%q is not a device number (0 to %d); want a list like 0,1 or 0-3", what, v, maxDevice)
		}
		return d, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		bad := func(err error) error { return fmt.Errorf("%q: entry %q: %w", s, part, err) }
		lo, hi, isRange := strings.Cut(part, "-")
		what := ""
		if isRange {
			what = "start "
		}
		a, err := device(what, lo)
		if err != nil {
			return nil, bad(err)
		}
		b := a
		if isRange {
			if b, err = device("end ", hi); err != nil {
				return nil, bad(err)
			}
			if b < a {
				return nil, bad(fmt.Errorf("%d to %d runs backwards", a, b))
			}
			if b-a >= maxJobDevices {
				return nil, bad(fmt.Errorf("%d devices, more than any node has (%d)", b-a+1, maxJobDevices))
			}
		}
		for d := a; d <= b; d++ {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
		if len(out) > maxJobDevices {
			return nil, fmt.Errorf("%q: more than %d devices", s, maxJobDevices)
		}
	}
	sort.Ints(out)
	return out, nil
}
