package policy

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"
)

// TestEngine_CycleReusingRanksAsCycle runs every registered policy through
// two Engines fed the same churning queue, one ranking with Cycle and the
// other with CycleReusing (the simulator's call, which ranks into buffers
// it reuses), and checks that at every cycle both give the same order,
// values and parts.
func TestEngine_CycleReusingRanksAsCycle(t *testing.T) {
	type ranked struct {
		id    int64
		value float64
		parts map[string]float64
	}
	for _, name := range Names() {
		for _, every := range []time.Duration{0, 7 * time.Minute} {
			t.Run(fmt.Sprint(name, "/every=", every), func(t *testing.T) {
				run := func(reuse bool) [][]ranked {
					e := enEngine(t, name, newEnFake(), every)
					rank := e.Cycle
					if reuse {
						rank = e.CycleReusing
					}
					// sjf-oracle reads every pending job's true run time.
					trueRun := map[int64]time.Duration{}
					cycle := func(o *Observation) (*Snapshot, []Score, error) {
						for _, j := range o.Pending {
							trueRun[j.ID] = time.Duration(j.ID*7919%500) * time.Minute
						}
						o.TrueRun = trueRun
						return rank(o)
					}
					var out [][]ranked
					enChurnWith(t, cycle, 31, 400, 200, func(_ int, _ *Snapshot, ranking []Score) {
						rs := make([]ranked, len(ranking))
						for r, sc := range ranking {
							rs[r] = ranked{sc.JobID, sc.Value, sc.Parts.Map()}
						}
						out = append(out, rs)
					})
					return out
				}
				fresh, reused := run(false), run(true)
				jobs := 0
				for c := range fresh {
					a, b := fresh[c], reused[c]
					if len(a) != len(b) {
						t.Fatalf("cycle %d: Cycle ranked %d jobs, CycleReusing %d", c, len(a), len(b))
					}
					for r := range a {
						x, y := a[r], b[r]
						if x.id != y.id || x.value != y.value || !maps.Equal(x.parts, y.parts) {
							t.Fatalf("cycle %d, place %d: Cycle gave job %d value %v parts %v; CycleReusing job %d value %v parts %v",
								c, r, x.id, x.value, x.parts, y.id, y.value, y.parts)
						}
					}
					jobs += len(a)
				}
				if jobs == 0 {
					t.Fatal("no job was ranked: the runs compared nothing")
				}
			})
		}
	}
}

// TestEngine_CycleReusingAllocatesNoRanking: ranking a queue of 650 jobs
// again and again (the simulator's big machine) through CycleReusing
// allocates far less per cycle than one ranking's Scores and parts, which
// Cycle allocates every time.
func TestEngine_CycleReusingAllocatesNoRanking(t *testing.T) {
	for _, name := range []string{"wfp3", "unicep", "vtc", "themis", "fair-qssf", "tiresias"} {
		t.Run(name, func(t *testing.T) {
			e := enEngine(t, name, nil, 0)
			const n = 650
			pending := make([]Job, n)
			for i := range pending {
				pending[i] = enJob(int64(i+1), fmt.Sprint("u", i%40), float64(i%97))
			}
			at := 100.0
			cycle := func() {
				at++
				if _, _, err := e.CycleReusing(&Observation{Now: rkAt(at), Pending: pending}); err != nil {
					t.Fatal(err)
				}
			}
			cycle() // the buffers grow once,
			cycle() // the memos' when first sorted from
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const cycles = 20
			for range cycles {
				cycle()
			}
			runtime.ReadMemStats(&after)
			perCycle := (after.TotalAlloc - before.TotalAlloc) / cycles
			// One ranking's Scores alone are n·32 bytes.
			if limit := uint64(n * 32 / 4); perCycle > limit {
				t.Fatalf("%d bytes allocated per cycle of %d jobs, want at most %d", perCycle, n, limit)
			}
		})
	}
}
