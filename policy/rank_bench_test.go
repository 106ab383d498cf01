package policy

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// rkCPUTime is the CPU time this process has used, all threads (the
// garbage collector's included). Reported per op next to wall time, it
// shows the work a cycle costs when other processes share the cores.
func rkCPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rkSizes are the queues the ranking benchmarks rank.
var rkSizes = []struct{ jobs, users int }{{1000, 50}, {10000, 500}, {100000, 5000}}

// rkParams are the policies' parameters in the ranking benchmarks.
var rkParams = map[string]any{"tiresias": TiresiasParams{Gittins: true, PromoteKnob: 2}}

// rkServeInterval is serve's default time between cycles.
const rkServeInterval = 30 * time.Second

// BenchmarkRank is one serve cycle's ranking, with every policy, the way
// serve runs it: Engine.Cycle on the queue of rkRandomSnapshot (heavy users,
// requeued jobs, running jobs, a ledger with history), which the Engine
// already saw a cycle before, so the op is a steady cycle: the Ledger's
// backlog, the index of running jobs brought up to date, the cached
// predictions looked up, and the ranking. Cycles are rkServeInterval apart
// with serve's default ChargeEvery, so one op in ten also charges every
// running job: run at least 10 ops. The target is fair-qssf at 100,000
// jobs and 5,000 users: under 100 ms and 200 MB allocated per cycle.
func BenchmarkRank(b *testing.B) {
	for _, name := range Names() {
		for _, sz := range rkSizes {
			b.Run(fmt.Sprintf("policy=%s/jobs=%d/users=%d", name, sz.jobs, sz.users), func(b *testing.B) {
				s := rkRandomSnapshot(1, sz.jobs, sz.users)
				p, err := New(name, rkParams[name])
				if err != nil {
					b.Fatal(err)
				}
				e, scores := rkEngine(b, p, s)
				rkCheckRanking(b, scores, sz.jobs)
				o := Observation{Now: s.Now, Pending: s.Pending, Running: s.Running, TrueRun: s.TrueRun}
				b.ReportAllocs()
				cpu := rkCPUTime(b)
				for b.Loop() {
					o.Now = o.Now.Add(rkServeInterval)
					if _, _, err := e.Cycle(&o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rkCPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkRankSnapshot ranks rkRandomSnapshot with every policy's Rank:
// a Snapshot no Engine keeps (the simulator's forecast, tests), so the
// policies that read a rankIndex build it from the Snapshot at every op.
func BenchmarkRankSnapshot(b *testing.B) {
	for _, name := range Names() {
		for _, sz := range rkSizes {
			b.Run(fmt.Sprintf("policy=%s/jobs=%d/users=%d", name, sz.jobs, sz.users), func(b *testing.B) {
				s := rkRandomSnapshot(1, sz.jobs, sz.users)
				p, err := New(name, rkParams[name])
				if err != nil {
					b.Fatal(err)
				}
				scores, err := p.Rank(s)
				if err != nil {
					b.Fatal(err)
				}
				rkCheckRanking(b, scores, sz.jobs)
				b.ReportAllocs()
				cpu := rkCPUTime(b)
				for b.Loop() {
					if _, err := p.Rank(s); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rkCPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// rkCheckRanking fails b unless scores rank jobs jobs with different values.
func rkCheckRanking(b *testing.B, scores []Score, jobs int) {
	b.Helper()
	if len(scores) != jobs || scores[0].Value == scores[len(scores)-1].Value {
		b.Fatalf("trivial ranking: %d scores, first %v last %v", len(scores), scores[0].Value, scores[len(scores)-1].Value)
	}
}

// rkEngine returns an Engine that ranks with p the queue of s, and the
// ranking of its first cycle, run on s's queue at s.Now. It starts from
// s's Ledger, the history serve warms its Engine with, and its predictor
// answers s's predictions.
func rkEngine(tb testing.TB, p Policy, s *Snapshot) (*Engine, []Score) {
	tb.Helper()
	e, err := NewEngine(EngineParams{Policy: p, Predictor: rkPredictor(s.Predicted), Shares: s.Shares, Service: s.Service, GPUs: s.GPUs})
	if err != nil {
		tb.Fatal(err)
	}
	e.ledger = s.Ledger.Clone()
	_, scores, err := e.Cycle(&Observation{Now: s.Now, Pending: s.Pending, Running: s.Running, TrueRun: s.TrueRun})
	if err != nil {
		tb.Fatal(err)
	}
	return e, scores
}

// rkPredictor predicts the run times it holds, and has nothing to go on
// for other jobs.
type rkPredictor map[int64]time.Duration

func (rkPredictor) Name() string { return "snapshot" }
func (rkPredictor) Observe(*Job) {}
func (p rkPredictor) Predict(j *Job) Prediction {
	if d, ok := p[j.ID]; ok {
		return Prediction{Run: d, Source: "snapshot"}
	}
	return Prediction{Source: sourceNone}
}

// BenchmarkLedger_Backlog is the per-cycle bookkeeping the cycle owner adds
// to ranking: marking 100,000 pending jobs of 5,000 users backlogged.
func BenchmarkLedger_Backlog(b *testing.B) {
	s := rkRandomSnapshot(1, 100000, 5000)
	b.ReportAllocs()
	for b.Loop() {
		s.Ledger.Backlog(s.Pending, s.Shares)
	}
}

// BenchmarkAssign maps a 100,000-job fair-qssf ranking to site factors,
// from scratch and then against the previous cycle's values with the
// ranking changed by a new job at the head.
func BenchmarkAssign(b *testing.B) {
	s := rkRandomSnapshot(1, 100000, 5000)
	p, err := New("fair-qssf", nil)
	if err != nil {
		b.Fatal(err)
	}
	ranking, err := p.Rank(s)
	if err != nil {
		b.Fatal(err)
	}
	first, err := Assign(ranking, nil, SiteFactorRange())
	if err != nil {
		b.Fatal(err)
	}
	prev := map[int64]int64{}
	for i, sc := range ranking {
		prev[sc.JobID] = first[i]
	}
	moved := append([]Score{{JobID: -1}}, ranking...)
	b.Run("prev=none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Assign(ranking, nil, SiteFactorRange()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prev=last-cycle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Assign(moved, prev, SiteFactorRange()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
