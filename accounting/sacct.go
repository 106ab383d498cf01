package accounting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// ErrMalformed is wrapped by every error about a bad input record that is
// not a trace line (a sacct job object, a sacctmgr or shares line).
var ErrMalformed = errors.New("malformed record")

// RecordError is one bad record of an input: where it is and why it is bad.
// Where reads "file:line" for line-oriented inputs and "file: jobs[i]" for
// a JSON document.
type RecordError struct {
	Where string
	Err   error
}

func (e *RecordError) Error() string { return e.Where + ": " + e.Err.Error() }

// Unwrap returns the reason and ErrMalformed.
func (e *RecordError) Unwrap() []error { return []error{e.Err, ErrMalformed} }

// SacctDoc is the result of decoding a `sacct --json` document.
type SacctDoc struct {
	Jobs []policy.Job
	// Where locates Jobs[i] in the input, for error messages.
	Where []string
	// Bad holds one error per job object that could not be decoded. Those
	// objects are not in Jobs.
	Bad []error
}

// ParseSacctJSON decodes the output of `sacct --json` (Slurm 22.05: the
// dbv0.0.38 job objects; the data_parser shape of 23.02 and later, where
// numbers may be {"set","infinite","number"} objects and state.current a
// list, is accepted too). name is used in error locations. A document that
// is not JSON, or whose top-level errors array is not empty, is an error;
// a single bad job object only lands in SacctDoc.Bad.
//
// Every job object becomes one policy.Job, finished or not: the caller
// decides what to keep. Heterogeneous-job components keep their own ids and
// have HetJob set.
func ParseSacctJSON(name string, data []byte) (*SacctDoc, error) {
	rd := newSacctReader(name, bytes.NewReader(data), 0)
	doc := &SacctDoc{}
	for rd.next() {
		doc.Jobs = append(doc.Jobs, rd.job)
		doc.Where = append(doc.Where, rd.where())
	}
	if err := rd.docErr(); err != nil {
		return nil, err
	}
	doc.Bad = rd.bad
	return doc, nil
}

// slurmEmptyResult is ESLURM_REST_EMPTY_RESULT ("Nothing found"): sacct
// --json reports an empty window as an error, which is no error to us.
const slurmEmptyResult = 9003

// emptyResult reports whether a Slurm "errors" array holds the "Nothing
// found" error of an empty window.
func emptyResult(raw json.RawMessage) bool {
	var objs []map[string]any
	if json.Unmarshal(raw, &objs) != nil {
		return false
	}
	return slices.ContainsFunc(objs, func(o map[string]any) bool {
		n, ok := o["error_number"].(float64)
		return ok && n == slurmEmptyResult
	})
}

// restErrors returns the messages of a Slurm "errors" array: a list of
// objects with "error"/"description" (22.05) or of strings.
func restErrors(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var objs []map[string]any
	if err := json.Unmarshal(raw, &objs); err == nil {
		var out []string
		for _, o := range objs {
			if n, ok := o["error_number"].(float64); ok && n == slurmEmptyResult {
				continue
			}
			msg := fmt.Sprint(o["error"])
			if d, ok := o["description"].(string); ok && d != "" {
				msg += " (" + d + ")"
			}
			out = append(out, msg)
		}
		return out
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs
	}
	return []string{string(raw)}
}

// sacctJob is the part of a dbv0.0.38 job object Fairway reads.
//
// It has no deadline, and neither has any other history source: slurmdbd
// does not store a job's deadline (sbatch --deadline). On Slurm 22.05 its
// job table has no such column, the dbv0.0.38_job schema (slurmrestd's
// /slurmdb/v0.0.38/jobs, `sacct --json`) has no such field, and `sacct
// --helpformat` lists none (its SubmitLine holds a --deadline given on the
// command line but not one from #SBATCH lines, and is not in the JSON).
// Jobs from slurmdbd therefore carry a zero
// Deadline, and Import keeps a deadline stored earlier (by serve, from
// slurmctld) when they are merged over it (see keepKnown).
type sacctJob struct {
	Account string `json:"account"`
	Cluster string `json:"cluster"`
	JobID   num    `json:"job_id"`
	Name    string `json:"name"`
	User    string `json:"user"`
	Part    string `json:"partition"`
	QOS     string `json:"qos"`
	Nodes   string `json:"nodes"` // hostlist; "None assigned" for a job that never ran
	Array   struct {
		JobID  num `json:"job_id"`
		TaskID num `json:"task_id"`
	} `json:"array"`
	Het struct {
		JobID num `json:"job_id"`
	} `json:"het"`
	AllocNodes num `json:"allocation_nodes"`
	Time       struct {
		Submission num `json:"submission"`
		Eligible   num `json:"eligible"`
		Start      num `json:"start"`
		End        num `json:"end"`
		Limit      num `json:"limit"` // minutes
	} `json:"time"`
	State struct {
		Current stateName `json:"current"`
	} `json:"state"`
	ExitCode struct {
		Status     stateName `json:"status"`
		ReturnCode num       `json:"return_code"`
		Signal     struct {
			ID  num `json:"signal_id"` // 22.05
			ID2 num `json:"id"`        // data_parser
		} `json:"signal"`
	} `json:"exit_code"`
	Required struct {
		CPUs num `json:"CPUs"`
	} `json:"required"`
	TRES struct {
		Allocated []tres `json:"allocated"`
		Requested []tres `json:"requested"`
	} `json:"tres"`
}

