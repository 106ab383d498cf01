package slurmctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/fairway-hpc/fairway/policy"
)

// Frozen is an admin priority Fairway wrote (ModeRESTPriority) that Slurm
// still holds, and the job's nice from before it. An admin priority stops
// multifactor managing the job, and Slurm resets the job's nice to 0 when
// it is set (slurmctld's _update_job, 22.05 to 26.05: "details->nice =
// NICE_OFFSET" for every non-zero priority; a nice sent while the priority
// is admin-set is dropped without an error), so the nice is kept here, to
// be restored when the job is handed back.
type Frozen struct {
	Priority int64 // the admin priority written
	Nice     int64 // the job's nice before Fairway first froze it
}

// HandBackOne is one job handed back to multifactor.
type HandBackOne struct {
	JobID  int64
	Target string
	Frozen
	Err error // Failed only
}

// HandBackReport says what a HandBack did.
type HandBackReport struct {
	Planned []HandBackOne
	Applied []HandBackOne // handed back, and (where read back) holding the nice restored
	Failed  []HandBackOne // refused, unknown, or read back still frozen
	Skipped []Skip        // "not in the jobs read", "not pending", "held", "heterogeneous job", "priority no longer Fairway's"
	Calls   int
}

// Frozen returns the admin priorities this Writer knows it froze, with
// each job's nice from before (ModeRESTPriority; empty in the other
// modes): what the decision log keeps so a later serve can hand them back.
func (w *Writer) Frozen() map[int64]Frozen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.frozen)
}

// Adopt tells a ModeRESTPriority Writer which jobs an earlier serve froze
// (from the decision log), so that the nice each had before is carried on
// and restored at hand-back: Slurm itself now reports those jobs' nice as 0.
func (w *Writer) Adopt(frozen map[int64]Frozen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, f := range frozen {
		if _, ok := w.frozen[id]; !ok {
			w.frozen[id] = f
		}
	}
}

// HandBack gives the jobs in frozen back to multifactor and restores the
// nice each had before Fairway's admin priority: what a serve in a
// site-factor mode must do first to the priorities an earlier
// rest-priority serve froze, since a site factor does not move a frozen
// priority. Only records that are read pending, not held, not part of a
// heterogeneous job, and still hold the very priority Fairway wrote are
// touched; any other is skipped (a priority someone else set is not
// Fairway's to hand back).
//
// The hand-back is Slurm's "reset priority" (priority INFINITE, what
// `scontrol release` sends), which slurmctld treats as a release when the
// job is held: so each job is read again just before (where a slurmrestd
// client is configured) and skipped if a hold appeared since the read.
// Over REST v0.0.40+ one update carries both the reset and the nice
// (slurmctld applies the priority before the nice); v0.0.38 cannot send
// INFINITE ("Priority too large"), so on 22.05 it is `scontrol release` and
// `scontrol update nice=N` in one scontrol process. Jobs are read back
// where a client is configured: Applied holds only those whose nice is
// restored and whose priority is no longer the frozen one.
func (w *Writer) HandBack(ctx context.Context, jobs []Job, frozen map[int64]Frozen) (HandBackReport, error) {
	var rep HandBackReport
	w.mu.Lock()
	defer w.mu.Unlock()
	byID := make(map[int64]*Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	ids := slices.Sorted(maps.Keys(frozen))
	for _, id := range ids {
		f := frozen[id]
		j, ok := byID[id]
		if reason := handBackSkip(j, ok, f); reason != "" {
			rep.Skipped = append(rep.Skipped, Skip{id, reason})
			continue
		}
		t := j.Target()
		if w.restHandBack() {
			t = j.RESTTarget(w.client.Version())
		}
		rep.Planned = append(rep.Planned, HandBackOne{JobID: id, Target: t, Frozen: f})
	}
	if len(rep.Planned) == 0 {
		return rep, nil
	}
	var err error
	if w.restHandBack() {
		err = w.handBackREST(ctx, &rep)
	} else {
		err = w.handBackScontrol(ctx, &rep)
	}
	for _, a := range rep.Applied {
		delete(w.frozen, a.JobID)
	}
	w.log.Info("handed priorities back to slurm", "applied", len(rep.Applied), "failed", len(rep.Failed), "skipped", len(rep.Skipped), "calls", rep.Calls)
	return rep, err
}

// handBackSkip is why a frozen job is not handed back, or "".
func handBackSkip(j *Job, read bool, f Frozen) string {
	switch {
	case !read:
		return "not in the jobs read"
	case j.State != policy.StatePending:
		return "not pending"
	case j.Held:
		return "held"
	case j.HetJob:
		return "heterogeneous job"
	case j.Priority != f.Priority:
		return "priority no longer Fairway's"
	}
	return ""
}

// restHandBack says whether hand-backs go over REST: a client speaking
// v0.0.40 or newer (v0.0.38 cannot express the reset).
func (w *Writer) restHandBack() bool {
	return w.client != nil && w.client.Version() != V0038
}

// recheck reads job id again just before its hand-back and says why it
// must not be handed back now ("" when it may; nil client: no re-read).
func (w *Writer) recheck(ctx context.Context, rep *HandBackReport, one HandBackOne) (string, error) {
	if w.client == nil {
		return "", nil
	}
	rep.Calls++
	recs, err := w.client.GetJob(ctx, one.JobID)
	if err != nil {
		return "", err
	}
	for i := range recs {
		if recs[i].ID == one.JobID {
			return handBackSkip(&recs[i], true, one.Frozen), nil
		}
	}
	return "not in the jobs read", nil
}

func (w *Writer) handBackREST(ctx context.Context, rep *HandBackReport) error {
	var first error
	fail := func(one HandBackOne, err error) {
		one.Err = err
		rep.Failed = append(rep.Failed, one)
		if first == nil {
			first = err
		}
	}
	for i, one := range rep.Planned {
		why, err := w.recheck(ctx, rep, one)
		if err != nil {
			fail(one, fmt.Errorf("hand back job %s: read it first: %w", one.Target, err))
			if !jobRejected(err) {
				// Every read would wait and fail the same way.
				for _, rest := range rep.Planned[i+1:] {
					fail(rest, errNotAttempted)
				}
				break
			}
			continue
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, Skip{one.JobID, why})
			continue
		}
		nice := one.Nice
		rep.Calls++
		if err := w.client.UpdateJob(ctx, one.Target, JobUpdate{HandBack: &nice}); err != nil {
			fail(one, fmt.Errorf("hand back job %s: %w", one.Target, err))
			if !jobRejected(err) {
				// The next would fail the same way; the rest stay frozen,
				// reported failed so that the caller tries them again.
				for _, rest := range rep.Planned[i+1:] {
					fail(rest, errNotAttempted)
				}
				break
			}
			continue
		}
		if err := w.confirmHandBack(ctx, rep, one); err != nil {
			fail(one, err)
			continue
		}
		rep.Applied = append(rep.Applied, one)
	}
	if first != nil {
		return fmt.Errorf("hand back %d of %d priorities failed: %w", len(rep.Failed), len(rep.Planned), first)
	}
	return nil
}

