package predict_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/predict"
)

// sharedTrace reads one of the shared traces ($FAIRWAY_TRACES, else
// shared/data/traces beside the repository). A fresh clone has none: skip,
// except under CI=true.
func sharedTrace(tb testing.TB, file string, f trace.Format) []policy.Job {
	tb.Helper()
	fh, err := os.Open(shareddata.Trace(tb, file))
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	tr, err := trace.ReadAll(fh, f, trace.Options{Name: file})
	if err != nil {
		tb.Fatal(err)
	}
	return tr.Jobs
}

func pending(j policy.Job) policy.Job {
	j.Start, j.End, j.State = time.Time{}, time.Time{}, policy.StatePending
	return j
}

// TestPredictors_Contract replays the KTH trace in submit order through every
// predictor and checks the Prediction contract on each job: never negative, never above the time
// limit (except alea, which reproduces a published method that scales the
// request by ratios that may exceed 1), Upper at or above Run when a
// quantile is given; and Predict does not change the predictor: a twin fed
// the same jobs without the extra Predict calls predicts the same.
func TestPredictors_Contract(t *testing.T) {
	jobs := sharedTrace(t, "KTH-SP2-filtered.swf.gz", trace.SWF)[:8000]
	for _, name := range predict.Names() {
		t.Run(name, func(t *testing.T) {
			p, err := predict.New(name, predict.Params{})
			if err != nil {
				t.Fatal(err)
			}
			twin, _ := predict.New(name, predict.Params{})
			sources := map[string]int{}
			for i := range jobs {
				pj := pending(jobs[i])
				got := p.Predict(&pj)
				for k := 0; k < 2; k++ { // extra calls must not matter
					p.Predict(&pj)
				}
				if i%97 == 0 {
					if tw := twin.Predict(&pj); tw != got {
						t.Fatalf("job %d: prediction %+v, twin without extra Predict calls %+v", jobs[i].ID, got, tw)
					}
				}
				sources[got.Source]++
				if got.Run < 0 {
					t.Fatalf("job %d: negative prediction %v", jobs[i].ID, got.Run)
				}
				if name != "alea" && pj.TimeLimit > 0 && got.Run > pj.TimeLimit {
					t.Fatalf("job %d: prediction %v above the limit %v", jobs[i].ID, got.Run, pj.TimeLimit)
				}
				if got.Quantile > 0 && got.Upper < got.Run {
					t.Fatalf("job %d: upper %v below run %v", jobs[i].ID, got.Upper, got.Run)
				}
				p.Observe(&jobs[i])
				twin.Observe(&jobs[i])
			}
			if sources[""] > 0 {
				t.Errorf("%d predictions without a Source", sources[""])
			}
			t.Logf("sources: %v", sources)
		})
	}
}

// TestFairway_SummariesMatchScan replays KTH through the fairway predictor
// (without training, which features do not need) in submit order and in end
// order, with histories shorter than, equal to and longer than the recent
// window, and checks that the features read from the per-user summaries
// Observe keeps are bit for bit those of a scan of the history: for Predict
// at the submit, for Observe's end filter, and for a submit after the trace.
func TestFairway_SummariesMatchScan(t *testing.T) {
	jobs := sharedTrace(t, "KTH-SP2-filtered.swf.gz", trace.SWF)
	byEnd := slices.Clone(jobs)
	slices.SortStableFunc(byEnd, func(a, b policy.Job) int { return a.End.Compare(b.End) })
	later := jobs[len(jobs)-1].End.Add(time.Hour)
	for _, history := range []int{8, 32, 128} {
		for _, order := range []struct {
			name string
			jobs []policy.Job
		}{{"submit", jobs}, {"end", byEnd}} {
			t.Run(fmt.Sprintf("history=%d/%s", history, order.name), func(t *testing.T) {
				p, err := predict.New("fairway", predict.Params{Fairway: predict.FairwayParams{History: history, MinTrain: 1 << 30}})
				if err != nil {
					t.Fatal(err)
				}
				summarized := 0
				for i := range order.jobs {
					j := &order.jobs[i]
					pj := pending(*j)
					future := pj
					future.Submit = later
					for _, c := range []struct {
						what      string
						j         *policy.Job
						endBefore int64
					}{{"predict", &pj, math.MaxInt64}, {"observe", &pj, pj.Submit.Unix()}, {"future", &future, math.MaxInt64}} {
						fast, scan, ok := predict.FairwayFeatures(p, c.j, c.endBefore)
						if ok {
							summarized++
						}
						for k := range fast {
							if math.Float32bits(fast[k]) != math.Float32bits(scan[k]) {
								t.Fatalf("job %d (%s): feature %d from the summaries %v, from a scan %v", j.ID, c.what, k, fast[k], scan[k])
							}
						}
					}
					p.Observe(j)
				}
				if summarized < len(order.jobs) {
					t.Errorf("summaries used %d times over %d jobs: the test checks little", summarized, len(order.jobs))
				}
			})
		}
	}
}

