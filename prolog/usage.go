package prolog

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// Usage is what one GPU did for one job on one node: the epilog writes one
// per job and GPU. Optional measurements are nil when unknown: NVML absent
// or hung, the device cannot say, or the GPU was shared (several jobs'
// processes on one GPU cannot be told apart in NVML's accounting).
type Usage struct {
	Cluster   string    `json:"cluster"`
	JobID     int64     `json:"job_id"`
	Node      string    `json:"node"`
	GPUMinor  int       `json:"gpu_minor"`  // N of /dev/nvidiaN
	EndedAt   time.Time `json:"ended_at"`   // when the epilog closed the record: part of the key
	StartedAt time.Time `json:"started_at"` // the prolog's time; zero when unknown
	GPUUUID   string    `json:"gpu_uuid,omitempty"`
	GPUModel  string    `json:"gpu_model,omitempty"`
	Shards    int       `json:"shards"` // 0 for a whole-GPU job

	UtilAvgPct   *float64 `json:"util_avg_pct,omitempty"`  // time-weighted mean of the processes' GPU utilisation
	UtilMaxPct   *float64 `json:"util_max_pct,omitempty"`  // highest per-process mean utilisation
	MemPeakMB    *int64   `json:"mem_peak_mb,omitempty"`   // highest per-process peak memory
	MemTotalMB   *int64   `json:"mem_total_mb,omitempty"`  // the device's memory
	EnergyJoules *float64 `json:"energy_joules,omitempty"` // device energy between prolog and epilog
}

// Key identifies the record in the spool and the database: cluster, job,
// node, GPU and EndedAt (microseconds, what PostgreSQL keeps), so a record
// shipped twice is stored once and a requeued job's second run is a second
// record.
func (u Usage) Key() string {
	return fmt.Sprintf("%s_%d_%s_%d_%d", safeName(u.Cluster), u.JobID, safeName(u.Node), u.GPUMinor, u.EndedAt.UnixMicro())
}

// Validate reports a record that cannot be stored.
func (u Usage) Validate() error {
	switch {
	case u.Cluster == "":
		return fmt.Errorf("usage record: no cluster")
	case u.JobID <= 0:
		return fmt.Errorf("usage record: job id %d", u.JobID)
	case u.Node == "":
		return fmt.Errorf("usage record of job %d: no node", u.JobID)
	case u.GPUMinor < 0:
		return fmt.Errorf("usage record of job %d: GPU %d", u.JobID, u.GPUMinor)
	case u.EndedAt.IsZero():
		return fmt.Errorf("usage record of job %d: no end time", u.JobID)
	}
	return nil
}

// UsageStore keeps usage records (in PostgreSQL, through package accounting).
type UsageStore interface {
	// PutUsage stores us. A record whose Key is already stored is left as
	// it is, so storing the same records again is a no-op: that is what
	// makes retries after a crash safe. When the database refuses some
	// records for what they are (see RefusedError) it stores the others
	// and returns a *RefusedError.
	PutUsage(ctx context.Context, us []Usage) error
}

// RefusedError lists records the database refused for what they are, not
// for being unreachable: another node's, ending too far from the
// database's clock for a node's login (after an outage of more than a
// day, say), or holding a value it cannot store (a NUL byte in a name).
// Sending them again gets the same answer, so they are set aside
// (Spool.SetAside) for an administrator to import with the schema owner's
// login, or to mend first. Every other record of the call was stored.
type RefusedError struct{ Refused []Refusal }

// Refusal is one refused record and the database's reason.
type Refusal struct {
	Usage  Usage
	Reason string
}

func (e *RefusedError) Error() string {
	if len(e.Refused) == 0 {
		return "no usage records refused"
	}
	return fmt.Sprintf("%d usage records refused by the database, the first (%s): %s", len(e.Refused), e.Refused[0].Usage.Key(), e.Refused[0].Reason)
}

// summarize turns NVML's per-process accounting of one GPU into the usage
// measurements. Only processes that started at or after since (the job's
// start; zero means all) count, so leftovers from an earlier job cannot
// inflate a record. With no process at all the GPU was allocated but idle:
// utilisation 0 and memory 0, which is a measurement, not an unknown.
func summarize(stats []ProcessStats, since time.Time) (avg, maxUtil float64, peakMB int64) {
	var weighted, weight float64
	var peak uint64
	min := uint64(0)
	if !since.IsZero() {
		min = uint64(since.UnixMicro())
	}
	for _, p := range stats {
		if p.StartMicros < min {
			continue
		}
		w := float64(p.TimeMS)
		if w <= 0 {
			w = 1 // a process too short to time still counts, barely
		}
		weighted += p.GPUUtilPct * w
		weight += w
		maxUtil = math.Max(maxUtil, p.GPUUtilPct)
		if p.MaxMemoryBytes > peak {
			peak = p.MaxMemoryBytes
		}
	}
	if weight > 0 {
		avg = weighted / weight
	}
	return avg, maxUtil, int64(peak >> 20)
}

// safeName keeps a name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, s)
}
