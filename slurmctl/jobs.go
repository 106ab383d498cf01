package slurmctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/internal/input"
	"github.com/fairway-hpc/fairway/policy"
)

// Job is one Slurm job record as slurmctl reads it: the domain job, plus
// what only this adapter needs to write it back safely.
//
// A record is one of: a plain job; a heterogeneous-job component
// (HetJob, never written); a started or split array task (its own ID,
// ArrayJob and ArrayTask set); or the record holding an array's pending
// tasks that Slurm has not split off yet — ID == ArrayJob, ArrayTask -1,
// ArrayTasks the task expression ("2-4") and TaskCount how many tasks it
// stands for. Slurm schedules those tasks in index order at the record's
// priority, so Fairway ranks and writes the record as one job.
type Job struct {
	policy.Job

	Reason     string // state_reason: "Resources", "Priority", "JobHeldUser", ...
	Held       bool   // pending with a hold (priority 0 or hold flag): never written
	ArrayTasks string // unsplit pending array tasks, e.g. "2-4" (no "%N" limit); "" otherwise
	Nice       int64  // the job's nice (v0.0.40+; 0 on v0.0.38, which does not report it)
	TaskCount  int    // tasks this record stands for: 1, or the size of ArrayTasks
	// NodeList names the nodes a started job holds, or those the backfill
	// plan holds for a pending one (REST v0.0.40+; on 22.05 serve asks
	// squeue, see PowerWriter.ScheduledNodes). Empty when Slurm names none.
	NodeList []string
	// GRESAlloc is the per-node allocation from gres_detail, in node order
	// (running jobs only), e.g. gpu/h100/2/[0 1].
	GRESAlloc []GRES
}

// Target is how Slurm must be told which record to update. For an
// unsplit array record it is "A_[2-4]": the plain array id would also
// update the array's running tasks (observed on 22.05 with both scontrol and
// slurmrestd), while the task expression updates exactly the pending ones
// without splitting them.
func (j *Job) Target() string {
	if j.ArrayTasks != "" {
		return strconv.FormatInt(j.ArrayJob, 10) + "_[" + j.ArrayTasks + "]"
	}
	return strconv.FormatInt(j.ID, 10)
}

// Pending reports whether the record is a pending job that Fairway may
// rank: pending, not held.
func (j *Job) Pending() bool { return j.State == policy.StatePending && !j.Held }

// RESTTarget is how slurmrestd must be told which record to update. From
// v0.0.40 on it is always the plain record id: REST cannot address array
// tasks ("10_[2-9]" gets 404/400/422, "10_2" 422 "Submit job update against
// Array Job's JobID"), and the plain id of the pending array record updates
// that record only, not its running tasks (captured on 24.11.7 and
// 26.05.3). On v0.0.38 (Slurm 22.05) the plain id also reached the running
// tasks, so Target's "A_[tasks]" form is kept there.
func (j *Job) RESTTarget(version string) string {
	if version == V0038 {
		return j.Target()
	}
	return strconv.FormatInt(j.ID, 10)
}

// SkippedRecord is a job record that could not be translated.
type SkippedRecord struct {
	JobID int64 // 0 when even the id could not be read
	Err   error
}

// jobsResult is one decoded /jobs (or /job/{id}) answer.
type jobsResult struct {
	Jobs    []Job
	Env     *envelope
	Skipped []SkippedRecord
}

