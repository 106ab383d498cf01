package slurmctl

import (
	"bytes"
	"context"
	"os"
	"os/exec"
)

// Runner runs a Slurm command-line tool (scontrol, sprio) and returns what
// it printed. A non-zero exit is an error; stdout and stderr are returned
// either way, because scontrol reports per-job failures on stderr while it
// carries on with the other jobs. ExecRunner is the real one; tests use a
// fake that records the commands.
type Runner interface {
	Run(ctx context.Context, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error)
}

// ExecRunner runs commands with os/exec. SlurmConf, when set, is passed as
// SLURM_CONF so the tools talk to the right cluster.
type ExecRunner struct {
	SlurmConf string
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if r.SlurmConf != "" {
		cmd.Env = append(os.Environ(), "SLURM_CONF="+r.SlurmConf)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}