// BenchmarkPredict measures predicting a queue of pending jobs with a warm
// fairway model: it has observed the whole CTC trace; the pending jobs are
// CTC's, cycled, submitted after the trace's end. jobs=N runs PredictBatch,
// as the Engine does each cycle; one-by-one=N calls Predict in a loop on
// one goroutine.
func BenchmarkPredict(b *testing.B) {
	jobs := sharedTrace(b, "CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF)
	p := warmFairway(b, jobs)
	for _, n := range []int{1000, 10000, 100000} {
		queue := warmQueue(b, p, jobs, n)
		out := make([]policy.Prediction, n)
		bp := p.(policy.BatchPredictor)
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			// Collect the setup's garbage (the trace and the training) so
			// that its collection is not charged to the timed loop.
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bp.PredictBatch(queue, out)
			}
		})
		b.Run(fmt.Sprintf("one-by-one=%d", n), func(b *testing.B) {
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for i, j := range queue {
					out[i] = p.Predict(j)
				}
			}
		})
	}
}

// BenchmarkEffective measures the effective run times of a queue of
// pending jobs beside their predictions, what the Engine asks for the jobs
// it predicted while the policy reads them (the learned family with an
// effective exponent), after BenchmarkPredict's warm-up.
func BenchmarkEffective(b *testing.B) {
	jobs := sharedTrace(b, "CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF)
	p := warmFairway(b, jobs)
	ep := p.(policy.EffectivePredictor)
	queue := warmQueue(b, p, jobs, 100000)
	runs := make([]time.Duration, len(queue))
	some := 0
	for i, j := range queue {
		runs[i] = p.Predict(j).Run
		if ep.Effective(j, runs[i]) > 0 {
			some++
		}
	}
	if some == 0 {
		b.Fatal("no job of the queue has an effective run time: the benchmark would measure nothing")
	}
	b.Run("jobs=100000", func(b *testing.B) {
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for i, j := range queue {
				ep.Effective(j, runs[i])
			}
		}
	})
}

// BenchmarkFairwayTrain measures one retraining of the fairway model, what
// a simulation pays every RetrainEvery finished jobs: the default 40 trees
// of depth 5 on the default window of 30,000 jobs (CTC's, observed in submit
// order), features as the predictor computes them. cpus=1 keeps training on
// one core, as when the simulations of all policies share the machine.
func BenchmarkFairwayTrain(b *testing.B) {
	jobs := sharedTrace(b, "CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF)
	p, err := predict.New("fairway", predict.Params{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range jobs[:40000] {
		p.Observe(&jobs[i])
	}
	for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("window=30000/cpus=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			if trees := predict.RetrainFairway(p); trees != 40 {
				b.Fatalf("%d trees, want 40", trees)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				predict.RetrainFairway(p)
			}
		})
	}
}

// warmFairway is a fairway predictor that has observed every job of jobs.
func warmFairway(tb testing.TB, jobs []policy.Job) policy.Predictor {
	p, err := predict.New("fairway", predict.Params{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range jobs {
		p.Observe(&jobs[i])
	}
	return p
}

// warmQueue is n pending jobs submitted after everything p observed, as in
// a live system: CTC jobs, cycled, with their submit times moved there.
func warmQueue(tb testing.TB, p policy.Predictor, jobs []policy.Job, n int) []*policy.Job {
	var last time.Time
	for i := range jobs {
		if jobs[i].End.After(last) {
			last = jobs[i].End
		}
	}
	queue := make([]*policy.Job, n)
	for i := range queue {
		j := pending(jobs[(i*7919)%len(jobs)])
		j.Submit = last.Add(time.Duration(i) * time.Second)
		queue[i] = &j
	}
	if got := p.Predict(queue[0]); got.Source == "" || got.Run <= 0 {
		tb.Fatalf("warm model predicts nothing: %+v", got)
	}
	return queue
}

// TestPredictBatch_SameAsOneByOne checks that PredictBatch, sharing a warm
// fairway model among goroutines, gives each job exactly what Predict
// does (run it with -race to check that Predict only reads).
func TestPredictBatch_SameAsOneByOne(t *testing.T) {
	jobs := sharedTrace(t, "CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF)
	p := warmFairway(t, jobs)
	queue := warmQueue(t, p, jobs, 3*4096+17)
	got := make([]policy.Prediction, len(queue))
	bp, ok := p.(policy.BatchPredictor)
	if !ok {
		t.Fatalf("the fairway predictor (%T) is not a policy.BatchPredictor", p)
	}
	bp.PredictBatch(queue, got)
	for i, j := range queue {
		if want := p.Predict(j); got[i] != want {
			t.Fatalf("job %d: PredictBatch %+v, Predict %+v", i, got[i], want)
		}
	}
}
