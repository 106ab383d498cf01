package prolog

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlLibrary is Library through go-nvml. The production binary passes
// nvml.New(), which loads libnvidia-ml.so.1 at Open (so the binary runs on
// nodes without it); tests pass go-nvml's mock machines.
type nvmlLibrary struct {
	lib     nvml.Interface
	byMinor map[int]nvml.Device
	lost    error // a GPU that failed enumeration as lost, if any
}

// NewNVML returns a Library backed by lib.
func NewNVML(lib nvml.Interface) Library { return &nvmlLibrary{lib: lib} }

func (l *nvmlLibrary) Open() error {
	if r := l.lib.Init(); r != nvml.SUCCESS {
		return fmt.Errorf("nvml init: %w", nvmlErr(r))
	}
	return nil
}

func (l *nvmlLibrary) Close() error {
	if r := l.lib.Shutdown(); r != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %w", nvmlErr(r))
	}
	return nil
}

// Device finds the GPU by minor number. NVML's index order follows PCI bus
// order and need not match /dev/nvidiaN, which is what Slurm hands out. A
// GPU that cannot be enumerated is skipped, so one broken GPU does not hide
// the others; when it was lost, a GPU not found is reported as lost (a lost
// GPU cannot tell its minor number), otherwise as ErrNoDevice.
func (l *nvmlLibrary) Device(minor int) (Device, error) {
	if l.byMinor == nil {
		n, r := l.lib.DeviceGetCount()
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("count GPUs: %w", nvmlErr(r))
		}
		m := make(map[int]nvml.Device, n)
		for i := 0; i < n; i++ {
			d, r := l.lib.DeviceGetHandleByIndex(i)
			if r == nvml.SUCCESS {
				var mn int
				if mn, r = d.GetMinorNumber(); r == nvml.SUCCESS {
					m[mn] = d
					continue
				}
			}
			if err := nvmlErr(r); errors.Is(err, ErrGPULost) || errors.Is(err, ErrNeedsReset) {
				l.lost = fmt.Errorf("GPU at NVML index %d: %w", i, err)
			}
		}
		l.byMinor = m
	}
	d, ok := l.byMinor[minor]
	switch {
	case !ok && l.lost != nil:
		return nil, fmt.Errorf("/dev/nvidia%d not found, and %w", minor, l.lost)
	case !ok:
		return nil, fmt.Errorf("/dev/nvidia%d: %w", minor, ErrNoDevice)
	}
	return &nvmlDevice{d: d, minor: minor}, nil
}

type nvmlDevice struct {
	d     nvml.Device
	minor int
}

func (d *nvmlDevice) Info() (DeviceInfo, error) {
	info := DeviceInfo{Minor: d.minor}
	var r nvml.Return
	if info.UUID, r = d.d.GetUUID(); r != nvml.SUCCESS {
		return info, fmt.Errorf("uuid: %w", nvmlErr(r))
	}
	if info.Model, r = d.d.GetName(); r != nvml.SUCCESS {
		return info, fmt.Errorf("name: %w", nvmlErr(r))
	}
	mem, r := d.d.GetMemoryInfo()
	if r != nvml.SUCCESS {
		return info, fmt.Errorf("memory info: %w", nvmlErr(r))
	}
	info.MemoryTotalMB = int64(mem.Total >> 20)
	pci, r := d.d.GetPciInfo()
	if r != nvml.SUCCESS {
		return info, fmt.Errorf("pci info: %w", nvmlErr(r))
	}
	info.PCI = PCIAddress{Domain: pci.Domain, Bus: pci.Bus, Device: pci.Device}
	return info, nil
}

func (d *nvmlDevice) ComputeMode() (ComputeMode, error) {
	m, r := d.d.GetComputeMode()
	if r != nvml.SUCCESS {
		return 0, fmt.Errorf("get compute mode: %w", nvmlErr(r))
	}
	return ComputeMode(m), nil
}

func (d *nvmlDevice) SetComputeMode(m ComputeMode) error {
	if r := d.d.SetComputeMode(nvml.ComputeMode(m)); r != nvml.SUCCESS {
		return fmt.Errorf("set compute mode %s: %w", m, nvmlErr(r))
	}
	return nil
}

