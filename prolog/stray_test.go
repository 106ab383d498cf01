package prolog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// procSpec is a real process described in the rig's /proc: its uid, its
// cgroup, its executable (a link to exe, read as the kernel's link text
// when exeText is set) and its parent.
type procSpec struct {
	uid          int
	cgroup       string
	exe, exeText string
	ppid         int
	name         string
}

// spawnProc starts a real process (so pins and kills are real) and writes
// its /proc entry, stat included, from s.
func (r *rig) spawnProc(t *testing.T, s procSpec) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	p, done := r.spawn(t, s.uid, s.cgroup, "")
	dir := filepath.Join(r.proc, strconv.Itoa(p.Process.Pid))
	name := orDefault(s.name, "sleep")
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 100 1000 100\n", p.Process.Pid, name, max(s.ppid, 1), s.ppid, s.ppid)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if s.exe != "" {
		// The rig's exe is a symlink: its text is what Readlink gives, its
		// target what Stat opens, as /proc/PID/exe's are.
		target := s.exe
		if s.exeText != "" {
			target = s.exeText
		}
		if err := os.Symlink(target, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
	}
	return p, done
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// binary writes an executable file at path owned by uid.
func binary(t *testing.T, path string, uid int) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHooks_MPSServerTrust: the prolog spares an MPS server only when it is
// root's daemon's: NVIDIA's binary (root's file in root's directories, also
// after a driver upgrade deleted it under the running server) started by
// root's nvidia-cuda-mps-control. A user's program of that name, or
// NVIDIA's binary under a control daemon the user started, is a stray. The
// old check went by the name alone: it spared the user's copies and killed
// the real server after an upgrade.
func TestHooks_MPSServerTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other owners")
	}
	r := newRig(t, func(c *Config, _ *Deps) { c.KillStray = true })
	bin := t.TempDir() // root's, like /usr/bin
	server := binary(t, filepath.Join(bin, "nvidia-cuda-mps-server"), 0)
	control := binary(t, filepath.Join(bin, "nvidia-cuda-mps-control"), 0)
	// After an upgrade the running server's file has no name; the rig's
	// stand-in is a file under the kernel's link text.
	oldServer := binary(t, filepath.Join(bin, "nvidia-cuda-mps-server (deleted)"), 0)
	home := t.TempDir()
	if err := os.Chown(home, 1002, 1002); err != nil {
		t.Fatal(err)
	}
	eveServer := binary(t, filepath.Join(home, "nvidia-cuda-mps-server"), 1002)
	eveDeleted := binary(t, filepath.Join(home, "nvidia-cuda-mps-server (deleted)"), 1002)
	noJob := "0::/system.slice/nvidia-mps.service\n"

	rootControl, _ := r.spawnProc(t, procSpec{uid: 0, cgroup: noJob, exe: control, name: "nvidia-cuda-mps"})
	eveControl, _ := r.spawnProc(t, procSpec{uid: 1002, cgroup: noJob, exe: control, name: "nvidia-cuda-mps"})
	tests := []struct {
		name  string
		spec  procSpec
		spare bool
	}{
		{"root's daemon's server", procSpec{exe: server, ppid: rootControl.Process.Pid}, true},
		{"root's daemon's server after an upgrade", procSpec{exe: oldServer, exeText: server + " (deleted)", ppid: rootControl.Process.Pid}, true},
		{"a user's program named like the server", procSpec{exe: eveServer, ppid: rootControl.Process.Pid}, false},
		{"a user's deleted program named like the server", procSpec{exe: eveDeleted, exeText: eveServer + " (deleted)", ppid: rootControl.Process.Pid}, false},
		{"NVIDIA's server under a user's control daemon", procSpec{exe: server, ppid: eveControl.Process.Pid}, false},
		{"NVIDIA's server without its daemon", procSpec{exe: server, ppid: 1}, false},
	}
	g := r.m.ByMinor(4)
	done := map[string]<-chan struct{}{}
	for _, tt := range tests {
		tt.spec.uid, tt.spec.cgroup, tt.spec.name = 1002, noJob, "nvidia-cuda-mps"
		p, d := r.spawnProc(t, tt.spec)
		g.Run(uint32(p.Process.Pid), nvml.AccountingStats{})
		done[tt.name] = d
	}
	if err := r.h.Prolog(budget(t, 5*time.Second), job(90, 4)); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	for _, tt := range tests {
		if tt.spare {
			if !alive(done[tt.name]) {
				t.Errorf("%s was killed", tt.name)
			}
			continue
		}
		select {
		case <-done[tt.name]:
		case <-time.After(5 * time.Second):
			t.Errorf("%s survived the prolog with KillStray", tt.name)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", r.log)
	}
}

