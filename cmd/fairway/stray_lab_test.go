package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLab_PrologKillsStraysAndOtherJobsProcesses: the lab runs
// proctrack/linuxproc without task/cgroup, so a job's processes are in no
// job cgroup. A whole-GPU job's prolog with FAIRWAY_KILL_STRAY=true finds on
// its GPU a shard job's running process and a process a user started
// outside any job. The prolog knows the first as the shard job's (its root
// slurmstepd ancestor names the job), but that job holds another GPU, so
// the process has no business on this one: both are killed. The hooks are
// the fairway_nvmlmock build: the mock GPUs list both real PIDs as compute
// processes (FAIRWAY_TEST_NVML_PROCS in the whole job's root-only config).
func TestLab_PrologKillsStraysAndOtherJobsProcesses(t *testing.T) {
	h := newHookLabTags(t, "fairway_nvmlmock")

	// The shard job's sleep runs until the test writes to the job's release
	// FIFO; the job then ends it and completes. The job opens the FIFO
	// read-write before it prints the sleep's PID, so from then on the
	// test's non-blocking open for writing finds a reader.
	release := filepath.Join(h.e.JobDir, fmt.Sprintf("fw-release-%d", time.Now().UnixNano()))
	if err := unix.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(release) })
	carol := labUser(t, "carol")
	if err := os.Chown(release, carol.uid, carol.gid); err != nil {
		t.Fatal(err)
	}
	// The whole-GPU job's prolog kills the sleep; the script outlives it.
	shardScript := fmt.Sprintf("exec 3<>%s\nsleep 1000000 &\necho \"fwtest sleep=$!\"\nread x <&3\nkill $! 2>/dev/null\nexit 0\n", release)
	shard, shardOut := h.runScript(t, "carol", h.config(t, "shard.env", h.db), shardScript, "--gres=shard:2")
	m := waitOutput(t, h, shard, shardOut, regexp.MustCompile(`fwtest sleep=(\d+)`))
	sharerPID, _ := strconv.Atoi(m[1])
	sharer := pin(t, sharerPID)
	node, shardGPUs := jobSaw(t, shardOut)

	// The stray: a user's process outside any job, its parent this test.
	bob := labUser(t, "bob")
	stray := exec.Command("sleep", "1000000")
	stray.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(bob.uid), Gid: uint32(bob.gid)}}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	strayDone := make(chan struct{})
	go func() { stray.Wait(); close(strayDone) }()
	t.Cleanup(func() {
		stray.Process.Kill()
		<-strayDone
	})

	procs := fmt.Sprintf("*:%d,%d", sharerPID, stray.Process.Pid)
	cfg := h.config(t, "whole.env", h.db, "FAIRWAY_KILL_STRAY=true", "FAIRWAY_PROLOG_TIMEOUT=60s",
		"FAIRWAY_TEST_NVML=dgxh100", "FAIRWAY_TEST_NVML_PROCS="+procs)
	whole, wholeOut := h.run(t, "alice", cfg, "--gres=gpu:1", "-w", node)
	h.e.WaitState(t, whole, 5*time.Minute, "COMPLETED")
	wholeNode, wholeGPUs := jobSaw(t, wholeOut)
	if wholeNode != node || len(wholeGPUs) != 1 || slices.Contains(shardGPUs, wholeGPUs[0]) {
		t.Fatalf("whole-GPU job ran on %s GPUs %v, shard job on %s GPUs %v: want another GPU of the same node", wholeNode, wholeGPUs, node, shardGPUs)
	}

	// The prolog finished before the job ran: the stray is dead by now.
	select {
	case <-strayDone:
		if ws, ok := stray.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the stray ended with %v, want SIGKILL", stray.ProcessState)
		}
	case <-time.After(10 * time.Second):
		t.Error("the stray process outside any job survived the prolog with FAIRWAY_KILL_STRAY=true")
	}
	if err := waitExit(sharer, 10*time.Second); err != nil {
		t.Errorf("shard job %d's process %d on the whole-GPU job's GPU: %v", shard, sharerPID, err)
	}

	log, err := os.ReadFile(filepath.Join(h.dir, "hooks.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shard job %d on %s GPUs %v, sleep pid %d; whole-GPU job %d on GPU %v; stray pid %d; hook log:\n%s",
		shard, node, shardGPUs, sharerPID, whole, wholeGPUs, stray.Process.Pid, log)
	gpu := strconv.Itoa(wholeGPUs[0])
	for _, want := range []struct{ msg, pid, job string }{
		{"stray process on GPU: killed", strconv.Itoa(sharerPID), fmt.Sprintf("job_id_of_process=%d", shard)},
		{"stray process on GPU: killed", strconv.Itoa(stray.Process.Pid), "job_id_of_process=0"},
	} {
		if !logHas(log, whole, want.msg, "gpu="+gpu, "pid="+want.pid, want.job) {
			t.Errorf("the prolog of job %d did not log %q for pid %s on GPU %s:\n%s", whole, want.msg, want.pid, gpu, log)
		}
	}

	// Released, the shard job ends its sleep and completes.
	f, err := os.OpenFile(release, os.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("shard job %d is not waiting on its release FIFO: %v", shard, err)
	}
	f.Write([]byte("go\n"))
	f.Close()
	if st := h.e.WaitState(t, shard, 2*time.Minute, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"); st != "COMPLETED" {
		t.Errorf("shard job %d ended %s after its release, want COMPLETED (its script kills its own sleep)", shard, st)
	}
	h.checkHealthyLab(t, shard, whole)
}

type labAccount struct{ uid, gid int }

func labUser(t *testing.T, name string) labAccount {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("lab user %s: %v", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("lab user %s: %v", name, err)
	}
	return labAccount{uid, gid}
}

// waitOutput waits until job's output file matches re and returns the
// match; it fails when the job ends or five minutes pass first.
func waitOutput(t *testing.T, h *hookLab, job int64, out string, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		b, _ := os.ReadFile(out)
		if m := re.FindStringSubmatch(string(b)); m != nil {
			return m
		}
		state := strings.TrimSpace(h.e.Run(t, "", "squeue", "-h", "-j", strconv.FormatInt(job, 10), "-o", "%T"))
		if (state != "" && state != "PENDING" && state != "CONFIGURING" && state != "RUNNING") || time.Now().After(deadline) {
			t.Fatalf("job %d (state %q) never printed %s; output:\n%s", job, state, re, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pin opens a pidfd on pid, so the test later checks that very process,
// never one that reused its number.
func pin(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// waitExit waits until the process pinned by pidfd fd ends (its pidfd
// turns readable), for at most d.
func waitExit(fd int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("still running after %s", d)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// logHas reports whether a line of the hook log of job has msg and every
// one of attrs as a whole word.
func logHas(log []byte, job int64, msg string, attrs ...string) bool {
	for line := range strings.SplitSeq(string(log), "\n") {
		words := strings.Fields(line)
		if !strings.Contains(line, `msg="`+msg+`"`) || !slices.Contains(words, fmt.Sprintf("job_id=%d", job)) {
			continue
		}
		if !slices.ContainsFunc(attrs, func(a string) bool { return !slices.Contains(words, a) }) {
			return true
		}
	}
	return false
}
