package prolog

import (
	"os"
	"os/exec"
	"testing"
)

// TestJobFromCgroup: only Slurm's task/cgroup layouts name a job. A user
// can create cgroups, named as they like, under the part of the tree
// systemd delegates to them (user@UID.service), so a "job_N" there must
// not make their process a job's (the old parser took the first "job_N"
// anywhere).
func TestJobFromCgroup(t *testing.T) {
	tests := []struct {
		cgroup string
		want   int64
	}{
		{"0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", 42},                       // cgroup/v2
		{"12:memory:/slurm/uid_1001/job_7/step_batch/task_0\n11:cpuset:/slurm/uid_1001/job_7\n", 7}, // cgroup/v1
		{"0::/system.slice/slurmstepd.scope/job_9/step_extern/slurm_processes\n", 9},
		{"0::/system.slice/gpu1_slurmstepd.scope/job_11/step_0/user/task_0\n", 11}, // several slurmd on a node
		{"4:memory:/slurm_gpu1/uid_1001/job_12/step_0/task_0\n", 12},
		{"0::/user.slice/user-1001.slice/session-4.scope\n", 0},
		{"0::/user.slice/job_x/job_\n", 0},
		{"", 0},
		// A user's own cgroups, in the subtree systemd delegates to them.
		{"0::/user.slice/user-1001.slice/user@1001.service/app.slice/job_4242\n", 0},
		{"0::/user.slice/user-1001.slice/user@1001.service/job_4242/step_0/user/task_0\n", 0},
		{"0::/user.slice/user-1001.slice/user@1001.service/uid_1001/job_4242\n", 0},
		{"4:memory:/user.slice/slurm/uid_1001/job_4242\n", 0},
		{"4:memory:/slurm/job_4242\n", 0},
		{"0::/system.slice/slurmstepd.scope/step_0/job_4242\n", 0},
		{"0::/system.slice/slurmstepd.scope/job_+42\n", 0},
		{"0::/system.slice/slurmstepd.scope/job_042\n", 0},
		{"0::/system.slice/slurmstepd.scope/../job_42\n", 0},
		// Two hierarchies naming different jobs: neither is believed.
		{"12:memory:/slurm/uid_1/job_7\n11:cpuset:/slurm/uid_1/job_8\n", 0},
	}
	for _, tt := range tests {
		if got := (ProcFS{}).jobFromCgroup([]byte(tt.cgroup)); got != tt.want {
			t.Errorf("jobFromCgroup(%q) = %d, want %d", tt.cgroup, got, tt.want)
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
