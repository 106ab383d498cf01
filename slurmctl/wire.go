package slurmctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
)

// The wire types below name only the fields Fairway reads. One set decodes
// both API generations, because the fields differ in shape, not in name or
// meaning:
//
//	v0.0.38 (Slurm 22.05)          v0.0.40-v0.0.45 (data_parser, Slurm 23.11-26.05)
//	"priority": 10000              "priority": {"set": true, "infinite": false, "number": 10000}
//	"array_task_id": null          "array_task_id": {"set": false, ...}
//	"job_state": "PENDING"         "job_state": ["PENDING"]
//	"exit_code": 0                 "exit_code": {"status": [...], "return_code": {...}, ...}
//	"Slurm": {"version": {"major": 22}}  "slurm": {"version": {"major": "23"}}
//
// num accepts a number, null, a numeric string, or a *_no_val_struct;
// strs accepts a string or an array of strings. encoding/json matches keys
// case-insensitively, which covers "Slurm" versus "slurm". Partitions are
// the one object whose layout changed (flat versus nested), so they have a
// wire type per generation (see cluster.go).

// num is an integer that may be unset or infinite.
type num struct {
	V        int64
	Set      bool // a value is present (false for null and {"set": false})
	Infinite bool
}

// Slurm's NO_VAL and INFINITE markers as 22.05 prints them in plain integers.
const (
	noVal32    = 0xfffffffe
	infinite32 = 0xffffffff
	noVal64    = 0xfffffffffffffffe
)

func (n *num) UnmarshalJSON(b []byte) error {
	*n = num{}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		return nil
	case b[0] == '{':
		var s struct {
			Set      bool        `json:"set"`
			Infinite bool        `json:"infinite"`
			Number   json.Number `json:"number"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		n.Set, n.Infinite = s.Set, s.Infinite
		if s.Set && s.Number != "" {
			v, err := parseNumber(string(s.Number))
			if err != nil {
				return err
			}
			n.V = v
		}
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			return nil
		}
		v, err := parseNumber(s)
		if err != nil {
			return err
		}
		n.V, n.Set = v, true
		return nil
	}
	v, ok := parseDigits(b)
	if !ok {
		var err error
		if v, err = parseNumber(string(b)); err != nil {
			return err
		}
	}
	switch uint64(v) {
	case infinite32:
		n.Infinite = true
		return nil
	case noVal32, noVal64:
		return nil
	}
	n.V, n.Set = v, true
	return nil
}

// parseDigits is the allocation-free path for the common case: a plain,
// possibly negative, integer that fits in an int64.
func parseDigits(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func parseNumber(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u), nil //nolint:gosec // NO_VAL64 wraps on purpose; checked by the caller
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return int64(f), nil
}

// value returns the number, or 0 when unset or infinite.
func (n num) value() int64 {
	if !n.Set || n.Infinite {
		return 0
	}
	return n.V
}

// strs is a string or a list of strings.
type strs []string

func (s *strs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = strs{v}
		return nil
	}
	var v []string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = v
	return nil
}

// jobStateField is job_state: "PENDING" (v0.0.38) or ["PENDING",
// "REQUEUED"] (v0.0.40+, base state first, then flags). It keeps the first
// state policy knows, without allocating for the usual one-word values.
type jobStateField policy.State

func (s *jobStateField) UnmarshalJSON(b []byte) error {
	*s = jobStateField(policy.StateUnknown)
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var v []string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		for _, x := range v {
			if st := policy.ParseState(x); st != policy.StateUnknown {
				*s = jobStateField(st)
				return nil
			}
		}
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 {
		*s = jobStateField(policy.ParseState(string(b[1 : len(b)-1])))
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = jobStateField(policy.ParseState(v))
	return nil
}

// exitCode is v0.0.38's integer wait status or v0.0.40+'s
// process_exit_code_verbose object.
type exitCode struct {
	Code int64 // the process's exit status
	Set  bool
}

func (e *exitCode) UnmarshalJSON(b []byte) error {
	*e = exitCode{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var v struct {
			ReturnCode num `json:"return_code"`
			Signal     struct {
				ID num `json:"id"`
			} `json:"signal"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		switch {
		case v.Signal.ID.Set && v.Signal.ID.V != 0:
			e.Code, e.Set = 128+v.Signal.ID.V, true
		case v.ReturnCode.Set:
			e.Code, e.Set = v.ReturnCode.V, true
		}
		return nil
	}
	var n num
	if err := n.UnmarshalJSON(b); err != nil {
		return err
	}
	if n.Set {
		// A wait(2) status, as 22.05 stores it: exit status in bits 8-15,
		// terminating signal in bits 0-6.
		if sig := n.V & 0x7f; sig != 0 {
			e.Code = 128 + sig
		} else {
			e.Code = (n.V >> 8) & 0xff
		}
		e.Set = true
	}
	return nil
}

