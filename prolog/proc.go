package prolog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Processes pins and describes the processes found on a GPU, so the
// prolog can tell a stray from another job's work and kill exactly the
// process it judged.
type Processes interface {
	// Pin takes a handle on pid that keeps naming the same process after
	// it exits and its number is reused, and describes that process.
	Pin(pid int) (PinnedProcess, error)
}

// PinnedProcess is one process held by a handle.
type PinnedProcess interface {
	Info() ProcInfo
	// Kill sends SIGKILL to the pinned process, never to a process that
	// reused its number.
	Kill() error
	Close() error
}

// ProcInfo is what the stray check knows of a process.
type ProcInfo struct {
	PID   int
	UID   int    // real uid
	Comm  string // command name (user-chosen: only for the log)
	Exe   string // the executable's path, empty when unreadable
	JobID int64  // the Slurm job whose cgroup holds the process; 0 none
}

// ProcFS is Processes through pidfd_open(2) and the /proc files of the
// pinned process (Root is "/proc"; tests point it elsewhere).
type ProcFS struct{ Root string }

// Pin opens a pidfd first and reads /proc after, then checks through the
// pidfd that the process is still alive: a live process keeps its number,
// so what was read belongs to the pinned process, and a later Kill through
// the pidfd reaches it or nothing.
func (p ProcFS) Pin(pid int) (PinnedProcess, error) {
	if pid <= 1 {
		return nil, fmt.Errorf("pid %d: not a process the prolog may judge", pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	pp := &pinned{fd: fd, info: ProcInfo{PID: pid}}
	dir := filepath.Join(p.Root, strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		pp.Close()
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	var ok bool
	if pp.info.UID, pp.info.Comm, ok = parseStatus(status); !ok {
		pp.Close()
		return nil, fmt.Errorf("process %d: no Uid line in its status", pid)
	}
	cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		pp.Close()
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	pp.info.JobID = jobFromCgroup(cg)
	if pp.info.JobID == 0 {
		pp.info.JobID = jobFromStepd(p.Root, pid)
	}
	pp.info.Exe, _ = os.Readlink(filepath.Join(dir, "exe"))
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		pp.Close()
		return nil, fmt.Errorf("process %d gone while being judged: %w", pid, err)
	}
	return pp, nil
}

type pinned struct {
	fd   int
	info ProcInfo
}

func (p *pinned) Info() ProcInfo { return p.info }

func (p *pinned) Kill() error {
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %d: %w", p.info.PID, err)
	}
	return nil
}

func (p *pinned) Close() error { return unix.Close(p.fd) }

// parseStatus reads the real uid and the command name from
// /proc/PID/status.
func parseStatus(b []byte) (uid int, comm string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if v, found := strings.CutPrefix(line, "Name:"); found {
			comm = strings.TrimSpace(v)
		}
		if v, found := strings.CutPrefix(line, "Uid:"); found {
			if f := strings.Fields(v); len(f) > 0 {
				n, err := strconv.Atoi(f[0])
				if err == nil {
					uid, ok = n, true
				}
			}
		}
	}
	return uid, comm, ok
}

// jobFromCgroup finds the Slurm job a process belongs to in
// /proc/PID/cgroup: the first "job_N" directory of any hierarchy's path,
// as task/cgroup lays them out (v1 "/slurm/uid_1001/job_42/step_0/task_0",
// v2 "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"). Only
// root and slurmstepd create directories there; a process outside any job
// gives 0.
func jobFromCgroup(b []byte) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for dir := range strings.SplitSeq(parts[2], "/") {
			if v, ok := strings.CutPrefix(dir, "job_"); ok {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 {
					return id
				}
			}
		}
	}
	return 0
}

// maxAncestry bounds the walk up the parent chain; real job trees are a
// few levels deep, and the bound keeps a corrupt or racing /proc from
// looping.
const maxAncestry = 64

// jobFromStepd finds the job of a process that no job cgroup holds, as on
// sites with proctrack/linuxproc and no task/cgroup: its nearest ancestor
// that is root's slurmstepd names the job in its title ("slurmstepd:
// [42.0]", "[42.batch]", "[42.extern]"). Users cannot forge this: the
// ancestor must run as root from slurmstepd's binary, and a process
// cannot choose its parent (orphans go to init or a subreaper, never to
// another job's slurmstepd). Only the ancestor's own files are trusted,
// never the process's environment or title. 0 when there is no such
// ancestor.
func jobFromStepd(root string, pid int) int64 {
	for range maxAncestry {
		ppid, ok := parentOf(root, pid)
		if !ok || ppid <= 1 {
			return 0
		}
		pid = ppid
		status, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "status"))
		if err != nil {
			return 0
		}
		uid, _, ok := parseStatus(status)
		if !ok || uid != 0 {
			continue
		}
		exe, err := os.Readlink(filepath.Join(root, strconv.Itoa(pid), "exe"))
		if err != nil || !isStepd(filepath.Base(exe)) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "cmdline"))
		if err != nil {
			return 0
		}
		return jobFromStepdTitle(string(cmdline))
	}
	return 0
}

// isStepd tells slurmstepd's binary by name: "slurmstepd" as SchedMD
// installs it, "slurmstepd-wlm" as Debian's packages do.
func isStepd(base string) bool { return base == "slurmstepd" || base == "slurmstepd-wlm" }

// parentOf reads the parent pid from /proc/PID/stat. The command name in
// parentheses is the process's own choice and may hold spaces or ')', so
// the fields are read after the last ')'.
func parentOf(root string, pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// jobFromStepdTitle reads the job id from slurmstepd's title, "slurmstepd:
// [42.0]" (NUL-padded in /proc/PID/cmdline); 0 for anything else.
func jobFromStepdTitle(cmdline string) int64 {
	title := strings.TrimRight(cmdline, "\x00")
	rest, ok := strings.CutPrefix(title, "slurmstepd: [")
	if !ok {
		return 0
	}
	end := strings.IndexAny(rest, ".]")
	if end <= 0 {
		return 0
	}
	id, err := strconv.ParseInt(rest[:end], 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// mpsBinaries are the names of NVIDIA's MPS control daemon and server. The
// server runs as the first client's user outside the client's cgroup (the
// control daemon starts it), so on a shared GPU it looks like a stray.
var mpsBinaries = map[string]bool{"nvidia-cuda-mps-control": true, "nvidia-cuda-mps-server": true}

// strayVerdict says why a process on a GPU must be left alone, or "" when
// it is a stray the prolog may kill: no job holds it (by cgroup or by
// slurmstepd ancestry), it is no system process (pid 1 or below, root's)
// and no MPS daemon.
func strayVerdict(p ProcInfo) string {
	switch {
	case p.PID <= 1:
		return "system process"
	case p.UID == 0:
		return "root's process"
	case p.JobID != 0:
		return "process of running job " + strconv.FormatInt(p.JobID, 10)
	case p.Exe != "" && mpsBinaries[filepath.Base(p.Exe)]:
		return "MPS daemon"
	}
	return ""
}
