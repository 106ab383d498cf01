package accounting

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/rewrite"
	"github.com/jackc/pgx/v5"
)

// Usage history for resource rewriting (rewrite.Rules): what each
// finished job did with its GPUs, from the epilog's job_gpu_usage joined
// with the job's own row, and, where Slurm recorded it, with its CPUs and
// memory (sacct's TotalCPU and MaxRSS, which need a JobAcctGatherType other
// than jobacct_gather/none).

// UsageSamples returns one rewrite.UsageSample per finished job of cluster
// that has epilog GPU records ending at or after since: its GPUs' average
// utilization, the largest peak memory, the smallest device, with user,
// name, GPUs, shards, CPUs, state and run time from the job table. A
// node's usage records are matched to the job with its id whose end lies
// within a day of the node's last record (job ids are reused when a
// cluster is rebuilt). CPU and memory use are unknown here (CPUsUsed −1,
// MemUsedMB 0): SacctUsage fills them. Samples come in end order.
//
// Records are averaged per node, and a job's utilization is its busiest
// node's average: a node's login may write records for any job id under
// its own node name (the job table keeps a job's node count, not its node
// names, so rows of nodes the job never ran on cannot be told apart), and
// a mean over every row would let one node's made-up idle records dilute
// the real ones until the share rule cut the job to shards. Taken this
// way, extra records can only raise a reading (utilization, peak) or lower
// the device size, each of which keeps a job on more of a GPU, not less.
// For a job on one node, the usual case, it is the mean over its GPUs.
func (s *Store) UsageSamples(ctx context.Context, cluster string, since time.Time) ([]rewrite.UsageSample, error) {
	rows, err := s.pool.Query(ctx, `
WITH n AS (
	SELECT job_id, node, max(ended_at) AS ended, avg(util_avg_pct)::double precision AS util,
		max(mem_peak_mb) AS peak, min(mem_total_mb) AS total
	FROM job_gpu_usage
	WHERE cluster = $1 AND ended_at >= $2
	GROUP BY job_id, node
)
SELECT j.job_id, j.user_name, j.name, j.end_time, j.state, j.gpus, j.shards, j.cpus,
	extract(epoch FROM j.end_time - j.start_time)::double precision, max(n.util), max(n.peak), min(n.total)
FROM n JOIN job j ON j.cluster = $1 AND j.job_id = n.job_id
	AND j.end_time BETWEEN n.ended - interval '1 day' AND n.ended + interval '1 day'
WHERE j.end_time >= $2::timestamptz - interval '1 day' AND j.start_time IS NOT NULL
GROUP BY j.job_id, j.array_task, j.submit_time, j.user_name, j.name, j.end_time, j.state, j.gpus, j.shards, j.cpus, j.start_time
ORDER BY j.end_time, j.job_id`, cluster, since)
	if err != nil {
		return nil, fmt.Errorf("load usage samples: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rewrite.UsageSample, error) {
		var (
			u           rewrite.UsageSample
			state       string
			run         float64
			util        *float64
			peak, total *int64
		)
		if err := r.Scan(&u.JobID, &u.User, &u.Name, &u.End, &state, &u.GPUs, &u.Shards, &u.CPUs, &run, &util, &peak, &total); err != nil {
			return u, err
		}
		u.End, u.State, u.Run = u.End.UTC(), policy.ParseState(state), time.Duration(run*float64(time.Second))
		u.GPUUtilPct, u.CPUsUsed = -1, -1
		if util != nil {
			u.GPUUtilPct = *util
		}
		if peak != nil {
			u.GPUMemPeakMB = *peak
		}
		if total != nil {
			u.GPUMemTotalMB = *total
		}
		return u, nil
	})
	if err != nil {
		return nil, fmt.Errorf("load usage samples: %w", err)
	}
	return out, nil
}

// CPUUse is what Slurm's accounting recorded of one job's CPUs and memory.
// A field that was not recorded is negative (CPUsUsed) or 0 (MemUsedMB).
type CPUUse struct {
	CPUsUsed  float64 // CPU-seconds (TotalCPU) over elapsed seconds
	MemUsedMB int64   // largest MaxRSS of its steps
}

// SacctUsageRunner runs sacct for the CPU and memory use of the jobs
// active in [since, until) (slurmctl.SacctUsageArgs) and returns what it
// printed; slurmctl.Commands implements it. A path "" means sacct on PATH.
type SacctUsageRunner interface {
	SacctUsage(ctx context.Context, path string, since, until time.Time) ([]byte, error)
}

