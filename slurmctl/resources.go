package slurmctl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairway-hpc/fairway/policy"
)

// Resizing pending jobs. The Writer changes only a job's place in the
// queue; the ResizeWriter changes what a pending job asks for — its CPU
// count, memory and whole-GPU count — for Fairway's resource rewriting
// (rewrite.Rules). It is a separate type so that the Writer keeps its
// promise of touching nothing but priorities, and it keeps the same
// invariants:
//
//   - only records that are pending, not held, not part of a heterogeneous
//     job, not an unsplit array record, and present in the jobs passed in
//     are touched;
//   - the only fields are NumCPUs, MinMemoryNode (single-node jobs) and
//     the count of an existing gpu request (gres=gpu[:type]:N, single-node
//     jobs, as Slurm 22.05 allows; gpu↔shard cannot be changed on a
//     pending job);
//     there is no code path that holds, releases or cancels;
//   - values are positive and differ from the request read;
//   - in dry-run mode nothing is written and the report says what would be.
//
// It runs scontrol (one process, one line per job, on stdin) and squeue,
// both through the Runner, so it needs SlurmUser or operator rights where
// Fairway runs, like ModeScontrolSiteFactor. Those rights are also why a
// CPU or memory change lifts Slurm's limits on the job (limits.go): the
// caller checks Limits first and asks for no such change where one applies.

// Resize is a wanted request for one pending job: the new CPU count,
// memory per node (MB) and whole-GPU count. A zero field is left as it is.
type Resize struct {
	JobID    int64
	CPUs     int
	MemoryMB int64
	GPUs     int
}

// ResizeChange is one job's planned update: the target, the fields that
// change, and the values read before.
type ResizeChange struct {
	Resize
	Target  string
	GPUType string // the gpu request's type, kept in the update ("" untyped)
	From    Resize // the request as read (only the fields that change are set)
}

// ResizeFailure is an update that did not happen or whose outcome is
// unknown.
type ResizeFailure struct {
	ResizeChange
	Err error
}

// ResizeReport says what a Resize did (PlanResize: what it would do).
type ResizeReport struct {
	Planned []ResizeChange
	Applied []ResizeChange
	Failed  []ResizeFailure
	Skipped []Skip
	Calls   int
}

// ResizeConfig configures a ResizeWriter.
type ResizeConfig struct {
	Scontrol   string        // default "scontrol"
	Squeue     string        // default "squeue"
	Sacctmgr   string        // default "sacctmgr" (Limits)
	Runner     Runner        // default ExecRunner{}
	CmdTimeout time.Duration // per command; default 2m
}

// ResizeWriter changes the requests of pending jobs. Safe for concurrent
// use (writes are serialised).
type ResizeWriter struct {
	cfg ResizeConfig
	log *slog.Logger
	mu  sync.Mutex
}

// NewResizeWriter fills cfg's defaults.
func NewResizeWriter(cfg ResizeConfig, log *slog.Logger) (*ResizeWriter, error) {
	fillCommands(&cfg.Runner, &cfg.CmdTimeout, 2*time.Minute,
		program{&cfg.Scontrol, "scontrol"}, program{&cfg.Squeue, "squeue"}, program{&cfg.Sacctmgr, "sacctmgr"})
	if cfg.CmdTimeout < 0 {
		return nil, fmt.Errorf("resize writer: command timeout %s: want positive", cfg.CmdTimeout)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ResizeWriter{cfg: cfg, log: log}, nil
}

// Comments returns the comment (sbatch --comment) of every pending job
// that has one, by job id, from `squeue --json`: no REST version Fairway
// speaks returns it with the job. Fairway reads its opt-out and elastic
// markers there (rewrite.OptOutMarker, rewrite.ElasticMarker); callers look
// up only ids they read from Slurm themselves. A comment is user text, newlines
// included, so it is read from its JSON key, never from a line of squeue's
// text output (where "\n7 fairway:elastic=1-8" in one job's comment read
// as job 7's). Records that do not decode are skipped and logged with
// their count, never fatal for the other jobs.
func (w *ResizeWriter) Comments(ctx context.Context) (map[int64]string, error) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CmdTimeout)
	defer cancel()
	out, stderr, err := w.cfg.Runner.Run(cctx, nil, w.cfg.Squeue, "--json", "-a", "-t", "PENDING")
	if err != nil {
		return nil, fmt.Errorf("read job comments: %s: %v: %s", w.cfg.Squeue, err, strings.TrimSpace(string(stderr)))
	}
	got, skipped, err := parseComments(out)
	if err != nil {
		return nil, fmt.Errorf("read job comments: %w", err)
	}
	if skipped > 0 {
		w.log.Warn("squeue --json: job records skipped", "skipped", skipped)
	}
	return got, nil
}

