package prolog

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeProc writes a /proc entry: stat with the given command name and
// parent, status with the uid, exe as a link and cmdline as given.
type fakeProc struct {
	pid, ppid, uid int
	comm, exe      string
	cmdline        string
}

func writeFakeProc(t *testing.T, root string, p fakeProc) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 100 1000 100\n", p.pid, p.comm, p.ppid, p.ppid, p.ppid)
	status := fmt.Sprintf("Name:\t%s\nState:\tS (sleeping)\nPid:\t%d\nPPid:\t%d\nUid:\t%d\t%d\t%d\t%d\n", p.comm, p.pid, p.ppid, p.uid, p.uid, p.uid, p.uid)
	for name, body := range map[string]string{"stat": stat, "status": status, "cmdline": p.cmdline} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(p.exe, filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
}

func TestJobFromStepd(t *testing.T) {
	root := t.TempDir()
	for _, p := range []fakeProc{
		// job 42's batch step under root's slurmstepd: python → bash → slurmstepd.
		{pid: 100, ppid: 1, uid: 0, comm: "slurmstepd", exe: "/usr/sbin/slurmstepd", cmdline: "slurmstepd: [42.batch]\x00\x00\x00"},
		{pid: 101, ppid: 100, uid: 1001, comm: "bash", exe: "/usr/bin/bash", cmdline: "/bin/bash\x00job.sh\x00"},
		{pid: 102, ppid: 101, uid: 1001, comm: "python) S 100 (x", exe: "/usr/bin/python3", cmdline: "python3\x00train.py\x00"},
		// A user's own "slurmstepd": the right title and name, but not root's.
		{pid: 200, ppid: 1, uid: 1002, comm: "slurmstepd", exe: "/home/eve/slurmstepd", cmdline: "slurmstepd: [42.0]\x00"},
		{pid: 201, ppid: 200, uid: 1002, comm: "miner", exe: "/home/eve/miner", cmdline: "miner\x00"},
		// Root's process with a forged title but another binary.
		{pid: 300, ppid: 1, uid: 0, comm: "sshd", exe: "/usr/sbin/sshd", cmdline: "slurmstepd: [42.0]\x00"},
		{pid: 301, ppid: 300, uid: 1002, comm: "miner", exe: "/home/eve/miner", cmdline: "miner\x00"},
		// A process started outside any job, under the user's login shell.
		{pid: 400, ppid: 1, uid: 1002, comm: "bash", exe: "/usr/bin/bash", cmdline: "-bash\x00"},
		{pid: 401, ppid: 400, uid: 1002, comm: "stray", exe: "/home/eve/stray", cmdline: "stray\x00"},
		// The extern step and a het job's step ids.
		{pid: 500, ppid: 1, uid: 0, comm: "slurmstepd", exe: "/opt/slurm/sbin/slurmstepd", cmdline: "slurmstepd: [77.extern]\x00"},
		{pid: 501, ppid: 500, uid: 1003, comm: "sleep", exe: "/usr/bin/sleep", cmdline: "sleep\x00"},
		// Debian's packages name the binary slurmstepd-wlm (seen on the lab).
		{pid: 700, ppid: 1, uid: 0, comm: "slurmstepd", exe: "/usr/sbin/slurmstepd-wlm", cmdline: "slurmstepd: [151.batch]\x00"},
		{pid: 701, ppid: 700, uid: 1001, comm: "slurm_script", exe: "/usr/bin/bash", cmdline: "/bin/bash\x00"},
		// A parent loop must end.
		{pid: 600, ppid: 601, uid: 1002, comm: "a", exe: "/a", cmdline: "a\x00"},
		{pid: 601, ppid: 600, uid: 1002, comm: "b", exe: "/b", cmdline: "b\x00"},
	} {
		writeFakeProc(t, root, p)
	}
	for _, tt := range []struct {
		pid  int
		want int64
	}{
		{102, 42}, {101, 42}, {201, 0}, {301, 0}, {401, 0}, {501, 77}, {701, 151}, {600, 0}, {999, 0},
	} {
		if got := jobFromStepd(root, tt.pid); got != tt.want {
			t.Errorf("jobFromStepd(%d) = %d, want %d", tt.pid, got, tt.want)
		}
	}
}

func TestJobFromStepdTitle(t *testing.T) {
	for _, tt := range []struct {
		cmdline string
		want    int64
	}{
		{"slurmstepd: [42.0]\x00", 42},
		{"slurmstepd: [42.batch]", 42},
		{"slurmstepd: [42.extern]\x00\x00", 42},
		{"slurmstepd: [42]", 42},
		{"slurmstepd: [.0]", 0},
		{"slurmstepd: [-4.0]", 0},
		{"slurmstepd: [99999999999999999999.0]", 0},
		{"slurmstepd:\x00[42.0]", 0},
		{"/usr/sbin/slurmstepd\x00", 0},
		{"", 0},
	} {
		if got := jobFromStepdTitle(tt.cmdline); got != tt.want {
			t.Errorf("jobFromStepdTitle(%q) = %d, want %d", tt.cmdline, got, tt.want)
		}
	}
}
