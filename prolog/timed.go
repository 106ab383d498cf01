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

func (t timedLibrary) Open() error {
	t0 := time.Now()
	err := t.lib.Open()
	logCall(t.log, "open", noGPU, t0, err)
	return err
}

func (t timedLibrary) Close() error {
	t0 := time.Now()
	err := t.lib.Close()
	logCall(t.log, "close", noGPU, t0, err)
	return err
}

func (t timedLibrary) Device(minor int) (Device, error) {
	t0 := time.Now()
	d, err := t.lib.Device(minor)
	logCall(t.log, "device", minor, t0, err)
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

// timedCall runs f as op on the device and logs its time.
func timedCall[T any](t timedDevice, op string, f func() (T, error)) (T, error) {
	t0 := time.Now()
	v, err := f()
	logCall(t.log, op, t.minor, t0, err)
	return v, err
}

// timedErr is timedCall for a call that returns only an error.
func timedErr(t timedDevice, op string, f func() error) error {
	_, err := timedCall(t, op, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

func (t timedDevice) Info() (DeviceInfo, error) { return timedCall(t, "info", t.d.Info) }

func (t timedDevice) ComputeMode() (ComputeMode, error) {
	return timedCall(t, "compute-mode", t.d.ComputeMode)
}

func (t timedDevice) SetComputeMode(m ComputeMode) error {
	return timedErr(t, "set-compute-mode", func() error { return t.d.SetComputeMode(m) })
}

func (t timedDevice) StartAccounting() error {
	return timedErr(t, "start-accounting", t.d.StartAccounting)
}

func (t timedDevice) Processes() ([]int, error) { return timedCall(t, "processes", t.d.Processes) }

func (t timedDevice) Health() (Health, error) { return timedCall(t, "health", t.d.Health) }

func (t timedDevice) Accounting() ([]ProcessStats, error) {
	return timedCall(t, "accounting", t.d.Accounting)
}

func (t timedDevice) EnergyMillijoules() (uint64, error) {
	return timedCall(t, "energy", t.d.EnergyMillijoules)
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
	t0 := time.Now()
	err := t.m.Start(ctx, gpu)
	logCall(t.log, "mps-start", gpu.Minor, t0, err)
	return err
}

func (t timedMPS) Stop(ctx context.Context, gpu DeviceInfo) error {
	t0 := time.Now()
	err := t.m.Stop(ctx, gpu)
	logCall(t.log, "mps-stop", gpu.Minor, t0, err)
	return err
}