// wireError is one "errors" entry in either spelling (see SlurmError).
type wireError struct {
	Description string `json:"description"`
	ErrorNumber *int   `json:"error_number"`
	Errno       *int   `json:"errno"`
	Error       string `json:"error"`
	Source      string `json:"source"`
}

func (w wireError) slurm() SlurmError {
	e := SlurmError{Description: w.Description, Error: w.Error, Source: w.Source}
	switch {
	case w.ErrorNumber != nil:
		e.Number = *w.ErrorNumber
	case w.Errno != nil:
		e.Number = *w.Errno
	}
	return e
}

// wireMeta is the "meta" object: which plugin answered and which Slurm.
type wireMeta struct {
	Plugin struct {
		Type       string `json:"type"`
		DataParser string `json:"data_parser"`
	} `json:"plugin"`
	Slurm struct {
		Version struct {
			Major num `json:"major"`
			Minor num `json:"minor"`
			Micro num `json:"micro"`
		} `json:"version"`
		Release string `json:"release"`
		Cluster string `json:"cluster"`
	} `json:"slurm"`
}

// envelope is what every response carries besides its payload.
type envelope struct {
	Meta     wireMeta    `json:"meta"`
	Errors   []wireError `json:"errors"`
	Warnings []wireError `json:"warnings"`
}

