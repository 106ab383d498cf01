package accounting

import (
	"context"
	"log/slog"

	"github.com/fairway-hpc/fairway/prolog"
)

// HookUsageStore is prolog.UsageStore over the accounting database: the
// epilog and `fairway spool flush` store their GPU usage records through
// it. A hook stores once per run, so it connects per call
// (RecordGPUUsageOnce) rather than keeping a connection open.
type HookUsageStore struct {
	URL string
	Log *slog.Logger
}

var _ prolog.UsageStore = (*HookUsageStore)(nil)

// PutUsage stores us, leaving records already stored alone.
func (s *HookUsageStore) PutUsage(ctx context.Context, us []prolog.Usage) error {
	return RecordGPUUsageOnce(ctx, s.URL, GPUUsageOf(us), s.Log)
}

// GPUUsageOf is the hooks' usage records as the database stores them.
func GPUUsageOf(us []prolog.Usage) []GPUUsage {
	rows := make([]GPUUsage, len(us))
	for i, u := range us {
		rows[i] = GPUUsage{
			Cluster: u.Cluster, JobID: u.JobID, Node: u.Node, GPUMinor: u.GPUMinor,
			Started: u.StartedAt, Ended: u.EndedAt, UUID: u.GPUUUID, Model: u.GPUModel, Shards: u.Shards,
			UtilAvgPct: u.UtilAvgPct, UtilMaxPct: u.UtilMaxPct, MemPeakMB: u.MemPeakMB, MemTotalMB: u.MemTotalMB,
			EnergyJ: u.EnergyJoules,
		}
	}
	return rows
}
