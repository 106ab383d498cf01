//go:build fairway_nvmlmock

package main

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/fairway-hpc/fairway/prolog/nvmltest"
	"github.com/urfave/cli/v2"
)

// nvmlInterface, in a binary built with -tags fairway_nvmlmock (the hook
// benchmark and the stray lab test build one; release builds never contain
// the mock), is the 8-GPU mock DGX H100 of prolog/nvmltest when the
// test-nvml setting is "dgxh100", and libnvidia-ml otherwise. Each process
// gets a fresh mock, so it stands for a node just after a job: accounting
// on (as the prolog left it on the real device), one finished process per
// GPU for the epilog to measure, and the running processes test-nvml-procs
// names (nvmltest.Machine.RunSpec), so a lab test can put real PIDs on a
// mock GPU for the prolog's stray check. get reads a setting.
func nvmlInterface(get func(string) string) (nvml.Interface, error) {
	if get("test-nvml") != "dgxh100" {
		return nvml.New(), nil
	}
	m := nvmltest.New(8)
	now := uint64(time.Now().UnixMicro())
	for i, g := range m.GPUs {
		g.SetAccountingMode(nvml.FEATURE_ENABLED)
		pid := uint32(4000 + i)
		g.Run(pid, nvml.AccountingStats{GpuUtilization: 80, MemoryUtilization: 40, MaxMemoryUsage: 20 << 30, Time: 60_000, StartTime: now})
		g.Exit(pid)
		g.AddEnergy(1_000_000)
	}
	if err := m.RunSpec(get("test-nvml-procs")); err != nil {
		return nil, fmt.Errorf("FAIRWAY_TEST_NVML_PROCS: %w", err)
	}
	return m, nil
}

// testNVMLFlags select the mock. They are hook settings like the others, so
// a lab test can set them for one job in the root-only per-job config file
// (slurmd does not pass its environment to the Prolog).
func testNVMLFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "test-nvml", Hidden: true, Usage: `"dgxh100": the mock DGX H100 instead of libnvidia-ml`, EnvVars: []string{"FAIRWAY_TEST_NVML"}},
		&cli.StringFlag{Name: "test-nvml-procs", Hidden: true, Usage: `running processes on the mock's GPUs, "MINOR:PID[,PID...];..." (MINOR * for all)`, EnvVars: []string{"FAIRWAY_TEST_NVML_PROCS"}},
	}
}