// TestHooks_StrayOfJobNotHoldingGPU: a running job's process is spared only
// on a GPU its job holds. Without ConstrainDevices a job's process can open
// any GPU; on one Slurm gave another job it is a stray (the old check
// spared every running job's processes everywhere).
func TestHooks_StrayOfJobNotHoldingGPU(t *testing.T) {
	r := newRig(t, func(c *Config, _ *Deps) { c.KillStray = true })
	if err := r.h.state.init(); err != nil {
		t.Fatal(err)
	}
	// Job 60 holds shards of GPU 3; job 61 holds shards of GPU 2.
	for id, minor := range map[int64]int{60: 3, 61: 2} {
		if err := r.h.state.putJob(jobRecord{JobID: id, Start: r.now, Shards: 2, GPUs: []gpuRecord{{Minor: minor}}}); err != nil {
			t.Fatal(err)
		}
	}
	cg := func(id int) string {
		return fmt.Sprintf("0::/system.slice/slurmstepd.scope/job_%d/step_0/user/task_0\n", id)
	}
	on1, on1Done := r.spawn(t, 1002, cg(60), "")       // job 60's process on GPU 1, given whole to job 70
	on2, on2Done := r.spawn(t, 1002, cg(60), "")       // job 60's process on GPU 2, shared by job 61
	sharer, sharerDone := r.spawn(t, 1003, cg(61), "") // job 61's own process on GPU 2
	r.m.ByMinor(1).Run(uint32(on1.Process.Pid), nvml.AccountingStats{})
	r.m.ByMinor(2).Run(uint32(on2.Process.Pid), nvml.AccountingStats{})
	r.m.ByMinor(2).Run(uint32(sharer.Process.Pid), nvml.AccountingStats{})

	if err := r.h.Prolog(budget(t, 5*time.Second), job(70, 1)); err != nil {
		t.Fatalf("prolog of the whole-GPU job: %v", err)
	}
	j := job(71, 2)
	j.Shards = 2
	if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
		t.Fatalf("prolog of the shard job: %v", err)
	}
	for name, d := range map[string]<-chan struct{}{"job 60's process on GPU 1": on1Done, "job 60's process on GPU 2": on2Done} {
		select {
		case <-d:
		case <-time.After(5 * time.Second):
			t.Errorf("%s survived though job 60 does not hold that GPU", name)
		}
	}
	if !alive(sharerDone) {
		t.Error("job 61's process on its own GPU was killed")
	}
	if !strings.Contains(r.log.String(), "left alone (process of running job 61)") {
		t.Errorf("log does not say job 61's process was spared:\n%s", r.log)
	}
}

// relisting is a Library whose devices list the pids in gone only the
// first time: between that listing and the pin, the process NVML saw
// ended and its number went to a process that is not on the GPU.
type relisting struct {
	Library
	gone []int
}

func (l relisting) Device(minor int) (Device, error) {
	d, err := l.Library.Device(minor)
	if err != nil {
		return nil, err
	}
	return &relistingDevice{Device: d, gone: l.gone}, nil
}

type relistingDevice struct {
	Device
	gone   []int
	listed int
}

func (d *relistingDevice) Processes() ([]int, error) {
	pids, err := d.Device.Processes()
	d.listed++
	if d.listed == 1 || err != nil {
		return pids, err
	}
	return slices.DeleteFunc(pids, func(p int) bool { return slices.Contains(d.gone, p) }), nil
}

