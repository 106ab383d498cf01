package accounting_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/jackc/pgx/v5"
)

// syntheticJobs returns n finished jobs of a busy GPU cluster over 90
// days: 400 users in 20 accounts, a mix of GPU, shard and CPU jobs, arrays,
// every terminal state. Deterministic.
func syntheticJobs(n int) []policy.Job {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	states := []policy.State{policy.StateCompleted, policy.StateCompleted, policy.StateCompleted, policy.StateFailed,
		policy.StateCancelled, policy.StateTimeout, policy.StateNodeFail, policy.StateOOM}
	jobs := make([]policy.Job, n)
	for i := range jobs {
		u := r.IntN(400)
		submit := t0.Add(time.Duration(float64(i) / float64(n) * float64(90*24*time.Hour))).Truncate(time.Second)
		start := submit.Add(time.Duration(r.ExpFloat64() * float64(20*time.Minute)))
		run := time.Duration(r.ExpFloat64() * float64(2*time.Hour)).Truncate(time.Second)
		j := policy.Job{
			Cluster: "bench", ID: int64(1_000_000 + i), ArrayTask: -1,
			User: fmt.Sprintf("user%03d", u), Account: fmt.Sprintf("acct%02d", u%20), Partition: "gpu", QOS: "normal",
			Name:   fmt.Sprintf("train-%d", r.IntN(5000)),
			Submit: submit, Eligible: submit, Start: start.Truncate(time.Second), End: start.Add(run).Truncate(time.Second),
			TimeLimit: time.Duration(1+r.IntN(48)) * time.Hour,
			Nodes:     1, CPUs: 1 + r.IntN(32), MemoryMB: int64(1000 * (1 + r.IntN(64))),
			State: states[r.IntN(len(states))], ExitCode: r.IntN(2),
		}
		switch k := r.IntN(10); {
		case k < 6:
			j.GPUs, j.GPUType = 1<<r.IntN(4), "h100"
		case k < 8:
			j.Shards = 1 + r.IntN(8)
		}
		if i%10 == 0 {
			j.ArrayJob, j.ArrayTask = j.ID, r.IntN(100)
		}
		jobs[i] = j
	}
	return jobs
}

// ceilingColumns are the job columns Import writes, in a plain table with
// no key, no index and no partitions: what COPY alone costs on this
// server.
const ceilingTable = `CREATE TABLE ceiling_job (
	cluster text, job_id bigint, array_task integer, submit_time timestamptz, array_job_id bigint, het_job boolean,
	user_name text, account text, partition text, qos text, name text, eligible_time timestamptz,
	start_time timestamptz, end_time timestamptz, time_limit_s bigint, nodes integer, cpus integer, memory_mb bigint,
	gpus integer, gpu_type text, shards integer, state text, exit_code integer, deadline timestamptz, hosts text)`