// squeueComment is what Comments reads of one `squeue --json` job record.
type squeueComment struct {
	JobID   num     `json:"job_id"`
	State   strs    `json:"job_state"` // "PENDING" (22.05), ["PENDING"] (newer)
	Comment *string `json:"comment"`
}

// parseComments reads `squeue --json`: the comments of pending jobs by job
// id. 22.05's squeue ignores -t with --json, so the state is checked here.
// A record without a job id or with a field of the wrong type is skipped
// and counted; only a document that is not squeue's JSON is an error.
func parseComments(out []byte) (map[int64]string, int, error) {
	var doc struct {
		Jobs *[]json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, 0, fmt.Errorf("squeue --json: %w", err)
	}
	if doc.Jobs == nil {
		return nil, 0, errors.New("squeue --json: no jobs list")
	}
	got := map[int64]string{}
	skipped := 0
	for _, raw := range *doc.Jobs {
		var j squeueComment
		if err := json.Unmarshal(raw, &j); err != nil || !j.JobID.Set || j.JobID.V <= 0 {
			skipped++
			continue
		}
		if len(j.State) == 0 || j.State[0] != "PENDING" || j.Comment == nil {
			continue
		}
		if c := strings.TrimSpace(*j.Comment); c != "" && c != "(null)" {
			got[j.JobID.V] = c
		}
	}
	return got, skipped, nil
}

