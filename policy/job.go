package policy

import (
	"strings"
	"time"
)

// State is a job's lifecycle state, reduced to what scheduling and
// accounting need. Adapters map Slurm's many states onto these.
type State int

// Job states. The zero value is StateUnknown so a forgotten field is visible.
const (
	StateUnknown State = iota
	StatePending
	StateRunning
	StateCompleted
	StateFailed
	StateCancelled
	StateTimeout
	StateNodeFail
	StatePreempted
	StateOOM
)

var stateNames = [...]string{"UNKNOWN", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY"}

// String returns Slurm's spelling of the state.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "UNKNOWN"
	}
	return stateNames[s]
}

// ParseState maps a Slurm state name (as squeue, sacct or slurmrestd print it)
// to a State. Unknown names give StateUnknown.
func ParseState(s string) State {
	for i, n := range stateNames {
		if n == s {
			return State(i)
		}
	}
	switch s {
	case "OOM":
		return StateOOM
	case "REQUEUED", "SUSPENDED", "CONFIGURING", "COMPLETING", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING",
		"POWER_UP_NODE":
		return StateRunning
	case "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD":
		return StatePending
	case "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "LAUNCH_FAILED", "RECONFIG_FAIL":
		return StateFailed
	case "REVOKED":
		// A federated job's sibling that another cluster ran: it never
		// ran here.
		return StateCancelled
	}
	// sacct's text output says who cancelled ("CANCELLED by 1234") or
	// truncates it ("CANCELLED+").
	if strings.HasPrefix(s, "CANCELLED") {
		return StateCancelled
	}
	return StateUnknown
}

// Finished reports whether the job has ended, whatever the outcome.
func (s State) Finished() bool { return s >= StateCompleted }

// Job is one Slurm job (or one array task) as Fairway sees it. Every adapter
// (slurmrestd, slurmdbd, sacct, trace files, the simulator) produces Jobs, and
// every policy and predictor consumes them. Times are wall-clock instants; a
// zero time means "not known yet" (a pending job has no Start).
type Job struct {
	Cluster   string
	ID        int64 // Slurm job id; for array tasks the task's own job id
	ArrayJob  int64 // array master job id, 0 when not an array
	ArrayTask int   // array task index, -1 when not an array
	HetJob    bool  // part of a heterogeneous job: read, never rewritten

	User      string
	Account   string
	Partition string
	QOS       string
	Name      string

	Submit   time.Time
	Eligible time.Time
	Start    time.Time
	End      time.Time

	TimeLimit time.Duration // requested wall time; 0 when unknown/unlimited
	// Deadline is when Slurm removes the job if it cannot end by then
	// (sbatch --deadline); zero when it has none. Users with a deadline
	// tell how soon they need the result, and so roughly how long the
	// job runs: the fairway predictor reads it.
	Deadline time.Time

	Nodes int
	// Hosts names the nodes a started job ran on, as Slurm's hostlist
	// expression ("gpu[1-2],cpu7"); "" where the source does not say
	// (traces, and slurmdbd's "None assigned"). Jobs that share a node
	// count it once in the node use the power forecast learns from.
	Hosts    string
	CPUs     int
	MemoryMB int64
	GPUs     int    // whole GPUs (total over all nodes)
	GPUType  string // e.g. "h100"; empty when untyped
	Shards   int    // GPU shards (total)
	// Tasks is how many jobs a pending array record stands for: the
	// tasks Slurm has not split off yet ("10_[2-6]" is 5). 0 or 1: one
	// job. Ranked and written as one record, it is played forward as
	// Tasks jobs.
	Tasks int

	State    State
	ExitCode int

	Priority   int64 // current Slurm priority (pending jobs)
	SiteFactor int64 // current site factor
}

// RunTime is how long the job ran (End-Start), or 0 when it has not both
// started and ended.
func (j *Job) RunTime() time.Duration {
	if j.Start.IsZero() || j.End.IsZero() || j.End.Before(j.Start) {
		return 0
	}
	return j.End.Sub(j.Start)
}

// Wait is how long the job waited in the queue (Start-Submit), or 0 when it
// has not started.
func (j *Job) Wait() time.Duration {
	if j.Start.IsZero() || j.Submit.IsZero() || j.Start.Before(j.Submit) {
		return 0
	}
	return j.Start.Sub(j.Submit)
}

// GPUCount is the job's GPU demand in whole-GPU units: GPUs, or for a
// shard-only job the fraction of one GPU its shards represent given
// shardsPerGPU (0 means "count a shard job as one GPU").
func (j *Job) GPUCount(shardsPerGPU int) float64 {
	if j.GPUs > 0 || j.Shards == 0 {
		return float64(j.GPUs)
	}
	if shardsPerGPU <= 0 {
		return 1
	}
	return float64(j.Shards) / float64(shardsPerGPU)
}
