package prolog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/fairway-hpc/fairway/prolog/nvmltest"
	"github.com/google/go-cmp/cmp"
)

// syncBuffer is a log sink safe for the goroutines a hook may abandon.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// memStore is a UsageStore with the database's key semantics: a record
// whose key is stored already is ignored.
type memStore struct {
	mu    sync.Mutex
	rows  map[string]Usage
	calls int
	fail  error
	// refuse, when set, gives the reason the database refuses a record
	// ("" stores it), as fairway_record_gpu_usage refuses a node's login.
	refuse func(Usage) string
	sent   []string // keys of every record offered, in order
}

func (m *memStore) PutUsage(_ context.Context, us []Usage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	for _, u := range us {
		m.sent = append(m.sent, u.Key())
	}
	if m.fail != nil {
		return m.fail
	}
	if m.rows == nil {
		m.rows = map[string]Usage{}
	}
	var refused []Refusal
	for _, u := range us {
		if m.refuse != nil {
			if why := m.refuse(u); why != "" {
				refused = append(refused, Refusal{Usage: u, Reason: why})
				continue
			}
		}
		if _, ok := m.rows[u.Key()]; !ok {
			m.rows[u.Key()] = u
		}
	}
	if len(refused) > 0 {
		return &RefusedError{Refused: refused}
	}
	return nil
}

// sorted returns the stored records by job, then GPU.
func (m *memStore) sorted() []Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Usage
	for _, u := range m.rows {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Usage) int {
		if a.JobID != b.JobID {
			return int(a.JobID - b.JobID)
		}
		return a.GPUMinor - b.GPUMinor
	})
	return out
}

type fakeMPS struct {
	mu            sync.Mutex
	starts, stops []int
}

func (f *fakeMPS) Start(_ context.Context, g DeviceInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, g.Minor)
	return nil
}

func (f *fakeMPS) Stop(_ context.Context, g DeviceInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, g.Minor)
	return nil
}

// shardMap is a ShardLookup: jobs not in it hold whole GPUs.
type shardMap map[int64]int

func (s shardMap) JobShards(_ context.Context, id int64) (int, error) { return s[id], nil }

type fakeXIDs struct {
	xids []XID
	last uint64
}

func (f *fakeXIDs) Read(context.Context) ([]XID, uint64, error) { return f.xids, f.last, nil }

type fakeDrainer struct{ node, reason string }

func (f *fakeDrainer) Drain(_ context.Context, node, reason string) error {
	f.node, f.reason = node, reason
	return nil
}

// rig is one node: a mock DGX H100 and hooks over it, with a clock that a
// test moves.
type rig struct {
	m     *nvmltest.Machine
	h     *Hooks
	cfg   Config
	store *memStore
	mps   *fakeMPS
	drain *fakeDrainer
	xids  *fakeXIDs
	log   *syncBuffer
	now   time.Time
	proc  string // the /proc the hooks read for the processes they judge
}

