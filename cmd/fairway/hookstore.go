package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/prolog"
)

// hookUsageStore is prolog.UsageStore over the accounting database: the
// epilog and `fairway spool flush` store their GPU usage records through
// it. A hook stores once per run, so it connects per call
// (RecordGPUUsageOnce) rather than keeping a connection open. It lives at
// the wiring so that neither adapter imports the other: prolog hands
// records to an interface, accounting stores its own GPUUsage rows.
type hookUsageStore struct {
	URL string
	Log *slog.Logger
}

var _ prolog.UsageStore = (*hookUsageStore)(nil)

// PutUsage stores us, leaving records already stored alone. Records the
// database refuses come back as a *prolog.RefusedError; the rest are stored.
func (s *hookUsageStore) PutUsage(ctx context.Context, us []prolog.Usage) error {
	return refusedOf(us, accounting.RecordGPUUsageOnce(ctx, s.URL, gpuUsageOf(us), s.Log))
}

// refusedOf turns RecordGPUUsage's *UsageRefusedError about us into the
// hooks' *prolog.RefusedError; any other error is returned as it is.
func refusedOf(us []prolog.Usage, err error) error {
	var re *accounting.UsageRefusedError
	if !errors.As(err, &re) {
		return err
	}
	out := &prolog.RefusedError{Refused: make([]prolog.Refusal, len(re.Refused))}
	for i, r := range re.Refused {
		out.Refused[i] = prolog.Refusal{Usage: us[r.Index], Reason: r.Reason}
	}
	return out
}

// gpuUsageOf is the hooks' usage records as the database stores them.
func gpuUsageOf(us []prolog.Usage) []accounting.GPUUsage {
	rows := make([]accounting.GPUUsage, len(us))
	for i, u := range us {
		rows[i] = accounting.GPUUsage{
			Cluster: u.Cluster, JobID: u.JobID, Node: u.Node, GPUMinor: u.GPUMinor,
			Started: u.StartedAt, Ended: u.EndedAt, UUID: u.GPUUUID, Model: u.GPUModel, Shards: u.Shards,
			UtilAvgPct: u.UtilAvgPct, UtilMaxPct: u.UtilMaxPct, MemPeakMB: u.MemPeakMB, MemTotalMB: u.MemTotalMB,
			EnergyJ: u.EnergyJoules,
		}
	}
	return rows
}