type tres struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Count num    `json:"count"`
}

// slurmInfinite and slurmNoVal are Slurm's INFINITE and NO_VAL for 32-bit
// fields, as 22.05 prints them in place of a number.
const (
	slurmInfinite = 0xFFFFFFFF
	slurmNoVal    = 0xFFFFFFFE
)

// maxLimitMinutes bounds a time limit (a century), so that a corrupt one
// cannot overflow time.Duration into a negative limit.
const maxLimitMinutes = 100 * 366 * 24 * 60

func (sj *sacctJob) job() (policy.Job, error) {
	if !sj.JobID.Set || sj.JobID.N <= 0 {
		return policy.Job{}, errors.New("no job_id")
	}
	if sj.Cluster == "" {
		return policy.Job{}, errors.New("no cluster")
	}
	state := sj.State.Current.base()
	j := policy.Job{
		Cluster:   sj.Cluster,
		ID:        sj.JobID.N,
		ArrayTask: -1,
		HetJob:    sj.Het.JobID.N > 0,
		User:      sj.User,
		Account:   sj.Account,
		Partition: sj.Part,
		QOS:       sj.QOS,
		Name:      sj.Name,
		Submit:    unixTime(sj.Time.Submission),
		Eligible:  unixTime(sj.Time.Eligible),
		Start:     unixTime(sj.Time.Start),
		End:       unixTime(sj.Time.End),
		State:     policy.ParseState(state),
	}
	// A run that ended in a requeue (preemption, a node failure, scontrol
	// requeue) is a record of its own in slurmdbd, with that run's start
	// and end, state REQUEUED (22.05) or PENDING flagged REQUEUED (23.02
	// on); the job's next run is another record, submitted at the requeue.
	// Read as it is named it never finished and was dropped, and with it
	// GPU time the job held, which Slurm's fair share charges: it is kept
	// as PREEMPTED, a run the system ended.
	if slices.Contains(sj.State.Current, "REQUEUED") && sj.Time.Start.N > 0 && sj.Time.End.N > 0 {
		j.State = policy.StatePreempted
	}
	if j.State == policy.StateUnknown {
		return policy.Job{}, fmt.Errorf("unknown state %q", state)
	}
	if sj.Time.Submission.N <= 0 {
		return policy.Job{}, errors.New("no submission time")
	}
	// An array's tasks that never ran stay in the array's own record
	// (task_id null, a "task" bitmap): it keeps ArrayTask -1.
	if sj.Array.JobID.N > 0 {
		j.ArrayJob = sj.Array.JobID.N
		if t := sj.Array.TaskID; t.Set && t.N >= 0 && t.N < slurmNoVal {
			j.ArrayTask = int(t.N)
		}
	}
	if l := sj.Time.Limit; l.Set && !l.Infinite && l.N > 0 && l.N < slurmNoVal {
		if l.N > maxLimitMinutes {
			return policy.Job{}, fmt.Errorf("time limit %d min: more than a century", l.N)
		}
		j.TimeLimit = time.Duration(l.N) * time.Minute
	}
	switch st := sj.ExitCode.Status.String(); {
	case st == "SIGNALED":
		// Shell convention, so one integer tells exit status and signal apart.
		sig := sj.ExitCode.Signal.ID
		if !sig.Set {
			sig = sj.ExitCode.Signal.ID2
		}
		j.ExitCode = 128 + int(sig.N)
	default:
		j.ExitCode = int(sj.ExitCode.ReturnCode.N)
	}
	// Allocated TRES say what the job held; a job that never started has
	// only requested ones.
	t := sj.TRES.Allocated
	if len(t) == 0 {
		t = sj.TRES.Requested
	}
	// "gpu" is the total; "gpu:TYPE" a typed count, when the cluster's
	// AccountingStorageTRES lists typed GPUs, with or without the total.
	// Without it the typed counts add up (a job may hold two types), and
	// the type is the first, as slurmctl reads tres_alloc_str: serve
	// stores slurmctld's record first, and slurmdbd's must not differ.
	var gpus, typedGPUs, shards, typedShards int64
	var untypedGPUs, untypedShards bool
	for _, r := range t {
		n := r.Count.N
		if !r.Count.Set || n < 0 {
			continue
		}
		switch {
		case r.Type == "cpu":
			j.CPUs = int(n)
		case r.Type == "mem":
			j.MemoryMB = n
		case r.Type == "node":
			j.Nodes = int(n)
		case r.Type == "gres" && r.Name == "gpu":
			gpus, untypedGPUs = n, true
		case r.Type == "gres" && strings.HasPrefix(r.Name, "gpu:"):
			typedGPUs = satAdd(typedGPUs, n)
			if j.GPUType == "" {
				j.GPUType = strings.TrimPrefix(r.Name, "gpu:")
			}
		case r.Type == "gres" && r.Name == "shard":
			shards, untypedShards = n, true
		case r.Type == "gres" && strings.HasPrefix(r.Name, "shard:"):
			typedShards = satAdd(typedShards, n)
		}
	}
	if !untypedGPUs {
		gpus = typedGPUs
	}
	if !untypedShards {
		shards = typedShards
	}
	j.GPUs, j.Shards = int(gpus), int(shards)
	if j.Nodes == 0 && sj.AllocNodes.N > 0 {
		j.Nodes = int(sj.AllocNodes.N)
	}
	// A job that was never allocated a node never started, whatever its
	// start field says: for a job cancelled while pending, sacct on 24.11+
	// sends NO_VAL (read as 2106-02-07) and slurmdbd's REST answer the end
	// of the query window, so the two ingest paths would store different
	// starts and re-ingesting would flip them.
	if sj.AllocNodes.Set && sj.AllocNodes.N == 0 && len(sj.TRES.Allocated) == 0 {
		j.Start = time.Time{}
	}
	if j.CPUs == 0 && sj.Required.CPUs.N > 0 {
		j.CPUs = int(sj.Required.CPUs.N)
	}
	if !j.Start.IsZero() && sj.Nodes != "None assigned" {
		j.Hosts = sj.Nodes
	}
	return j, nil
}

