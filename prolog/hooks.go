package prolog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
)

// Config is the hooks' validated settings.
type Config struct {
	Cluster  string // Slurm ClusterName, part of every usage record's key
	StateDir string // node state between prolog and epilog (tmpfs)
	SpoolDir string // usage records not yet in the database (persistent)
	MPSDir   string // per-GPU MPS pipe and log directories
	// ShardsPerGPU is how many shards gres.conf gives each GPU; 0 when the
	// node has no shard GRES (then no job is a shard job and no lookup runs).
	ShardsPerGPU int
	// DefaultMode is the compute mode a GPU returns to after a job.
	DefaultMode ComputeMode
	// KillStray kills processes found on a job's GPUs before it starts
	// (they are always reported).
	KillStray bool
	// Drain drains the node (through Deps.Drainer) with a reason naming the
	// GPU and the fault when the prolog finds a hardware fault.
	Drain bool
	// StoreTimeout bounds the database stage of a hook.
	StoreTimeout time.Duration
}

// Validate says which setting is wrong.
func (c Config) Validate() error {
	switch {
	case c.Cluster == "":
		return errors.New("cluster: empty (set Slurm's ClusterName)")
	case c.StateDir == "":
		return errors.New("state directory: empty")
	case c.SpoolDir == "":
		return errors.New("spool directory: empty")
	case c.MPSDir == "":
		return errors.New("MPS directory: empty")
	case c.ShardsPerGPU < 0:
		return fmt.Errorf("shards per GPU: %d, want 0 or more", c.ShardsPerGPU)
	case c.DefaultMode != ComputeDefault && c.DefaultMode != ComputeExclusiveProcess && c.DefaultMode != ComputeProhibited:
		return fmt.Errorf("default compute mode: %d is not a compute mode", c.DefaultMode)
	case c.StoreTimeout <= 0:
		return fmt.Errorf("database timeout: %s, want more than 0", c.StoreTimeout)
	}
	return nil
}

// Deps are the hooks' connections to the outside. Nil ones are skipped:
// no Library means no NVML work, no XIDs no kernel log check, no Shards no
// shard lookup, no Procs no killing (strays are only reported), no Store
// no database (records stay in the spool).
type Deps struct {
	Library Library
	MPS     MPS
	XIDs    XIDLog
	Shards  ShardLookup
	Drainer Drainer
	Procs   Processes
	Store   UsageStore
	Logger  *slog.Logger
	Now     func() time.Time // time.Now when nil
}

// Hooks runs the prolog, the epilog and the spool flush.
type Hooks struct {
	cfg   Config
	d     Deps
	state nodeState
	spool Spool
	log   *slog.Logger
}

// New checks cfg and returns the hooks.
func New(cfg Config, d Deps) (*Hooks, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Hooks{cfg: cfg, d: d, state: nodeState{dir: cfg.StateDir}, spool: Spool{Dir: cfg.SpoolDir}, log: d.Logger}, nil
}

// ErrBudget means a hook ran out of its time budget: it gives up on the
// rest of its GPU work, never fails the job for it.
var ErrBudget = errors.New("time budget exhausted")

// FaultError is the prolog's error for hardware faults, the only error for
// which a hook exits non-zero.
type FaultError struct{ Faults []Fault }

func (e *FaultError) Error() string { return "hardware fault: " + e.Reason() }

// Reason is the drain reason: every fault, in the order found.
func (e *FaultError) Reason() string {
	parts := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		parts[i] = f.String()
	}
	return "fairway: " + strings.Join(parts, "; ")
}

