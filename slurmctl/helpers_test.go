package slurmctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
)

// labClient connects to the lab's slurmrestd with the lab's token file.
func labClient(t testing.TB, env *lab.Env, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{URL: env.RESTURL, User: env.RESTUser, Token: FileToken(env.TokenFile), RequestTimeout: 20 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("connect to the lab's slurmrestd: %v", err)
	}
	return c
}

// tag is a job-name prefix unique to this test run, so tests sharing the
// lab only ever look at their own jobs.
func tag(t testing.TB) string {
	return fmt.Sprintf("fw-sc-%s-%d-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), os.Getpid(), time.Now().UnixNano()%1e6)
}

func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// squeue returns "%A %T %r" for the given job ids (array tasks and
// remainder records included), keyed by job id.
func squeue(t testing.TB, env *lab.Env, ids []int64) map[int64][2]string {
	t.Helper()
	out := env.Run(t, "", "squeue", "-h", "-j", idList(ids), "-o", "%A %T %r")
	got := map[int64][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 3 {
			continue
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		got[id] = [2]string{f[1], f[2]}
	}
	return got
}

// waitFor polls cond every 250ms until it holds or timeout passes; it
// returns whether it held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitRunning waits until every job in ids runs. The lab is shared: when
// other work holds the nodes for longer than timeout, the test fails and
// says so rather than testing a different situation.
func waitRunning(t testing.TB, env *lab.Env, ids []int64, timeout time.Duration) {
	t.Helper()
	var last map[int64][2]string
	ok := waitFor(timeout, func() bool {
		last = squeue(t, env, ids)
		for _, id := range ids {
			if last[id][0] != "RUNNING" {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("jobs %v not all RUNNING after %s (%v): is other work holding the lab's nodes? (squeue -a)", ids, timeout, last)
	}
}

// sprioSite returns the SITE column sprio shows for those of ids it lists.
// sprio is asked for every job and the answer filtered, not given ids with
// -j: from 24.11 on, `sprio -j` fails the whole call ("Invalid job id")
// when one of them is not (yet, or no longer) a pending job whose priority
// multifactor computes, where 22.05 leaves it out.
func sprioSite(t testing.TB, env *lab.Env, ids []int64) map[int64]int64 {
	t.Helper()
	return sprioFilter(t, env.Run(t, "", "sprio", "-h", "-o", "%i %S"), ids)
}

// sprioFilter parses `sprio -h -o "%i %S"` output and keeps ids.
func sprioFilter(t testing.TB, out string, ids []int64) map[int64]int64 {
	t.Helper()
	all, err := parseSprio([]byte(out))
	if err != nil {
		t.Fatalf("sprio: %v", err)
	}
	got := map[int64]int64{}
	for _, id := range ids {
		if v, ok := all[id]; ok {
			got[id] = v
		}
	}
	return got
}

// countingRunner counts the commands it runs and keeps their stdin.
type countingRunner struct {
	Runner
	calls int
	stdin [][]byte
}

func (r *countingRunner) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, []byte, error) {
	r.calls++
	r.stdin = append(r.stdin, stdin)
	return r.Runner.Run(ctx, stdin, name, args...)
}

// parseJobs decodes a whole jobs answer held in memory, strictly: any
// skipped record is an error. For tests and the benchmark, on
// captured bytes.
func parseJobs(body []byte) ([]Job, *envelope, error) {
	res, err := decodeJobs(bytes.NewReader(body))
	if err != nil {
		return nil, res.Env, err
	}
	if len(res.Skipped) > 0 {
		return nil, res.Env, fmt.Errorf("%w: job %d: %v", ErrMalformed, res.Skipped[0].JobID, res.Skipped[0].Err)
	}
	return res.Jobs, res.Env, nil
}