// satAdd adds two counts, stopping at the largest int64 rather than
// wrapping into a negative one (validate refuses so large a count).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// unixTime is a Slurm time in Unix seconds; unset, infinite, zero and
// Slurm's NO_VAL and INFINITE markers (which 24.11+ send as plain numbers
// for a time that never happened) are the zero time.
func unixTime(n num) time.Time {
	if !n.Set || n.Infinite || n.N <= 0 || n.N == slurmNoVal || n.N == slurmInfinite {
		return time.Time{}
	}
	return time.Unix(n.N, 0).UTC()
}

// num is a Slurm JSON number: a plain number or null (22.05), or the
// data_parser object {"set": bool, "infinite": bool, "number": n} (23.02+).
type num struct {
	N        int64
	Set      bool
	Infinite bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*n = num{}
		return nil
	case len(b) > 0 && b[0] == '{':
		var o struct {
			Set      bool        `json:"set"`
			Infinite bool        `json:"infinite"`
			Number   json.Number `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		v, err := parseNumber(o.Number)
		if err != nil {
			return err
		}
		*n = num{N: v, Set: o.Set, Infinite: o.Infinite}
		return nil
	}
	var v json.Number
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("want a number, got %s", b)
	}
	x, err := parseNumber(v)
	if err != nil {
		return err
	}
	*n = num{N: x, Set: true}
	return nil
}

func parseNumber(v json.Number) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if x, err := v.Int64(); err == nil {
		return x, nil
	}
	f, err := v.Float64()
	if err != nil {
		return 0, fmt.Errorf("bad number %q", v)
	}
	return int64(f), nil
}

// stateName is a Slurm state: a string (22.05) or a list of flags whose
// first element is the base state (23.02+).
type stateName []string

func (s *stateName) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return fmt.Errorf("want a state name, got %s", b)
	}
	*s = stateName{one}
	return nil
}

// base is the job's state: the first name policy knows, as the live
// reader takes it (slurmctl's jobStateField), so that a list that puts a
// flag first (["EXPEDITING", "COMPLETED"]) still reads as its state; else
// the first name, for the error.
func (s stateName) base() string {
	for _, x := range s {
		if policy.ParseState(x) != policy.StateUnknown {
			return x
		}
	}
	return s.String()
}

func (s stateName) String() string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