// Prolog prepares the job's GPUs: health checks first (a hardware fault
// returns *FaultError after draining the node), then for whole GPUs
// EXCLUSIVE_PROCESS and per-process accounting, for shards DEFAULT and the
// GPU's MPS daemon; processes left on the GPUs are reported or killed. It
// gives up when ctx ends (ErrBudget): NVML calls cannot be interrupted, so
// the work runs in a goroutine that is abandoned, and the process exits.
// Any error other than *FaultError must not fail the job.
func (h *Hooks) Prolog(ctx context.Context, job Job) error {
	if len(job.GPUs) == 0 {
		return nil
	}
	log := h.log.With("job_id", job.ID)
	if err := h.state.init(); err != nil {
		return err
	}
	// Noted before any NVML call, so a hung NVML still leaves the epilog
	// the job's start, GPUs and shards.
	start := h.d.Now().UTC().Truncate(time.Microsecond)
	rec := jobRecord{JobID: job.ID, Start: start, Shards: h.jobShards(ctx, log, job)}
	for _, m := range job.GPUs {
		rec.GPUs = append(rec.GPUs, gpuRecord{Minor: m})
	}
	if err := h.state.putJob(rec); err != nil {
		log.Warn("cannot note the job for its epilog", "err", err)
	}
	if h.d.Library == nil {
		return nil
	}
	faults, err := within(ctx, func() ([]Fault, error) { return h.prologGPUs(ctx, log, job, rec) })
	if err != nil {
		return err
	}
	if len(faults) == 0 {
		return nil
	}
	fe := &FaultError{Faults: faults}
	log.Error("hardware fault: failing the prolog", "reason", fe.Reason())
	if h.cfg.Drain && h.d.Drainer != nil {
		// The budget may be spent; the drain gets a few seconds of its own.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
		defer cancel()
		if err := h.d.Drainer.Drain(dctx, job.Node, fe.Reason()); err != nil {
			log.Error("cannot set the drain reason; Slurm drains the node anyway", "err", err)
		}
	}
	return fe
}

// drainTimeout bounds setting the drain reason after a fault.
const drainTimeout = 5 * time.Second

// within runs f in a goroutine and returns its result, or ErrBudget when ctx
// ends first; f is then abandoned (it may be blocked in a cgo call).
func within[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w: %w", ErrBudget, ctx.Err())
	}
}

