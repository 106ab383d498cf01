package serve

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// Sink is every effect a cycle has outside the process: values written to
// Slurm, pending jobs resized, the job_submit.lua table, and the records
// kept in the accounting database. A cycle never asks whether it is a dry
// run: it hands its decisions to a Sink, and a Planner is the Sink that
// writes nothing. That keeps "writes nothing" a property of one type
// instead of a flag every step must remember to check.
type Sink interface {
	// WriteValues writes the wanted values of pending jobs and reports
	// what changed (slurmctl.Writer.Write).
	WriteValues(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error)
	// Prime learns the values Slurm holds now (slurmctl.Writer.Prime).
	Prime(ctx context.Context) (int, error)
	// Resize changes pending jobs' requests (slurmctl.ResizeWriter.Resize).
	Resize(ctx context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error)
	// WriteTable replaces the job_submit.lua table at path with table.
	WriteTable(path string, table []byte) error
	// FrozenPriorities reads, for jobs, the admin priorities an earlier
	// rest-priority serve wrote and the nice each job had before
	// (accounting.Store.FrozenPriorities); none where records are not
	// kept.
	FrozenPriorities(ctx context.Context, cluster string, jobs []slurmctl.Job) (map[int64]slurmctl.Frozen, error)
	// HandBack gives frozen priorities back to multifactor, restoring
	// each job's nice (slurmctl.Writer.HandBack).
	HandBack(ctx context.Context, jobs []slurmctl.Job, frozen map[int64]slurmctl.Frozen) (slurmctl.HandBackReport, error)
	// Adopt tells a rest-priority writer which jobs it froze before a
	// restart, so their nice is carried on (slurmctl.Writer.Adopt).
	Adopt(frozen map[int64]slurmctl.Frozen)
	// PowerTo is where a cycle's power actions go, given where the power
	// saver sends them.
	PowerTo(to PowerSink) PowerSink
	// Stamp marks a cycle's row and decisions with what became of their
	// effects before they are recorded: the one place a record's dry_run
	// is set.
	Stamp(c *accounting.Cycle, ds []accounting.Decision)
	Recorder
}

// HandBacker is the part of a ValueWriter that carries rest-priority's
// admin priorities across serves (slurmctl.Writer).
type HandBacker interface {
	HandBack(ctx context.Context, jobs []slurmctl.Job, frozen map[int64]slurmctl.Frozen) (slurmctl.HandBackReport, error)
	Adopt(frozen map[int64]slurmctl.Frozen)
}

// FrozenLog is where the admin priorities serve wrote are kept
// (accounting.Store, the decision log).
type FrozenLog interface {
	FrozenPriorities(ctx context.Context, cluster string, ids []int64) (map[int64]accounting.FrozenPriority, error)
}

// frozenFrom reads the frozen priorities of jobs from rec, when it keeps
// them.
func frozenFrom(ctx context.Context, rec any, cluster string, jobs []slurmctl.Job) (map[int64]slurmctl.Frozen, error) {
	fl, ok := rec.(FrozenLog)
	if !ok || len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	for i := range jobs {
		ids[i] = jobs[i].ID
	}
	got, err := fl.FrozenPriorities(ctx, cluster, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]slurmctl.Frozen, len(got))
	for id, f := range got {
		out[id] = slurmctl.Frozen{Priority: f.Priority, Nice: f.Nice}
	}
	return out, nil
}

// ValueWriter writes the wanted values of pending jobs (slurmctl.Writer).
type ValueWriter interface {
	Write(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error)
	Prime(ctx context.Context) (int, error)
}

// Resizer changes pending jobs' requests (slurmctl.ResizeWriter).
type Resizer interface {
	Resize(ctx context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error)
}

// Live is the Sink of a serve that writes: Slurm through Values and
// Resizes, the table on the local disk, records to the database.
type Live struct {
	Values  ValueWriter
	Resizes Resizer // nil when resource rewriting is off
	Recorder
}

// WriteValues implements Sink.
func (l *Live) WriteValues(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	return l.Values.Write(ctx, jobs, want)
}

// Prime implements Sink.
func (l *Live) Prime(ctx context.Context) (int, error) { return l.Values.Prime(ctx) }