func newRig(t *testing.T, modify func(*Config, *Deps)) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{
		m:     nvmltest.New(8),
		store: &memStore{},
		mps:   &fakeMPS{},
		drain: &fakeDrainer{},
		xids:  &fakeXIDs{last: 100},
		log:   &syncBuffer{},
		now:   time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
	}
	r.proc = filepath.Join(dir, "proc")
	r.cfg = Config{
		Cluster: "lab", StateDir: filepath.Join(dir, "state"), SpoolDir: filepath.Join(dir, "spool"),
		MPSDir: filepath.Join(dir, "mps"), ShardsPerGPU: 16, DefaultMode: ComputeDefault, Drain: true,
		StoreTimeout: 2 * time.Second,
	}
	d := Deps{
		Library: NewNVML(r.m), MPS: r.mps, XIDs: r.xids, Shards: shardMap{}, Drainer: r.drain, Store: r.store, Procs: ProcFS{Root: r.proc},
		Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return r.now },
	}
	if modify != nil {
		modify(&r.cfg, &d)
	}
	h, err := New(r.cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

// spawn starts a real process (so a kill is real) and describes it in the
// rig's /proc: its real uid, its /proc/PID/cgroup and, when exe is not
// empty, its executable. It returns the process and a channel closed when
// it exits.
func (r *rig) spawn(t *testing.T, uid int, cgroup, exe string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	p := exec.Command("sleep", "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	t.Cleanup(func() { p.Process.Kill(); <-done })
	dir := filepath.Join(r.proc, strconv.Itoa(p.Process.Pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("Name:\tsleep\nState:\tS (sleeping)\nPid:\t%d\nUid:\t%d\t%d\t%d\t%d\n", p.Process.Pid, uid, uid, uid, uid)
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
	if exe != "" {
		if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
	}
	return p, done
}

// alive says whether the process behind done still runs.
func alive(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func job(id int64, gpus ...int) Job {
	return Job{ID: id, UID: 1001, User: "alice", Node: "gpu1", GPUs: gpus, Shards: -1, ExitCode: -1}
}

func budget(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }

// TestHooks_ExclusiveJob: a whole-GPU job gets its GPUs exclusive with
// accounting on, a leftover process is killed, and the epilog records what
// the job's processes did and returns the GPUs to the default mode.
func TestHooks_ExclusiveJob(t *testing.T) {
	r := newRig(t, func(c *Config, _ *Deps) { c.KillStray = true })
	g0, g3 := r.m.ByMinor(0), r.m.ByMinor(3)
	// A process left over from an earlier job: its user's, in no job.
	stray, waited := r.spawn(t, 1001, "0::/user.slice/user-1001.slice/session-4.scope\n", "")
	g3.Run(uint32(stray.Process.Pid), nvml.AccountingStats{})

	j := job(41, 0, 3)
	if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	for _, g := range []*nvmltest.GPU{g0, g3} {
		if g.ComputeMode() != nvml.COMPUTEMODE_EXCLUSIVE_PROCESS || !g.AccountingEnabled() {
			t.Errorf("GPU %d: mode %d accounting %v, want EXCLUSIVE_PROCESS and on", g.Minor, g.ComputeMode(), g.AccountingEnabled())
		}
	}
	if other := r.m.ByMinor(1); other.ModeSets() != 0 {
		t.Errorf("GPU 1 is not the job's but its mode was set")
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		stray.Process.Kill()
		t.Fatal("stray process still alive after the prolog with KillStray")
	}
	if !strings.Contains(r.log.String(), "stray process on GPU: killed") {
		t.Errorf("stray process not reported:\n%s", r.log)
	}
	g3.Exit(uint32(stray.Process.Pid))

	// The job runs: two processes on GPU 0, none on GPU 3.
	start := uint64(r.now.UnixMicro())
	g0.Run(5001, nvml.AccountingStats{GpuUtilization: 90, MaxMemoryUsage: 30 << 30, Time: 3000, StartTime: start + 1000})
	g0.Run(5002, nvml.AccountingStats{GpuUtilization: 30, MaxMemoryUsage: 50 << 30, Time: 1000, StartTime: start + 2000})
	g0.Exit(5001)
	g0.Exit(5002)
	g0.AddEnergy(700_000)
	g3.AddEnergy(100_000)
	end := r.now.Add(time.Hour)
	r.now = end

	if err := r.h.Epilog(budget(t, 10*time.Second), job(41, 0, 3)); err != nil {
		t.Fatalf("epilog: %v", err)
	}
	mem := int64(g0.MemoryInfo.Total >> 20)
	want := []Usage{
		{Cluster: "lab", JobID: 41, Node: "gpu1", GPUMinor: 0, EndedAt: end, StartedAt: end.Add(-time.Hour),
			GPUUUID: g0.UUID, GPUModel: "NVIDIA H100 80GB HBM3", UtilAvgPct: ptr(75.0), UtilMaxPct: ptr(90.0),
			MemPeakMB: ptr(int64(50 << 10)), MemTotalMB: ptr(mem), EnergyJoules: ptr(700.0)},
		{Cluster: "lab", JobID: 41, Node: "gpu1", GPUMinor: 3, EndedAt: end, StartedAt: end.Add(-time.Hour),
			GPUUUID: g3.UUID, GPUModel: "NVIDIA H100 80GB HBM3", UtilAvgPct: ptr(0.0), UtilMaxPct: ptr(0.0),
			MemPeakMB: ptr(int64(0)), MemTotalMB: ptr(mem), EnergyJoules: ptr(100.0)},
	}
	if diff := cmp.Diff(want, r.store.sorted()); diff != "" {
		t.Errorf("stored usage (-want +got):\n%s", diff)
	}
	for _, g := range []*nvmltest.GPU{g0, g3} {
		if g.ComputeMode() != nvml.COMPUTEMODE_DEFAULT {
			t.Errorf("GPU %d left in mode %d after the epilog", g.Minor, g.ComputeMode())
		}
	}
	if left, _, _ := r.h.spool.Pending(); len(left) != 0 {
		t.Errorf("spool holds %d records after a successful store", len(left))
	}
	if _, ok, _ := r.h.state.job(41); ok {
		t.Error("job state left behind after the epilog")
	}
}

// TestHooks_ShardJobs: two shard jobs on one GPU start its MPS daemon once
// and stop it after the second ends; each job gets limits in proportion to
// its shards.
func TestHooks_ShardJobs(t *testing.T) {
	r := newRig(t, func(c *Config, d *Deps) {
		c.DefaultMode = ComputeExclusiveProcess
		d.Shards = shardMap{51: 4, 52: 8}
	})
	g := r.m.ByMinor(2)
	ctx := budget(t, 10*time.Second)
	for _, id := range []int64{51, 52} {
		if err := r.h.Prolog(ctx, job(id, 2)); err != nil {
			t.Fatalf("prolog %d: %v", id, err)
		}
	}
	if diff := cmp.Diff([]int{2}, r.mps.starts); diff != "" {
		t.Errorf("MPS starts (-want +got):\n%s", diff)
	}
	if g.ComputeMode() != nvml.COMPUTEMODE_DEFAULT || g.AccountingEnabled() {
		t.Errorf("shared GPU: mode %d accounting %v, want DEFAULT and untouched", g.ComputeMode(), g.AccountingEnabled())
	}
	memMB := int64(g.MemoryInfo.Total >> 20)
	for id, want := range map[int64]string{
		51: "export CUDA_MPS_PIPE_DIRECTORY=" + MPSPipeDir(r.cfg.MPSDir, 2) + "\nexport CUDA_VISIBLE_DEVICES=" + g.UUID +
			"\nexport CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" + itoa(memMB/4) + "M\n",
		52: "export CUDA_MPS_PIPE_DIRECTORY=" + MPSPipeDir(r.cfg.MPSDir, 2) + "\nexport CUDA_VISIBLE_DEVICES=" + g.UUID +
			"\nexport CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50\nexport CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" + itoa(memMB/2) + "M\n",
	} {
		b, err := os.ReadFile(MPSEnvPath(r.cfg.StateDir, id))
		if err != nil {
			t.Fatalf("job %d MPS environment: %v", id, err)
		}
		if diff := cmp.Diff(want, string(b)); diff != "" {
			t.Errorf("job %d MPS environment (-want +got):\n%s", id, diff)
		}
	}

	r.now = r.now.Add(time.Minute)
	if err := r.h.Epilog(ctx, job(51, 2)); err != nil {
		t.Fatalf("epilog 51: %v", err)
	}
	if len(r.mps.stops) != 0 || g.ComputeMode() != nvml.COMPUTEMODE_DEFAULT {
		t.Errorf("after the first of two jobs: MPS stops %v, mode %d; want none and DEFAULT", r.mps.stops, g.ComputeMode())
	}
	r.now = r.now.Add(time.Minute)
	if err := r.h.Epilog(ctx, job(52, 2)); err != nil {
		t.Fatalf("epilog 52: %v", err)
	}
	if diff := cmp.Diff([]int{2}, r.mps.stops); diff != "" {
		t.Errorf("MPS stops (-want +got):\n%s", diff)
	}
	if g.ComputeMode() != nvml.COMPUTEMODE_EXCLUSIVE_PROCESS {
		t.Errorf("GPU mode %d after the last sharer, want the node default EXCLUSIVE_PROCESS", g.ComputeMode())
	}
	got := r.store.sorted()
	if len(got) != 2 {
		t.Fatalf("stored %d records, want 2", len(got))
	}
	for i, wantShards := range []int{4, 8} {
		u := got[i]
		if u.Shards != wantShards || u.GPUMinor != 2 || u.GPUUUID != g.UUID || u.UtilAvgPct != nil || u.EnergyJoules != nil {
			t.Errorf("record %+v: want shards %d on GPU 2 (%s) without per-process measurements", u, wantShards, g.UUID)
		}
	}
	if _, err := os.Stat(MPSEnvPath(r.cfg.StateDir, 51)); !os.IsNotExist(err) {
		t.Errorf("MPS environment of an ended job left behind: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestHooks_Health: only real hardware faults fail the prolog, with a drain
// reason naming the GPU and the fault, and a faulty GPU is left as it is.
func TestHooks_Health(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(r *rig)
		want    string // "" means healthy
	}{
		{name: "healthy", breakIt: func(*rig) {}},
		{name: "uncorrectable ECC", breakIt: func(r *rig) { r.m.ByMinor(1).UncorrectableECC = 3 }, want: "3 uncorrectable ECC errors"},
		{name: "remap pending", breakIt: func(r *rig) { r.m.ByMinor(1).RemapPending = true }, want: "row remapping pending (needs a GPU reset)"},
		{name: "retired pages pending", breakIt: func(r *rig) { r.m.ByMinor(1).RetiredPagesPending = true }, want: "page retirement pending (needs a GPU reset)"},
		{name: "GPU lost", breakIt: func(r *rig) { r.m.ByMinor(1).Lost = true }, want: "GPU is lost (fell off the bus)"},
		{name: "XID 79 since last look", breakIt: func(r *rig) { r.addXID(1, 79) }, want: "XID 79 (GPU has fallen off the bus)"},
		{name: "application XID is no fault", breakIt: func(r *rig) { r.addXID(1, 13) }},
		{name: "XID on another GPU", breakIt: func(r *rig) { r.addXID(5, 79) }},
		{name: "fault on a GPU not the job's", breakIt: func(r *rig) { r.m.ByMinor(6).UncorrectableECC = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, nil)
			// A first job sets the XID baseline of GPUs 0 and 1.
			if err := r.h.Prolog(budget(t, 5*time.Second), job(60, 0, 1)); err != nil {
				t.Fatalf("first prolog: %v", err)
			}
			if err := r.h.Epilog(budget(t, 5*time.Second), job(60, 0, 1)); err != nil {
				t.Fatalf("first epilog: %v", err)
			}
			g1 := r.m.ByMinor(1)
			sets := g1.ModeSets()
			tt.breakIt(r)

			err := r.h.Prolog(budget(t, 5*time.Second), job(61, 0, 1))
			var fe *FaultError
			if tt.want == "" {
				if err != nil {
					t.Fatalf("healthy GPUs: prolog error %v", err)
				}
				if r.drain.reason != "" {
					t.Errorf("healthy node drained: %q", r.drain.reason)
				}
				return
			}
			if !errors.As(err, &fe) {
				t.Fatalf("prolog error %v, want a *FaultError", err)
			}
			uuid := g1.UUID
			if tt.name == "GPU lost" {
				uuid = "" // a lost GPU cannot even say its UUID
			}
			want := "fairway: " + Fault{Minor: 1, UUID: uuid, What: tt.want}.String()
			if fe.Reason() != want {
				t.Errorf("reason %q, want %q", fe.Reason(), want)
			}
			if r.drain.node != "gpu1" || r.drain.reason != want {
				t.Errorf("drained %q with %q, want gpu1 with %q", r.drain.node, r.drain.reason, want)
			}
			if g1.ModeSets() != sets {
				t.Error("the faulty GPU's mode was changed")
			}
		})
	}
}

// addXID logs an XID for the GPU with the given minor after the baseline.
func (r *rig) addXID(minor, code int) {
	info, _ := (&nvmlDevice{d: r.m.ByMinor(minor), minor: minor}).Info()
	r.xids.last++
	r.xids.xids = append(r.xids.xids, XID{Seq: r.xids.last, PCI: info.PCI, Code: code})
}

// rawKmsg is XIDLog over raw /dev/kmsg records, judged as KernelLog judges
// them.
type rawKmsg struct{ records []string }

func (k *rawKmsg) Read(context.Context) ([]XID, uint64, error) {
	var a kmsgXIDs
	for _, r := range k.records {
		a.add([]byte(r))
	}
	return a.xids, a.last, nil
}

// TestHooks_StrayKillSparesLiveWork: the GPU's state is stale (the prolog
// of shard job 50 on GPU 2 ran out of budget after it noted the job, before
// it recorded the sharer on the GPU), so the next shard job's prolog takes
// itself for the first sharer and looks for strays. It kills the process
// that is in no job and leaves job 50's and root's alone.
func TestHooks_StrayKillSparesLiveWork(t *testing.T) {
	r := newRig(t, func(c *Config, _ *Deps) { c.KillStray = true })
	if err := r.h.state.init(); err != nil {
		t.Fatal(err)
	}
	if err := r.h.state.putJob(jobRecord{JobID: 50, Start: r.now, Shards: 4, GPUs: []gpuRecord{{Minor: 2}}}); err != nil {
		t.Fatal(err)
	}
	g2 := r.m.ByMinor(2)
	other, otherDone := r.spawn(t, 1002, "0::/system.slice/slurmstepd.scope/job_50/step_0/user/task_0\n", "")
	daemon, daemonDone := r.spawn(t, 0, "0::/system.slice/nvidia-persistenced.service\n", "")
	stray, strayDone := r.spawn(t, 1001, "12:memory:/user.slice\n0::/user.slice/user-1001.slice/session-4.scope\n", "/home/alice/a.out")
	for _, p := range []*exec.Cmd{other, daemon, stray} {
		g2.Run(uint32(p.Process.Pid), nvml.AccountingStats{})
	}
	j := job(51, 2)
	j.Shards = 3
	if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	select {
	case <-strayDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the stray outside any job survived the prolog with KillStray")
	}
	for name, done := range map[string]<-chan struct{}{"job 50's process": otherDone, "root's daemon": daemonDone} {
		if !alive(done) {
			t.Errorf("%s was killed", name)
		}
	}
	for _, want := range []string{"left alone (process of running job 50)", "left alone (root's process)", "stray process on GPU: killed"} {
		if !strings.Contains(r.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, r.log)
		}
	}
}

// blockingMPS is an MPS whose Start never returns before the budget ends,
// like an nvidia-cuda-mps-control that hangs.
type blockingMPS struct{ fakeMPS }

func (b *blockingMPS) Start(ctx context.Context, _ DeviceInfo) error {
	<-ctx.Done()
	time.Sleep(time.Second) // still stuck after the hook gave up
	return ctx.Err()
}

// TestHooks_StateSavedBeforeAbandon: the GPU state names a sharer as soon
// as it is added, so a prolog abandoned at its budget (in a hung MPS start)
// still leaves the sharer recorded for the next prolog.
func TestHooks_StateSavedBeforeAbandon(t *testing.T) {
	r := newRig(t, func(_ *Config, d *Deps) { d.MPS = &blockingMPS{} })
	j := job(52, 4)
	j.Shards = 2
	err := r.h.Prolog(budget(t, 300*time.Millisecond), j)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("prolog: %v, want ErrBudget", err)
	}
	gs, err := r.h.state.gpu(4)
	if err != nil || !slices.Contains(gs.Sharers, int64(52)) {
		t.Fatalf("GPU 4 state after the abandoned prolog: %+v, %v; want sharer 52", gs, err)
	}
}

// TestHooks_UnknownShardsRecorded: a job whose shard lookup failed is noted
// on its GPU, so the next shard job there is not the first sharer (which
// would hunt strays among job 53's processes); that sharer's prolog knows
// job 53 holds shards too (Slurm never gives a GPU whole and as shards at
// once), so it returns the GPU, which job 53 was given exclusively, to
// DEFAULT. Job 53's epilog clears it.
func TestHooks_UnknownShardsRecorded(t *testing.T) {
	r := newRig(t, func(c *Config, d *Deps) { c.KillStray = true; d.Shards = failingLookup{} })
	if err := r.h.Prolog(budget(t, 5*time.Second), job(53, 5)); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	gs, err := r.h.state.gpu(5)
	if err != nil || !slices.Equal(gs.Unknown, []int64{53}) || !gs.HeldExclusive {
		t.Fatalf("GPU 5 state: %+v, %v; want unknown job 53, held exclusive", gs, err)
	}
	j := job(54, 5)
	j.Shards = 4
	if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
		t.Fatalf("second prolog: %v", err)
	}
	if m := r.m.ByMinor(5).ComputeMode(); m != nvml.COMPUTEMODE_DEFAULT {
		t.Errorf("GPU 5 in mode %d with two sharers, want DEFAULT", m)
	}
	if err := r.h.Epilog(budget(t, 5*time.Second), job(53, 5)); err != nil {
		t.Fatalf("epilog: %v", err)
	}
	if gs, _ := r.h.state.gpu(5); len(gs.Unknown) != 0 || !slices.Equal(gs.Sharers, []int64{54}) || gs.HeldExclusive {
		t.Errorf("after job 53's epilog: %+v, want sharer 54 only", gs)
	}
}

// TestHooks_UnknownShardsMeasured: a job whose shard lookup failed holds its
// GPU whole until another job comes to share it. Alone, its processes are
// the only ones NVML accounts, so its record carries the measurements a
// whole-GPU job's does; once a sharer came, they are no longer its own.
func TestHooks_UnknownShardsMeasured(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sharer   bool
		measured bool
	}{
		{name: "alone", measured: true},
		{name: "joined by a shard job", sharer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(_ *Config, d *Deps) { d.Shards = failingLookup{} })
			g := r.m.ByMinor(5)
			if err := r.h.Prolog(budget(t, 5*time.Second), job(55, 5)); err != nil {
				t.Fatalf("prolog: %v", err)
			}
			if !g.AccountingEnabled() {
				t.Fatal("accounting off on the GPU the job holds alone")
			}
			if tc.sharer {
				j := job(56, 5)
				j.Shards = 2
				if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
					t.Fatalf("sharer's prolog: %v", err)
				}
			}
			start := uint64(r.now.UnixMicro())
			g.Run(6001, nvml.AccountingStats{GpuUtilization: 60, MaxMemoryUsage: 10 << 30, Time: 2000, StartTime: start + 1000})
			g.Exit(6001)
			g.AddEnergy(300_000)
			r.now = r.now.Add(time.Hour)
			if err := r.h.Epilog(budget(t, 10*time.Second), job(55, 5)); err != nil {
				t.Fatalf("epilog: %v", err)
			}
			var got *Usage
			for _, u := range r.store.sorted() {
				if u.JobID == 55 {
					got = &u
				}
			}
			if got == nil {
				t.Fatal("no record of job 55")
			}
			measured := got.UtilAvgPct != nil && *got.UtilAvgPct == 60 && got.MemPeakMB != nil && *got.MemPeakMB == 10<<10 &&
				got.EnergyJoules != nil && *got.EnergyJoules == 300
			if measured != tc.measured {
				t.Errorf("record %+v: measured %v, want %v", *got, measured, tc.measured)
			}
			if !tc.measured && (got.UtilAvgPct != nil || got.EnergyJoules != nil) {
				t.Errorf("record of a shared GPU carries measurements: %+v", *got)
			}
		})
	}
}

