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

// BenchmarkRank ranks one cycle's snapshot (rkRandomSnapshot: heavy users,
// requeued jobs, running jobs, a ledger with history) with every policy.
// The target is fair-qssf at 100,000 jobs and 5,000 users: under 100 ms
// and 200 MB allocated per cycle.
func BenchmarkRank(b *testing.B) {
	sizes := []struct{ jobs, users int }{{1000, 50}, {10000, 500}, {100000, 5000}}
	params := PolicyParams{Tiresias: TiresiasParams{Gittins: true, PromoteKnob: 2}}
	for _, name := range PolicyNames() {
		for _, sz := range sizes {
			b.Run(fmt.Sprintf("policy=%s/jobs=%d/users=%d", name, sz.jobs, sz.users), func(b *testing.B) {
				s := rkRandomSnapshot(1, sz.jobs, sz.users)
				p, err := NewPolicy(name, params)
				if err != nil {
					b.Fatal(err)
				}
				scores, err := p.Rank(s)
				if err != nil {
					b.Fatal(err)
				}
				if len(scores) != sz.jobs || scores[0].Value == scores[len(scores)-1].Value {
					b.Fatalf("trivial ranking: %d scores, first %v last %v", len(scores), scores[0].Value, scores[len(scores)-1].Value)
				}
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
	p, err := NewPolicy("fair-qssf", PolicyParams{})
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
