package policy

import (
	"fmt"
	"testing"
)

// BenchmarkForecast plays one cycle's snapshot forward (rkRandomSnapshot:
// 100,000 pending and 10,000 running jobs of 1-8 GPUs, shards and CPU-only
// jobs, a fifth without a prediction, a quarter without a limit) on 10,000
// nodes of 8 GPUs, with predicted run times and with time limits, and
// ranks the same snapshot with the default policy, in one run so the two
// compare. The target (issue 19): a forecast under 1 s and under 5× the
// ranking.
func BenchmarkForecast(b *testing.B) {
	for _, sz := range []struct{ jobs, nodes int }{{1000, 100}, {10000, 1000}, {100000, 10000}} {
		s := rkRandomSnapshot(1, sz.jobs, sz.jobs/20)
		p, err := New(Default, nil)
		if err != nil {
			b.Fatal(err)
		}
		ranking, err := p.Rank(s)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("pending=%d/nodes=%d", sz.jobs, sz.nodes)
		b.Run(name+"/rank="+Default, func(b *testing.B) {
			b.ReportAllocs()
			cpu := rkCPUTime(b)
			for b.Loop() {
				if _, err := p.Rank(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rkCPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
		for _, limits := range []bool{false, true} {
			fp := ForecastParams{Machine: Machine{Nodes: sz.nodes, PerNode: 8}, Limits: limits}
			method := "predicted"
			if limits {
				method = "limits"
			}
			b.Run(name+"/forecast="+method, func(b *testing.B) {
				f, err := NewForecast(s, ranking, fp)
				if err != nil {
					b.Fatal(err)
				}
				first, last := f.Pending[0].Start, f.Pending[0].Start
				for _, e := range f.Pending {
					if e.Start.After(last) {
						last = e.Start
					}
				}
				if !last.After(first) {
					b.Fatalf("trivial forecast: first job at %s, last at %s", first, last)
				}
				b.ReportAllocs()
				cpu := rkCPUTime(b)
				for b.Loop() {
					if _, err := NewForecast(s, ranking, fp); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rkCPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(last.Sub(s.Now).Hours(), "horizon-h")
				b.ReportMetric(float64(f.steps), "steps")
			})
		}
	}
}
