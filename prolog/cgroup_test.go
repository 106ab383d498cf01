package prolog

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseCgroupJobs: whatever /proc/PID/cgroup holds, every job found is
// a positive id in Slurm's layout, at a clean path inside its hierarchy
// that the line itself names, so the ownership check looks where the
// kernel put the process and nowhere else.
func FuzzParseCgroupJobs(f *testing.F) {
	for _, seed := range []string{
		"0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n",
		"12:memory:/slurm/uid_1001/job_7/step_batch/task_0\n11:cpuset:/slurm/uid_1001/job_7\n",
		"0::/system.slice/gpu1_slurmstepd.scope/job_11/step_0\n",
		"4:name=systemd:/slurm_gpu1/uid_0/job_1\n",
		"0::/user.slice/user-1001.slice/user@1001.service/app.slice/job_4242\n",
		"0::/system.slice/slurmstepd.scope/../../job_5\n",
		"1:a/b:/slurm/uid_1/job_2\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range parseCgroupJobs(b) {
			if c.ID <= 0 {
				t.Fatalf("%q: job id %d", b, c.ID)
			}
			if !strings.HasSuffix(c.Dir, "/job_"+strconv.FormatInt(c.ID, 10)) {
				t.Fatalf("%q: directory %q does not end in job_%d", b, c.Dir, c.ID)
			}
			if filepath.Clean(c.Dir) != c.Dir || !strings.HasPrefix(c.Dir, "/") {
				t.Fatalf("%q: directory %q is not a clean absolute path", b, c.Dir)
			}
			if strings.Contains(c.Hierarchy, "/") || c.Hierarchy == "." || c.Hierarchy == ".." {
				t.Fatalf("%q: hierarchy %q leaves the cgroup mount", b, c.Hierarchy)
			}
			dirs := strings.Split(c.Dir[1:], "/")
			if c.Hierarchy == "" {
				scope := dirs[len(dirs)-2]
				if scope != "slurmstepd.scope" && !strings.HasSuffix(scope, "_slurmstepd.scope") {
					t.Fatalf("%q: v2 job directory %q not under slurmstepd's scope", b, c.Dir)
				}
				if !strings.Contains(string(b), "0::"+c.Dir) {
					t.Fatalf("%q: v2 directory %q is not on a 0:: line", b, c.Dir)
				}
			} else {
				if len(dirs) != 3 || !strings.HasPrefix(dirs[0], "slurm") || !strings.HasPrefix(dirs[1], "uid_") {
					t.Fatalf("%q: v1 job directory %q is not /slurm[_NODE]/uid_U/job_N", b, c.Dir)
				}
				if !strings.Contains(string(b), ":"+c.Hierarchy+":"+c.Dir) {
					t.Fatalf("%q: v1 directory %q is not on a line of hierarchy %q", b, c.Dir, c.Hierarchy)
				}
			}
		}
	})
}

// TestProcFS_CgroupOwner: where the cgroup filesystem can be checked, a job
// directory must be root's: a user can create one in Slurm's layout only
// under a cgroup delegated to them, and every directory there is theirs.
func TestProcFS_CgroupOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make directories of other owners")
	}
	v2 := t.TempDir() // a cgroup v2 mount: cgroup.controllers at its top
	v1 := t.TempDir() // a v1 system: one directory per hierarchy, no unified one
	mkdir := func(root, rel string, uid int) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	mkdir(v2, "system.slice/slurmstepd.scope/job_42/step_0", 0)
	mkdir(v2, "user.slice/user-1001.slice/user@1001.service", 1001)
	mkdir(v2, "user.slice/user-1001.slice/user@1001.service/x/slurmstepd.scope/job_4242", 1001)
	mkdir(v1, "memory/slurm/uid_1001/job_7", 0)
	mkdir(v1, "memory/slurm/uid_1001/job_8", 1001)
	tests := []struct {
		root, cgroup string
		want         int64
	}{
		{v2, "0::/system.slice/slurmstepd.scope/job_42/step_0\n", 42},
		{v2, "0::/user.slice/user-1001.slice/user@1001.service/x/slurmstepd.scope/job_4242\n", 0},
		{v2, "0::/system.slice/slurmstepd.scope/job_43\n", 0}, // no such directory: the process moved
		{v1, "4:memory:/slurm/uid_1001/job_7/step_0\n", 7},
		{v1, "4:memory:/slurm/uid_1001/job_8\n", 0},
		{v1, "5:pids:/slurm/uid_1001/job_9\n", 9},                             // hierarchy not mounted here: the layout decides
		{v1, "0::/system.slice/slurmstepd.scope/job_10\n", 10},                // no unified mount either
		{"", "0::/user.slice/x/slurmstepd.scope/job_11\n", 11},                // no cgroup root: the layout decides
		{v2, "0::/system.slice/slurmstepd.scope/job_42/../../../../etc\n", 0}, // not Slurm's layout
	}
	for _, tt := range tests {
		if got := (ProcFS{CgroupRoot: tt.root}).jobFromCgroup([]byte(tt.cgroup)); got != tt.want {
			t.Errorf("cgroup root %s: jobFromCgroup(%q) = %d, want %d", tt.root, tt.cgroup, got, tt.want)
		}
	}
}

func TestStrayVerdict(t *testing.T) {
	control := &ProcInfo{PID: 800, UID: 0, Exe: "/usr/bin/nvidia-cuda-mps-control", ExeRootOnly: true}
	userControl := &ProcInfo{PID: 801, UID: 1002, Exe: "/usr/bin/nvidia-cuda-mps-control", ExeRootOnly: true}
	holds := func(id int64) bool { return id == 12 }
	tests := []struct {
		p    ProcInfo
		want string
	}{
		{ProcInfo{PID: 1, UID: 1001}, "system process"},
		{ProcInfo{PID: 0, UID: 1001}, "system process"},
		{ProcInfo{PID: 900, UID: 0}, "root's process"},
		{ProcInfo{PID: 900, UID: 1001, JobID: 12}, "process of running job 12"},
		{ProcInfo{PID: 900, UID: 1001, JobID: 13}, ""}, // a job that does not hold the GPU
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-server", ExeRootOnly: true, Parent: control}, "MPS daemon"},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-server", ExeDeleted: true, ExeRootOnly: true, Parent: control}, "MPS daemon"},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-server", ExeRootOnly: true, Parent: userControl}, ""},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-server", ExeRootOnly: true}, ""},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/home/u/nvidia-cuda-mps-server", Parent: control}, ""},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/usr/bin/nvidia-cuda-mps-control", ExeRootOnly: true, Parent: control}, ""},
		{ProcInfo{PID: 900, UID: 1001, Exe: "/home/u/nvidia-cuda-mps-server-not"}, ""},
		{ProcInfo{PID: 900, UID: 1001}, ""},
	}
	for _, tt := range tests {
		if got := strayVerdict(tt.p, holds); got != tt.want {
			t.Errorf("strayVerdict(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}
