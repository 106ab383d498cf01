// Package lab gives integration tests access to the local Slurm +
// PostgreSQL lab started by contrib/lab/lab (see that script's header).
//
// Tests call Get(t): it returns the lab's settings from the environment that
// `contrib/lab/lab env` prints (make test exports them). Without a lab the
// test is skipped on a laptop, but under CI=true a missing lab is a failure,
// never a skip.
package lab

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Env is the lab as tests see it.
type Env struct {
	Dir         string // lab state directory
	StateDir    string // slurmctld's StateSaveLocation (contrib/lab/lab writes it under Dir)
	SlurmConf   string // SLURM_CONF
	RESTURL     string // slurmrestd base URL, e.g. http://127.0.0.1:16820
	RESTUser    string // user name sent in X-SLURM-USER-NAME
	TokenFile   string // file holding a JWT for RESTUser
	Token       string // the JWT itself
	DatabaseURL string // PostgreSQL URL of the lab's fairway database
	Cluster     string // Slurm ClusterName
	Partition   string // the GPU partition
	JobDir      string // world-writable directory for job output
	Users       []User // Unix users with Slurm associations
	// Scontrol is the absolute path of the lab's scontrol, what the
	// hooks' FAIRWAY_SCONTROL must name (they run squeue beside it): the
	// prefix's under FAIRWAY_LAB_SLURM_PREFIX, where /usr/bin's may be
	// another release's or missing.
	Scontrol string
}

// User is a lab Unix user and the Slurm account it belongs to.
type User struct{ Name, Account string }

// Get returns the lab's environment, skipping the test when the lab is not
// configured, or failing it when CI=true.
func Get(t testing.TB) *Env {
	t.Helper()
	need := []string{"FAIRWAY_LAB_DIR", "SLURM_CONF", "FAIRWAY_SLURM_URL", "FAIRWAY_SLURM_TOKEN_FILE", "FAIRWAY_DATABASE_URL"}
	var missing []string
	for _, k := range need {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		msg := "lab not configured (missing " + strings.Join(missing, ", ") + "): run `make test`, or `contrib/lab/lab up && eval \"$(contrib/lab/lab env)\"`"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tok, err := os.ReadFile(os.Getenv("FAIRWAY_SLURM_TOKEN_FILE"))
	if err != nil {
		t.Fatalf("read lab token: %v", err)
	}
	e := &Env{
		Dir:         os.Getenv("FAIRWAY_LAB_DIR"),
		StateDir:    filepath.Join(os.Getenv("FAIRWAY_LAB_DIR"), "state"),
		SlurmConf:   os.Getenv("SLURM_CONF"),
		RESTURL:     os.Getenv("FAIRWAY_SLURM_URL"),
		RESTUser:    envOr("FAIRWAY_SLURM_USER", "root"),
		TokenFile:   os.Getenv("FAIRWAY_SLURM_TOKEN_FILE"),
		Token:       strings.TrimSpace(string(tok)),
		DatabaseURL: os.Getenv("FAIRWAY_DATABASE_URL"),
		Cluster:     envOr("FAIRWAY_LAB_CLUSTER", "fairwaylab"),
		Partition:   envOr("FAIRWAY_LAB_PARTITION", "gpu"),
		JobDir:      envOr("FAIRWAY_LAB_JOBDIR", os.TempDir()),
		Scontrol:    os.Getenv("FAIRWAY_SCONTROL"),
	}
	if e.Scontrol == "" { // a lab env from before it said: the PATH it set
		e.Scontrol = "/usr/bin/scontrol"
		if p, err := exec.LookPath("scontrol"); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				e.Scontrol = abs
			}
		}
	}
	for _, f := range strings.Fields(os.Getenv("FAIRWAY_LAB_USERS")) {
		name, acct, _ := strings.Cut(f, ":")
		e.Users = append(e.Users, User{Name: name, Account: acct})
	}
	return e
}

// Script is the path of the lab script, for tests that stop and restart a
// daemon (e.g. slurmrestd) to check failure handling.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "lab")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Run runs a Slurm command (sbatch, scontrol, sacct, ...) against the lab,
// optionally as another Unix user (asUser "" means the test's own user), and
// returns its stdout. A non-zero exit fails the test with stderr.
func (e *Env) Run(t testing.TB, asUser string, name string, args ...string) string {
	t.Helper()
	out, err := e.Try(asUser, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

// Try is Run without failing the test.
func (e *Env) Try(asUser string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if asUser != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", asUser, "--", name}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.Env = append(userEnv(os.Environ(), asUser), "SLURM_CONF="+e.SlurmConf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &runError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

// userEnv is the environment of a command run as asUser: without SLURM_JWT
// when that is another user, since `lab env` exports root's token and Slurm
// 24.11+ commands authenticate with a SLURM_JWT they find, so sbatch would
// submit as root whatever user runs it.
func userEnv(env []string, asUser string) []string {
	if asUser == "" {
		return env
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "SLURM_JWT=") })
}

type runError struct {
	err    error
	stderr string
}

func (r *runError) Error() string { return r.err.Error() + ": " + r.stderr }
func (r *runError) Unwrap() error { return r.err }

var submitted = regexp.MustCompile(`^(\d+)`)

// Submit runs sbatch --parsable as user with the given arguments (job output
// goes to the lab's job directory) and returns the job id. The job is
// cancelled when the test ends, so tests never leave work in the shared lab.
func (e *Env) Submit(t testing.TB, user string, args ...string) int64 {
	t.Helper()
	full := append([]string{"--parsable", "-D", e.JobDir}, args...)
	out := e.Run(t, user, "sbatch", full...)
	m := submitted.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		t.Fatalf("sbatch printed %q, want a job id", out)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	t.Cleanup(func() { _, _ = e.Try("", "scancel", strconv.FormatInt(id, 10)) })
	return id
}

// WaitState polls squeue/sacct until the job reaches one of states (Slurm
// spellings, e.g. "COMPLETED") or the timeout passes, and returns the state.
func (e *Env) WaitState(t testing.TB, id int64, timeout time.Duration, states ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := e.Try("", "sacct", "-n", "-X", "-P", "-o", "State", "-j", strconv.FormatInt(id, 10))
		if err == nil {
			if f := strings.Fields(out); len(f) > 0 {
				last = f[0]
			}
			for _, s := range states {
				if last == s {
					return last
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("job %d: state %q after %s, want one of %v", id, last, timeout, states)
	return ""
}
