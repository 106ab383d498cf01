package sim

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// BenchmarkSimulate measures whole simulations as `fairway simulate` runs
// them, with a predictor learning online: fairway (the default, gradient-
// boosted trees retrained as history grows) or tsafrir (a running mean):
//
//   - trace=CTC/policies=N: the whole CTC SP2 log (77,222 jobs, 338
//     processors, EASY) through every registered policy, GOMAXPROCS at a
//     time as the CLI does (target: under 20 s);
//   - synth=1000000/policy=P: a million synthetic jobs (Helios
//     calibration, 3,000 users, load 0.9 on 128 nodes × 8 GPUs) through
//     the default policy (target: under 30 s), with cpu-ns/op and
//     result-hash as BenchmarkSimulatePolicy reports them.
//
// Each checks every result is non-trivial (the runs are too long to
// repeat once more before timing).
func BenchmarkSimulate(b *testing.B) {
	for _, predictor := range []string{"fairway", "tsafrir"} {
		benchmarkSimulate(b, predictor)
	}
}

func benchmarkSimulate(b *testing.B, predictor string) {
	b.Run(fmt.Sprintf("trace=CTC/policies=%d/predictor=%s", len(policy.Names()), predictor), func(b *testing.B) {
		jobs, cluster := readShared(b, ctcTrace)
		once := func() []Metrics {
			out := make([]Metrics, len(policy.Names()))
			sem := make(chan struct{}, runtime.GOMAXPROCS(0))
			var wg sync.WaitGroup
			for i, name := range policy.Names() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					res, err := Run(jobs, smConfig(b, cluster, name, predictor))
					if err != nil {
						b.Error(err)
						return
					}
					out[i] = Measure(res, MetricsParams{})
				}()
			}
			wg.Wait()
			return out
		}
		for b.Loop() {
			for _, m := range once() {
				if m.Jobs != 77222 || m.AvgWait <= 0 {
					b.Fatalf("%s: %d jobs, average wait %v: trivial", m.Name, m.Jobs, m.AvgWait)
				}
			}
		}
	})
	b.Run(fmt.Sprintf("synth=%d/policy=%s/predictor=%s", 1000000, policy.Default, predictor), func(b *testing.B) {
		jobs, err := Synth(SynthParams{Jobs: 1000000, Users: 3000, Nodes: 128, GPUsPerNode: 8, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		cluster := Cluster{Nodes: 128, PerNode: 8, Unit: GPUs}
		b.ResetTimer()
		benchmarkRun(b, jobs, cluster, policy.Default, predictor, 1000000, 0)
	})
}

// BenchmarkSimulatePolicy replays, through one registered policy at a
// time as `fairway simulate --policies P` does (the fairway predictor
// learning online), two workloads of about the same number of jobs on
// machines three hundred times apart:
//
//   - workload=CTC: the whole CTC SP2 log (77,222 jobs, one pool of 338
//     processors, EASY); the target is each policy under 10 s;
//   - workload=big: 77,000 SWF-like jobs on one pool of 100,000
//     processors at offered load 0.8 (bigWorkload), thousands running at
//     once; the target is each policy within 1.5× its CTC time, so the
//     two run one after the other under the same load.
//
// Besides wall time each reports cpu-ns/op, the CPU time of the process
// (garbage collector and predictor helpers included), which other tenants
// of the machine do not inflate.
func BenchmarkSimulatePolicy(b *testing.B) {
	big, bigCluster := bigWorkload(b, 77000, 100000, 0.8, 1)
	for _, name := range policy.Names() {
		b.Run(fmt.Sprintf("policy=%s/workload=CTC", name), func(b *testing.B) {
			jobs, cluster := readShared(b, ctcTrace)
			benchmarkRun(b, jobs, cluster, name, "fairway", 77222, 0)
		})
		b.Run(fmt.Sprintf("policy=%s/workload=big", name), func(b *testing.B) {
			benchmarkRun(b, big, bigCluster, name, "fairway", len(big), 1000)
		})
	}
}

// benchmarkRun times Run of jobs through policy name with a fresh
// predictor and checks each result simulated every job, with some
// waiting, and at some instant at least minRunning jobs running at once.
func benchmarkRun(b *testing.B, jobs []policy.Job, cluster Cluster, name, predictor string, want, minRunning int) {
	b.ReportAllocs()
	cpu, sum := simCPUTime(b), uint64(0)
	for b.Loop() {
		res, err := Run(jobs, smConfig(b, cluster, name, predictor))
		if err != nil {
			b.Fatal(err)
		}
		if m := Measure(res, MetricsParams{}); m.Jobs != want || m.AvgWait <= 0 {
			b.Fatalf("%d jobs, average wait %v: trivial", m.Jobs, m.AvgWait)
		}
		if n := maxRunning(res); n < minRunning {
			b.Fatalf("at most %d jobs ran at once, want at least %d", n, minRunning)
		}
		sum = resultHash(res)
	}
	b.ReportMetric(float64(simCPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sum), "result-hash")
}

// resultHash is 52 bits (exact as a metric) of a hash of every job's
// start and end and of the number of cycles: a change meant to make a run
// faster keeps it.
func resultHash(res *Result) uint64 {
	h := fnv.New64a()
	var buf [24]byte
	for _, j := range res.Jobs {
		binary.LittleEndian.PutUint64(buf[0:], uint64(j.ID))
		binary.LittleEndian.PutUint64(buf[8:], uint64(j.Start.UnixNano()))
		binary.LittleEndian.PutUint64(buf[16:], uint64(j.End.UnixNano()))
		h.Write(buf[:])
	}
	binary.LittleEndian.PutUint64(buf[0:], uint64(res.Cycles))
	h.Write(buf[:8])
	return h.Sum64() >> 12
}

// maxRunning is the most jobs of res that ran at one instant.
func maxRunning(res *Result) int {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(res.Jobs))
	for _, j := range res.Jobs {
		if j.Runs != nil {
			for _, r := range j.Runs {
				evs = append(evs, ev{r.From.UnixNano(), 1}, ev{r.To.UnixNano(), -1})
			}
			continue
		}
		evs = append(evs, ev{j.Start.UnixNano(), 1}, ev{j.End.UnixNano(), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.d, b.d) // ends first
	})
	n, most := 0, 0
	for _, e := range evs {
		n += e.d
		most = max(most, n)
	}
	return most
}