// TestHooks_StrayPIDReusedBeforePin: a process is judged and killed only
// when NVML still lists its number after the pin; a process that took the
// number of one that left the GPU is not the GPU's (the old code killed
// whatever held the number when it pinned it).
func TestHooks_StrayPIDReusedBeforePin(t *testing.T) {
	r := newRig(t, func(c *Config, _ *Deps) { c.KillStray = true })
	reused, reusedDone := r.spawn(t, 1001, "0::/user.slice/user-1001.slice/session-4.scope\n", "")
	stray, strayDone := r.spawn(t, 1001, "0::/user.slice/user-1001.slice/session-4.scope\n", "")
	r.h.d.Library = relisting{Library: r.h.d.Library, gone: []int{reused.Process.Pid}}
	g := r.m.ByMinor(0)
	g.Run(uint32(reused.Process.Pid), nvml.AccountingStats{})
	g.Run(uint32(stray.Process.Pid), nvml.AccountingStats{})
	if err := r.h.Prolog(budget(t, 5*time.Second), job(80, 0)); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	select {
	case <-strayDone:
	case <-time.After(5 * time.Second):
		t.Error("the stray NVML listed twice survived the prolog with KillStray")
	}
	if !alive(reusedDone) {
		t.Errorf("process %d was killed though NVML no longer listed its number after the pin", reused.Process.Pid)
	}
}

// TestHooks_ShardLookupFailsClosed: when the shard lookup fails (squeue slow
// or slurmctld down), the prolog does not leave the GPU open: alone on it,
// the job gets it as a whole GPU (strays killed, EXCLUSIVE_PROCESS), and a
// later known sharer shares it again. The old prolog changed nothing and
// hunted no strays.
func TestHooks_ShardLookupFailsClosed(t *testing.T) {
	r := newRig(t, func(c *Config, d *Deps) { c.KillStray = true; d.Shards = failingLookup{} })
	g := r.m.ByMinor(6)
	stray, strayDone := r.spawn(t, 1002, "0::/user.slice/user-1002.slice/session-9.scope\n", "")
	g.Run(uint32(stray.Process.Pid), nvml.AccountingStats{})
	if err := r.h.Prolog(budget(t, 5*time.Second), job(120, 6)); err != nil {
		t.Fatalf("prolog: %v", err)
	}
	select {
	case <-strayDone:
	case <-time.After(5 * time.Second):
		t.Error("stray survived a prolog whose shard lookup failed")
	}
	g.Exit(uint32(stray.Process.Pid))
	if m := g.ComputeMode(); m != nvml.COMPUTEMODE_EXCLUSIVE_PROCESS {
		t.Errorf("GPU 6 in mode %d after a failed lookup, want EXCLUSIVE_PROCESS", m)
	}
	if !strings.Contains(r.log.String(), "cannot tell whether the job holds shards: GPU made exclusive") {
		t.Errorf("not logged:\n%s", r.log)
	}
	j := job(121, 6)
	j.Shards = 2
	if err := r.h.Prolog(budget(t, 5*time.Second), j); err != nil {
		t.Fatalf("sharer's prolog: %v", err)
	}
	if m := g.ComputeMode(); m != nvml.COMPUTEMODE_DEFAULT || len(r.mps.starts) != 1 {
		t.Errorf("after a known sharer joined: mode %d, MPS starts %v; want DEFAULT and one start", m, r.mps.starts)
	}
	for _, id := range []int64{120, 121} {
		if err := r.h.Epilog(budget(t, 5*time.Second), job(id, 6)); err != nil {
			t.Fatalf("epilog %d: %v", id, err)
		}
	}
	if gs, _ := r.h.state.gpu(6); len(gs.Sharers)+len(gs.Unknown) != 0 || gs.MPS || g.ComputeMode() != nvml.COMPUTEMODE_DEFAULT {
		t.Errorf("after both epilogs: state %+v, mode %d; want empty and the default", gs, g.ComputeMode())
	}
}
