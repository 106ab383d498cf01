package prolog

import (
	"os"
	"os/exec"
	"testing"
)

func TestJobFromCgroup(t *testing.T) {
	tests := []struct {
		cgroup string
		want   int64
	}{
		{"0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", 42},                       // cgroup/v2
		{"12:memory:/slurm/uid_1001/job_7/step_batch/task_0\n11:cpuset:/slurm/uid_1001/job_7\n", 7}, // cgroup/v1
		{"0::/system.slice/slurmstepd.scope/job_9/step_extern/slurm_processes\n", 9},
		{"0::/user.slice/user-1001.slice/session-4.scope\n", 0},
		{"0::/user.slice/job_x/job_\n", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := jobFromCgroup([]byte(tt.cgroup)); got != tt.want {
			t.Errorf("jobFromCgroup(%q) = %d, want %d", tt.cgroup, got, tt.want)
		}
	}
}

func TestStrayVerdict(t *testing.T) {
	tests := []struct {
		p    ProcInfo
		want string
	}{
		{ProcInfo{PID: 1, UID: 1001}, "system process"},
		{ProcInfo{PID: 0, UID: 1001}, "system process"},
		{ProcInfo{PID: 900, UID: 0}, "root's process"},
		{ProcInfo{PID: 900, UID: 1001, JobID: 12}, "process of running job 12"},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-server"}, "MPS daemon"},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/home/u/nvidia-cuda-mps-server-not"}, ""},
		{ProcInfo{PID: 900, UID: 1001}, ""},
	}
	for _, tt := range tests {
		if got := strayVerdict(tt.p); got != tt.want {
			t.Errorf("strayVerdict(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestProcFS_Pin pins real processes through the real /proc.
func TestProcFS_Pin(t *testing.T) {
	fs := ProcFS{Root: "/proc"}
	for _, pid := range []int{-1, 0, 1} {
		if _, err := fs.Pin(pid); err == nil {
			t.Errorf("Pin(%d): no error", pid)
		}
	}
	p := exec.Command("sleep", "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	pp, err := fs.Pin(p.Process.Pid)
	if err != nil {
		p.Process.Kill()
		t.Fatal(err)
	}
	if info := pp.Info(); info.UID != os.Getuid() || info.Comm != "sleep" || info.PID != p.Process.Pid {
		t.Errorf("info %+v, want uid %d, command sleep", info, os.Getuid())
	}
	if err := pp.Kill(); err != nil {
		t.Errorf("kill: %v", err)
	}
	if err := p.Wait(); err == nil {
		t.Error("process exited cleanly after SIGKILL")
	}
	// Reaped: the pin still names the dead process, and a kill reaches nothing.
	if err := pp.Kill(); err != nil {
		t.Errorf("kill after exit: %v", err)
	}
	pp.Close()
	if _, err := fs.Pin(p.Process.Pid); err == nil {
		t.Error("Pin of a reaped process: no error")
	}
}
