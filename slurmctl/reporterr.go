package slurmctl

import (
	"errors"
	"fmt"
	"strings"
)

// Err is the writes that failed or read back wrong as one error naming
// each job and why; nil when Slurm took every write.
func (rep Report) Err() error {
	if len(rep.Failed) == 0 && len(rep.ReadBack.Mismatches) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d writes failed", len(rep.Failed), len(rep.Planned))
	for _, f := range rep.Failed {
		fmt.Fprintf(&b, "\n  job %s: %v", f.Target, f.Err)
	}
	for _, m := range rep.ReadBack.Mismatches {
		fmt.Fprintf(&b, "\n  job %d read back wrong: %s", m.JobID, m.Why)
	}
	return errors.New(b.String())
}
