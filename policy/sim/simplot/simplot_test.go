package simplot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy/sim"
)

func TestWrite_OneCurvePerPolicy(t *testing.T) {
	w, err := sim.SynthWorkload("synthetic", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.RunConfig{Policies: []string{"fifo", "fair-qssf"}, Predictor: "none", Parallel: 2, Load: 1}
	runs, err := sim.Compare(context.Background(), w, sim.CompareConfig{Policies: cfg.Policies, Predictor: cfg.Predictor, Parallel: cfg.Parallel})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, sim.NewReport(w, runs, cfg), runs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"jct_cdf.svg", "user_p95_wait.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, "<?xml") || !strings.Contains(s, "<svg") {
			t.Errorf("%s is not an SVG: %.200s", name, s)
		}
		for _, p := range cfg.Policies {
			if !strings.Contains(s, ">"+p+"</text>") {
				t.Errorf("%s has no legend entry for %s", name, p)
			}
		}
	}
}

func TestWrite_MissingDir(t *testing.T) {
	rep := &sim.Report{Trace: "t", Policies: []sim.Metrics{{Name: "fifo"}}}
	runs := []sim.PolicyRun{{JCT: []float64{1, 2, 3}, Users: []sim.UserWait{{P95Wait: 5}}}}
	err := Write(filepath.Join(t.TempDir(), "missing"), rep, runs)
	if err == nil || !strings.Contains(err.Error(), "jct_cdf.svg") {
		t.Errorf("Write into a missing directory: %v, want an error naming jct_cdf.svg", err)
	}
}

func TestQuantileCurve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		wantN int
	}{
		{"fewer jobs than points", 10, 10},
		{"as many as points", Points, Points},
		{"more jobs than points", 77000, Points},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := make([]float64, tc.n)
			for i := range sorted {
				sorted[i] = float64(i) / 10 // the first ten below 1 s
			}
			pts := quantileCurve(sorted)
			if len(pts) != tc.wantN {
				t.Fatalf("%d points, want %d", len(pts), tc.wantN)
			}
			for i, p := range pts {
				if p.X < 1 {
					t.Errorf("point %d at x=%g: below 1 s on a log axis", i, p.X)
				}
				if i > 0 && (p.X < pts[i-1].X || p.Y <= pts[i-1].Y) {
					t.Errorf("point %d (%g, %g) does not follow (%g, %g): a CDF only rises", i, p.X, p.Y, pts[i-1].X, pts[i-1].Y)
				}
			}
			if last := pts[len(pts)-1]; last.Y != 1 || last.X != max(sorted[tc.n-1], 1) {
				t.Errorf("last point (%g, %g), want (%g, 1): the slowest job", last.X, last.Y, max(sorted[tc.n-1], 1))
			}
		})
	}
}