// decodeJobs decodes a jobs answer as it arrives, one record at a time, so
// a large queue is never held twice (raw and decoded). A record that does
// not decode or translate is skipped and reported in Skipped; a body that is
// not JSON, has no "jobs" array, or whose every record fails is an
// ErrMalformed error.
func decodeJobs(r io.Reader) (jobsResult, error) {
	var res jobsResult
	sawJobs, records := false, 0
	// The body's own failure (the connection broke, the request timed
	// out, the body cap): a json.Decoder returns it again for every
	// record after while More still sees the half-read record, so
	// skipping that record as a bad one would loop for ever.
	body := &input.Sticky{R: r}
	env, err := decodeAnswer(body, "jobs", func(key string, dec *json.Decoder) (bool, error) {
		if key != "jobs" {
			return false, nil
		}
		t, err := dec.Token()
		if err != nil {
			return true, err
		}
		if t == nil {
			return true, nil // "jobs": null
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return true, fmt.Errorf("\"jobs\" is not an array")
		}
		sawJobs = true
		for dec.More() {
			records++
			var w wireJob
			if err := dec.Decode(&w); err != nil {
				var se *json.SyntaxError
				if body.Err != nil || errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errBodyTooLarge) {
					return true, fmt.Errorf("%w: jobs: record %d: %w", ErrMalformed, records, err)
				}
				res.Skipped = append(res.Skipped, SkippedRecord{JobID: w.JobID, Err: fmt.Errorf("decode: %v", err)})
				continue
			}
			j, err := translateJob(&w)
			if err != nil {
				res.Skipped = append(res.Skipped, SkippedRecord{JobID: w.JobID, Err: err})
				continue
			}
			res.Jobs = append(res.Jobs, j)
		}
		_, err = dec.Token()
		return true, err
	})
	if err != nil {
		return jobsResult{}, err
	}
	res.Env = env
	if len(res.Env.Errors) > 0 {
		res.Jobs, res.Skipped = nil, nil
		return res, nil
	}
	if !sawJobs {
		return res, fmt.Errorf("%w: no \"jobs\" array", ErrMalformed)
	}
	if records > 0 && len(res.Skipped) == records {
		return res, fmt.Errorf("%w: none of the %d job records could be read, first: job %d: %v", ErrMalformed, records, res.Skipped[0].JobID, res.Skipped[0].Err)
	}
	return res, nil
}

func unixTime(n num) time.Time {
	if v := n.value(); v > 0 {
		return time.Unix(v, 0)
	}
	return time.Time{}
}

// maxMinutes bounds a time limit: a century, well inside time.Duration.
const maxMinutes = 100 * 366 * 24 * 60

// minutes converts a time limit in minutes; unset, infinite and 0 give 0
// (no limit).
func minutes(name string, n num) (time.Duration, error) {
	if !n.Set || n.Infinite || n.V == 0 {
		return 0, nil
	}
	if n.V < 0 || n.V > maxMinutes {
		return 0, fmt.Errorf("%s %d min: want 0 to %d", name, n.V, maxMinutes)
	}
	return time.Duration(n.V) * time.Minute, nil
}

func translateJob(w *wireJob) (Job, error) {
	var err error
	j := Job{
		Job: policy.Job{
			Cluster:   w.Cluster,
			ID:        w.JobID,
			ArrayTask: -1,
			User:      w.UserName,
			Account:   w.Account,
			Partition: w.Partition,
			QOS:       w.QOS,
			Name:      w.Name,
			Submit:    unixTime(w.SubmitTime),
			Eligible:  unixTime(w.EligibleTime),
			Deadline:  unixTime(w.Deadline),
			Nodes:     int(w.NodeCount.value()),
			CPUs:      int(w.CPUs.value()),
			State:     policy.State(w.JobState),
			Priority:  w.Priority.value(),
		},
		Reason:    w.StateReason,
		TaskCount: 1,
		Nice:      w.Nice.value(),
	}
	if w.JobID <= 0 {
		return j, fmt.Errorf("job_id %d", w.JobID)
	}
	for _, f := range []struct {
		name string
		n    num
	}{{"node_count", w.NodeCount}, {"cpus", w.CPUs}, {"tasks", w.Tasks}, {"memory_per_node", w.MemoryPerNode},
		{"memory_per_cpu", w.MemoryPerCPU}} {
		if v := f.n.value(); v < 0 || v > maxCount {
			return j, fmt.Errorf("%s %d: want 0 to %d", f.name, v, int64(maxCount))
		}
	}
	if a := w.ArrayJobID.value(); a > 0 {
		j.ArrayJob = a
		if w.ArrayTaskID.Set && !w.ArrayTaskID.Infinite {
			j.ArrayTask = int(w.ArrayTaskID.V)
		}
	}
	if w.ArrayTaskString != "" && j.ArrayTask < 0 {
		expr, _, _ := strings.Cut(w.ArrayTaskString, "%") // "0-9%2": at most 2 running at once
		n, err := countRanges(expr)
		if err != nil {
			return j, fmt.Errorf("array_task_string %q: %v", w.ArrayTaskString, err)
		}
		if j.ArrayJob == 0 {
			j.ArrayJob = j.ID
		}
		j.ArrayTasks, j.TaskCount, j.Tasks = expr, n, n
	}
	j.HetJob = w.HetJobID.value() > 0
	if j.State != policy.StatePending {
		j.Start = unixTime(w.StartTime) // for a pending job this is only the backfill estimate
	}
	if j.State.Finished() {
		j.End = unixTime(w.EndTime)
		if w.ExitCode.Set {
			j.ExitCode = int(w.ExitCode.Code)
		}
	}
	hosts := w.ScheduledNodes
	if j.State != policy.StatePending {
		hosts = w.Nodes
	}
	if j.NodeList, err = ExpandHostlist(hosts); err != nil {
		return j, fmt.Errorf("nodes: %w", err)
	}
	if j.State != policy.StatePending && len(j.NodeList) > 0 {
		j.Hosts = hosts
	}
	// A job that ended without a node never started: Slurm gives one
	// cancelled while pending start = end, which history and the
	// predictors would take for a 0 s run.
	if j.State.Finished() && len(j.NodeList) == 0 {
		j.Start = time.Time{}
	}
	if j.TimeLimit, err = minutes("time_limit", w.TimeLimit); err != nil {
		return j, err
	}
	j.Held = j.State == policy.StatePending && (w.Hold || (w.Priority.Set && w.Priority.V == 0))

	running := j.State != policy.StatePending
	tres := w.TresReqStr
	if running && w.TresAllocStr != "" {
		tres = w.TresAllocStr
	}
	if mb, ok := tresMemoryMB(tres); ok {
		j.MemoryMB = mb
	} else if v := w.MemoryPerNode.value(); v > 0 {
		if j.MemoryMB, err = mulCount(v, int64(max(j.Nodes, 1))); err != nil {
			return j, fmt.Errorf("memory_per_node × node_count: %v", err)
		}
	} else if v := w.MemoryPerCPU.value(); v > 0 {
		if j.MemoryMB, err = mulCount(v, int64(max(j.CPUs, 1))); err != nil {
			return j, fmt.Errorf("memory_per_cpu × cpus: %v", err)
		}
	}
	if err := gpuDemand(&j, w, running); err != nil {
		return j, err
	}
	return j, nil
}

