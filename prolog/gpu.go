package prolog

import "errors"

// Library is the node's GPU management library (NVML) as the hooks need it.
// Implementations need not be safe for concurrent use: a hook uses one
// Library from one goroutine.
type Library interface {
	// Open starts a session with the driver. It returns an error wrapping
	// ErrNoLibrary when the library is not installed (a node without GPUs,
	// or the lab).
	Open() error
	// Close ends the session.
	Close() error
	// Device returns the GPU whose device file /dev/nvidiaN has minor
	// number minor, or an error wrapping ErrNoDevice.
	Device(minor int) (Device, error)
}

// Device is one GPU. Every method may return an error wrapping ErrGPULost
// (the GPU fell off the bus), ErrNeedsReset, or ErrNotSupported (this GPU
// or driver cannot do that).
type Device interface {
	// Info returns what identifies the device.
	Info() (DeviceInfo, error)
	// ComputeMode returns the device's compute mode.
	ComputeMode() (ComputeMode, error)
	// SetComputeMode sets it (needs root).
	SetComputeMode(ComputeMode) error
	// StartAccounting turns per-process accounting on and forgets the
	// records of processes that ran before, so the epilog sees only the
	// job's.
	StartAccounting() error
	// Processes returns the pids of the compute processes on the device now.
	Processes() ([]int, error)
	// Health returns the device's hardware health counters.
	Health() (Health, error)
	// Accounting returns the per-process accounting records kept since
	// StartAccounting, including processes that have exited.
	Accounting() ([]ProcessStats, error)
	// EnergyMillijoules returns the energy the device consumed since the
	// driver loaded.
	EnergyMillijoules() (uint64, error)
}

// Errors a Library or Device wraps.
var (
	ErrNoLibrary    = errors.New("GPU management library (libnvidia-ml) not found")
	ErrNoDevice     = errors.New("no such GPU")
	ErrGPULost      = errors.New("GPU is lost (fell off the bus)")
	ErrNeedsReset   = errors.New("GPU needs a reset")
	ErrNotSupported = errors.New("not supported by this GPU or driver")
)

// DeviceInfo identifies a GPU.
type DeviceInfo struct {
	Minor         int
	UUID          string
	Model         string
	MemoryTotalMB int64
	PCI           PCIAddress
}

// PCIAddress is a device's PCI domain, bus and device numbers; the kernel's
// XID messages name GPUs by it.
type PCIAddress struct{ Domain, Bus, Device uint32 }

// ComputeMode is a GPU's compute mode.
type ComputeMode int

// Compute modes, as NVML numbers them.
const (
	ComputeDefault          ComputeMode = 0 // any number of processes
	ComputeExclusiveProcess ComputeMode = 3 // one process (an MPS server counts as one)
	ComputeProhibited       ComputeMode = 2 // no compute
)

// String names the mode like nvidia-smi.
func (m ComputeMode) String() string {
	switch m {
	case ComputeDefault:
		return "Default"
	case ComputeExclusiveProcess:
		return "Exclusive_Process"
	case ComputeProhibited:
		return "Prohibited"
	}
	return "Unknown"
}

// Health is a GPU's hardware health as NVML reports it. Counters the device
// does not support are left zero.
type Health struct {
	RetiredPagesPending bool   // pages retired, effective after a reset
	RemapPending        bool   // rows remapped, effective after a reset
	RemapFailed         bool   // a row remapping failed
	UncorrectableECC    uint64 // volatile uncorrectable ECC errors since the driver loaded
}

// ProcessStats is NVML's accounting record of one process on a GPU.
type ProcessStats struct {
	PID            int
	GPUUtilPct     float64 // mean over the process's life
	MemUtilPct     float64
	MaxMemoryBytes uint64
	TimeMS         uint64 // how long the process ran
	StartMicros    uint64 // start, microseconds since the Unix epoch
	Running        bool
}