// TestHooks_SegfaultNamedLikeXIDDoesNotDrain: a user's crashing program
// named "NVRM: Xid (PCI:<the GPU's address>): 79, x" puts the kernel's
// segfault line in the log; the next prolog on that GPU must not drain the
// node.
func TestHooks_SegfaultNamedLikeXIDDoesNotDrain(t *testing.T) {
	kmsg := &rawKmsg{records: []string{"6,4999,900000000,-;Linux version 6.1.0\n"}}
	r := newRig(t, func(_ *Config, d *Deps) { d.XIDs = kmsg })
	if err := r.h.Prolog(budget(t, 5*time.Second), job(80, 1)); err != nil {
		t.Fatalf("first prolog: %v", err)
	}
	if err := r.h.Epilog(budget(t, 5*time.Second), job(80, 1)); err != nil {
		t.Fatalf("first epilog: %v", err)
	}
	info, _ := (&nvmlDevice{d: r.m.ByMinor(1), minor: 1}).Info()
	name := fmt.Sprintf("NVRM: Xid (PCI:%04x:%02x:%02x): 79, x", info.PCI.Domain, info.PCI.Bus, info.PCI.Device)
	kmsg.records = append(kmsg.records,
		fmt.Sprintf("6,5001,912345678,-;%.15s[4242]: segfault at 0 ip 0000000000401126 sp 00007ffc3a1f2e40 error 6 in %s[401000+1000] likely on CPU 3 (core 3, socket 0)\n", name, name),
		fmt.Sprintf("6,5002,912345690,-;x%.14s[4243]: segfault at 0 ip 0000000000401126 sp 00007ffc3a1f2e40 error 6 in x%s[401000+1000]\n", name, name))
	if err := r.h.Prolog(budget(t, 5*time.Second), job(81, 1)); err != nil {
		t.Fatalf("prolog after the crafted segfaults: %v, want none", err)
	}
	if r.drain.reason != "" {
		t.Fatalf("node drained by a program's name: %q", r.drain.reason)
	}
	// The driver's own message on that GPU still drains it.
	kmsg.records = append(kmsg.records, fmt.Sprintf("3,5003,912345700,-;%s, pid=4244, GPU has fallen off the bus.\n", strings.TrimSuffix(name, ", x")))
	var fe *FaultError
	if err := r.h.Prolog(budget(t, 5*time.Second), job(82, 1)); !errors.As(err, &fe) {
		t.Fatalf("prolog after a real XID 79: %v, want a fault", err)
	}
}