// prologGPUs is the prolog's NVML work.
func (h *Hooks) prologGPUs(ctx context.Context, log *slog.Logger, job Job, rec jobRecord) ([]Fault, error) {
	if err := h.d.Library.Open(); err != nil {
		if errors.Is(err, ErrNoLibrary) {
			log.Info("NVML absent: GPU settings and health checks skipped", "err", err)
			return nil, nil
		}
		return nil, err
	}
	defer h.d.Library.Close()

	var faults []Fault
	devs := map[int]Device{}
	infos := map[int]DeviceInfo{}
	for i, g := range rec.GPUs {
		dev, err := h.d.Library.Device(g.Minor)
		if f, ok := lostFault(g.Minor, "", err); ok {
			faults = append(faults, f)
			continue
		}
		if err != nil {
			// Slurm handed out a GPU NVML does not list: gres.conf and the
			// hardware disagree, which a person must fix, but no proof of
			// a fault.
			log.Warn("GPU not found through NVML", "gpu", g.Minor, "err", err)
			continue
		}
		info, err := dev.Info()
		if f, ok := lostFault(g.Minor, "", err); ok {
			faults = append(faults, f)
			continue
		}
		if err != nil {
			log.Warn("cannot identify GPU", "gpu", g.Minor, "err", err)
			continue
		}
		rec.GPUs[i] = gpuRecord{Minor: g.Minor, UUID: info.UUID, Model: info.Model, MemoryTotalMB: info.MemoryTotalMB}
		infos[g.Minor] = info
		health, err := dev.Health()
		if f, ok := lostFault(g.Minor, info.UUID, err); ok {
			faults = append(faults, f)
			continue
		}
		if err != nil {
			log.Warn("cannot read GPU health", "gpu", g.Minor, "err", err)
		}
		for _, what := range health.Faults() {
			faults = append(faults, Fault{Minor: g.Minor, UUID: info.UUID, What: what})
		}
		devs[g.Minor] = dev
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	unlock, err := h.state.lock(ctx)
	if err != nil {
		if len(faults) > 0 {
			return faults, nil // the faults stand without the XID check
		}
		return nil, err
	}
	defer unlock()
	// Each GPU's state is read once and written right after each change
	// to it (only when it changed: file creation is most of a prolog's own
	// time). The budget may end this goroutine at any NVML or MPS call, and
	// a sharer or daemon left unrecorded would make the next prolog on the
	// GPU treat a live job's processes as strays.
	states := map[int]gpuState{}
	for minor := range infos {
		gs, err := h.state.gpu(minor)
		if err != nil {
			log.Warn("GPU state unreadable; starting it afresh", "gpu", minor, "err", err)
		}
		states[minor] = gs
	}
	saved := map[int]gpuState{}
	for minor, gs := range states {
		saved[minor] = gs.clone()
	}
	save := func(minor int, gs gpuState) {
		states[minor] = gs
		if gs.equal(saved[minor]) {
			return
		}
		if err := h.state.putGPU(minor, gs); err != nil {
			log.Warn("cannot save GPU state", "gpu", minor, "err", err)
			return
		}
		saved[minor] = gs.clone()
	}
	faults = append(faults, h.checkXIDs(ctx, log, infos, states)...)
	for _, minor := range slices.Sorted(maps.Keys(states)) {
		save(minor, states[minor])
	}
	if len(faults) > 0 {
		return faults, nil // leave a faulty GPU exactly as it is
	}

	shards := rec.Shards
	envWritten := false
	for i, g := range rec.GPUs {
		dev, ok := devs[g.Minor]
		if !ok {
			continue
		}
		gs := states[g.Minor].clone()
		persist := func() { save(g.Minor, gs.clone()) }
		switch {
		case shards < 0:
			h.prepareUnknown(log, dev, g, &gs, job.ID, persist)
			if gs.HeldExclusive {
				if e, err := dev.EnergyMillijoules(); err == nil {
					rec.GPUs[i].EnergyMJ = &e
				}
			}
		case shards == 0:
			h.prepareExclusive(ctx, log, dev, g, &gs, job.ID, persist)
			if e, err := dev.EnergyMillijoules(); err == nil {
				rec.GPUs[i].EnergyMJ = &e
			}
		default:
			h.prepareShared(ctx, log, dev, g, &gs, job.ID, persist)
			if !envWritten {
				l := mpsLimits(shards, h.cfg.ShardsPerGPU, g.MemoryTotalMB)
				env := mpsEnv(MPSPipeDir(h.cfg.MPSDir, g.Minor), DeviceInfo{Minor: g.Minor, UUID: g.UUID}, l)
				if err := writeFileAtomic(MPSEnvPath(h.cfg.StateDir, job.ID), env, 0o644, false); err != nil {
					log.Warn("cannot write the job's MPS environment", "gpu", g.Minor, "err", err)
				}
				envWritten = true
			} else {
				log.Warn("shard job on several GPUs: its tasks get MPS settings for the first only", "gpu", g.Minor)
			}
		}
		persist()
	}
	if err := h.state.putJob(rec); err != nil {
		log.Warn("cannot note the job for its epilog", "err", err)
	}
	return nil, nil
}

// lostFault turns "GPU lost" and "needs reset" errors into faults.
func lostFault(minor int, uuid string, err error) (Fault, bool) {
	switch {
	case errors.Is(err, ErrGPULost):
		return Fault{Minor: minor, UUID: uuid, What: "GPU is lost (fell off the bus)"}, true
	case errors.Is(err, ErrNeedsReset):
		return Fault{Minor: minor, UUID: uuid, What: "GPU needs a reset"}, true
	}
	return Fault{}, false
}

// checkXIDs reports fault XIDs the kernel logged for the job's GPUs since
// they were last judged, and moves each GPU's mark (in states) to the
// newest record. A GPU's first look only sets the mark: XIDs from before
// Fairway watched (a fault fixed by a reset long ago) must not drain a
// healthy node. Runs under the state lock.
func (h *Hooks) checkXIDs(ctx context.Context, log *slog.Logger, infos map[int]DeviceInfo, states map[int]gpuState) []Fault {
	if h.d.XIDs == nil || len(infos) == 0 {
		return nil
	}
	xids, last, err := h.d.XIDs.Read(ctx)
	if err != nil {
		log.Warn("cannot read XIDs from the kernel log", "err", err)
		return nil
	}
	minors := slices.Sorted(maps.Keys(infos))
	var faults []Fault
	for _, minor := range minors {
		info, gs := infos[minor], states[minor]
		if gs.XIDKnown {
			for _, x := range xids {
				if x.Seq <= gs.XIDSeq || x.PCI != info.PCI {
					continue
				}
				if what, ok := x.Fault(); ok {
					faults = append(faults, Fault{Minor: minor, UUID: info.UUID, What: what})
				}
			}
		}
		gs.XIDSeq, gs.XIDKnown = last, true
		states[minor] = gs
	}
	return faults
}

// jobShards is the job's shards on this node, or -1 when unknown.
func (h *Hooks) jobShards(ctx context.Context, log *slog.Logger, job Job) int {
	if job.Shards >= 0 {
		return job.Shards
	}
	if h.cfg.ShardsPerGPU == 0 {
		return 0 // the node has no shards to give
	}
	if h.d.Shards == nil {
		return -1
	}
	// The lookup may take half of what is left, so the exclusivity and
	// stray work that depends on its answer still has time when it fails.
	lctx, cancel := context.WithTimeout(ctx, remaining(ctx)/2)
	defer cancel()
	n, err := h.d.Shards.JobShards(lctx, job.ID)
	if err != nil {
		log.Warn("cannot look up the job's shards", "err", err)
		return -1
	}
	return n
}

// prepareExclusive gives a whole GPU to one job. persist saves gs after
// each change.
func (h *Hooks) prepareExclusive(ctx context.Context, log *slog.Logger, dev Device, g gpuRecord, gs *gpuState, jobID int64, persist func()) {
	if len(gs.Sharers) > 0 || len(gs.Unknown) > 0 || gs.MPS {
		// Slurm gives a GPU whole or as shards, never both, so sharers
		// here were left by epilogs that never ran.
		log.Warn("GPU given whole but state lists shard jobs: clearing", "gpu", g.Minor, "sharers", gs.Sharers, "unknown", gs.Unknown)
		h.stopMPS(ctx, log, g, gs)
		gs.Sharers, gs.Unknown, gs.HeldExclusive = nil, nil, false
		persist()
	}
	// Slurm gives a whole GPU to one job: no other job's process belongs
	// on it.
	h.strays(log, dev, g.Minor, []int64{jobID})
	if err := dev.SetComputeMode(ComputeExclusiveProcess); err != nil {
		log.Warn("cannot make GPU exclusive", "gpu", g.Minor, "err", err)
	}
	if err := dev.StartAccounting(); err != nil {
		log.Warn("cannot start per-process accounting", "gpu", g.Minor, "err", err)
	}
}

// prepareShared adds a shard job to its GPU; the first sharer switches the
// GPU to DEFAULT and starts its MPS daemon. persist saves gs after each
// change.
func (h *Hooks) prepareShared(ctx context.Context, log *slog.Logger, dev Device, g gpuRecord, gs *gpuState, jobID int64, persist func()) {
	first := len(gs.Sharers) == 0 && len(gs.Unknown) == 0
	if !slices.Contains(gs.Sharers, jobID) {
		gs.Sharers = append(gs.Sharers, jobID)
		persist()
	}
	if first {
		h.strays(log, dev, g.Minor, h.holders(log, g.Minor, *gs, jobID))
		if err := dev.SetComputeMode(ComputeDefault); err != nil {
			log.Warn("cannot set GPU compute mode to default", "gpu", g.Minor, "err", err)
		}
	} else {
		h.shareAgain(log, dev, g.Minor, gs, persist)
	}
	if gs.MPS || h.d.MPS == nil {
		return
	}
	if err := h.d.MPS.Start(ctx, DeviceInfo{Minor: g.Minor, UUID: g.UUID}); err != nil {
		log.Warn("cannot start MPS: the job shares the GPU without limits", "gpu", g.Minor, "err", err)
		return
	}
	gs.MPS = true
	persist()
	log.Info("MPS started", "gpu", g.Minor)
}

// prepareUnknown gives the GPU to a job whose shard lookup failed: it
// holds the GPU whole or holds shards of it, and the prolog cannot tell
// which. It does not fail open. Slurm never gives a GPU whole while shard
// jobs hold it, so when other jobs hold the GPU this job holds shards too,
// and the GPU stays shared. Alone on the GPU, the job gets it as a whole
// GPU would: strays hunted, EXCLUSIVE_PROCESS. That is right if it holds
// the GPU whole; if it holds shards, the first known sharer's prolog finds
// it recorded as Unknown and returns the GPU to DEFAULT (shareAgain), so
// a failed lookup costs sharing only until then.
func (h *Hooks) prepareUnknown(log *slog.Logger, dev Device, g gpuRecord, gs *gpuState, jobID int64, persist func()) {
	holders := h.holders(log, g.Minor, *gs, jobID)
	// Noted, so that a later sharer's prolog does not take this job for
	// absent and its processes for strays.
	if !slices.Contains(gs.Unknown, jobID) {
		gs.Unknown = append(gs.Unknown, jobID)
		persist()
	}
	if len(holders) > 1 {
		log.Warn("cannot tell whether the job holds shards; other jobs hold the GPU, so it holds shards too: GPU stays shared", "gpu", g.Minor, "holders", holders)
		h.shareAgain(log, dev, g.Minor, gs, persist)
		return
	}
	log.Warn("cannot tell whether the job holds shards: GPU made exclusive to it, as for a whole GPU", "gpu", g.Minor)
	h.strays(log, dev, g.Minor, holders)
	if err := dev.SetComputeMode(ComputeExclusiveProcess); err != nil {
		log.Warn("cannot make GPU exclusive", "gpu", g.Minor, "err", err)
		return
	}
	gs.HeldExclusive = true
	persist()
	// Alone on the GPU its processes are the only ones accounted, so its
	// usage is measured as a whole GPU's; shareAgain ends that if another
	// job comes.
	if err := dev.StartAccounting(); err != nil {
		log.Warn("cannot start per-process accounting", "gpu", g.Minor, "err", err)
	}
}

// shareAgain returns a GPU that prepareUnknown made exclusive to DEFAULT,
// now that another job shares it.
func (h *Hooks) shareAgain(log *slog.Logger, dev Device, minor int, gs *gpuState, persist func()) {
	if !gs.HeldExclusive {
		return
	}
	if err := dev.SetComputeMode(ComputeDefault); err != nil {
		log.Warn("cannot return the GPU to compute mode default for its sharers", "gpu", minor, "err", err)
		return
	}
	gs.HeldExclusive = false
	persist()
	log.Info("GPU shared again: compute mode default", "gpu", minor)
}

// holders are the jobs that hold shards of GPU minor, or may (their lookup
// failed), with jobID first: the ones in its state, and those whose
// prolog noted the GPU in their job record but was cut off before it
// recorded them in the GPU's state. Runs under the state lock.
func (h *Hooks) holders(log *slog.Logger, minor int, gs gpuState, jobID int64) []int64 {
	out := []int64{jobID}
	add := func(id int64) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, id := range gs.Sharers {
		add(id)
	}
	for _, id := range gs.Unknown {
		add(id)
	}
	recs, err := h.state.jobs()
	if err != nil {
		log.Warn("cannot read every job record: their processes may be taken for strays", "err", err)
	}
	for _, r := range recs {
		if r.Shards != 0 && slices.ContainsFunc(r.GPUs, func(g gpuRecord) bool { return g.Minor == minor }) {
			add(r.JobID)
		}
	}
	return out
}

func (h *Hooks) stopMPS(ctx context.Context, log *slog.Logger, g gpuRecord, gs *gpuState) {
	if !gs.MPS || h.d.MPS == nil {
		return
	}
	if err := h.d.MPS.Stop(ctx, DeviceInfo{Minor: g.Minor, UUID: g.UUID}); err != nil {
		log.Warn("cannot stop MPS", "gpu", g.Minor, "err", err)
		return
	}
	gs.MPS = false
	log.Info("MPS stopped", "gpu", g.Minor)
}

// strays reports, and with KillStray kills, compute processes on a GPU that
// no job should be using yet. Killing is the last resort and aimed: each
// process is pinned (pidfd) before it is judged, and only a process that
// belongs to no job in holders (the jobs Slurm gave this GPU), and that is
// no system process and not root's MPS server, is killed, through its pin.
// A number NVML listed may belong to another process by the time it is
// pinned, so the GPU's processes are listed again after the pins and only
// a pinned process still listed is judged: a pinned live process keeps
// its number, so a number NVML lists after the pin is that process's.
// Without Procs nothing is killed.
func (h *Hooks) strays(log *slog.Logger, dev Device, minor int, holders []int64) {
	pids, err := dev.Processes()
	if err != nil {
		log.Warn("cannot list processes on GPU", "gpu", minor, "err", err)
		return
	}
	var pins []PinnedProcess
	defer func() {
		for _, p := range pins {
			p.Close()
		}
	}()
	for _, pid := range pids {
		if pid <= 1 || h.d.Procs == nil {
			log.Warn("process on GPU: left alone", "gpu", minor, "pid", pid)
			continue
		}
		p, err := h.d.Procs.Pin(pid)
		if err != nil {
			log.Warn("process on GPU: cannot judge it, left alone", "gpu", minor, "pid", pid, "err", err)
			continue
		}
		pins = append(pins, p)
	}
	if len(pins) == 0 {
		return
	}
	again, err := dev.Processes()
	if err != nil {
		log.Warn("cannot list processes on GPU again after pinning them: all left alone", "gpu", minor, "err", err)
		return
	}
	holds := func(id int64) bool { return slices.Contains(holders, id) }
	for _, p := range pins {
		info := p.Info()
		attrs := []any{"gpu", minor, "pid", info.PID, "uid", info.UID, "command", info.Comm, "job_id_of_process", info.JobID}
		if !slices.Contains(again, info.PID) {
			log.Warn("process on GPU: gone from the GPU before it was judged, left alone", attrs...)
			continue
		}
		switch why := strayVerdict(info, holds); {
		case why != "":
			log.Warn("process on GPU: left alone ("+why+")", attrs...)
		case !h.cfg.KillStray:
			log.Warn("stray process on GPU", attrs...)
		default:
			if err := p.Kill(); err != nil {
				log.Error("stray process on GPU: cannot kill it", append(attrs, "err", err)...)
				continue
			}
			log.Warn("stray process on GPU: killed", attrs...)
		}
	}
}

// Epilog closes the job's usage records, one per GPU, and returns its GPUs
// to the node's default (the last shard job on a GPU stops its MPS daemon).
// NVML gets at most half of ctx's remaining time: whatever it did not
// measure is left unknown, and the records identify the job's GPUs from
// Slurm's environment regardless. Records are spooled durably, then
// shipped with the spool's backlog. Errors are logged, and returned only so
// the caller can tell; the epilog must not fail the job for any of them.
func (h *Hooks) Epilog(ctx context.Context, job Job) error {
	log := h.log.With("job_id", job.ID)
	if err := h.state.init(); err != nil {
		log.Warn("no state directory: GPU settings stay as they are", "err", err)
	}
	rec, haveRec, err := h.state.job(job.ID)
	if err != nil {
		log.Warn("job state unreadable; records without its start", "err", err)
	}
	gpus := job.GPUs
	if len(gpus) == 0 {
		for _, g := range rec.GPUs {
			gpus = append(gpus, g.Minor)
		}
	}
	var records []Usage
	if len(gpus) > 0 {
		end := h.d.Now().UTC().Truncate(time.Microsecond)
		if !haveRec {
			rec = jobRecord{JobID: job.ID, Shards: h.jobShards(ctx, log, job)}
		}
		measured := map[int]Usage{}
		if h.d.Library != nil {
			nctx, cancel := context.WithTimeout(ctx, remaining(ctx)/2)
			measured, err = within(nctx, func() (map[int]Usage, error) { return h.epilogGPUs(nctx, log, job, rec, gpus, end) })
			cancel()
			if err != nil {
				log.Warn("GPU measurements incomplete: records carry what Slurm said", "err", err)
			}
		}
		records = h.records(job, rec, gpus, end, measured)
	}
	var errs []error
	spooled := true
	if len(records) > 0 {
		if err := h.spool.Put(records); err != nil {
			spooled = false
			msg := "spool unwritable or full: shipping the records directly"
			if h.d.Store == nil {
				msg = "spool unwritable or full, and no database configured"
			}
			log.Error(msg, "spool", h.cfg.SpoolDir, "err", err)
			errs = append(errs, err)
		}
	}
	// A record neither spooled nor stored is written whole to the log, the
	// one place left that an admin can recover it from.
	lost := func(why string) {
		for _, u := range records {
			log.Error("usage record lost ("+why+")", "key", u.Key(), "record", fmt.Sprintf("%+v", u))
		}
	}
	if !spooled && h.d.Store == nil {
		lost("spool failed, no database configured")
	} else if err := h.ship(ctx, log, records); err != nil {
		if !spooled {
			lost("spool and database both failed")
		}
		errs = append(errs, err)
	}
	if err := h.state.dropJob(job.ID); err != nil {
		log.Warn("cannot clear job state", "err", err)
	}
	return errors.Join(errs...)
}

// remaining is the time left before ctx's deadline (a minute without one).
func remaining(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return time.Minute
}

// epilogGPUs is the epilog's NVML work: measurements per GPU minor, and the
// GPUs back to the default mode.
func (h *Hooks) epilogGPUs(ctx context.Context, log *slog.Logger, job Job, rec jobRecord, gpus []int, end time.Time) (map[int]Usage, error) {
	if err := h.d.Library.Open(); err != nil {
		if errors.Is(err, ErrNoLibrary) {
			log.Info("NVML absent: records without GPU measurements", "err", err)
			return nil, nil
		}
		return nil, err
	}
	defer h.d.Library.Close()
	unlock, err := h.state.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	out := map[int]Usage{}
	for _, minor := range gpus {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		dev, err := h.d.Library.Device(minor)
		if err != nil {
			log.Warn("GPU not found through NVML", "gpu", minor, "err", err)
			continue
		}
		var u Usage
		info, err := dev.Info()
		if err != nil {
			log.Warn("cannot identify GPU", "gpu", minor, "err", err)
		} else {
			u.GPUUUID, u.GPUModel = info.UUID, info.Model
			mem := info.MemoryTotalMB
			u.MemTotalMB = &mem
		}
		gs, err := h.state.gpu(minor)
		if err != nil {
			gs = gpuState{}
		}
		switch {
		case rec.Shards == 0:
			h.measure(log, dev, minor, rec, &u)
			h.resetMode(log, dev, minor)
		case rec.Shards > 0 || slices.Contains(gs.Sharers, job.ID) || slices.Contains(gs.Unknown, job.ID):
			if gs.HeldExclusive && len(gs.Sharers) == 0 && slices.Equal(gs.Unknown, []int64{job.ID}) {
				// Held whole since its prolog (shard lookup failed, no job
				// came to share): the accounting is this job's alone.
				h.measure(log, dev, minor, rec, &u)
			}
			gs.Sharers = slices.DeleteFunc(gs.Sharers, func(id int64) bool { return id == job.ID })
			gs.Unknown = slices.DeleteFunc(gs.Unknown, func(id int64) bool { return id == job.ID })
			if len(gs.Sharers) == 0 && len(gs.Unknown) == 0 {
				h.stopMPS(ctx, log, gpuRecord{Minor: minor, UUID: info.UUID}, &gs)
				h.resetMode(log, dev, minor)
				gs.HeldExclusive = false
			}
			if err := h.state.putGPU(minor, gs); err != nil {
				log.Warn("cannot save GPU state", "gpu", minor, "err", err)
			}
		}
		out[minor] = u
	}
	return out, nil
}

// measure fills u from NVML's accounting and energy counters.
func (h *Hooks) measure(log *slog.Logger, dev Device, minor int, rec jobRecord, u *Usage) {
	stats, err := dev.Accounting()
	if err != nil {
		log.Warn("no per-process accounting", "gpu", minor, "err", err)
	} else {
		avg, mx, peak := summarize(stats, rec.Start)
		u.UtilAvgPct, u.UtilMaxPct, u.MemPeakMB = &avg, &mx, &peak
	}
	var start *uint64
	for _, g := range rec.GPUs {
		if g.Minor == minor {
			start = g.EnergyMJ
		}
	}
	if start == nil {
		return
	}
	if e, err := dev.EnergyMillijoules(); err == nil && e >= *start {
		j := float64(e-*start) / 1000
		u.EnergyJoules = &j
	}
}

func (h *Hooks) resetMode(log *slog.Logger, dev Device, minor int) {
	if err := dev.SetComputeMode(h.cfg.DefaultMode); err != nil {
		log.Warn("cannot return GPU to the default compute mode", "gpu", minor, "mode", h.cfg.DefaultMode, "err", err)
	}
}

// records builds one record per GPU from Slurm's view, the prolog's note and
// whatever NVML measured.
func (h *Hooks) records(job Job, rec jobRecord, gpus []int, end time.Time, measured map[int]Usage) []Usage {
	out := make([]Usage, 0, len(gpus))
	for _, minor := range gpus {
		u := measured[minor]
		u.Cluster, u.JobID, u.Node, u.GPUMinor, u.EndedAt = h.cfg.Cluster, job.ID, job.Node, minor, end
		u.StartedAt = rec.Start
		u.Shards = max(rec.Shards, 0)
		if job.Shards > 0 {
			u.Shards = job.Shards
		}
		for _, g := range rec.GPUs {
			if g.Minor != minor {
				continue
			}
			if u.GPUUUID == "" {
				u.GPUUUID, u.GPUModel = g.UUID, g.Model
			}
			if u.MemTotalMB == nil && g.MemoryTotalMB > 0 {
				mem := g.MemoryTotalMB
				u.MemTotalMB = &mem
			}
		}
		out = append(out, u)
	}
	return out
}

// hookBacklog bounds the spooled records one hook ships. After a long
// database outage a busy node's spool holds a great many; reading and
// storing all of them in one epilog could outlast slurmd's
// PrologEpilogTimeout, which drains the node. The next hooks, or `fairway
// spool flush`, ship the rest.
const hookBacklog = 2000

// ship stores fresh records and the spool's backlog in one transaction and
// then removes them from the spool. The spool keeps them on failure.
func (h *Hooks) ship(ctx context.Context, log *slog.Logger, fresh []Usage) error {
	if h.d.Store == nil {
		// Nothing can be shipped, so the backlog is not read: without a
		// database it only grows, and every epilog would parse all of it.
		if len(fresh) > 0 {
			log.Info("no database configured: records stay in the spool", "records", len(fresh), "spool", h.cfg.SpoolDir)
		}
		return nil
	}
	backlog, bad, err := h.spool.PendingUpTo(hookBacklog)
	if err != nil {
		log.Warn("cannot read the spool", "err", err)
	}
	for _, n := range bad {
		log.Error("spooled file is not a usage record: left in place", "file", n)
	}
	all := mergeUsage(fresh, backlog)
	if len(all) == 0 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, min(h.cfg.StoreTimeout, remaining(ctx)))
	defer cancel()
	// Refused records (RefusedError) are set aside, not kept for the next
	// hook: the database would refuse them again, and each ship would
	// carry them along for ever.
	stored, refused, err := h.spool.setAsideRefused(all, h.d.Store.PutUsage(sctx, all), log)
	if err != nil {
		log.Warn("database unreachable or this login not allowed: records stay in the spool for the next hook or `fairway spool flush`", "records", len(all), "err", err)
		return fmt.Errorf("store usage: %w", err)
	}
	if err := h.spool.Remove(stored); err != nil {
		// Stored but still spooled: the next ship stores them again, which
		// the keys turn into a no-op.
		log.Warn("stored records not removed from the spool", "err", err)
	}
	log.Info("usage records stored", "records", len(stored), "backlog", len(all)-len(fresh), "refused", refused)
	return nil
}

// mergeUsage is a and b without duplicate keys.
func mergeUsage(a, b []Usage) []Usage {
	seen := map[string]bool{}
	var out []Usage
	for _, u := range append(slices.Clip(a), b...) {
		if k := u.Key(); !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	return out
}