// FrozenPriorities implements Sink.
func (l *Live) FrozenPriorities(ctx context.Context, cluster string, jobs []slurmctl.Job) (map[int64]slurmctl.Frozen, error) {
	return frozenFrom(ctx, l.Recorder, cluster, jobs)
}

// HandBack implements Sink.
func (l *Live) HandBack(ctx context.Context, jobs []slurmctl.Job, frozen map[int64]slurmctl.Frozen) (slurmctl.HandBackReport, error) {
	hb, ok := l.Values.(HandBacker)
	if !ok {
		return slurmctl.HandBackReport{}, fmt.Errorf("hand back %d admin priorities: the value writer %T cannot", len(frozen), l.Values)
	}
	return hb.HandBack(ctx, jobs, frozen)
}

// Adopt implements Sink.
func (l *Live) Adopt(frozen map[int64]slurmctl.Frozen) {
	if hb, ok := l.Values.(HandBacker); ok {
		hb.Adopt(frozen)
	}
}

// Resize implements Sink.
func (l *Live) Resize(ctx context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error) {
	if l.Resizes == nil {
		return slurmctl.ResizeReport{}, fmt.Errorf("resize: no resize writer configured")
	}
	return l.Resizes.Resize(ctx, jobs, want)
}

// WriteTable implements Sink.
func (l *Live) WriteTable(path string, table []byte) error { return writeFileAtomic(path, table) }

// PowerTo implements Sink: power actions go where the saver sends them.
func (l *Live) PowerTo(to PowerSink) PowerSink { return to }

// Stamp implements Sink: what Live did is what the records say already.
func (l *Live) Stamp(*accounting.Cycle, []accounting.Decision) {}

// Planner is the Sink of a dry run, of explain and of a follower: it works
// out what each write would change, keeps it, and reports it applied, the
// way Nomad's in-memory planner returns a fully committed plan, so that
// whoever hands it effects carries on exactly as after a real write. It
// writes nothing to Slurm or the disk, and stamps the records of its
// cycles as planned (dry_run). Records go to Recorder when one is set (a
// dry-run serve keeps its shadow decision log), else they are kept in
// memory.
type Planner struct {
	Recorder Recorder // nil: keep records in memory only

	// What would have happened, for tests and callers that print it.
	Tables      map[string][]byte       // path → the table that would be written
	ValueWrites int                     // WriteValues calls that planned a change
	Resizes     []slurmctl.ResizeReport // only without a Recorder (Resize)
	Decisions   []accounting.Decision
	Finished    []policy.Job
	Cycles      []accounting.Cycle
	Predictions []accounting.Prediction

	held map[int64]int64 // values as they would be after the planned writes
}

// NewPlanner returns a Planner whose value diffs start from held (what
// Slurm is believed to hold; nil for nothing known) and whose records go
// to rec (nil: kept in memory).
func NewPlanner(rec Recorder, held map[int64]int64) *Planner {
	return &Planner{Recorder: rec, Tables: map[string][]byte{}, held: maps.Clone(held)}
}

// WriteValues implements Sink: the values that differ from what the
// Planner believes Slurm holds, reported applied.
func (p *Planner) WriteValues(_ context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	rep := slurmctl.Report{Planned: changes(jobs, want, p.held)}
	rep.Applied = rep.Planned
	if len(rep.Planned) > 0 {
		p.ValueWrites++
	}
	p.held = maps.Clone(want)
	return rep, nil
}

// changes are the values of want that differ from held, for the jobs in
// jobs, in jobs' order.
func changes(jobs []slurmctl.Job, want, held map[int64]int64) []slurmctl.Change {
	var out []slurmctl.Change
	for _, j := range jobs {
		v, ok := want[j.ID]
		if !ok {
			continue
		}
		old, known := held[j.ID]
		if known && old == v {
			continue
		}
		out = append(out, slurmctl.Change{JobID: j.ID, Target: j.Target(), From: old, To: v, FromKnown: known})
	}
	return out
}

// FrozenPriorities implements Sink: from the Recorder, when it keeps them.
func (p *Planner) FrozenPriorities(ctx context.Context, cluster string, jobs []slurmctl.Job) (map[int64]slurmctl.Frozen, error) {
	return frozenFrom(ctx, p.Recorder, cluster, jobs)
}

