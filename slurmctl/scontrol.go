package slurmctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// scontrolBatch renders the plan as scontrol commands, one line per value
// (split every MaxPerLine targets): "update jobid=12,10_[2-4] sitefactor=N".
// scontrol reads them from stdin in one process, which saves the ~40 ms of
// start-up and authentication each separate `scontrol update` costs.
func scontrolBatch(plan []Change, maxPerLine int) []byte {
	byValue := map[int64][]string{}
	var values []int64
	for _, c := range plan {
		if _, ok := byValue[c.To]; !ok {
			values = append(values, c.To)
		}
		byValue[c.To] = append(byValue[c.To], c.Target)
	}
	slices.Sort(values)
	var b bytes.Buffer
	for _, v := range values {
		ts := byValue[v]
		for len(ts) > 0 {
			n := min(len(ts), maxPerLine)
			fmt.Fprintf(&b, "update jobid=%s sitefactor=%d\n", strings.Join(ts[:n], ","), v)
			ts = ts[n:]
		}
	}
	return b.Bytes()
}

// scontrolJobErr matches scontrol's per-job failure line, e.g.
// "Invalid job id specified for job 999998" or "... for job 10_[2-4]".
// Compiled on first use, as the other patterns every process would pay for.
var scontrolJobErr = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*) for job (\S+)$`) })

func (w *Writer) writeScontrol(ctx context.Context, rep *Report) error {
	rep.Calls++
	errs := runBatch(ctx, w.cfg.Runner, w.cfg.Scontrol, w.cfg.CmdTimeout, scontrolBatch(rep.Planned, w.cfg.MaxPerLine), rep.Planned)
	var first error
	for i, c := range rep.Planned {
		if err := errs[i]; err != nil {
			rep.Failed = append(rep.Failed, Failure{Change: c, Err: err})
			delete(w.last, c.JobID)
			if first == nil {
				first = err
			}
			continue
		}
		rep.Applied = append(rep.Applied, c)
		w.last[c.JobID] = c.To
	}
	if first != nil {
		return fmt.Errorf("write site factors: %d of %d failed: %w", len(rep.Failed), len(rep.Planned), first)
	}
	return nil
}

// runBatch runs one scontrol process (scontrol, within timeout) reading
// the batch stdin, which updates the targets of plan, and returns each
// target's outcome in plan order: nil when applied, scontrol's own error
// when a stderr line names the job, else "outcome unknown" when the run as
// a whole went wrong (stopped, not started or killed, lines that name no
// planned job, a failed exit with no per-job error). scontrol carries on
// after a job it refuses, so one bad target does not fail the others.
func runBatch(ctx context.Context, r Runner, scontrol string, timeout time.Duration, stdin []byte, plan []Change) []error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, stderr, runErr := r.Run(cctx, stdin, scontrol)

	failed, unattributed := attributeScontrol(stderr, plan)
	var exitErr *exec.ExitError
	unknown := ""
	switch {
	case cctx.Err() != nil:
		unknown = fmt.Sprintf("scontrol stopped: %v", cctx.Err())
	case runErr != nil && !errors.As(runErr, &exitErr):
		unknown = runErr.Error() // not started, killed, timed out
	case len(unattributed) > 0:
		unknown = strings.Join(unattributed, "; ")
	case runErr != nil && len(failed) == 0:
		unknown = runErr.Error() + " with no per-job error"
	}
	errs := make([]error, len(plan))
	for i, c := range plan {
		switch {
		case failed[c.Target] != "":
			errs[i] = fmt.Errorf("%s update jobid=%s: %s", scontrol, c.Target, failed[c.Target])
		case unknown != "":
			errs[i] = fmt.Errorf("%s: outcome unknown: %s", scontrol, unknown)
		}
	}
	return errs
}

// attributeScontrol maps scontrol's stderr lines to planned targets. A line
// naming a job maps to the target with that exact text, or else to the
// change whose job id (or array id) is the line's leading number. Lines it
// cannot map are returned as unattributed.
func attributeScontrol(stderr []byte, plan []Change) (failed map[string]string, unattributed []string) {
	failed = map[string]string{}
	byTarget := make(map[string]bool, len(plan))
	byID := make(map[int64]string, len(plan))
	for _, c := range plan {
		byTarget[c.Target] = true
		id := c.Target
		if i := strings.IndexByte(id, '_'); i >= 0 {
			id = id[:i]
		}
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			byID[n] = c.Target
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		m := scontrolJobErr().FindStringSubmatch(line)
		if m == nil {
			unattributed = append(unattributed, line)
			continue
		}
		t := m[2]
		if !byTarget[t] {
			lead := t
			if i := strings.IndexAny(lead, "_+"); i >= 0 {
				lead = lead[:i]
			}
			n, err := strconv.ParseInt(lead, 10, 64)
			if err != nil || byID[n] == "" {
				unattributed = append(unattributed, line)
				continue
			}
			t = byID[n]
		}
		if failed[t] == "" {
			failed[t] = m[1]
		}
	}
	return failed, unattributed
}

// Prime loads the site factors Slurm holds for pending jobs, so that a
// restarted Fairway does not rewrite values that are already in place. Only
// the scontrol mode can: it runs beside Slurm's commands and asks sprio,
// which lists the jobs whose priority multifactor computes (pending,
// eligible, not held); the others stay unknown and are written when next
// wanted. The REST modes run where no Slurm command may exist and learn
// nothing here: priorities come with every job read, and no REST version
// reports a site factor, so rest-site-factor writes each wanted value once
// after a start (the write is idempotent) and knows it from then on. It
// returns how many jobs it learned.
func (w *Writer) Prime(ctx context.Context) (int, error) {
	if w.cfg.Mode != ModeScontrolSiteFactor {
		return 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	out, stderr, err := w.cfg.Runner.Run(cctx, nil, w.cfg.Sprio, "-h", "-o", "%i %S")
	if err != nil {
		return 0, fmt.Errorf("prime site factors: %s: %v: %s", w.cfg.Sprio, err, strings.TrimSpace(string(stderr)))
	}
	got, err := parseSprio(out)
	if err != nil {
		return 0, fmt.Errorf("prime site factors: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, v := range got {
		w.last[id] = v
	}
	return len(got), nil
}

// parseSprio reads `sprio -h -o "%i %S"` output: job id and site factor.
func parseSprio(out []byte) (map[int64]int64, error) {
	got := map[int64]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("sprio line %q: want job id and site factor", sc.Text())
		}
		id, err1 := strconv.ParseInt(f[0], 10, 64)
		v, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("sprio line %q: want two integers", sc.Text())
		}
		got[id] = v
	}
	return got, nil
}
