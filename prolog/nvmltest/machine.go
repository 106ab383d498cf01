// Package nvmltest is a GPU node for tests and benchmarks without GPUs:
// go-nvml's mock DGX H100 (pkg/nvml/mock/dgxh100) with the calls Fairway's
// hooks make wired to state a test can set and inspect. Only tests and the
// fairway_nvmlmock build of the binary import it; release builds never do.
package nvmltest

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Machine is a DGX H100 with n GPUs. It implements nvml.Interface.
type Machine struct {
	*server.Server
	GPUs []*GPU
}

// GPU is one mock H100. Its exported mock funcs (embedded from go-nvml's
// mock.Device) may be replaced by a test, e.g. with one that blocks.
type GPU struct {
	*server.Device

	mu         sync.Mutex
	mode       nvml.ComputeMode
	accounting bool
	running    map[uint32]bool
	stats      map[uint32]nvml.AccountingStats
	energyMJ   uint64
	modeSets   int

	// Health counters; set them before the hook runs.
	RetiredPagesPending bool
	RemapPending        bool
	RemapFailed         bool
	UncorrectableECC    uint64
	// Lost makes every call fail with ERROR_GPU_IS_LOST.
	Lost bool
}

// New returns a DGX H100 with n GPUs whose minor numbers are reversed
// against NVML's index order (index 0 is /dev/nvidia(n-1)), so code that
// confuses the two fails.
func New(n int) *Machine {
	s := dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...)
	m := &Machine{Server: s}
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.Minor = n - 1 - i
		g := &GPU{Device: dev, running: map[uint32]bool{}, stats: map[uint32]nvml.AccountingStats{}, energyMJ: 1_000_000}
		g.wire(i)
		m.GPUs = append(m.GPUs, g)
	}
	return m
}

// ByMinor returns the GPU with device file /dev/nvidia<minor>, or nil.
func (m *Machine) ByMinor(minor int) *GPU {
	for _, g := range m.GPUs {
		if g.Minor == minor {
			return g
		}
	}
	return nil
}

// Absent makes Init fail as it does on a node without libnvidia-ml.
func (m *Machine) Absent() { m.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND } }

// ComputeMode is the GPU's current compute mode.
func (g *GPU) ComputeMode() nvml.ComputeMode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mode
}

// ModeSets counts SetComputeMode calls.
func (g *GPU) ModeSets() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.modeSets
}

// AccountingEnabled reports whether per-process accounting is on.
func (g *GPU) AccountingEnabled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.accounting
}

// Run puts a running compute process on the GPU; its accounting record
// (when accounting is on) is s.
func (g *GPU) Run(pid uint32, s nvml.AccountingStats) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[pid] = true
	if g.accounting {
		s.IsRunning = 1
		g.stats[pid] = s
	}
}

// Exit ends a process; its accounting record stays, as in the driver.
func (g *GPU) Exit(pid uint32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.running, pid)
	if s, ok := g.stats[pid]; ok {
		s.IsRunning = 0
		g.stats[pid] = s
	}
}

// AddEnergy advances the GPU's energy counter.
func (g *GPU) AddEnergy(mJ uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.energyMJ += mJ
}

func (g *GPU) lost() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Lost
}

// wire sets the mock funcs go-nvml's DGX machine leaves nil.
func (g *GPU) wire(index int) {
	bus := uint32(0x18 + 0x10*index)
	g.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		if g.lost() {
			return nvml.PciInfo{}, nvml.ERROR_GPU_IS_LOST
		}
		return nvml.PciInfo{Domain: 0, Bus: bus, Device: 0, PciDeviceId: g.Config.PciDeviceId}, nvml.SUCCESS
	}
	minor := g.GetMinorNumberFunc
	g.GetMinorNumberFunc = func() (int, nvml.Return) {
		if g.lost() {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return minor()
	}
	uuid := g.GetUUIDFunc
	g.GetUUIDFunc = func() (string, nvml.Return) {
		if g.lost() {
			return "", nvml.ERROR_GPU_IS_LOST
		}
		return uuid()
	}
	g.GetComputeModeFunc = func() (nvml.ComputeMode, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.mode, nvml.SUCCESS
	}
	g.SetComputeModeFunc = func(m nvml.ComputeMode) nvml.Return {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.Lost {
			return nvml.ERROR_GPU_IS_LOST
		}
		g.mode = m
		g.modeSets++
		return nvml.SUCCESS
	}
	g.SetAccountingModeFunc = func(s nvml.EnableState) nvml.Return {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.accounting = s == nvml.FEATURE_ENABLED
		return nvml.SUCCESS
	}
	g.ClearAccountingPidsFunc = func() nvml.Return {
		g.mu.Lock()
		defer g.mu.Unlock()
		for pid := range g.stats {
			if !g.running[pid] {
				delete(g.stats, pid)
			}
		}
		return nvml.SUCCESS
	}
	g.GetAccountingPidsFunc = func() ([]int, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.accounting {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		var pids []int
		for pid := range g.stats {
			pids = append(pids, int(pid))
		}
		return pids, nvml.SUCCESS
	}
	g.GetAccountingStatsFunc = func(pid uint32) (nvml.AccountingStats, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		s, ok := g.stats[pid]
		if !ok {
			return s, nvml.ERROR_NOT_FOUND
		}
		return s, nvml.SUCCESS
	}
	g.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		var ps []nvml.ProcessInfo
		for pid := range g.running {
			ps = append(ps, nvml.ProcessInfo{Pid: pid})
		}
		return ps, nvml.SUCCESS
	}
	g.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.Lost {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		if g.RetiredPagesPending {
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	g.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return 0, 0, g.RemapPending, g.RemapFailed, nvml.SUCCESS
	}
	g.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && c == nvml.VOLATILE_ECC {
			return g.UncorrectableECC, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	g.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.energyMJ, nvml.SUCCESS
	}
}