func (w *Writer) handBackScontrol(ctx context.Context, rep *HandBackReport) error {
	var b bytes.Buffer
	var sent []HandBackOne
	var first error
	for i, one := range rep.Planned {
		why, err := w.recheck(ctx, rep, one)
		if err != nil {
			one.Err = fmt.Errorf("hand back job %s: read it first: %w", one.Target, err)
			rep.Failed = append(rep.Failed, one)
			first = cmpOr(first, one.Err)
			if !jobRejected(err) {
				// Every read would wait and fail the same way (the
				// re-read is over REST, whatever writes): the rest stay
				// frozen, reported failed for the next try. Those read
				// already are handed back, as over REST.
				for _, rest := range rep.Planned[i+1:] {
					rest.Err = errNotAttempted
					rep.Failed = append(rep.Failed, rest)
				}
				break
			}
			continue
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, Skip{one.JobID, why})
			continue
		}
		fmt.Fprintf(&b, "release %s\nupdate jobid=%s nice=%d\n", one.Target, one.Target, one.Nice)
		sent = append(sent, one)
	}
	if len(sent) > 0 {
		plan := make([]Change, len(sent))
		for i, one := range sent {
			plan[i] = Change{JobID: one.JobID, Target: one.Target}
		}
		rep.Calls++
		errs := runBatch(ctx, w.cfg.Runner, w.cfg.Scontrol, w.cfg.CmdTimeout, b.Bytes(), plan)
		var unread error // a read back that failed for every job alike
		for i, one := range sent {
			err := errs[i]
			switch {
			case err != nil:
			case unread != nil:
				// Each read would wait and fail the same way: the rest
				// are reported failed, and re-read before the next try.
				err = fmt.Errorf("hand back job %s: %w: %w", one.Target, errNotReadBack, unread)
			default:
				if err = w.confirmHandBack(ctx, rep, one); err != nil && !errors.Is(err, errStillFrozen) && !jobRejected(err) {
					unread = err
				}
			}
			if err != nil {
				one.Err = err
				rep.Failed = append(rep.Failed, one)
				first = cmpOr(first, err)
				continue
			}
			rep.Applied = append(rep.Applied, one)
		}
	}
	if first != nil {
		return fmt.Errorf("hand back %d of %d priorities failed: %w", len(rep.Failed), len(rep.Planned), first)
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// errNotReadBack: a hand-back scontrol accepted that was not read back,
// as an earlier read back failed for every job alike.
var errNotReadBack = errors.New("not read back after an earlier read back failed")

// errStillFrozen: a hand-back Slurm accepted did not take.
var errStillFrozen = errors.New("slurm does not hold the hand-back")

// confirmHandBack reads a handed-back job and checks that its nice is the
// one restored and its priority no longer the frozen value (slurmctld
// recomputes it at once). Without a client there is nothing to read with.
func (w *Writer) confirmHandBack(ctx context.Context, rep *HandBackReport, one HandBackOne) error {
	if w.client == nil {
		return nil
	}
	rep.Calls++
	recs, err := w.client.GetJob(ctx, one.JobID)
	if err != nil {
		return fmt.Errorf("hand back job %s: read it back: %w", one.Target, err)
	}
	for i := range recs {
		j := &recs[i]
		if j.ID != one.JobID || !j.Pending() {
			continue
		}
		if j.Nice != one.Nice || j.Priority == one.Priority {
			return fmt.Errorf("%w: job %s reads nice %d, priority %d after restoring nice %d and releasing priority %d",
				errStillFrozen, one.Target, j.Nice, j.Priority, one.Nice, one.Priority)
		}
	}
	return nil
}