// decodeAnswer reads a REST answer's top-level object as it arrives: the
// envelope's keys (meta, errors, warnings) are decoded here, the one place
// for every answer and API version; payload is offered every other key
// (lower-cased, as encoding/json matches names) with the decoder at its
// value, decodes the value when it wants it, and says whether it did; the
// keys nobody takes are skipped. Reading one key at a time is what lets
// the jobs answer (decodeJobs) decode a 100k-job queue record by record.
// A body that is not one JSON object, or an envelope field of the wrong
// shape, or data after the object, is ErrMalformed naming what; so is any error payload returns
// (unless it is one already). payload may be nil: the envelope alone.
func decodeAnswer(r io.Reader, what string, payload func(key string, dec *json.Decoder) (bool, error)) (*envelope, error) {
	env := &envelope{}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	malformed := func(err error) (*envelope, error) {
		if errors.Is(err, ErrMalformed) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	if t, err := dec.Token(); err != nil {
		return malformed(err)
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return malformed(fmt.Errorf("want a JSON object, got %v", t))
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		key, _ := t.(string)
		key = strings.ToLower(key)
		var dst any
		switch key {
		case "meta":
			dst = &env.Meta
		case "errors":
			dst = &env.Errors
		case "warnings":
			dst = &env.Warnings
		default:
			if payload != nil {
				took, err := payload(key, dec)
				if err != nil {
					return malformed(err)
				}
				if took {
					continue
				}
			}
			dst = new(json.RawMessage)
		}
		if err := dec.Decode(dst); err != nil {
			return malformed(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return malformed(err)
	}
	if t, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the answer: %v", t)
		}
		return malformed(err)
	}
	return env, nil
}

// decodeList decodes body, an answer whose payload is the list named
// what. An answer carrying Slurm's errors gives no list and no error (the
// caller's check reports them); a body that does not decode, or a list
// missing from an answer without errors, is ErrMalformed.
func decodeList[T any](body []byte, what string) ([]T, *envelope, error) {
	var list *[]T
	env, err := decodeAnswer(bytes.NewReader(body), what, func(key string, dec *json.Decoder) (bool, error) {
		if key != what {
			return false, nil
		}
		return true, dec.Decode(&list)
	})
	if err != nil {
		return nil, nil, err
	}
	if len(env.Errors) > 0 {
		return nil, env, nil
	}
	if list == nil {
		return nil, env, fmt.Errorf("%w: no %q array", ErrMalformed, what)
	}
	return *list, env, nil
}

// wireJob is one job record (v0.0.38 job_response_properties, v0.0.40-45
// job_info).
type wireJob struct {
	Account         string        `json:"account"`
	ArrayJobID      num           `json:"array_job_id"`
	ArrayTaskID     num           `json:"array_task_id"`
	ArrayTaskString string        `json:"array_task_string"`
	Cluster         string        `json:"cluster"`
	CPUs            num           `json:"cpus"`
	Deadline        num           `json:"deadline"`
	EligibleTime    num           `json:"eligible_time"`
	EndTime         num           `json:"end_time"`
	ExitCode        exitCode      `json:"exit_code"`
	GresDetail      []string      `json:"gres_detail"`
	HetJobID        num           `json:"het_job_id"`
	Hold            bool          `json:"hold"` // v0.0.40+ only
	JobID           int64         `json:"job_id"`
	JobState        jobStateField `json:"job_state"`
	MemoryPerCPU    num           `json:"memory_per_cpu"`
	MemoryPerNode   num           `json:"memory_per_node"`
	Name            string        `json:"name"`
	Nice            num           `json:"nice"` // v0.0.40+ only
	NodeCount       num           `json:"node_count"`
	Nodes           string        `json:"nodes"`           // host list the job runs on
	ScheduledNodes  string        `json:"scheduled_nodes"` // v0.0.40+: nodes the backfill plan holds for a pending job
	Partition       string        `json:"partition"`
	Priority        num           `json:"priority"`
	QOS             string        `json:"qos"`
	StartTime       num           `json:"start_time"`
	StateReason     string        `json:"state_reason"`
	SubmitTime      num           `json:"submit_time"`
	Tasks           num           `json:"tasks"`
	TimeLimit       num           `json:"time_limit"`
	TresAllocStr    string        `json:"tres_alloc_str"`
	TresPerJob      string        `json:"tres_per_job"`
	TresPerNode     string        `json:"tres_per_node"`
	TresPerSocket   string        `json:"tres_per_socket"`
	TresPerTask     string        `json:"tres_per_task"`
	TresReqStr      string        `json:"tres_req_str"`
	UserName        string        `json:"user_name"`
}

// wireNode is one node (v0.0.38 node, v0.0.40-45 node).
type wireNode struct {
	Name        string `json:"name"`
	State       strs   `json:"state"`
	StateFlags  strs   `json:"state_flags"` // v0.0.38: DRAIN etc. live here
	CPUs        int64  `json:"cpus"`
	AllocCPUs   int64  `json:"alloc_cpus"`
	RealMemory  int64  `json:"real_memory"`
	AllocMemory int64  `json:"alloc_memory"`
	Gres        string `json:"gres"`
	GresUsed    string `json:"gres_used"`
	Partitions  strs   `json:"partitions"`
	Reason      string `json:"reason"`
}

// wireUpdateResp is the answer to a job update (v0.0.38 has only the
// envelope; v0.0.40+ adds per-job results: [] on v0.0.40, null from
// v0.0.41 on in every capture).
type wireUpdateResp struct {
	envelope
	Results []struct {
		JobID     num    `json:"job_id"`
		Error     string `json:"error"`
		ErrorCode int    `json:"error_code"`
		Why       string `json:"why"`
	} `json:"results"`
}