// simCPUTime is the CPU time this process has used, all threads.
func simCPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bigWorkload is n SWF-like jobs for one pool of procs processors at the
// offered load, seeded: 400 users (Zipf activity) submitting a few
// templates each (a name, a size, a typical run time) again and again, so
// the predictor has something to learn; sizes from 1 to 4,096 processors,
// mostly small (a mean of about 25, so thousands run at once), run times
// lognormal (median 10 minutes) within time limits users round up on a
// ladder, and Poisson submits at the rate that offers the load.
func bigWorkload(b testing.TB, n, procs int, load float64, seed uint64) ([]policy.Job, Cluster) {
	b.Helper()
	r := rand.New(rand.NewPCG(seed, 0xb16))
	sizes := []struct {
		n int
		p float64
	}{{1, 0.30}, {2, 0.08}, {4, 0.10}, {8, 0.14}, {16, 0.15}, {32, 0.12}, {64, 0.07},
		{128, 0.03}, {256, 0.008}, {512, 0.0015}, {1024, 0.0005}, {2048, 0.0005}}
	limits := []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 12 * time.Hour}
	type template struct {
		name    string
		size    int
		logBase float64
		over    float64
	}
	const users = 400
	tmpl := make([][]template, users)
	userCum := make([]float64, users)
	acc := 0.0
	for u := range tmpl {
		acc += 1 / float64(u+1)
		userCum[u] = acc
		for t := range 1 + r.IntN(5) {
			x, size := r.Float64(), 1
			for _, s := range sizes {
				if x < s.p {
					size = s.n
					break
				}
				x -= s.p
			}
			tmpl[u] = append(tmpl[u], template{name: fmt.Sprintf("app%d-%d", u, t), size: size,
				logBase: math.Log(3600) + 0.8*r.NormFloat64(), over: 1.2 + 4*r.Float64()})
		}
	}
	jobs := make([]policy.Job, n)
	procSeconds := 0.0
	for i := range jobs {
		u, _ := slices.BinarySearch(userCum, r.Float64()*acc)
		u = min(u, users-1)
		tp := tmpl[u][r.IntN(len(tmpl[u]))]
		run := math.Round(min(max(math.Exp(tp.logBase+0.6*r.NormFloat64()), 1), limits[len(limits)-1].Seconds()))
		limit := limits[len(limits)-1]
		for _, l := range limits {
			if l.Seconds() >= run*tp.over {
				limit = l
				break
			}
		}
		jobs[i] = policy.Job{ID: int64(i + 1), ArrayTask: -1, User: fmt.Sprintf("u%03d", u), Partition: "batch",
			Name: tp.name, Nodes: 1, CPUs: tp.size, State: policy.StateCompleted, TimeLimit: limit,
			End: time.Unix(0, 0).Add(time.Duration(run) * time.Second)}
		procSeconds += float64(tp.size) * run
	}
	rate := float64(n) * load * float64(procs) / procSeconds // jobs per second
	start, t := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), 0.0
	for i := range jobs {
		for { // a diurnal rate (±50%, peak in the afternoon), by thinning
			t += -math.Log(1-r.Float64()) / (1.5 * rate)
			if r.Float64()*1.5 <= 1+0.5*math.Sin(2*math.Pi*(t/86400-0.375)) {
				break
			}
		}
		run := jobs[i].End.Sub(time.Unix(0, 0))
		jobs[i].Submit = start.Add(time.Duration(math.Floor(t)) * time.Second)
		jobs[i].Start, jobs[i].End = jobs[i].Submit, jobs[i].Submit.Add(run)
	}
	return jobs, Cluster{Nodes: 1, PerNode: procs, Unit: CPUs}
}

