package prolog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

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
	PID  int
	UID  int    // real uid
	Comm string // command name (user-chosen: only for the log)
	Exe  string // the executable's path (without " (deleted)"), empty when unreadable
	// ExeDeleted says the executable was deleted or replaced after the
	// process started it, as after a driver upgrade.
	ExeDeleted bool
	// ExeRootOnly says the executable file the process runs (the inode, not
	// whatever Exe names now) is root's and writable by no one else, in a
	// directory chain only root can change (CheckRootPath).
	ExeRootOnly bool
	JobID       int64 // the Slurm job whose cgroup holds the process; 0 none
	// Parent is the parent process, read only for an MPS server (whose
	// trust rests on its parent); nil otherwise.
	Parent *ProcInfo
}

// ProcFS is Processes through pidfd_open(2) and the /proc files of the
// pinned process (Root is "/proc"; tests point it elsewhere). CgroupRoot
// is where the cgroup filesystem is mounted ("/sys/fs/cgroup"): a job
// cgroup a process claims must be a directory there owned by root. Where
// CgroupRoot is empty or the process's hierarchy is not mounted under it,
// only the path's layout is checked.
type ProcFS struct{ Root, CgroupRoot string }

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
	pp.info.JobID = p.jobFromCgroup(cg)
	if pp.info.JobID == 0 {
		pp.info.JobID = jobFromStepd(p.Root, pid)
	}
	p.readExe(&pp.info)
	if filepath.Base(pp.info.Exe) == mpsServer {
		pp.info.Parent = p.parent(pid)
	}
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		pp.Close()
		return nil, fmt.Errorf("process %d gone while being judged: %w", pid, err)
	}
	return pp, nil
}

// deletedSuffix is what the kernel appends to /proc/PID/exe when the file
// was unlinked after the process started it (a driver upgrade replaces the
// MPS binaries under their running daemons).
const deletedSuffix = " (deleted)"

// readExe fills in the executable's path and whether root alone controls
// it. The file is judged through /proc/PID/exe, which opens the very inode
// the process runs even when its name is gone, so a user's copy is told
// by its owner whatever it is called, and the path by the directories
// above it: a user can plant neither a root-owned file nor a name in a
// root-only directory.
func (p ProcFS) readExe(info *ProcInfo) {
	link := filepath.Join(p.Root, strconv.Itoa(info.PID), "exe")
	exe, err := os.Readlink(link)
	if err != nil {
		return
	}
	info.Exe, info.ExeDeleted = strings.CutSuffix(exe, deletedSuffix)
	st, err := os.Stat(link)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 || ownerOf(st) != 0 {
		return
	}
	if info.ExeDeleted {
		// The name is gone (or names a newer file); the directory it was
		// in must still be root's alone.
		info.ExeRootOnly = filepath.IsAbs(info.Exe) && CheckRootPath(filepath.Dir(info.Exe)) == nil
		return
	}
	// Not deleted: the name must still lead to the inode the process runs
	// (it would not from another mount namespace), along a root-only path.
	named, err := os.Stat(info.Exe)
	info.ExeRootOnly = err == nil && os.SameFile(st, named) && CheckRootPath(info.Exe) == nil
}

// parent describes the parent of the pinned process pid, or nil
// when it has none the prolog can judge. The parent is pinned too and the
// child's parent read again after, so what was read is the parent's.
func (p ProcFS) parent(pid int) *ProcInfo {
	ppid, ok := parentOf(p.Root, pid)
	if !ok || ppid <= 1 {
		return nil
	}
	pfd, err := unix.PidfdOpen(ppid, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	status, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(ppid), "status"))
	if err != nil {
		return nil
	}
	info := &ProcInfo{PID: ppid}
	if info.UID, info.Comm, ok = parseStatus(status); !ok {
		return nil
	}
	p.readExe(info)
	// Still the child's parent, and alive: the number named it throughout.
	if again, ok := parentOf(p.Root, pid); !ok || again != ppid || unix.PidfdSendSignal(pfd, 0, nil, 0) != nil {
		return nil
	}
	return info
}

