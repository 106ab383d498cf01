package prolog

import (
	"context"
	"log/slog"
	"time"
)

// timed returns d with every call to the GPU library, the kernel log and MPS
// logged at debug level with how long it took ("GPU call" op=… gpu=…
// took=…), and Run logs the whole hook's time. slurmd holds a job until its
// prolog and epilog return, and on a real GPU the driver's calls, not
// Fairway's own work, are most of that wait: at FAIRWAY_LOG_LEVEL=debug the
// log shows which call a slow hook spent its time in.
func timed(d Deps) Deps {
	log := d.Logger
	if d.Library != nil {
		d.Library = timedLibrary{lib: d.Library, log: log}
	}
	if d.XIDs != nil {
		d.XIDs = timedXIDs{x: d.XIDs, log: log}
	}
	if d.MPS != nil {
		d.MPS = timedMPS{m: d.MPS, log: log}
	}
	return d
}

// noGPU is the gpu attribute of a call that is not about one GPU.
const noGPU = -1

func logCall(log *slog.Logger, op string, gpu int, t0 time.Time, err error) {
	attrs := []any{"op", op}
	if gpu != noGPU {
		attrs = append(attrs, "gpu", gpu)
	}
	attrs = append(attrs, "took", time.Since(t0).Round(time.Microsecond))
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.Debug("GPU call", attrs...)
}

type timedLibrary struct {
	lib Library
	log *slog.Logger
}

func (t timedLibrary) Open() error { return timedErr(t.log, "open", noGPU, t.lib.Open) }

func (t timedLibrary) Close() error { return timedErr(t.log, "close", noGPU, t.lib.Close) }

func (t timedLibrary) Device(minor int) (Device, error) {
	d, err := timedCall(t.log, "device", minor, func() (Device, error) { return t.lib.Device(minor) })
	if err != nil {
		return nil, err
	}
	return timedDevice{d: d, minor: minor, log: t.log}, nil
}

type timedDevice struct {
	d     Device
	minor int
	log   *slog.Logger
}

// timedCall runs f as op (on GPU gpu, or noGPU) and logs its time.
func timedCall[T any](log *slog.Logger, op string, gpu int, f func() (T, error)) (T, error) {
	t0 := time.Now()
	v, err := f()
	logCall(log, op, gpu, t0, err)
	return v, err
}

// timedErr is timedCall for a call that returns only an error.
func timedErr(log *slog.Logger, op string, gpu int, f func() error) error {
	_, err := timedCall(log, op, gpu, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

func (t timedDevice) Info() (DeviceInfo, error) { return timedCall(t.log, "info", t.minor, t.d.Info) }

func (t timedDevice) ComputeMode() (ComputeMode, error) {
	return timedCall(t.log, "compute-mode", t.minor, t.d.ComputeMode)
}

func (t timedDevice) SetComputeMode(m ComputeMode) error {
	return timedErr(t.log, "set-compute-mode", t.minor, func() error { return t.d.SetComputeMode(m) })
}

func (t timedDevice) StartAccounting() error {
	return timedErr(t.log, "start-accounting", t.minor, t.d.StartAccounting)
}

func (t timedDevice) Processes() ([]int, error) {
	return timedCall(t.log, "processes", t.minor, t.d.Processes)
}

func (t timedDevice) Health() (Health, error) { return timedCall(t.log, "health", t.minor, t.d.Health) }

func (t timedDevice) Accounting() ([]ProcessStats, error) {
	return timedCall(t.log, "accounting", t.minor, t.d.Accounting)
}

func (t timedDevice) EnergyMillijoules() (uint64, error) {
	return timedCall(t.log, "energy", t.minor, t.d.EnergyMillijoules)
}

type timedXIDs struct {
	x   XIDLog
	log *slog.Logger
}

func (t timedXIDs) Read(ctx context.Context) ([]XID, uint64, error) {
	t0 := time.Now()
	xids, last, err := t.x.Read(ctx)
	logCall(t.log, "kernel-log", noGPU, t0, err)
	return xids, last, err
}

type timedMPS struct {
	m   MPS
	log *slog.Logger
}

func (t timedMPS) Start(ctx context.Context, gpu DeviceInfo) error {
	return timedErr(t.log, "mps-start", gpu.Minor, func() error { return t.m.Start(ctx, gpu) })
}

func (t timedMPS) Stop(ctx context.Context, gpu DeviceInfo) error {
	return timedErr(t.log, "mps-stop", gpu.Minor, func() error { return t.m.Stop(ctx, gpu) })
}
