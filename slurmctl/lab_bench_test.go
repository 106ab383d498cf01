package slurmctl

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/policy"
)

// submitPending submits n one-task jobs spread over the lab's users, each
// its own job record (an array would stay one record until its tasks
// start), held back by --begin so they stay PENDING for the whole
// measurement without taking the shared cluster's nodes. They are all
// cancelled when the benchmark ends.
func submitPending(b *testing.B, env *lab.Env, n int, name string) []int64 {
	b.Helper()
	users := []string{"alice", "bob", "carol"}
	ids := make([]int64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	const workers = 4
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				out, err := env.Try(users[i%3], "sbatch", "--parsable", "-D", env.JobDir, "-J", name,
					"--begin=now+2hours", "-t", "5", "--wrap", "true")
				if err != nil {
					errs <- err
					return
				}
				id, err := strconv.ParseInt(strings.TrimSpace(strings.Split(out, ";")[0]), 10, 64)
				if err != nil {
					errs <- fmt.Errorf("sbatch printed %q", out)
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	b.Cleanup(func() {
		for k := 0; k < len(ids); k += 500 {
			args := []string{}
			for _, id := range ids[k:min(k+500, len(ids))] {
				if id != 0 {
					args = append(args, strconv.FormatInt(id, 10))
				}
			}
			if len(args) > 0 {
				_, _ = env.Try("", "scancel", args...)
			}
		}
	})
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("submit: %v", err)
	}
	b.Logf("submitted %d pending jobs in %s", n, time.Since(start))
	return ids
}

// BenchmarkLab_2000 measures, against the lab's real slurmctld and
// slurmrestd, one read of a queue holding 2,000 pending jobs (this
// benchmark's, plus whatever else is queued) and one write of 2,000 changed
// site factors: every job gets a new, distinct value each iteration, so
// batching by value saves nothing and all 2,000 go to one scontrol process
// as 2,000 lines. write-rest-priority is the same through slurmrestd's admin
// priority, one request per job. Run with -benchtime=3x (see
// docs/BENCHMARKS.md).
func BenchmarkLab_2000(b *testing.B) {
	env := lab.Get(b)
	const n = 2000
	ids := submitPending(b, env, n, tag(b))
	c := labClient(b, env, nil)
	mine := func(jobs []Job) []Job {
		set := make(map[int64]bool, n)
		for _, id := range ids {
			set[id] = true
		}
		var out []Job
		for _, j := range jobs {
			if set[j.ID] && j.Pending() {
				out = append(out, j)
			}
		}
		return out
	}
	jobs, err := c.ListJobs(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	if got := len(mine(jobs)); got != n {
		b.Fatalf("ListJobs shows %d of the %d pending jobs", got, n)
	}

	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			jobs, err := c.ListJobs(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			if len(jobs) < n {
				b.Fatalf("%d jobs", len(jobs))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
	})

	// The same GET without decoding: how much of "read" is slurmrestd.
	b.Run("read-http-only", func(b *testing.B) {
		for b.Loop() {
			body, _, err := c.do(b.Context(), "GET", "/slurm/"+c.Version()+"/jobs", nil, true)
			if err != nil || len(body) < n*1000 {
				b.Fatalf("%v, %d bytes", err, len(body))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
	})

	// What batching saves: one `scontrol update` process per job, for the
	// first 100 jobs.
	b.Run("write-scontrol-process-per-job", func(b *testing.B) {
		r := ExecRunner{SlurmConf: env.SlurmConf}
		round := 0
		for b.Loop() {
			round++
			for i, id := range ids[:100] {
				if _, stderr, err := r.Run(b.Context(), nil, "scontrol", "update", "jobid="+strconv.FormatInt(id, 10),
					"sitefactor="+strconv.Itoa(round*1000+i+1)); err != nil {
					b.Fatalf("scontrol: %v: %s", err, stderr)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/job")
	})

	b.Run("write-scontrol", func(b *testing.B) {
		w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: policy.SiteFactorRange(),
			Runner: ExecRunner{SlurmConf: env.SlurmConf}}, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		round := 0
		for b.Loop() {
			round++
			want := make(map[int64]int64, n)
			for i, id := range ids {
				want[id] = int64(round*1_000_000 + i + 1)
			}
			rep, err := w.Write(b.Context(), jobs, want)
			if err != nil || len(rep.Applied) != n || rep.Calls != 1 {
				b.Fatalf("round %d: %v, applied %d, calls %d", round, err, len(rep.Applied), rep.Calls)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
		// Slurm holds the last round's values: a job's priority is its
		// multifactor part plus its site factor.
		after, err := c.ListJobs(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		for _, j := range mine(after)[:3] {
			if j.Priority < int64(round*1_000_000) {
				b.Errorf("job %d priority %d: the last site factor (%d+) is not in it", j.ID, j.Priority, round*1_000_000)
			}
		}
	})

	b.Run("write-rest-priority", func(b *testing.B) {
		w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: policy.PriorityRange()}, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		round := 0
		for b.Loop() {
			round++
			want := make(map[int64]int64, n)
			for i, id := range ids {
				want[id] = int64(round*100_000 + i + 1)
			}
			rep, err := w.Write(b.Context(), jobs, want)
			if err != nil || len(rep.Applied) != n || rep.Calls != n {
				b.Fatalf("round %d: %v, applied %d, calls %d", round, err, len(rep.Applied), rep.Calls)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/job")
	})
}