// SacctUsage runs sacct at path through slurm for the jobs active in
// [since, until) and returns their CPU and memory use by job id.
func SacctUsage(ctx context.Context, slurm SacctUsageRunner, path string, since, until time.Time) (map[int64]CPUUse, error) {
	out, err := slurm.SacctUsage(ctx, path, since, until)
	if err != nil {
		return nil, err
	}
	return ParseSacctUsage(out)
}

// ParseSacctUsage reads `sacct -P --format=JobIDRaw,ElapsedRaw,TotalCPU,MaxRSS`
// output: a job's own line ("123") and its steps ("123.batch", "123.0").
// A job's CPU time is the larger of its own line's TotalCPU and the sum of
// its steps' (sacct versions differ in whether the job line aggregates
// them); its memory is the largest MaxRSS of a step. A job whose CPU time
// is zero has no CPU record (jobacct_gather/none) and gets CPUsUsed −1.
func ParseSacctUsage(data []byte) (map[int64]CPUUse, error) {
	type acc struct {
		elapsed, own, steps float64
		mem                 int64
	}
	by := map[int64]*acc{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 4 {
			return nil, fmt.Errorf("sacct usage line %d %q: %w: want 4 fields", n, line, ErrMalformed)
		}
		idStr, step, isStep := strings.Cut(f[0], ".")
		id, err := strconv.ParseInt(idStr, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("sacct usage line %d: job id %q: %w: want a whole number above 0", n, f[0], ErrMalformed)
		}
		cpu, err := parseSlurmDuration(f[2])
		if err != nil {
			return nil, fmt.Errorf("sacct usage line %d: TotalCPU %q: %w", n, f[2], ErrMalformed)
		}
		mem, err := parseSlurmMemMB(f[3])
		if err != nil {
			return nil, fmt.Errorf("sacct usage line %d: MaxRSS %q: %w", n, f[3], ErrMalformed)
		}
		a := by[id]
		if a == nil {
			a = &acc{}
			by[id] = a
		}
		if !isStep {
			a.own = cpu
			if f[1] != "" {
				e, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil || e < 0 {
					return nil, fmt.Errorf("sacct usage line %d: ElapsedRaw %q: %w: want whole seconds", n, f[1], ErrMalformed)
				}
				a.elapsed = float64(e)
			}
		} else if step != "extern" {
			a.steps += cpu
		}
		a.mem = max(a.mem, mem)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sacct usage: %w", err)
	}
	out := make(map[int64]CPUUse, len(by))
	for id, a := range by {
		u := CPUUse{CPUsUsed: -1, MemUsedMB: a.mem}
		if cpu := max(a.own, a.steps); cpu > 0 && a.elapsed > 0 {
			u.CPUsUsed = cpu / a.elapsed
		}
		out[id] = u
	}
	return out, nil
}

// parseSlurmDuration reads Slurm's [DD-[HH:]]MM:SS[.mmm] (TotalCPU) in
// seconds; "" is 0.
func parseSlurmDuration(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	days := 0.0
	if d, rest, ok := strings.Cut(s, "-"); ok {
		v, err := strconv.Atoi(d)
		if err != nil {
			return 0, err
		}
		days, s = float64(v), rest
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("want [DD-[HH:]]MM:SS")
	}
	total := 0.0
	for i, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 1) { // NaN fails v >= 0
			return 0, fmt.Errorf("field %q", p)
		}
		if i < len(parts)-1 {
			total = (total + v) * 60
		} else {
			total += v
		}
	}
	// finite fields can still add up to +Inf ("1e308:00:00")
	if d := days*86400 + total; !math.IsInf(d, 1) {
		return d, nil
	}
	return 0, fmt.Errorf("beyond any duration")
}

// maxMemMB bounds a MaxRSS: an exbibyte, beyond any node and far below
// the largest int64.
const maxMemMB = 1 << 40

// parseSlurmMemMB reads a MaxRSS such as "123456K" or "2.5G" (a bare number
// is KiB, sacct's unit for it) in MiB; "" is 0.
func parseSlurmMemMB(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := 1.0 / 1024
	switch s[len(s)-1] {
	case 'K':
		s = s[:len(s)-1]
	case 'M':
		mult, s = 1, s[:len(s)-1]
	case 'G':
		mult, s = 1024, s[:len(s)-1]
	case 'T':
		mult, s = 1024*1024, s[:len(s)-1]
	}
	// NaN fails v*mult >= 0; the bound keeps the conversion to int64 from
	// wrapping (1e300G, Inf), far above any node's memory
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v*mult >= 0 && v*mult <= maxMemMB) {
		return 0, fmt.Errorf("want a size")
	}
	return int64(v*mult + 0.5), nil
}