// TestHooks_XIDsBeforeFirstLook: XIDs logged before Fairway first looked at
// a GPU (a fault fixed long ago) do not drain the node.
func TestHooks_XIDsBeforeFirstLook(t *testing.T) {
	r := newRig(t, nil)
	r.addXID(1, 79)
	if err := r.h.Prolog(budget(t, 5*time.Second), job(70, 1)); err != nil {
		t.Fatalf("prolog: %v, want none for an XID older than the first look", err)
	}
}

// TestHooks_NVMLAbsent: on a node without libnvidia-ml (the real go-nvml,
// pointed at a library that does not exist) the hooks succeed and the
// records identify the job's GPUs from Slurm's environment.
func TestHooks_NVMLAbsent(t *testing.T) {
	for _, tt := range []struct {
		name string
		lib  func(*rig) Library
	}{
		{"real go-nvml, no library", func(*rig) Library {
			return NewNVML(nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))))
		}},
		{"mock reporting library not found", func(r *rig) Library { r.m.Absent(); return NewNVML(r.m) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, nil)
			lib := tt.lib(r)
			r.h.d.Library = lib
			start := r.now
			if err := r.h.Prolog(budget(t, 5*time.Second), job(80, 1, 2)); err != nil {
				t.Fatalf("prolog: %v", err)
			}
			r.now = r.now.Add(90 * time.Second)
			if err := r.h.Epilog(budget(t, 5*time.Second), job(80, 1, 2)); err != nil {
				t.Fatalf("epilog: %v", err)
			}
			want := []Usage{
				{Cluster: "lab", JobID: 80, Node: "gpu1", GPUMinor: 1, EndedAt: r.now, StartedAt: start},
				{Cluster: "lab", JobID: 80, Node: "gpu1", GPUMinor: 2, EndedAt: r.now, StartedAt: start},
			}
			if diff := cmp.Diff(want, r.store.sorted()); diff != "" {
				t.Errorf("stored usage (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.log.String(), "NVML absent") {
				t.Errorf("NVML absence not logged:\n%s", r.log)
			}
		})
	}
}

