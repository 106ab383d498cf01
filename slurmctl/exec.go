package slurmctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runner runs a Slurm command-line tool (scontrol, sprio) and returns what
// it printed. A non-zero exit is an error; stdout and stderr are returned
// either way, because scontrol reports per-job failures on stderr while it
// carries on with the other jobs. ExecRunner is the real one; tests use a
// fake that records the commands.
type Runner interface {
	Run(ctx context.Context, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error)
}

// ExecRunner runs commands with os/exec, in the caller's environment plus
// Env (e.g. SLURM_CONF=...). SlurmConf, when set, is passed as SLURM_CONF
// so the tools talk to the right cluster.
type ExecRunner struct {
	SlurmConf string
	Env       []string
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if r.SlurmConf != "" || len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
		if r.SlurmConf != "" {
			cmd.Env = append(cmd.Env, "SLURM_CONF="+r.SlurmConf)
		}
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// program is a Slurm program a config names: where its path is kept, and
// the name that finds it on PATH when the config leaves the path empty.
type program struct {
	path *string
	name string
}

// fillCommands fills, the same way for every part of this package that
// runs Slurm's programs, the command settings a config left unset: each
// program's path its name (found on PATH), the runner ExecRunner{}, and
// the timeout (when the config has one) def. Checking what was set is the
// caller's, whose errors name the setting.
func fillCommands(runner *Runner, timeout *time.Duration, def time.Duration, programs ...program) {
	for _, p := range programs {
		if *p.path == "" {
			*p.path = p.name
		}
	}
	if *runner == nil {
		*runner = ExecRunner{}
	}
	if timeout != nil && *timeout == 0 {
		*timeout = def
	}
}

// Commands runs Slurm's command-line readers for the other adapters (the
// slurmd hooks' squeue and scontrol, accounting's sacct and sacctmgr), so
// that slurmctl is the one package that executes Slurm. Runner is
// ExecRunner{} when nil. Each method takes the program's path from its
// caller: the hooks run as root and check their paths before they ask.
type Commands struct {
	Runner Runner
}

func (c Commands) runner() Runner {
	r := c.Runner
	fillCommands(&r, nil, 0)
	return r
}

// output runs path with args and returns what it printed on stdout. A
// failure is an error naming label and the arguments, with what the
// command printed on stderr.
func (c Commands) output(ctx context.Context, label, path string, args ...string) ([]byte, error) {
	stdout, stderr, err := c.runner().Run(ctx, nil, path, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", label, strings.Join(args, " "), err, bytes.TrimSpace(stderr))
	}
	return stdout, nil
}

// DrainNode runs `scontrol update nodename=NODE state=drain reason=...`
// (scontrol the absolute path), so the drain reason names what the caller
// found rather than Slurm's "Prolog error".
func (c Commands) DrainNode(ctx context.Context, scontrol, node, reason string) error {
	_, err := c.output(ctx, filepath.Base(scontrol), scontrol, "update", "nodename="+node, "state=drain", "reason="+reason)
	return err
}
