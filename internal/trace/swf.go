package trace

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// swfParser reads the Standard Workload Format (Feitelson et al., "Experience
// with using the Parallel Workloads Archive", JPDC 74(10), 2014, and the PWA
// format page): 18 whitespace-separated numeric fields per job, header lines
// starting with ';', -1 for unknown.
//
// The mapping onto policy.Job:
//
//	1 job id → ID                 12 user id → User
//	2 submit (s from log start) → Submit = UnixStartTime header (else the epoch) + s
//	3 wait → Start = Submit + wait (Start = Submit when the wait is unknown)
//	4 run time → End = Start + run
//	8 requested procs → CPUs (5 allocated procs when 8 is -1, as in CTC)
//
// A record with an unknown (-1) submit time or run time, or with neither
// requested nor allocated processors, is left out and counted (see
// Reader.LeftOut).
//
//	9 requested time → TimeLimit  10 requested memory (KB per proc) → MemoryMB (total)
//	11 status: 1 and 3 COMPLETED, 0 and 4 FAILED, 5 CANCELLED, -1 COMPLETED,
//	   2 (a partial execution the job goes on from) UNKNOWN
//	13 group id → Account         14 executable id → Name
//	15 queue → Partition (16 partition when the queue is -1)
//
// SWF has no GPUs: GPUs stays 0. Fields 6, 7, 17 and 18 are checked to be
// numbers and otherwise unused. Fields after the 18th are ignored: some
// simulators extend SWF with text fields at the end of the line (Alea's
// data set adds the nodes used, the queue's name and the job's node
// properties), and the 18 standard ones are still checked as here.
type swfParser struct{}

const swfFields = 18

func (p *swfParser) header(line []byte, m *Meta) (bool, error) {
	if line[0] != ';' {
		return false, nil
	}
	key, val, ok := strings.Cut(string(bytes.TrimSpace(line[1:])), ":")
	if !ok {
		return true, nil // a free-text comment
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if key == "" || key[0] < 'A' || key[0] > 'Z' || strings.ContainsAny(key, " \t") {
		return true, nil // prose, or a continuation line holding a URL
	}
	if m.Header == nil {
		m.Header = map[string]string{}
	}
	if _, seen := m.Header[key]; seen {
		return true, nil
	}
	m.Header[key] = val
	switch key {
	case "MaxProcs", "MaxNodes":
		n, err := leadingInt(val)
		if err != nil {
			return true, fmt.Errorf("header %s: %w", key, err)
		}
		if key == "MaxProcs" {
			m.MaxProcs = n
		} else {
			m.MaxNodes = n
		}
	case "UnixStartTime":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return true, fmt.Errorf("header UnixStartTime: invalid number %q", val)
		}
		m.Start = time.Unix(n, 0).UTC()
	}
	return true, nil
}

// leadingInt parses the integer that starts s ("338 (batch partition; 512 total)").
func leadingInt(s string) (int, error) {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return n, nil
}

var swfFieldNames = [swfFields]string{
	"job id", "submit time", "wait time", "run time", "allocated processors",
	"average CPU time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user id", "group id", "executable id",
	"queue", "partition", "preceding job", "think time",
}

func (p *swfParser) parse(line []byte, m *Meta, j *policy.Job) error {
	fs := bytes.Fields(line)
	if len(fs) < swfFields {
		return fmt.Errorf("want %d fields, got %d", swfFields, len(fs))
	}
	fs = fs[:swfFields]
	var v [swfFields]float64
	for i, f := range fs {
		x, err := strconv.ParseFloat(string(f), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("field %d (%s): invalid number %q", i+1, swfFieldNames[i], f)
		}
		if math.Abs(x) > maxExact {
			return fmt.Errorf("field %d (%s): %s is out of range", i+1, swfFieldNames[i], f)
		}
		v[i] = x
	}
	for _, i := range []int{1, 2, 3, 8} {
		if v[i] > maxSeconds {
			return fmt.Errorf("field %d (%s): %s s is more than a century", i+1, swfFieldNames[i], fs[i])
		}
	}
	for _, i := range []int{4, 7} {
		if v[i] > maxCount {
			return fmt.Errorf("field %d (%s): %s is more than %d", i+1, swfFieldNames[i], fs[i], maxCount)
		}
	}
	// Archive logs hold records they could not fully recover, up to a
	// whole line of -1: well-formed, but nothing a replay can place in
	// time or on the machine. They are left out and counted, not errors.
	procs := v[7]
	if procs <= 0 {
		procs = v[4]
	}
	switch {
	case v[1] < 0:
		return leftOut(LeftUnknownSubmit)
	case v[3] < 0:
		return leftOut(LeftUnknownRun)
	case procs <= 0:
		return leftOut(LeftNoProcessors)
	}
	if v[0] < 0 || v[0] != math.Trunc(v[0]) {
		return fmt.Errorf("field 1 (job id): want a non-negative integer, got %s", fs[0])
	}
	j.ID = int64(v[0])
	j.Submit = m.Start.Add(seconds(v[1]))
	j.Start = j.Submit
	if v[2] >= 0 {
		j.Start = j.Submit.Add(seconds(v[2]))
	}
	j.End = j.Start.Add(seconds(v[3]))
	j.CPUs = int(procs)
	if v[8] > 0 {
		j.TimeLimit = seconds(v[8])
	}
	if v[9] > 0 && j.CPUs > 0 {
		mb := math.Trunc(v[9]) * float64(j.CPUs) / 1024
		if mb > maxExact {
			return fmt.Errorf("field 10 (requested memory): %s KB per processor × %d processors is out of range", fs[9], j.CPUs)
		}
		j.MemoryMB = int64(mb)
	}
	// A log's records are of jobs that ran to their end: one whose status
	// the log does not know (-1, all of NASA's iPSC log) is taken as
	// completed, as the simulator replays any record, so that ingest
	// keeps it as history instead of counting it unfinished. 3 and 4
	// end a job run in parts; 2 is a part the job went on from.
	switch v[10] {
	case 1, 3, -1:
		j.State = policy.StateCompleted
	case 0, 4:
		j.State = policy.StateFailed
	case 5:
		j.State = policy.StateCancelled
	default:
		j.State = policy.StateUnknown
	}
	j.User = idString(v[11])
	j.Account = idString(v[12])
	j.Name = idString(v[13])
	j.Partition = idString(v[14])
	if j.Partition == "" {
		j.Partition = idString(v[15])
	}
	return nil
}

// idString spells an SWF id, or "" for -1 (unknown).
func idString(x float64) string {
	if x < 0 {
		return ""
	}
	return strconv.FormatInt(int64(x), 10)
}

// Bounds on trace numbers, so that no conversion to int64 or time.Duration
// overflows into a negative count or a job that ends before it starts:
// maxExact is the largest float64 holding every smaller integer exactly,
// maxSeconds a century (time.Duration reaches 292 years), maxCount a
// processor or GPU count no machine has.
const (
	maxExact   = 1 << 53
	maxSeconds = 100 * 365.25 * 24 * 3600
	maxCount   = 1 << 31
)

// seconds converts a (possibly fractional) number of seconds, rounded to the
// microsecond so float noise does not show in durations.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1e6)) * time.Microsecond
}
