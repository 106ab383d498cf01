package prolog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// MPS starts and stops one CUDA MPS control daemon per GPU, so shard jobs on
// one GPU share it through MPS while other GPUs of the node stay exclusive.
type MPS interface {
	// Start starts the control daemon of gpu, serving clients through
	// MPSPipeDir(dir, gpu.Minor). It is called only when Fairway's state says
	// no daemon of its own runs on that GPU.
	Start(ctx context.Context, gpu DeviceInfo) error
	// Stop asks that daemon to quit; its servers exit once their clients
	// have.
	Stop(ctx context.Context, gpu DeviceInfo) error
}

// MPSPipeDir is the pipe directory of the MPS daemon of GPU minor under dir.
// A job's tasks reach the daemon through CUDA_MPS_PIPE_DIRECTORY set to it.
func MPSPipeDir(dir string, minor int) string {
	return filepath.Join(dir, strconv.Itoa(minor), "pipe")
}

// MPSControl is MPS through NVIDIA's nvidia-cuda-mps-control (Binary), with
// per-GPU pipe and log directories under Dir.
type MPSControl struct {
	Binary string
	Dir    string
}

// Start runs `nvidia-cuda-mps-control -d`, which daemonises and returns. The
// daemon sees only its GPU (CUDA_VISIBLE_DEVICES is the GPU's UUID, not an
// index, because MPS renumbers the devices it exposes).
func (m MPSControl) Start(ctx context.Context, gpu DeviceInfo) error {
	if gpu.UUID == "" {
		return fmt.Errorf("start MPS on GPU %d: its UUID is unknown", gpu.Minor)
	}
	pipe := MPSPipeDir(m.Dir, gpu.Minor)
	logDir := filepath.Join(m.Dir, strconv.Itoa(gpu.Minor), "log")
	for _, d := range []string{pipe, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("start MPS on GPU %d: %w", gpu.Minor, err)
		}
	}
	cmd := exec.CommandContext(ctx, m.Binary, "-d")
	cmd.Env = daemonEnv("CUDA_VISIBLE_DEVICES="+gpu.UUID,
		"CUDA_MPS_PIPE_DIRECTORY="+pipe, "CUDA_MPS_LOG_DIRECTORY="+logDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start MPS on GPU %d: %s: %w: %s", gpu.Minor, m.Binary, err, bytes.TrimSpace(out))
	}
	return nil
}

// Stop sends "quit" to the daemon's control pipe.
func (m MPSControl) Stop(ctx context.Context, gpu DeviceInfo) error {
	cmd := exec.CommandContext(ctx, m.Binary)
	cmd.Env = daemonEnv("CUDA_MPS_PIPE_DIRECTORY=" + MPSPipeDir(m.Dir, gpu.Minor))
	cmd.Stdin = strings.NewReader("quit\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("stop MPS on GPU %d: %w: %s", gpu.Minor, err, bytes.TrimSpace(out))
	}
	return nil
}

// daemonEnv is the hook's environment without what describes the job it
// runs for (Slurm's and SPANK's variables) or sets CUDA's behaviour, plus
// set. The control daemon outlives that job and serves the GPU's later
// jobs, of other users: it must not carry one job's settings to them.
func daemonEnv(set ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "SLURM"), strings.HasPrefix(name, "SPANK_"), strings.HasPrefix(name, "CUDA_"):
		default:
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// MPSLimits are one shard job's limits on its GPU, in proportion to its
// share of the GPU's shards.
type MPSLimits struct {
	ActiveThreadPct int   // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 1..100
	PinnedMemMB     int64 // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for device 0; 0 = no limit
}

// mpsLimits gives a job holding shards of shardsPerGPU on a GPU with memMB
// memory its share: threads rounded up (so a small share still runs), memory
// rounded down (so the shares never add up to more than the GPU has).
func mpsLimits(shards, shardsPerGPU int, memMB int64) MPSLimits {
	if shards <= 0 || shardsPerGPU <= 0 {
		return MPSLimits{ActiveThreadPct: 100}
	}
	if shards > shardsPerGPU {
		shards = shardsPerGPU
	}
	pct := (100*shards + shardsPerGPU - 1) / shardsPerGPU
	return MPSLimits{ActiveThreadPct: max(pct, 1), PinnedMemMB: memMB * int64(shards) / int64(shardsPerGPU)}
}

// mpsEnv is a shard job's environment in TaskProlog's "export NAME=value"
// form. The job's tasks see only their GPU, by UUID as the MPS daemon
// expects, so the pinned-memory limit names device 0.
func mpsEnv(pipeDir string, gpu DeviceInfo, l MPSLimits) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "export CUDA_MPS_PIPE_DIRECTORY=%s\n", pipeDir)
	fmt.Fprintf(&b, "export CUDA_VISIBLE_DEVICES=%s\n", gpu.UUID)
	fmt.Fprintf(&b, "export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d\n", l.ActiveThreadPct)
	if l.PinnedMemMB > 0 {
		fmt.Fprintf(&b, "export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%dM\n", l.PinnedMemMB)
	}
	return b.Bytes()
}