// Resize updates the requests of the pending jobs in want to the values
// given, as far as jobs (the latest read) lists them as writable. The whole
// plan (PlanResize) is checked before anything is written; each job's
// update then succeeds or fails on its own (failures are attributed from
// scontrol's stderr, and output that cannot be attributed marks every job
// unknown). Nothing is retried: the next cycle plans again from what Slurm
// holds.
func (w *ResizeWriter) Resize(ctx context.Context, jobs []Job, want []Resize) (ResizeReport, error) {
	rep, err := PlanResize(jobs, want)
	if err != nil || len(rep.Planned) == 0 {
		return rep, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rep.Calls++
	plan := make([]Change, len(rep.Planned))
	for i, c := range rep.Planned {
		plan[i] = Change{JobID: c.JobID, Target: c.Target}
	}
	errs := runBatch(ctx, w.cfg.Runner, w.cfg.Scontrol, w.cfg.CmdTimeout, resizeBatch(rep.Planned), plan)
	var first error
	for i, c := range rep.Planned {
		if err := errs[i]; err != nil {
			rep.Failed = append(rep.Failed, ResizeFailure{c, err})
			if first == nil {
				first = err
			}
			continue
		}
		rep.Applied = append(rep.Applied, c)
	}
	w.log.Info("resized pending jobs", "applied", len(rep.Applied), "failed", len(rep.Failed), "skipped", len(rep.Skipped))
	if first != nil {
		return rep, fmt.Errorf("resize jobs: %d of %d failed: %w", len(rep.Failed), len(rep.Planned), first)
	}
	return rep, nil
}

// PlanResize is the plan Resize writes: for each job in want that jobs
// (the latest read) lists as writable, the values that differ from its
// request, and for every other job why it is skipped. Pure: it reads and
// writes nothing, so a dry run plans exactly as the writer would.
func PlanResize(jobs []Job, want []Resize) (ResizeReport, error) {
	var rep ResizeReport
	byID := make(map[int64]*Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	want = slices.Clone(want)
	slices.SortFunc(want, func(a, b Resize) int { return cmp.Compare(a.JobID, b.JobID) })
	for _, r := range want {
		j, ok := byID[r.JobID]
		switch {
		case !ok:
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "not in the jobs read"})
			continue
		case j.State != policy.StatePending:
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "not pending"})
			continue
		case j.Held:
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "held"})
			continue
		case j.HetJob:
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "heterogeneous job"})
			continue
		case j.ArrayTasks != "":
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "array record"})
			continue
		case r.CPUs < 0 || r.MemoryMB < 0 || r.GPUs < 0:
			return rep, fmt.Errorf("resize plan: job %d: negative value in %+v", r.JobID, r)
		}
		// The type goes into scontrol's input as read from Slurm: one
		// with a space, '=', ':', ',' or a newline would add fields or a
		// whole command to the batch, so such a job is left alone.
		if err := CheckGRESType(j.GPUType); err != nil {
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, err.Error()})
			continue
		}
		ch := ResizeChange{Target: j.Target(), GPUType: j.GPUType}
		ch.JobID = r.JobID
		if r.CPUs > 0 && r.CPUs != j.CPUs {
			ch.CPUs, ch.From.CPUs = r.CPUs, j.CPUs
		}
		if r.MemoryMB > 0 && r.MemoryMB != j.MemoryMB {
			if j.Nodes > 1 {
				rep.Skipped = append(rep.Skipped, Skip{r.JobID, "memory: only a single-node job's can change"})
			} else {
				ch.MemoryMB, ch.From.MemoryMB = r.MemoryMB, j.MemoryMB
			}
		}
		if r.GPUs > 0 && r.GPUs != j.GPUs {
			if j.GPUs == 0 || j.Shards > 0 || j.Nodes > 1 {
				rep.Skipped = append(rep.Skipped, Skip{r.JobID, "GPU count: only a single-node whole-GPU request can change"})
			} else {
				ch.GPUs, ch.From.GPUs = r.GPUs, j.GPUs
			}
		}
		if ch.CPUs == 0 && ch.MemoryMB == 0 && ch.GPUs == 0 {
			rep.Skipped = append(rep.Skipped, Skip{r.JobID, "unchanged"})
			continue
		}
		rep.Planned = append(rep.Planned, ch)
	}
	return rep, nil
}

// CheckGRESType accepts a GRES type name as Slurm's gres.conf allows it
// (Type=h100, a100_80g, rtx-6000, mi300x.v2): letters, digits, '_', '-'
// and '.'; "" is an untyped request. Anything else is refused with an
// error that names the type.
func CheckGRESType(typ string) error {
	for _, r := range typ {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("GPU type %q: %q is not allowed in a Slurm GRES type name (letters, digits, '_', '-', '.')", typ, r)
		}
	}
	return nil
}

// resizeBatch renders the plan as scontrol commands, one line per job:
// "update jobid=12 NumCPUs=4 MinMemoryNode=8000 gres=gpu:h100:2".
func resizeBatch(plan []ResizeChange) []byte {
	var b bytes.Buffer
	for _, c := range plan {
		fmt.Fprintf(&b, "update jobid=%s", c.Target)
		if c.CPUs > 0 {
			fmt.Fprintf(&b, " NumCPUs=%d", c.CPUs)
		}
		if c.MemoryMB > 0 {
			fmt.Fprintf(&b, " MinMemoryNode=%d", c.MemoryMB)
		}
		if c.GPUs > 0 {
			if c.GPUType != "" {
				fmt.Fprintf(&b, " gres=gpu:%s:%d", c.GPUType, c.GPUs)
			} else {
				fmt.Fprintf(&b, " gres=gpu:%d", c.GPUs)
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