// TestHooks_NVMLHangs: an NVML call that never returns costs the hook its
// budget and no more; the prolog does not fail, the epilog still records
// the job's GPUs.
func TestHooks_NVMLHangs(t *testing.T) {
	r := newRig(t, nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	g := r.m.ByMinor(4)
	g.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		<-release
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	g.GetAccountingPidsFunc = func() ([]int, nvml.Return) {
		<-release
		return nil, nvml.SUCCESS
	}

	const b = 300 * time.Millisecond
	t0 := time.Now()
	err := r.h.Prolog(budget(t, b), job(90, 4))
	took := time.Since(t0)
	if !errors.Is(err, ErrBudget) {
		t.Errorf("prolog error %v, want ErrBudget", err)
	}
	var fe *FaultError
	if errors.As(err, &fe) {
		t.Error("a hung NVML call was judged a hardware fault")
	}
	if took > b+time.Second {
		t.Errorf("prolog took %s with a %s budget", took, b)
	}

	// The epilog is another process, with its own NVML session; the
	// prolog's abandoned goroutine stays blocked.
	d := r.h.d
	d.Library = NewNVML(r.m)
	epi, err := New(r.cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	err = epi.Epilog(budget(t, b), job(90, 4))
	took = time.Since(t0)
	if err != nil {
		t.Errorf("epilog: %v", err)
	}
	if took > b+time.Second {
		t.Errorf("epilog took %s with a %s budget", took, b)
	}
	got := r.store.sorted()
	if len(got) != 1 || got[0].JobID != 90 || got[0].GPUMinor != 4 || got[0].StartedAt.IsZero() {
		t.Errorf("stored %+v, want job 90's record for GPU 4 with its start", got)
	}
}

// TestHooks_DatabaseDown: with the database down the record waits in the
// spool; the next epilog (of any job) or a flush ships it, exactly once.
func TestHooks_DatabaseDown(t *testing.T) {
	r := newRig(t, nil)
	r.store.fail = errors.New("connection refused")
	ctx := budget(t, 10*time.Second)
	if err := r.h.Prolog(ctx, job(100, 0)); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Epilog(ctx, job(100, 0)); err == nil {
		t.Error("epilog with the database down returned no error to log")
	}
	pending, _, err := r.h.spool.Pending()
	if err != nil || len(pending) != 1 || pending[0].JobID != 100 {
		t.Fatalf("spool after a failed store: %+v %v, want job 100's record", pending, err)
	}

	// The database is back; a CPU-only job's epilog ships the backlog.
	r.store.fail = nil
	if err := r.h.Epilog(ctx, job(101)); err != nil {
		t.Fatalf("epilog of a job without GPUs: %v", err)
	}
	if got := r.store.sorted(); len(got) != 1 || got[0].Key() != pending[0].Key() {
		t.Fatalf("stored %+v, want the spooled record", got)
	}
	if left, _, _ := r.h.spool.Pending(); len(left) != 0 {
		t.Errorf("spool still holds %d records", len(left))
	}

	// A crash after the database committed but before the spool file was
	// removed leaves the record in both: a flush stores it again, and the
	// key makes that a no-op.
	if err := r.h.spool.Put(pending); err != nil {
		t.Fatal(err)
	}
	c, err := r.h.spool.Flush(ctx, r.store, r.h.log)
	if err != nil || c != (FlushCounts{Stored: 1}) {
		t.Fatalf("flush: %+v err %v, want 1 stored", c, err)
	}
	if got := r.store.sorted(); len(got) != 1 {
		t.Errorf("%d records stored after re-shipping one, want 1", len(got))
	}
}

// TestHooks_BacklogShippedInParts: a hook ships at most hookBacklog
// spooled records (after a long outage the whole spool could outlast
// slurmd's hook timeout); the next hook ships the rest.
func TestHooks_BacklogShippedInParts(t *testing.T) {
	r := newRig(t, nil)
	if err := os.MkdirAll(r.cfg.SpoolDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const n = hookBacklog + 5
	for i := range n {
		// Written directly: Put's fsync per file would make this slow.
		u := Usage{Cluster: "lab", JobID: int64(1000 + i), Node: "gpu1", GPUMinor: 0, EndedAt: r.now}
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.cfg.SpoolDir, u.Key()+spoolExt), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := budget(t, 30*time.Second)
	for i, want := range []int{hookBacklog, n} {
		if err := r.h.Epilog(ctx, job(int64(10+i))); err != nil {
			t.Fatalf("epilog %d: %v", i, err)
		}
		if got := len(r.store.sorted()); got != want {
			t.Errorf("after epilog %d: %d records stored, want %d", i, got, want)
		}
	}
	if left, _, _ := r.h.spool.Pending(); len(left) != 0 {
		t.Errorf("spool still holds %d records", len(left))
	}
}

// TestHooks_SpoolUnwritable: an unwritable spool is logged and the records
// go straight to the database.
func TestHooks_SpoolUnwritable(t *testing.T) {
	r := newRig(t, nil)
	if err := os.WriteFile(r.cfg.SpoolDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := r.h.Epilog(budget(t, 5*time.Second), job(110, 5))
	if err == nil {
		t.Error("epilog with an unwritable spool returned no error to log")
	}
	if got := r.store.sorted(); len(got) != 1 || got[0].GPUMinor != 5 {
		t.Errorf("stored %+v, want the record for GPU 5", got)
	}
	if !strings.Contains(r.log.String(), "spool unwritable or full") {
		t.Errorf("unwritable spool not logged:\n%s", r.log)
	}
}

// TestHooks_NoDatabaseSpoolUnwritable: without a database an unwritable
// spool leaves the log as the record's only copy, so the log holds it
// whole and does not claim it was shipped.
func TestHooks_NoDatabaseSpoolUnwritable(t *testing.T) {
	r := newRig(t, func(_ *Config, d *Deps) { d.Store = nil })
	ctx := budget(t, 5*time.Second)
	if err := r.h.Prolog(ctx, job(120, 2)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.cfg.SpoolDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.now = r.now.Add(time.Hour)
	if err := r.h.Epilog(ctx, job(120, 2)); err == nil {
		t.Error("epilog with an unwritable spool and no database returned no error to log")
	}
	logged := r.log.String()
	for _, want := range []string{"no database configured", "usage record lost (spool failed, no database configured)", "JobID:120", "GPUMinor:2"} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %q:\n%s", want, logged)
		}
	}
	for _, wrong := range []string{"shipping the records directly", "records stay in the spool"} {
		if strings.Contains(logged, wrong) {
			t.Errorf("log says %q, which did not happen:\n%s", wrong, logged)
		}
	}
}

// TestHooks_NoDatabaseLeavesBacklog: without a database the epilog spools
// its own records and does not read the spool's backlog, which then only
// grows (each epilog would parse all of it): a file that is not a record
// goes unreported by it (the flush reports it), and every record stays.
func TestHooks_NoDatabaseLeavesBacklog(t *testing.T) {
	r := newRig(t, func(_ *Config, d *Deps) { d.Store = nil })
	old := Usage{Cluster: "lab", JobID: 5, Node: "gpu1", GPUMinor: 0, EndedAt: r.now}
	if err := r.h.spool.Put([]Usage{old}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.cfg.SpoolDir, "garbage.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Epilog(budget(t, 5*time.Second), job(110, 5)); err != nil {
		t.Fatal(err)
	}
	logged := r.log.String()
	if strings.Contains(logged, "not a usage record") {
		t.Errorf("the epilog read the spool's backlog without a database:\n%s", logged)
	}
	if !strings.Contains(logged, "no database configured: records stay in the spool") {
		t.Errorf("no line saying where the records wait:\n%s", logged)
	}
	us, bad, err := r.h.spool.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 2 || len(bad) != 1 {
		t.Errorf("spool holds %d records and %d bad files, want the old and the new record and the bad file", len(us), len(bad))
	}
	if got := r.store.sorted(); len(got) != 0 {
		t.Errorf("%d records reached the rig's store with no database configured", len(got))
	}
}

// TestHooks_FlushBadFile: a spool file that is not a record stays for a
// person to look at; the good ones ship; old interrupted writes go.
func TestHooks_FlushBadFile(t *testing.T) {
	r := newRig(t, nil)
	good := Usage{Cluster: "lab", JobID: 5, Node: "gpu1", GPUMinor: 0, EndedAt: r.now}
	if err := r.h.spool.Put([]Usage{good}); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(r.cfg.SpoolDir, "garbage.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(r.cfg.SpoolDir, ".lab_9_gpu1_0_1.json.tmp123")
	fresh := filepath.Join(r.cfg.SpoolDir, ".lab_9_gpu1_0_2.json.tmp456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte(`{"clu`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	c, err := r.h.spool.Flush(budget(t, 5*time.Second), r.store, r.h.log)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("interrupted write from 2 hours ago still in the spool: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a write that may be in progress was removed: %v", err)
	}
	if err != nil || c != (FlushCounts{Stored: 1, Left: 1}) {
		t.Errorf("flush: %+v err %v, want 1 stored 1 left", c, err)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("bad spool file removed: %v", err)
	}
}

// TestHooks_RefusedSetAside: records the database refuses (here: ending
// more than a day before the database's clock, as after a long outage) are
// moved to the spool's refused/ directory with an error line naming the
// reason, never offered again by a hook or the flush timer, and the rest
// are stored. Importing refused/ with a login the database accepts them
// from (the schema owner's) stores them. Before, the epilog and the
// flush kept a refused record in the spool and sent it with every later
// call, which the database refused whole: nothing was stored again.
func TestHooks_RefusedSetAside(t *testing.T) {
	r := newRig(t, nil)
	ctx := budget(t, 10*time.Second)
	r.store.refuse = func(u Usage) string {
		if r.now.Sub(u.EndedAt) > 24*time.Hour {
			return "ends more than a day from now"
		}
		return ""
	}
	old := Usage{Cluster: "lab", JobID: 7, Node: "gpu1", GPUMinor: 2, EndedAt: r.now.Add(-72 * time.Hour)}
	recent := Usage{Cluster: "lab", JobID: 8, Node: "gpu1", GPUMinor: 3, EndedAt: r.now.Add(-time.Hour)}
	if err := r.h.spool.Put([]Usage{old, recent}); err != nil {
		t.Fatal(err)
	}
	// The epilog of job 100 ships its record and the backlog.
	if err := r.h.Prolog(ctx, job(100, 0)); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Epilog(ctx, job(100, 0)); err != nil {
		t.Fatalf("epilog with a refused backlog record: %v", err)
	}
	var got []int64
	for _, u := range r.store.sorted() {
		got = append(got, u.JobID)
	}
	if diff := cmp.Diff([]int64{8, 100}, got); diff != "" {
		t.Errorf("stored jobs (-want +got):\n%s", diff)
	}
	if left, bad, err := r.h.spool.Pending(); len(left) != 0 || len(bad) != 0 || err != nil {
		t.Errorf("spool after the epilog: %d records, %v bad, %v; want empty", len(left), bad, err)
	}
	aside := filepath.Join(r.cfg.SpoolDir, RefusedDir, old.Key()+".json")
	if st, err := os.Stat(aside); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("refused record not set aside in %s: %v", aside, err)
	}
	if log := r.log.String(); !strings.Contains(log, "usage record refused by the database: set aside") ||
		!strings.Contains(log, "ends more than a day from now") || !strings.Contains(log, old.Key()) {
		t.Errorf("no error line naming the refused record and the reason:\n%s", log)
	}

	// Neither the next epilog nor the timer offers it again.
	sent := len(r.store.sent)
	if err := r.h.Epilog(ctx, job(101)); err != nil {
		t.Fatal(err)
	}
	rep := r.h.spool.FlushReport(ctx, r.store, r.h.log)
	if rep.Stored != 0 || rep.Refused != 0 || rep.Err() != nil {
		t.Errorf("flush after the set-aside: %+v, err %v; want nothing to do", rep, rep.Err())
	}
	if len(r.store.sent) != sent {
		t.Errorf("refused record offered again: %v", r.store.sent[sent:])
	}
	if !strings.Contains(r.log.String(), "usage records the database refused wait to be imported") {
		t.Errorf("the flush does not remind of the set-aside records:\n%s", r.log)
	}

	// A flush that meets a refusal says so and fails, so the timer's run shows red.
	older := Usage{Cluster: "lab", JobID: 9, Node: "gpu1", GPUMinor: 0, EndedAt: r.now.Add(-48 * time.Hour)}
	if err := r.h.spool.Put([]Usage{older}); err != nil {
		t.Fatal(err)
	}
	rep = r.h.spool.FlushReport(ctx, r.store, r.h.log)
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "stored 0 usage records from " + r.cfg.SpoolDir + ", 0 left, 1 refused and set aside in " + filepath.Join(r.cfg.SpoolDir, RefusedDir) + "\n"
	if b.String() != want || rep.Err() == nil || !strings.Contains(rep.Err().Error(), "refused 1 usage records") {
		t.Errorf("flush with a refusal: %q, err %v; want %q and an error", b.String(), rep.Err(), want)
	}

	// The administrator imports refused/ with the owner's login.
	r.store.refuse = nil
	imp := Spool{Dir: filepath.Join(r.cfg.SpoolDir, RefusedDir)}.FlushReport(ctx, r.store, r.h.log)
	if imp.Stored != 2 || imp.Refused != 0 || imp.Err() != nil {
		t.Errorf("import of the refused records: %+v, err %v; want 2 stored", imp, imp.Err())
	}
	if n := len(r.store.sorted()); n != 4 {
		t.Errorf("%d records stored in the end, want 4 (7, 8, 9, 100)", n)
	}
}

// TestSpool_SetAsideUnspooled: a refused record the spool does not hold
// (its spool write failed) is written to refused/ from memory.
func TestSpool_SetAsideUnspooled(t *testing.T) {
	s := Spool{Dir: t.TempDir()}
	u := Usage{Cluster: "lab", JobID: 3, Node: "gpu1", GPUMinor: 1, EndedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var log syncBuffer
	s.SetAside([]Refusal{{Usage: u, Reason: "another node's"}}, slog.New(slog.NewTextHandler(&log, nil)))
	got, bad, err := Spool{Dir: filepath.Join(s.Dir, RefusedDir)}.Pending()
	if err != nil || len(bad) != 0 || len(got) != 1 || got[0].Key() != u.Key() {
		t.Errorf("refused/ holds %+v (bad %v, %v), want job 3's record", got, bad, err)
	}
	if !strings.Contains(log.String(), "another node's") {
		t.Errorf("reason not logged:\n%s", log.String())
	}
}

func TestNVML_DeviceByMinor(t *testing.T) {
	m := nvmltest.New(8)
	lib := NewNVML(m)
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	for minor := 0; minor < 8; minor++ {
		d, err := lib.Device(minor)
		if err != nil {
			t.Fatal(err)
		}
		info, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Minor != minor || info.UUID != m.ByMinor(minor).UUID {
			t.Errorf("Device(%d) is %+v, want the GPU with UUID %s", minor, info, m.ByMinor(minor).UUID)
		}
	}
	if _, err := lib.Device(8); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Device(8) error %v, want ErrNoDevice", err)
	}

	// A lost GPU cannot say its minor number: the others are still found,
	// and looking for it reports it lost.
	m.ByMinor(5).Lost = true
	lib = NewNVML(m)
	if _, err := lib.Device(4); err != nil {
		t.Errorf("Device(4) beside a lost GPU: %v", err)
	}
	if _, err := lib.Device(5); !errors.Is(err, ErrGPULost) {
		t.Errorf("Device(5) of a lost GPU: error %v, want ErrGPULost", err)
	}
}

func TestSummarize(t *testing.T) {
	since := time.UnixMicro(1_000_000)
	stats := []ProcessStats{
		{PID: 1, GPUUtilPct: 100, MaxMemoryBytes: 4 << 30, TimeMS: 1000, StartMicros: 500_000}, // before the job
		{PID: 2, GPUUtilPct: 60, MaxMemoryBytes: 2 << 30, TimeMS: 3000, StartMicros: 1_000_000},
		{PID: 3, GPUUtilPct: 20, MaxMemoryBytes: 1 << 30, TimeMS: 1000, StartMicros: 2_000_000},
	}
	avg, mx, peak := summarize(stats, since)
	if avg != 50 || mx != 60 || peak != 2048 {
		t.Errorf("summarize = %v %v %v, want 50 60 2048", avg, mx, peak)
	}
}

func TestMPSLimits(t *testing.T) {
	tests := []struct {
		shards, per int
		mem         int64
		want        MPSLimits
	}{
		{3, 16, 81920, MPSLimits{ActiveThreadPct: 19, PinnedMemMB: 15360}},
		{4, 4, 80000, MPSLimits{ActiveThreadPct: 100, PinnedMemMB: 80000}},
		{1, 200, 1000, MPSLimits{ActiveThreadPct: 1, PinnedMemMB: 5}},
		{9, 4, 1000, MPSLimits{ActiveThreadPct: 100, PinnedMemMB: 1000}},
		{2, 0, 1000, MPSLimits{ActiveThreadPct: 100}},
	}
	for _, tt := range tests {
		if got := mpsLimits(tt.shards, tt.per, tt.mem); got != tt.want {
			t.Errorf("mpsLimits(%d, %d, %d) = %+v, want %+v", tt.shards, tt.per, tt.mem, got, tt.want)
		}
	}
}

func TestUsage_Key(t *testing.T) {
	u := Usage{Cluster: "lab", JobID: 12, Node: "gpu1", GPUMinor: 3, EndedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)}
	if got, want := u.Key(), "lab_12_gpu1_3_1767323045123456"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	u.Node = "../etc"
	if strings.Contains(u.Key(), "/") {
		t.Errorf("Key %q can escape the spool directory", u.Key())
	}
}

type failingLookup struct{}

func (failingLookup) JobShards(context.Context, int64) (int, error) {
	return 0, errors.New("slurmctld not responding")
}

// TestHooks_EpilogWithoutProlog: an epilog whose prolog left no note (it
// never ran, or the node rebooted) still records the job's GPUs, with the
// start unknown and the shards looked up.
func TestHooks_EpilogWithoutProlog(t *testing.T) {
	r := newRig(t, func(_ *Config, d *Deps) { d.Shards = shardMap{130: 2} })
	if err := r.h.Epilog(budget(t, 5*time.Second), job(130, 7)); err != nil {
		t.Fatalf("epilog: %v", err)
	}
	got := r.store.sorted()
	if len(got) != 1 || !got[0].StartedAt.IsZero() || got[0].Shards != 2 || got[0].GPUMinor != 7 || got[0].GPUUUID != r.m.ByMinor(7).UUID {
		t.Errorf("stored %+v, want GPU 7 (%s) with 2 shards and no start", got, r.m.ByMinor(7).UUID)
	}
}

// unkillable pins processes whose kill fails, as for a process the
// kernel will not let root signal.
type unkillable struct{ Processes }

func (u unkillable) Pin(pid int) (PinnedProcess, error) {
	p, err := u.Processes.Pin(pid)
	if err != nil {
		return nil, err
	}
	return unkillablePin{p}, nil
}

type unkillablePin struct{ PinnedProcess }

func (unkillablePin) Kill() error { return errors.New("kill: operation not permitted") }

// TestHooks_StrayKillFails: a stray the prolog cannot kill is logged as an
// error that says so, never as killed, and the job starts.
func TestHooks_StrayKillFails(t *testing.T) {
	r := newRig(t, func(c *Config, d *Deps) { c.KillStray = true; d.Procs = unkillable{d.Procs} })
	stray, waited := r.spawn(t, 1001, "0::/user.slice/user-1001.slice/session-4.scope\n", "")
	r.m.ByMinor(3).Run(uint32(stray.Process.Pid), nvml.AccountingStats{})
	if err := r.h.Prolog(budget(t, 5*time.Second), job(44, 3)); err != nil {
		t.Fatalf("prolog: %v, want nil (the job starts)", err)
	}
	log := r.log.String()
	if !strings.Contains(log, `level=ERROR msg="stray process on GPU: cannot kill it"`) || !strings.Contains(log, "operation not permitted") ||
		strings.Contains(log, "stray process on GPU: killed") {
		t.Errorf("log does not say the kill failed, or says it was killed:\n%s", log)
	}
	select {
	case <-waited:
		t.Error("the stray exited, though its kill failed")
	default:
	}
}
