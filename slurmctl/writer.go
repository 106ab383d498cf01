package slurmctl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// Mode is how the Writer hands Fairway's order to Slurm.
type Mode int

// Writer modes.
const (
	// ModeScontrolSiteFactor runs `scontrol update jobid=a,b,c
	// sitefactor=N`, jobs grouped by value, all groups fed to one scontrol
	// process on stdin. Works on Slurm 22.05 (whose REST API has no
	// site_factor) and later; needs scontrol and SlurmUser rights where
	// Fairway runs. Multifactor keeps managing the job: priority = Σ
	// weight·factor + site_factor − nice.
	ModeScontrolSiteFactor Mode = iota + 1
	// ModeRESTSiteFactor posts {"site_factor": NiceOffset + N} per job:
	// slurmrestd v0.0.40-v0.0.45 (Slurm 23.11+; 23.02's v0.0.39 accepts it
	// too but is not spoken here). Same effect as ModeScontrolSiteFactor;
	// see JobUpdate for the offset.
	ModeRESTSiteFactor
	// ModeRESTPriority posts the admin priority per job ({"priority": N}),
	// on any version. This freezes the job's priority: multifactor stops
	// managing it (site factor, age and fair-share no longer move it), and
	// Slurm resets the job's nice to 0 and drops any nice sent while it is
	// frozen (slurmctld 22.05-26.05; TestLab_HandBackRestoresNice). The
	// Writer keeps each job's nice from before (Change.Nice, Frozen), serve
	// logs it with the decision, and a serve in a site-factor mode hands
	// such jobs back to multifactor with their nice restored (HandBack)
	// before it writes site factors.
	ModeRESTPriority
)

var modeNames = map[Mode]string{
	ModeScontrolSiteFactor: "scontrol-site-factor",
	ModeRESTSiteFactor:     "rest-site-factor",
	ModeRESTPriority:       "rest-priority",
}

