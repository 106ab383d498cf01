package main

import (
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/prolog"
	"github.com/google/go-cmp/cmp"
)

// TestHookStore_GPUUsageOf: every field of a hook's record reaches its column, the
// unknown figures staying nil.
func TestHookStore_GPUUsageOf(t *testing.T) {
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	util, peak, total, energy := 42.5, int64(4000), int64(81920), 1234.5
	us := []prolog.Usage{
		{Cluster: "lab", JobID: 7, Node: "gpu1", GPUMinor: 2, StartedAt: start, EndedAt: start.Add(time.Hour), GPUUUID: "GPU-1",
			GPUModel: "H100", Shards: 3, UtilAvgPct: &util, UtilMaxPct: &util, MemPeakMB: &peak, MemTotalMB: &total, EnergyJoules: &energy},
		{Cluster: "lab", JobID: 8, Node: "gpu2", EndedAt: start},
	}
	want := []accounting.GPUUsage{
		{Cluster: "lab", JobID: 7, Node: "gpu1", GPUMinor: 2, Started: start, Ended: start.Add(time.Hour), UUID: "GPU-1",
			Model: "H100", Shards: 3, UtilAvgPct: &util, UtilMaxPct: &util, MemPeakMB: &peak, MemTotalMB: &total, EnergyJ: &energy},
		{Cluster: "lab", JobID: 8, Node: "gpu2", Ended: start},
	}
	if d := cmp.Diff(want, gpuUsageOf(us)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