// gpuDemand fills GPUs, Shards, GPUType and GRESAlloc: what the job holds
// if it runs (gres_detail, one entry per allocated node), else what it
// asks for (tres_per_job + tres_per_node × nodes + tres_per_task × tasks).
// When those cannot give the total (tres_per_socket, or no per-* string at
// all), the TRES string's gres/gpu total is used; it is absent on sites
// whose AccountingStorageTRES does not list gres/gpu, hence not the first
// choice.
func gpuDemand(j *Job, w *wireJob, running bool) error {
	var gpus, shards int64
	typ := ""
	add := func(spec string, mult int64) error {
		terms, err := ParseGRES(spec)
		if err != nil {
			return err
		}
		g, s, t, err := gresTotals(terms, mult)
		if err != nil {
			return fmt.Errorf("%q × %d: %w", spec, mult, err)
		}
		gpus += g
		shards += s
		if typ == "" {
			typ = t
		}
		return nil
	}
	if running && len(w.GresDetail) > 0 {
		for _, d := range w.GresDetail {
			terms, err := ParseGRES(d)
			if err != nil {
				return err
			}
			j.GRESAlloc = append(j.GRESAlloc, terms...)
			if err := add(d, 1); err != nil {
				return err
			}
		}
	} else {
		nodes := max(w.NodeCount.value(), 1)
		tasks := max(w.Tasks.value(), 1)
		if err := add(w.TresPerJob, 1); err != nil {
			return err
		}
		if err := add(w.TresPerNode, nodes); err != nil {
			return err
		}
		if err := add(w.TresPerTask, tasks); err != nil {
			return err
		}
	}
	tres := w.TresReqStr
	if running && w.TresAllocStr != "" {
		tres = w.TresAllocStr
	}
	if w.TresPerSocket != "" || (gpus == 0 && shards == 0) {
		g, s, t, err := tresTotals(tres)
		if err != nil {
			return err
		}
		if g > gpus || s > shards {
			gpus, shards = max(g, gpus), max(s, shards)
			if typ == "" {
				typ = t
			}
		}
	}
	if typ == "" && gpus > 0 { // the request was untyped: name the type it got
		for _, g := range j.GRESAlloc {
			if g.Name == "gpu" && g.Type != "" {
				typ = g.Type
				break
			}
		}
	}
	j.GPUs, j.Shards, j.GPUType = int(gpus), int(shards), typ
	return nil
}
