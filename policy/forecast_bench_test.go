package policy_test

import (
	"fmt"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/schedule"
)

// BenchmarkForecast plays one cycle's snapshot forward (RandomSnapshot:
// 100,000 pending and 10,000 running jobs of 1-8 GPUs, shards and CPU-only
// jobs, a fifth without a prediction, a quarter without a limit) on 10,000
// nodes of 8 GPUs, with predicted run times and with time limits, and
// ranks the same snapshot with the default policy, in one run so the two
// compare. The target: a forecast under 1 s and under 5x the ranking. It
// lives here rather than in policy/schedule because it shares the ranking
// benchmarks' snapshot generator.
func BenchmarkForecast(b *testing.B) {
	for _, sz := range []struct{ jobs, nodes int }{{1000, 100}, {10000, 1000}, {100000, 10000}} {
		s := policy.RandomSnapshot(1, sz.jobs, sz.jobs/20)
		p, err := policy.New(policy.Default, nil)
		if err != nil {
			b.Fatal(err)
		}
		ranking, err := p.Rank(s)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("pending=%d/nodes=%d", sz.jobs, sz.nodes)
		b.Run(name+"/rank="+policy.Default, func(b *testing.B) {
			b.ReportAllocs()
			cpu := policy.CPUTime(b)
			for b.Loop() {
				if _, err := p.Rank(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(policy.CPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
		for _, limits := range []bool{false, true} {
			fp := schedule.ForecastParams{Machine: schedule.Machine{Nodes: sz.nodes, PerNode: 8}, Limits: limits}
			method := "predicted"
			if limits {
				method = "limits"
			}
			b.Run(name+"/forecast="+method, func(b *testing.B) {
				f, err := schedule.NewForecast(s, ranking, fp)
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
				cpu := policy.CPUTime(b)
				for b.Loop() {
					if _, err := schedule.NewForecast(s, ranking, fp); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(policy.CPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(last.Sub(s.Now).Hours(), "horizon-h")
			})
		}
	}
}
