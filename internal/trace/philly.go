package trace

import (
	"fmt"

	"github.com/fairway-hpc/fairway/policy"
)

// phillyParser reads the Philly-MIX CSV of the Chronus artifact (Gao et al.,
// "Chronus: A Novel Deadline-aware Scheduler for Deep Learning Training
// Jobs", SoCC'21), derived from Microsoft's Philly trace (Jeon et al., ATC'19):
//
//	job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type
//
// submit_time is seconds from the trace start (placed after Meta.Start, the
// epoch), duration the run time in seconds. The trace has no start times, so
// Start = Submit (zero wait) and End = Start + duration: an "online"
// evaluation on it sees each job finish as early as it possibly could.
// The mapping: num_gpu → GPUs, model_name → Name, job_type (strict|best) →
// QOS, user (a virtual cluster in Philly) → User, Account and Partition (a
// virtual cluster has its own nodes, as a partition does). A strict job's
// expect_time_list is its deadline in seconds after submission (Chronus'
// SLO; in this file a single value, 1.2 to 4 times the run time): it becomes
// Deadline, as sbatch --deadline would give it. A best-effort job has none
// (the column then repeats submit_time). There are no time limits
// (TimeLimit stays 0); iterations, the deadlines' utility values and the
// scheduling interval are Chronus inputs with no Slurm counterpart and are
// dropped. Every job counts as COMPLETED.
type phillyParser struct {
	t csvTable
}

var phillyRequired = []string{"job_id", "user", "num_gpu", "submit_time", "duration"}

func (p *phillyParser) header(line []byte, m *Meta) (bool, error) {
	if p.t.cols != nil {
		return false, nil
	}
	return true, p.t.readHeader(line, m, phillyRequired)
}

func (p *phillyParser) parse(line []byte, m *Meta, j *policy.Job) error {
	rec, err := p.t.record(line)
	if err != nil {
		return err
	}
	if j.ID, err = p.t.intCol(rec, "job_id"); err != nil {
		return err
	}
	j.User = p.t.get(rec, "user")
	if j.User == "" {
		return fmt.Errorf("column user: empty")
	}
	j.Account = j.User
	j.Partition = j.User // the virtual cluster: its own nodes in Philly
	g, err := p.t.intCol(rec, "num_gpu")
	if err != nil {
		return err
	}
	j.GPUs = int(g)
	sub, err := p.t.secondsCol(rec, "submit_time")
	if err != nil {
		return err
	}
	dur, err := p.t.secondsCol(rec, "duration")
	if err != nil {
		return err
	}
	j.Name = p.t.get(rec, "model_name")
	j.QOS = p.t.get(rec, "job_type")
	j.Submit = m.Start.Add(sub)
	if j.QOS == "strict" && p.t.has("expect_time_list") {
		d, err := p.t.secondsCol(rec, "expect_time_list")
		if err != nil {
			return err
		}
		if d > 0 {
			j.Deadline = j.Submit.Add(d)
		}
	}
	j.Start = j.Submit
	j.End = j.Start.Add(dur)
	j.State = policy.StateCompleted
	return nil
}
