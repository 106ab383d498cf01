package sim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// TestSynth_Calibration checks a large synthetic workload against the
// Helios characterization it is calibrated to (Hu et al., SC'21, §3).
func TestSynth_Calibration(t *testing.T) {
	const n = 100000
	jobs, err := Synth(SynthParams{Jobs: n, Users: 300, Nodes: 64, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n {
		t.Fatalf("%d jobs, want %d", len(jobs), n)
	}
	runs := make([]float64, n)
	states := map[policy.State]int{}
	oneGPU, repeats := 0, 0
	seen := map[[2]string]bool{}
	var gpuSeconds float64
	for i, j := range jobs {
		runs[i] = j.RunTime().Seconds()
		states[j.State]++
		if j.GPUs == 1 {
			oneGPU++
		}
		k := [2]string{j.User, j.Name}
		if seen[k] {
			repeats++
		}
		seen[k] = true
		gpuSeconds += float64(j.GPUs) * runs[i]
		if j.RunTime() > j.TimeLimit || j.TimeLimit <= 0 {
			t.Fatalf("job %d runs %v over its limit %v", j.ID, j.RunTime(), j.TimeLimit)
		}
		if j.GPUs > 8 && j.Nodes != j.GPUs/8 {
			t.Fatalf("job %d: %d GPUs on %d nodes", j.ID, j.GPUs, j.Nodes)
		}
		if i > 0 && j.Submit.Before(jobs[i-1].Submit) {
			t.Fatalf("job %d submitted before job %d", j.ID, jobs[i-1].ID)
		}
	}
	slices.Sort(runs)
	median, mean := runs[n/2], 0.0
	for _, r := range runs {
		mean += r / n
	}
	span := jobs[n-1].Submit.Sub(jobs[0].Submit).Seconds()
	load := gpuSeconds / (64 * 8 * span)
	frac := func(c int) float64 { return float64(c) / n }
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64 // relative
	}{
		{"median run (s)", median, 200, 0.02},
		{"mean run (s)", mean, 6600, 0.10},
		{"completed", frac(states[policy.StateCompleted]), 0.62, 0.03},
		{"cancelled", frac(states[policy.StateCancelled]), 0.22, 0.05},
		{"failed", frac(states[policy.StateFailed]), 0.16, 0.05},
		{"offered load", load, 0.9, 0.05},
	} {
		if math.Abs(c.got-c.want) > c.tol*c.want {
			t.Errorf("%s = %.4g, want %.4g ± %.0f%%", c.name, c.got, c.want, 100*c.tol)
		}
	}
	if frac(oneGPU) < 0.5 {
		t.Errorf("one-GPU jobs: %.1f%%, want most", 100*frac(oneGPU))
	}
	if frac(repeats) < 0.5 {
		t.Errorf("resubmissions of a user's earlier job name: %.1f%%, want most jobs", 100*frac(repeats))
	}
	t.Logf("median %.0f s, mean %.0f s, one GPU %.1f%%, repeats %.1f%%, load %.2f", median, mean, 100*frac(oneGPU), 100*frac(repeats), load)
}

func TestSynth_Reproducible(t *testing.T) {
	a, err := Synth(SynthParams{Jobs: 500, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synth(SynthParams{Jobs: 500, Seed: 42})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different jobs (-first +second):\n%s", diff)
	}
	c, _ := Synth(SynthParams{Jobs: 500, Seed: 43})
	if cmp.Equal(a, c) {
		t.Error("seeds 42 and 43 gave the same jobs")
	}
	// A change of generator shows in the golden files (golden_test.go).
}

// TestSynth_BadParams: settings that would loop for ever (a NaN load never
// accepts a submit), exhaust memory or overflow the submit times are
// refused, each with a message naming it.
func TestSynth_BadParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    SynthParams
		want string
	}{
		{"negative jobs", SynthParams{Jobs: -1}, "negative"},
		{"NaN load", SynthParams{Jobs: 10, Load: math.NaN()}, "load NaN"},
		{"infinite load", SynthParams{Jobs: 10, Load: math.Inf(1)}, "load +Inf"},
		{"load too high", SynthParams{Jobs: 10, Load: 1e308}, "at most 1000"},
		{"load too low: submits beyond a century", SynthParams{Jobs: 10, Load: 1e-12}, "more than 100 years"},
		{"too many jobs", SynthParams{Jobs: maxSynthJobs + 1}, "at most 10000000"},
		{"too many GPUs", SynthParams{Jobs: 10, Nodes: 100000, GPUsPerNode: 100000}, "GPUs in all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Synth(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Synth(%+v) = %v, want an error containing %q", tc.p, err, tc.want)
			}
		})
	}
}

// TestSynthSigma checks the solved σ reproduces the capped mean.
func TestSynthSigma(t *testing.T) {
	mu := math.Log(200)
	s := synthSigma(mu, 6600, SynthMaxRun.Seconds())
	// Monte Carlo-free check: integrate the capped lognormal numerically.
	const steps = 200000
	c := SynthMaxRun.Seconds()
	sum := 0.0
	for i := range steps {
		q := (float64(i) + 0.5) / steps
		sum += min(math.Exp(mu+s*math.Sqrt2*math.Erfinv(2*q-1)), c) / steps
	}
	if math.Abs(sum-6600) > 66 {
		t.Errorf("σ %.4f gives a capped mean of %.1f s, want 6600", s, sum)
	}
}