func ownerOf(st os.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
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

// cgroupJob is a job cgroup named in /proc/PID/cgroup.
type cgroupJob struct {
	ID int64
	// Hierarchy is "" for cgroup v2's unified hierarchy, else the v1
	// hierarchy's controllers as the line lists them ("memory",
	// "cpu,cpuacct", "name=systemd").
	Hierarchy string
	Dir       string // the job's directory in the hierarchy: "/slurm/uid_1001/job_42"
}

// parseCgroupJobs finds the job cgroups in /proc/PID/cgroup, only where
// Slurm's task/cgroup puts them: v1 "/slurm[_NODE]/uid_U/job_N/..." at the
// top of a controller hierarchy, v2 ".../slurmstepd.scope/job_N/..." (or
// "NODE_slurmstepd.scope", with several slurmd on a node) in the unified
// one. A "job_N" anywhere else is a name a user chose for a cgroup
// delegated to them. Paths with empty, "." or ".." parts are refused: the
// kernel never prints them, and the directory is looked up later.
func parseCgroupJobs(b []byte) []cgroupJob {
	var out []cgroupJob
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		dirs := strings.Split(parts[2][1:], "/")
		if slices.ContainsFunc(dirs, func(d string) bool { return d == "" || d == "." || d == ".." }) {
			continue
		}
		unified := parts[0] == "0" && parts[1] == ""
		if !unified && (parts[1] == "" || strings.ContainsAny(parts[1], "/\x00") || parts[1] == "." || parts[1] == "..") {
			continue
		}
		var n int // dirs[:n] is the job's directory
		switch {
		case unified:
			for i := 0; i+1 < len(dirs); i++ {
				if d := dirs[i]; (d == "slurmstepd.scope" || strings.HasSuffix(d, "_slurmstepd.scope")) && slurmID(dirs[i+1], "job_") > 0 {
					n = i + 2
					break
				}
			}
		case len(dirs) >= 3 && (dirs[0] == "slurm" || (strings.HasPrefix(dirs[0], "slurm_") && len(dirs[0]) > len("slurm_"))) &&
			slurmID(dirs[1], "uid_") >= 0 && slurmID(dirs[2], "job_") > 0:
			n = 3
		}
		if n == 0 {
			continue
		}
		c := cgroupJob{ID: slurmID(dirs[n-1], "job_"), Dir: "/" + strings.Join(dirs[:n], "/")}
		if !unified {
			c.Hierarchy = parts[1]
		}
		out = append(out, c)
	}
	return out
}

// slurmID reads N from prefix+N as Slurm prints it (decimal, no sign, no
// leading zero); -1 for anything else.
func slurmID(s, prefix string) int64 {
	v, ok := strings.CutPrefix(s, prefix)
	if !ok || v == "" || len(v) > 19 || (len(v) > 1 && v[0] == '0') || strings.Trim(v, "0123456789") != "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// jobFromCgroup is the job whose cgroup holds a process, from its
// /proc/PID/cgroup: the job of the cgroups parseCgroupJobs finds that
// rootsCgroup accepts, 0 when there is none or they disagree.
func (p ProcFS) jobFromCgroup(b []byte) int64 {
	var id int64
	for _, c := range parseCgroupJobs(b) {
		if !p.rootsCgroup(c) {
			continue
		}
		if id != 0 && id != c.ID {
			return 0
		}
		id = c.ID
	}
	return id
}

// rootsCgroup says whether job cgroup c is a directory root owns. Only
// root and slurmstepd create directories in Slurm's cgroups, and a user
// can create one only under a cgroup delegated to them (systemd's user
// sessions), which belongs to them, as does all they create in it. A
// hierarchy not mounted under CgroupRoot cannot be checked: then the
// layout alone decides.
func (p ProcFS) rootsCgroup(c cgroupJob) bool {
	if p.CgroupRoot == "" {
		return true
	}
	mount := filepath.Join(p.CgroupRoot, strings.TrimPrefix(c.Hierarchy, "name="))
	if c.Hierarchy == "" {
		// cgroup v2 alone, or the "unified" mount of a hybrid system.
		if _, err := os.Stat(filepath.Join(p.CgroupRoot, "cgroup.controllers")); err != nil {
			mount = filepath.Join(p.CgroupRoot, "unified")
		}
	}
	if st, err := os.Stat(mount); err != nil || !st.IsDir() {
		return true
	}
	st, err := os.Lstat(filepath.Join(mount, c.Dir))
	return err == nil && st.IsDir() && ownerOf(st) == 0
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

// mpsServer is the name of NVIDIA's MPS server binary. The control daemon
// (nvidia-cuda-mps-control, run by root) starts one server per client
// user, running as that user outside any job cgroup, so on a shared GPU it
// looks like a stray.
const mpsServer = "nvidia-cuda-mps-server"

// trustedMPSServer says whether p is the real MPS server of root's control
// daemon. The name alone proves nothing: any user can run a program of
// that name, or NVIDIA's own binaries under a control daemon of their
// own. So both executables must be root's alone (after a driver upgrade
// they show as deleted, and still are), and the parent must be root's
// nvidia-cuda-mps-control.
func trustedMPSServer(p ProcInfo) bool {
	return filepath.Base(p.Exe) == mpsServer && p.ExeRootOnly &&
		p.Parent != nil && p.Parent.UID == 0 && p.Parent.ExeRootOnly &&
		filepath.Base(p.Parent.Exe) == "nvidia-cuda-mps-control"
}

// strayVerdict says why a process on a GPU must be left alone, or "" when
// it is a stray the prolog may kill: it is no system process (pid 1 or
// below, root's), belongs to no job that holds the GPU (holds; a job is
// known by cgroup or slurmstepd ancestry, and a job's process on a GPU
// Slurm did not give that job is a stray like any other) and is not the
// MPS server of root's control daemon.
func strayVerdict(p ProcInfo, holds func(jobID int64) bool) string {
	switch {
	case p.PID <= 1:
		return "system process"
	case p.UID == 0:
		return "root's process"
	case p.JobID != 0 && holds(p.JobID):
		return "process of running job " + strconv.FormatInt(p.JobID, 10)
	case trustedMPSServer(p):
		return "MPS daemon"
	}
	return ""
}