func (m Mode) String() string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode name as String prints it.
func ParseMode(s string) (Mode, error) {
	for m, n := range modeNames {
		if n == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("writer mode %q: want scontrol-site-factor, rest-site-factor or rest-priority", s)
}

// WriterConfig configures a Writer.
type WriterConfig struct {
	Mode Mode
	// Range bounds the values written; values outside are clamped. Min
	// must be at least 1, so no write can ever be a 0 (a hold, for
	// priorities). policy.SiteFactorRange and policy.PriorityRange are the
	// usual choices.
	Range policy.SlurmRange

	Scontrol   string        // scontrol path for ModeScontrolSiteFactor; default "scontrol"
	Sprio      string        // sprio path for Prime (scontrol mode only); default "sprio"
	Runner     Runner        // default ExecRunner{}
	CmdTimeout time.Duration // per scontrol/sprio run; default 2m
	MaxPerLine int           // job ids per scontrol line; default 200
}

// Writer writes Fairway's values into Slurm, enforcing in code the
// invariants that make it safe to run next to a production slurmctld:
//
//   - only records that are pending, not held, not part of a heterogeneous
//     job, and were present in the jobs passed in are touched;
//   - values are clamped to Range, whose Min is at least 1, so a write is
//     never a 0 priority (a hold);
//   - the only operations are "set site factor", "set priority" and, in
//     HandBack, "reset the priority to multifactor's and restore the nice"
//     for a job still holding an admin priority Fairway wrote: there is no
//     code path that holds, cancels or changes anything else, and the
//     reset (a release, to a held job) goes only to a job read not held a
//     moment before;
//   - only values that differ from the value Slurm holds are written;
//   - in dry-run mode nothing is written and the report says what would be.
//
// The value Slurm holds is: for priorities, Job.Priority as read; for site
// factors (which no REST version reports), the last value this Writer wrote
// successfully, or (scontrol mode) what Prime read from sprio.
type Writer struct {
	cfg    WriterConfig
	client *Client
	log    *slog.Logger

	mu      sync.Mutex
	last    map[int64]int64  // job id → site factor Slurm holds, as far as we know
	frozen  map[int64]Frozen // rest-priority: jobs whose admin priority this Writer (or one it adopted from) wrote
	stopped error            // set when a read-back found Slurm holding something else: no more writes
}

// ReadBackSample is how many written jobs a REST Write reads back at most
// (spread over the batch): enough to catch a systematic corruption like
// 26.05's site factor stored as N - 2^31, bounded in requests.
const ReadBackSample = 64

// ErrReadBack: after a REST write, Slurm held something other than what was
// written. The Writer stops writing in its mode until restarted.
var ErrReadBack = errors.New("slurm does not hold what was written")

// NewWriter checks cfg against the client's API version.
func NewWriter(cfg WriterConfig, client *Client, log *slog.Logger) (*Writer, error) {
	if _, ok := modeNames[cfg.Mode]; !ok {
		return nil, fmt.Errorf("writer mode %d: want scontrol-site-factor, rest-site-factor or rest-priority", cfg.Mode)
	}
	r := cfg.Range
	if r.Min < 1 || r.Max < r.Min {
		return nil, fmt.Errorf("writer range [%d, %d]: want 1 <= min <= max (a 0 would hold jobs)", r.Min, r.Max)
	}
	if cfg.Mode == ModeRESTPriority && r.Max > policy.PriorityRange().Max {
		return nil, fmt.Errorf("writer range max %d: priorities above %d collide with Slurm's NO_VAL/INFINITE", r.Max, policy.PriorityRange().Max)
	}
	if cfg.Mode != ModeRESTPriority && r.Max > policy.SiteFactorRange().Max {
		return nil, fmt.Errorf("writer range max %d: scontrol rejects site factors above %d", r.Max, policy.SiteFactorRange().Max)
	}
	if cfg.Mode != ModeScontrolSiteFactor && client == nil {
		return nil, fmt.Errorf("writer mode %s needs a slurmrestd client", cfg.Mode)
	}
	if cfg.Mode == ModeRESTSiteFactor && client.Version() == V0038 {
		return nil, fmt.Errorf("writer mode %s needs slurmrestd v0.0.40 or newer; the server speaks %s (Slurm 22.05 rejects site_factor): use scontrol-site-factor", cfg.Mode, client.Version())
	}
	fillCommands(&cfg.Runner, &cfg.CmdTimeout, 2*time.Minute, program{&cfg.Scontrol, "scontrol"}, program{&cfg.Sprio, "sprio"})
	if cfg.MaxPerLine == 0 {
		cfg.MaxPerLine = 200
	}
	if cfg.MaxPerLine < 1 || cfg.CmdTimeout < 0 {
		return nil, fmt.Errorf("writer: max per line %d, command timeout %s: want both positive", cfg.MaxPerLine, cfg.CmdTimeout)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{cfg: cfg, client: client, log: log, last: map[int64]int64{}, frozen: map[int64]Frozen{}}, nil
}

// Change is one value to write.
type Change struct {
	JobID  int64
	Target string // what Slurm is told: "123" or "10_[2-4]"
	From   int64  // value Slurm holds (FromKnown false: unknown)
	To     int64
	// FromKnown is false for a site factor this Writer has not written or
	// primed since it started.
	FromKnown bool
	Clamped   bool // To was clamped into Range
	// Nice is, in rest-priority mode, the job's nice from before Fairway
	// first froze its priority (Slurm resets it to 0 then): what a
	// hand-back restores, and what the decision log keeps.
	Nice int64
}

// Skip is a job in the wanted values that was not written, and why.
type Skip struct {
	JobID  int64
	Reason string // "not pending", "held", "heterogeneous job", "not in the jobs read", "unchanged"
}

// Failure is a write that did not happen or whose outcome is unknown.
type Failure struct {
	Change
	Err error
	// Unknown is set for a write that was sent but failed as every job
	// would (a timeout, a broken connection, slurmctld in trouble): Slurm
	// may hold it. A write Slurm refused for the job, or never sent, has
	// it false.
	Unknown bool
}

// Report says what a Write did.
type Report struct {
	Mode    Mode
	Planned []Change  // every write decided, in the order issued
	Applied []Change  // writes Slurm confirmed
	Failed  []Failure // writes Slurm refused, or whose outcome is unknown
	Skipped []Skip
	Calls   int // Slurm calls issued: scontrol processes or HTTP requests

	ReadBack ReadBack // REST modes: what reading the written jobs back found
}

// ReadBack is the REST writer's check of what Slurm holds after a write.
type ReadBack struct {
	Checked    int        // written jobs read back and compared
	Mismatches []Mismatch // jobs whose priority contradicts the write
}

// Mismatch is one written job whose priority, read back, contradicts the
// value written.
type Mismatch struct {
	JobID    int64
	Wrote    int64 // the priority or site factor written
	Priority int64 // the job's priority read back
	Nice     int64
	Why      string
}

// Stopped is the read-back failure that stopped this Writer, or nil.
func (w *Writer) Stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// Write makes Slurm hold want[id] for every job in want that jobs lists as
// writable. jobs is the latest read; want maps job ids to values (e.g.
// policy.Assign's output keyed by Score.JobID).
//
// The whole plan is checked before the first write. REST modes write job
// by job: a job Slurm refuses fails alone, a failure that would hit every
// job (token, transport) stops the batch (later changes are reported as
// failed, not attempted), and the written jobs are read back (see
// readBack). The scontrol mode runs one process, whose per-job errors are
// attributed from its stderr. No write is retried; the next cycle plans
// again from what Slurm holds. The returned error is the first failure,
// wrapped, and the report is complete either way.
func (w *Writer) Write(ctx context.Context, jobs []Job, want map[int64]int64) (Report, error) {
	rep := Report{Mode: w.cfg.Mode}
	w.mu.Lock()
	defer w.mu.Unlock()

	byID := make(map[int64]*Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j, ok := byID[id]
		switch {
		case !ok:
			rep.Skipped = append(rep.Skipped, Skip{id, "not in the jobs read"})
			continue
		case j.State != policy.StatePending:
			rep.Skipped = append(rep.Skipped, Skip{id, "not pending"})
			continue
		case j.Held:
			rep.Skipped = append(rep.Skipped, Skip{id, "held"})
			continue
		case j.HetJob:
			rep.Skipped = append(rep.Skipped, Skip{id, "heterogeneous job"})
			continue
		}
		ch := Change{JobID: id, Target: j.Target(), To: want[id]}
		if w.cfg.Mode != ModeScontrolSiteFactor {
			ch.Target = j.RESTTarget(w.client.Version())
		}
		if ch.To < w.cfg.Range.Min {
			ch.To, ch.Clamped = w.cfg.Range.Min, true
		} else if ch.To > w.cfg.Range.Max {
			ch.To, ch.Clamped = w.cfg.Range.Max, true
		}
		if w.cfg.Mode == ModeRESTPriority {
			ch.From, ch.FromKnown = j.Priority, true
			ch.Nice = j.Nice
			if f, ok := w.frozen[id]; ok {
				ch.Nice = f.Nice
			}
		} else {
			ch.From, ch.FromKnown = w.last[id]
		}
		if ch.FromKnown && ch.From == ch.To {
			rep.Skipped = append(rep.Skipped, Skip{id, "unchanged"})
			continue
		}
		rep.Planned = append(rep.Planned, ch)
	}
	// Forget jobs that are gone, so the memory stays the size of the queue.
	for id := range w.last {
		if j, ok := byID[id]; !ok || j.State != policy.StatePending {
			delete(w.last, id)
		}
	}
	for id := range w.frozen {
		if j, ok := byID[id]; !ok || j.State != policy.StatePending {
			delete(w.frozen, id)
		}
	}
	if err := w.validate(rep.Planned); err != nil {
		return rep, err
	}
	if w.stopped != nil && len(rep.Planned) > 0 {
		err := fmt.Errorf("writer %s stopped: %w", w.cfg.Mode, w.stopped)
		for _, c := range rep.Planned {
			rep.Failed = append(rep.Failed, Failure{Change: c, Err: err})
		}
		return rep, err
	}
	if len(rep.Planned) == 0 {
		return rep, nil
	}
	var err error
	if w.cfg.Mode == ModeScontrolSiteFactor {
		err = w.writeScontrol(ctx, &rep)
	} else {
		err = w.writeREST(ctx, &rep)
	}
	w.log.Info("wrote to slurm", "mode", w.cfg.Mode, "applied", len(rep.Applied), "failed", len(rep.Failed),
		"skipped", len(rep.Skipped), "calls", rep.Calls)
	return rep, err
}

// validate re-checks the plan's invariants before anything is written, so
// a bug upstream fails the whole write instead of part of it.
func (w *Writer) validate(plan []Change) error {
	seen := make(map[string]bool, len(plan))
	for _, c := range plan {
		if c.To < w.cfg.Range.Min || c.To > w.cfg.Range.Max || c.To < 1 {
			return fmt.Errorf("write plan: job %d value %d outside [%d, %d]", c.JobID, c.To, w.cfg.Range.Min, w.cfg.Range.Max)
		}
		if seen[c.Target] {
			return fmt.Errorf("write plan: target %s twice", c.Target)
		}
		seen[c.Target] = true
	}
	return nil
}

// writeREST posts one update per job. A rejection of one job (404, 422, an
// errors entry, a warning that part of the update was ignored) fails that
// job alone; a failure that would fail every job the same way
// (authentication, transport, slurmrestd or slurmctld down) stops the batch
// and reports the rest as not attempted. The written jobs are then read
// back (readBack).
func (w *Writer) writeREST(ctx context.Context, rep *Report) error {
	var rejected error
	for i, c := range rep.Planned {
		v := c.To
		u := JobUpdate{Priority: &v}
		if w.cfg.Mode == ModeRESTSiteFactor {
			u = JobUpdate{SiteFactor: &v}
		}
		rep.Calls++
		err := w.client.UpdateJob(ctx, c.Target, u)
		if err != nil {
			err = fmt.Errorf("write job %s: %w", c.Target, err)
			unknown := !jobRejected(err)
			rep.Failed = append(rep.Failed, Failure{Change: c, Err: err, Unknown: unknown})
			delete(w.last, c.JobID) // rewrite next cycle
			if unknown && w.cfg.Mode == ModeRESTPriority {
				// The job may now hold the admin priority, which the next
				// cycle then reads as its value and leaves alone: keep it
				// to hand back (a hand-back reads the job first, and
				// skips one Slurm does not hold frozen).
				w.frozen[c.JobID] = Frozen{Priority: c.To, Nice: c.Nice}
			}
			if !unknown {
				w.log.Warn("slurm rejected a write; going on with the others", "job", c.Target, "error", err)
				if rejected == nil {
					rejected = err
				}
				continue
			}
			for _, rest := range rep.Planned[i+1:] {
				rep.Failed = append(rep.Failed, Failure{Change: rest, Err: errNotAttempted})
			}
			return fmt.Errorf("%w (%d written before it, %d not attempted)", err, len(rep.Applied), len(rep.Planned)-i-1)
		}
		rep.Applied = append(rep.Applied, c)
		if w.cfg.Mode == ModeRESTSiteFactor {
			w.last[c.JobID] = c.To
		} else {
			w.frozen[c.JobID] = Frozen{Priority: c.To, Nice: c.Nice}
		}
	}
	if err := w.readBack(ctx, rep); err != nil {
		return err
	}
	if rejected != nil {
		return fmt.Errorf("%d of %d writes rejected, first: %w", len(rep.Failed), len(rep.Planned), rejected)
	}
	return nil
}

// jobRejected reports whether a failed update concerns that job only:
// Slurm or slurmrestd answered and refused this update (unknown or finished
// job, bad request, an errors entry, ignored keys). Failures that would
// repeat for every job (the token, the connection, slurmctld unreachable,
// an answer that is not JSON) are not.
func jobRejected(err error) bool {
	for _, stop := range []error{ErrToken, ErrTokenRejected, ErrUnauthorized, ErrForbidden, ErrTimeout, ErrUnreachable, ErrMalformed} {
		if errors.Is(err, stop) {
			return false
		}
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	for _, e := range ae.Slurm {
		if controllerTrouble(e.Number) {
			return false
		}
	}
	switch {
	case errors.Is(err, ErrRejected), errors.Is(err, ErrSlurm):
		return true
	case errors.Is(err, ErrHTTP):
		return ae.Status == 400 || ae.Status == 404 || ae.Status == 422
	}
	return false
}

// errControllerDown is Slurm's "Unable to contact slurm controller".
const errControllerDown = 1001

// controllerTrouble reports whether Slurm's error number n says that
// slurmrestd could not talk to slurmctld, rather than that slurmctld
// refused the job (slurm/slurm_errno.h): the communication errors from
// SLURM_COMMUNICATIONS_CONNECTION_ERROR (1001) to SLURM_SHUTTING_DOWN
// (1025), slurmctld's own (1800-1805: connection, send, receive, shutdown,
// backoff, i.e. its RPC rate limit, "Rate limit exceeded, please retry
// momentarily", and hard drop), ESLURM_IN_STANDBY_MODE (2027: a backup slurmctld
// not in control) and the socket errors (5003-5005: incomplete packet,
// "Socket timed out on send/recv operation", zero bytes sent). Each
// would fail every other job of the batch alike.
func controllerTrouble(n int) bool {
	return n >= errControllerDown && n <= 1025 || n >= 1800 && n <= 1805 || n == 2027 || n >= 5003 && n <= 5005
}

// readBack reads a sample of the jobs just written and checks that Slurm
// holds what was meant. Priority mode: the priority equals the value
// written. Site-factor mode: a job's priority is at least site factor -
// nice (every multifactor term is non-negative), so a priority of 0 or 1
// where the written site factor alone puts it above 1 means the site factor
// was not stored as written (26.05's N - 2^31); a job legitimately ranked
// last (site factor 1) can sit at 1 without alarm. A job that started or
// left in between is not judged, nor is any job after a read that failed
// for every job alike (jobRejected false: timeout, connection, token). A
// mismatch stops the Writer.
func (w *Writer) readBack(ctx context.Context, rep *Report) error {
	n := len(rep.Applied)
	if n == 0 {
		return nil
	}
	step := 1
	if n > ReadBackSample {
		step = (n + ReadBackSample - 1) / ReadBackSample
	}
	for i := 0; i < n; i += step {
		c := rep.Applied[i]
		rep.Calls++
		recs, err := w.client.GetJob(ctx, c.JobID)
		if err != nil && !jobRejected(err) {
			// slurmrestd or slurmctld in trouble (timeout, connection,
			// token): every other read would wait and fail the same way.
			w.log.Warn("read back written jobs: stopped", "job_id", c.JobID, "checked", rep.ReadBack.Checked, "error", err)
			break
		}
		if err != nil {
			w.log.Warn("read back a written job", "job_id", c.JobID, "error", err)
			continue
		}
		var got *Job
		for k := range recs {
			if recs[k].ID == c.JobID {
				got = &recs[k]
			}
		}
		if got == nil || !got.Pending() {
			continue
		}
		rep.ReadBack.Checked++
		m := Mismatch{JobID: c.JobID, Wrote: c.To, Priority: got.Priority, Nice: got.Nice}
		switch {
		case w.cfg.Mode == ModeRESTPriority && got.Priority != c.To:
			m.Why = fmt.Sprintf("priority %d read back after writing priority %d", got.Priority, c.To)
		case w.cfg.Mode == ModeRESTSiteFactor && c.To-got.Nice > 1 && got.Priority <= 1:
			m.Why = fmt.Sprintf("priority %d read back after writing site factor %d (nice %d): the site factor was not stored as written", got.Priority, c.To, got.Nice)
		default:
			continue
		}
		rep.ReadBack.Mismatches = append(rep.ReadBack.Mismatches, m)
		delete(w.last, c.JobID)
	}
	if len(rep.ReadBack.Mismatches) == 0 {
		return nil
	}
	first := rep.ReadBack.Mismatches[0]
	w.stopped = fmt.Errorf("%w: job %d: %s (%d of %d jobs read back)", ErrReadBack, first.JobID, first.Why,
		len(rep.ReadBack.Mismatches), rep.ReadBack.Checked)
	w.log.Error("read-back after writing found Slurm holding something else; writing stops in this mode until restarted",
		"mode", w.cfg.Mode, "mismatches", len(rep.ReadBack.Mismatches), "checked", rep.ReadBack.Checked, "first_job", first.JobID, "why", first.Why)
	return w.stopped
}

var errNotAttempted = errors.New("not attempted: an earlier write failed")
