//go:build fairway_nvmlmock

package main

import (
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/fairway-hpc/fairway/prolog/nvmltest"
)

// nvmlInterface, in a binary built with -tags fairway_nvmlmock (only the
// hook benchmark builds one; release builds never contain the mock), is the
// 8-GPU mock DGX H100 of prolog/nvmltest when FAIRWAY_TEST_NVML=dgxh100,
// and libnvidia-ml otherwise. Each process gets a fresh mock, so it stands
// for a node just after a job: accounting on (as the prolog left it on the
// real device) and one finished process per GPU for the epilog to measure.
func nvmlInterface() nvml.Interface {
	if os.Getenv("FAIRWAY_TEST_NVML") != "dgxh100" {
		return nvml.New()
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
	return m
}