func (d *nvmlDevice) StartAccounting() error {
	if r := d.d.SetAccountingMode(nvml.FEATURE_ENABLED); r != nvml.SUCCESS {
		return fmt.Errorf("enable accounting: %w", nvmlErr(r))
	}
	if r := d.d.ClearAccountingPids(); r != nvml.SUCCESS {
		return fmt.Errorf("clear accounting records: %w", nvmlErr(r))
	}
	return nil
}

func (d *nvmlDevice) Processes() ([]int, error) {
	ps, r := d.d.GetComputeRunningProcesses()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("list compute processes: %w", nvmlErr(r))
	}
	pids := make([]int, len(ps))
	for i, p := range ps {
		pids[i] = int(p.Pid)
	}
	return pids, nil
}

// Health reads the counters that mean "this GPU needs a reset or a repair".
// A counter the device does not support is skipped; GPU lost is an error.
func (d *nvmlDevice) Health() (Health, error) {
	var h Health
	pending, r := d.d.GetRetiredPagesPendingStatus()
	switch {
	case r == nvml.SUCCESS:
		h.RetiredPagesPending = pending == nvml.FEATURE_ENABLED
	case !skippable(r):
		return h, fmt.Errorf("retired pages: %w", nvmlErr(r))
	}
	_, _, isPending, failed, r := d.d.GetRemappedRows()
	switch {
	case r == nvml.SUCCESS:
		h.RemapPending, h.RemapFailed = isPending, failed
	case !skippable(r):
		return h, fmt.Errorf("remapped rows: %w", nvmlErr(r))
	}
	n, r := d.d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	switch {
	case r == nvml.SUCCESS:
		h.UncorrectableECC = n
	case !skippable(r):
		return h, fmt.Errorf("ECC errors: %w", nvmlErr(r))
	}
	return h, nil
}

func (d *nvmlDevice) Accounting() ([]ProcessStats, error) {
	pids, r := d.d.GetAccountingPids()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("accounting pids: %w", nvmlErr(r))
	}
	out := make([]ProcessStats, 0, len(pids))
	for _, pid := range pids {
		s, r := d.d.GetAccountingStats(uint32(pid))
		if r == nvml.ERROR_NOT_FOUND {
			continue // dropped from the driver's ring buffer meanwhile
		}
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("accounting stats of pid %d: %w", pid, nvmlErr(r))
		}
		out = append(out, ProcessStats{
			PID:            pid,
			GPUUtilPct:     float64(s.GpuUtilization),
			MemUtilPct:     float64(s.MemoryUtilization),
			MaxMemoryBytes: s.MaxMemoryUsage,
			TimeMS:         s.Time,
			StartMicros:    s.StartTime,
			Running:        s.IsRunning != 0,
		})
	}
	return out, nil
}

func (d *nvmlDevice) EnergyMillijoules() (uint64, error) {
	e, r := d.d.GetTotalEnergyConsumption()
	if r != nvml.SUCCESS {
		return 0, fmt.Errorf("energy: %w", nvmlErr(r))
	}
	return e, nil
}

// skippable reports whether a health counter's error just means the device
// does not have that counter.
func skippable(r nvml.Return) bool {
	return r == nvml.ERROR_NOT_SUPPORTED || r == nvml.ERROR_FUNCTION_NOT_FOUND
}

// nvmlErr turns an NVML return code into an error wrapping this package's
// sentinels where one applies.
func nvmlErr(r nvml.Return) error {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%w: %s", ErrNoLibrary, r.Error())
	case nvml.ERROR_GPU_IS_LOST:
		return fmt.Errorf("%w: %s", ErrGPULost, r.Error())
	case nvml.ERROR_RESET_REQUIRED:
		return fmt.Errorf("%w: %s", ErrNeedsReset, r.Error())
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return fmt.Errorf("%w: %s", ErrNotSupported, r.Error())
	}
	return fmt.Errorf("nvml: %s", r.Error())
}