// copyCeiling copies jobs with a plain COPY ... FROM STDIN (binary) into an
// unindexed table and returns the rows per second.
func copyCeiling(b *testing.B, conn *pgx.Conn, jobs []policy.Job) float64 {
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS ceiling_job`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, ceilingTable); err != nil {
		b.Fatal(err)
	}
	cols := []string{"cluster", "job_id", "array_task", "submit_time", "array_job_id", "het_job", "user_name", "account",
		"partition", "qos", "name", "eligible_time", "start_time", "end_time", "time_limit_s", "nodes", "cpus", "memory_mb",
		"gpus", "gpu_type", "shards", "state", "exit_code", "deadline", "hosts"}
	i := -1
	row := make([]any, len(cols))
	src := pgx.CopyFromFunc(func() ([]any, error) {
		i++
		if i == len(jobs) {
			return nil, nil
		}
		j := &jobs[i]
		row[0], row[1], row[2], row[3], row[4], row[5] = j.Cluster, j.ID, int32(j.ArrayTask), j.Submit, j.ArrayJob, j.HetJob
		row[6], row[7], row[8], row[9], row[10] = j.User, j.Account, j.Partition, j.QOS, j.Name
		row[11], row[12], row[13], row[14] = j.Eligible, j.Start, j.End, int64(j.TimeLimit/time.Second)
		row[15], row[16], row[17], row[18], row[19], row[20] = int32(j.Nodes), int32(j.CPUs), j.MemoryMB, int32(j.GPUs), j.GPUType, int32(j.Shards)
		row[21], row[22] = j.State.String(), int32(j.ExitCode)
		row[23], row[24] = timeOrNil(j.Deadline), stringOrNil(j.Hosts)
		return row, nil
	})
	start := time.Now()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"ceiling_job"}, cols, src)
	secs := time.Since(start).Seconds()
	if err != nil || n != int64(len(jobs)) {
		b.Fatalf("ceiling COPY: %d rows, %v", n, err)
	}
	return float64(n) / secs
}

// BenchmarkImport measures Import of fresh synthetic jobs, from the first
// read of the input to the commit (checking, partitions, writing the
// indexed, partitioned job table, marking the usage ledger), against the
// ceiling of a plain COPY of the same rows into an unindexed table on the
// same server, measured in the same run just before and just after. path=direct is a source Import
// can read twice (a file, jobs in memory): checked, then copied straight
// into job. path=staged is a source that cannot rewind, which takes the path
// of inputs overlapping stored jobs: COPY into the staging table, then MERGE.
//
//	go test ./accounting -run '^$' -bench 'Import/rows=1000000' -benchtime 1x
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		jobs := syntheticJobs(n)
		for _, path := range []string{"direct", "staged"} {
			b.Run(fmt.Sprintf("rows=%d/path=%s", n, path), func(b *testing.B) {
				store, pool := freshStore(b)
				ctx := context.Background()
				conn, err := pool.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Release()
				var ceiling, rate, ledger float64
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					// The ceiling is copied just before and just after the
					// import and averaged, so that load from elsewhere on
					// the machine skews both sides of the ratio alike.
					ceiling += copyCeiling(b, conn.Conn(), jobs) / 2
					if _, err := pool.Exec(ctx, `DROP TABLE ceiling_job; TRUNCATE job, usage_dirty; CHECKPOINT`); err != nil {
						b.Fatal(err)
					}
					var src accounting.Source = accounting.NewJobsSource(jobs, nil, 0)
					if path == "staged" {
						src = readOnceSource{src}
					}
					b.StartTimer()
					start := time.Now()
					last, phases := start, ""
					sum, err := store.Import(ctx, src, accounting.ImportOptions{Source: "bench", Phase: func(p string) {
						phases += fmt.Sprintf(" %.2fs, then %s", time.Since(last).Seconds(), p)
						last = time.Now()
					}})
					secs := time.Since(start).Seconds()
					b.Logf("import phases:%s %.2fs", phases, time.Since(last).Seconds())
					if err != nil {
						b.Fatal(err)
					}
					if sum.Inserted != n {
						b.Fatalf("inserted %d of %d jobs: %+v", sum.Inserted, n, sum)
					}
					rate += float64(n) / secs
					b.StopTimer()
					if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
						b.Fatal(err)
					}
					ceiling += copyCeiling(b, conn.Conn(), jobs) / 2
					if _, err := pool.Exec(ctx, `DROP TABLE ceiling_job`); err != nil {
						b.Fatal(err)
					}
					// The usage ledger is rebuilt when first read, not by
					// the import; measure that rebuild on its own.
					start = time.Now()
					days, err := store.RefreshUsage(ctx, "bench")
					if err != nil || days == 0 {
						b.Fatalf("RefreshUsage: %d days, %v", days, err)
					}
					ledger += time.Since(start).Seconds()
					b.StartTimer()
				}
				rate, ceiling, ledger = rate/float64(b.N), ceiling/float64(b.N), ledger/float64(b.N)
				b.ReportMetric(ledger, "ledger_rebuild_s")
				b.ReportMetric(rate, "rows/s")
				b.ReportMetric(ceiling, "ceiling_rows/s")
				b.ReportMetric(rate/ceiling, "ratio")
			})
		}
	}
}

// readOnceSource hides Rewind: a source Import can read only once.
type readOnceSource struct{ accounting.Source }

// BenchmarkRecordDecisions measures one cycle's decision-log batch.
//
//	go test ./accounting -run '^$' -bench RecordDecisions -benchtime 3x
func BenchmarkRecordDecisions(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprintf("decisions=%d", n), func(b *testing.B) {
			store, _ := freshStore(b)
			ctx := context.Background()
			at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			ds := make([]accounting.Decision, n)
			for i := range ds {
				ds[i] = accounting.Decision{Cluster: "bench", At: at, JobID: int64(i + 1), Policy: "fair-qssf", Rank: i + 1,
					Score: float64(n - i), Parts: map[string]float64{"fairshare": 0.5, "service": -float64(i)},
					Predicted: time.Hour, Predictor: "fairway", Field: "site_factor", Value: int64(n - i)}
			}
			b.ResetTimer()
			for k := range b.N {
				for i := range ds {
					ds[i].Cycle, ds[i].At = int64(k), at.Add(time.Duration(k)*time.Minute)
				}
				got, err := store.RecordDecisions(ctx, ds)
				if err != nil || got != n {
					b.Fatalf("RecordDecisions = %d, %v; want %d", got, err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/decision")
		})
	}
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func stringOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
