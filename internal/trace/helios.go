package trace

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fairway-hpc/fairway/policy"
)

// heliosParser reads Helios cluster_log.csv (Hu et al., "Characterization and
// Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters",
// SC'21; the HeliosData release):
//
//	job_id,user,vc,[jobname,]gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
//
// Columns are found by name, so the order may vary and jobname (absent from
// the public release, present in the artifact's) is optional. The mapping:
// gpu_num → GPUs, cpu_num → CPUs, node_num → Nodes, vc → Partition (a Helios
// virtual cluster is a dedicated node pool), jobname → Name, state through
// policy.ParseState (Philly's Pass/Failed/Killed as COMPLETED/FAILED/
// CANCELLED). Times are "2006-01-02 15:04:05" read as UTC, or Unix seconds.
// A missing start_time is submit_time + queue; a missing end_time is
// start_time + duration. A job_id that is not an integer is replaced by the
// record's ordinal (1-based). Helios has no time limits: TimeLimit stays 0,
// unless the file has the optional time_limit column (seconds), which
// Fairway's synthetic traces (`fairway trace synth`) add.
type heliosParser struct {
	t csvTable
	n int64
}

var heliosRequired = []string{"job_id", "user", "gpu_num", "state", "submit_time"}

func (p *heliosParser) header(line []byte, m *Meta) (bool, error) {
	if p.t.cols != nil {
		return false, nil
	}
	if err := p.t.readHeader(line, m, heliosRequired); err != nil {
		return true, err
	}
	// A job's run time is its end less its start; each is read or derived
	// (start_time, or submit_time + queue; end_time, or start + duration).
	if !p.t.has("start_time") && !p.t.has("queue") || !p.t.has("end_time") && !p.t.has("duration") {
		p.t.cols = nil
		return true, fmt.Errorf("header: want start_time (or queue, the wait) and end_time (or duration), to tell each job's run time")
	}
	return true, nil
}

// heliosState reads the state column: Philly's Pass, Failed and Killed, or
// Slurm's names as the Helios clusters' and sacct's exports spell them, in
// any case. A name it does not know is an error rather than a job of
// unknown state: ingest would count such a job unfinished and drop it
// without a word, though the record says it ran and ended.
func heliosState(s string) (policy.State, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	switch u {
	case "PASS":
		return policy.StateCompleted, nil
	case "KILLED":
		return policy.StateCancelled, nil
	case "UNKNOWN":
		return policy.StateUnknown, nil // as heliosw writes a job whose state is not known
	case "":
		return 0, fmt.Errorf("column state: empty")
	}
	if st := policy.ParseState(u); st != policy.StateUnknown {
		return st, nil
	}
	return 0, fmt.Errorf("column state: %q is not a job state (Slurm's COMPLETED, FAILED, CANCELLED, TIMEOUT, "+
		"NODE_FAIL, OUT_OF_MEMORY, PENDING, RUNNING …, or Philly's Pass, Failed, Killed)", s)
}

func (p *heliosParser) parse(line []byte, m *Meta, j *policy.Job) error {
	rec, err := p.t.record(line)
	if err != nil {
		return err
	}
	p.n++
	if id, err := strconv.ParseInt(p.t.get(rec, "job_id"), 10, 64); err == nil {
		j.ID = id
	} else {
		j.ID = p.n
	}
	j.User = p.t.get(rec, "user")
	if j.User == "" {
		return fmt.Errorf("column user: empty")
	}
	j.Partition = p.t.get(rec, "vc")
	j.Name = p.t.get(rec, "jobname")
	g, err := p.t.intCol(rec, "gpu_num")
	if err != nil {
		return err
	}
	j.GPUs = int(g)
	for _, c := range []struct {
		name string
		dst  *int
	}{{"cpu_num", &j.CPUs}, {"node_num", &j.Nodes}} {
		if p.t.get(rec, c.name) == "" {
			continue
		}
		n, err := p.t.intCol(rec, c.name)
		if err != nil {
			return err
		}
		*c.dst = int(n)
	}
	if j.State, err = heliosState(p.t.get(rec, "state")); err != nil {
		return err
	}
	if p.t.get(rec, "time_limit") != "" {
		if j.TimeLimit, err = p.t.secondsCol(rec, "time_limit"); err != nil {
			return err
		}
	}
	if j.Submit, err = p.t.timeCol(rec, "submit_time"); err != nil {
		return err
	}
	if j.Submit.IsZero() {
		return fmt.Errorf("column submit_time: empty")
	}
	if j.Start, err = p.t.timeCol(rec, "start_time"); err != nil {
		return err
	}
	if j.End, err = p.t.timeCol(rec, "end_time"); err != nil {
		return err
	}
	if j.Start.IsZero() && p.t.get(rec, "queue") != "" {
		q, err := p.t.secondsCol(rec, "queue")
		if err != nil {
			return err
		}
		j.Start = j.Submit.Add(q)
	}
	if j.End.IsZero() && !j.Start.IsZero() && p.t.get(rec, "duration") != "" {
		d, err := p.t.secondsCol(rec, "duration")
		if err != nil {
			return err
		}
		j.End = j.Start.Add(d)
	}
	if !j.End.IsZero() && j.End.Before(j.Start) {
		return fmt.Errorf("end_time %s before start_time %s", j.End.Format(timeLayouts[0]), j.Start.Format(timeLayouts[0]))
	}
	return nil
}