// HandBack implements Sink: every hand-back planned and reported made.
func (p *Planner) HandBack(_ context.Context, jobs []slurmctl.Job, frozen map[int64]slurmctl.Frozen) (slurmctl.HandBackReport, error) {
	var rep slurmctl.HandBackReport
	for _, j := range jobs {
		if f, ok := frozen[j.ID]; ok {
			rep.Planned = append(rep.Planned, slurmctl.HandBackOne{JobID: j.ID, Target: j.Target(), Frozen: f})
		}
	}
	rep.Applied = rep.Planned
	return rep, nil
}

// Adopt implements Sink: a Planner writes no priorities.
func (p *Planner) Adopt(map[int64]slurmctl.Frozen) {}

// Prime implements Sink: a Planner learns nothing from Slurm.
func (p *Planner) Prime(context.Context) (int, error) { return len(p.held), nil }

// Resize implements Sink: the plan, checked exactly as the writer checks
// it (slurmctl.PlanResize), reported applied. Like the records, it is
// kept in Resizes only without a Recorder: a Planner with one is a dry-run
// serve's, which plans at every cycle for as long as it runs.
func (p *Planner) Resize(_ context.Context, jobs []slurmctl.Job, want []slurmctl.Resize) (slurmctl.ResizeReport, error) {
	rep, err := slurmctl.PlanResize(jobs, want)
	if err == nil {
		rep.Applied = rep.Planned
	}
	if p.Recorder == nil {
		p.Resizes = append(p.Resizes, rep)
	}
	return rep, err
}

// WriteTable implements Sink: the table is kept, not written.
func (p *Planner) WriteTable(path string, table []byte) error {
	p.Tables[path] = table
	return nil
}

// PowerTo implements Sink: power actions are planned.
func (p *Planner) PowerTo(to PowerSink) PowerSink { return to.Planner() }

// Stamp implements Sink: the cycle and its decisions were planned, and
// nothing was written to Slurm.
func (p *Planner) Stamp(c *accounting.Cycle, ds []accounting.Decision) {
	if c != nil {
		c.Planned, c.Written, c.WriteErrors = true, 0, 0
	}
	for i := range ds {
		ds[i].Planned = true
	}
}

// RecordFinished implements Recorder.
func (p *Planner) RecordFinished(ctx context.Context, source string, jobs []policy.Job) (accounting.Summary, error) {
	if p.Recorder != nil {
		return p.Recorder.RecordFinished(ctx, source, jobs)
	}
	p.Finished = append(p.Finished, jobs...)
	return accounting.Summary{}, nil
}

// RecordDecisions implements Recorder.
func (p *Planner) RecordDecisions(ctx context.Context, ds []accounting.Decision) (int, error) {
	if p.Recorder != nil {
		return p.Recorder.RecordDecisions(ctx, ds)
	}
	p.Decisions = append(p.Decisions, ds...)
	return len(ds), nil
}

// RecordCycle implements Recorder.
func (p *Planner) RecordCycle(ctx context.Context, c accounting.Cycle) error {
	if p.Recorder != nil {
		return p.Recorder.RecordCycle(ctx, c)
	}
	p.Cycles = append(p.Cycles, c)
	return nil
}

// RecordPredictions implements Recorder.
func (p *Planner) RecordPredictions(ctx context.Context, ps []accounting.Prediction) error {
	if p.Recorder != nil {
		return p.Recorder.RecordPredictions(ctx, ps)
	}
	p.Predictions = append(p.Predictions, ps...)
	return nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory, synced, then renamed over the old one, so a reader sees
// either the old file or the new one, never a part, and syncs the
// directory, so the new name outlives a power cut.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Readable by its owner (SlurmUser, as serve and slurmctld run) and
	// group only: the table names users and their jobs, which
	// PrivateData hides from other users.
	if err := f.Chmod(0o640); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// The rename lives in the directory: until it is synced a power cut
	// can take the new name away, and a spill's records with it, though
	// the caller has already let them go from memory. A directory serve
	// may write in but not read (a site's table directory, mode 0300) is
	// left unsynced: the file is written, and the buffer's own directory
	// is serve's.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		defer d.Close()
		if err := d.Sync(); err != nil {
			return fmt.Errorf("write %s: sync its directory: %w", path, err)
		}
	}
	return nil
}