// BenchmarkEvaluate measures one evaluation as a tuner makes thousands of:
// the time split at 0.7 of the 30,000-job synthetic workload
// (`fairway trace synth --jobs 30000`, seed 1, on 8 × 8 GPUs), replaying
// the last 9,000 jobs under the default policy with EASY backfilling,
// warmed on the history before the split. The Evaluator is built once,
// outside the timing; with predictions=at-submit each replay looks the
// predictions up, with predictions=online it warms and trains its own
// fairway predictor.
func BenchmarkEvaluate(b *testing.B) {
	jobs, err := Synth(SynthParams{Jobs: 30000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	cluster := Cluster{Nodes: SynthNodes, PerNode: SynthGPUsPerNode, Unit: GPUs}
	for _, mode := range []PredictionMode{PredictAtSubmit, PredictOnline} {
		b.Run(fmt.Sprintf("split=0.7/jobs=30000/policy=%s/predictions=%s", policy.Default, mode), func(b *testing.B) {
			e, err := NewEvaluator(jobs, cluster, Protocol{Kind: Split, Split: 0.7, Predictions: mode,
				NewPredictor: func() (policy.Predictor, error) { return predict.New("fairway", predict.Params{}) }})
			if err != nil {
				b.Fatal(err)
			}
			mk := func() (policy.Policy, error) { return policy.New(policy.Default, nil) }
			check := func(ev Evaluation) {
				if ev.Jobs != 9000 || ev.AvgWait <= 0 || ev.AvgBSLD <= 1 {
					b.Fatalf("%d jobs, avg wait %v, avg bsld %v: trivial", ev.Jobs, ev.AvgWait, ev.AvgBSLD)
				}
			}
			ev, err := e.Evaluate(context.Background(), mk)
			if err != nil {
				b.Fatal(err)
			}
			check(ev)
			b.ResetTimer()
			for b.Loop() {
				if ev, err = e.Evaluate(context.Background(), mk); err != nil {
					b.Fatal(err)
				}
			}
			check(ev)
		})
	}
}
