package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCompare_ParallelSameAsSerial: simulating policies side by side gives
// each the metrics it gets alone, in the order asked; an unknown policy
// fails the comparison and names itself.
func TestCompare_ParallelSameAsSerial(t *testing.T) {
	w, err := SynthWorkload("compare test", 7, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	w = w.FirstJobs(300)
	cfg := CompareConfig{Policies: []string{"fifo", "fair-qssf", "qssf"}, Predictor: "alea", Backfill: EASY, Parallel: 1}
	serial, err := Compare(context.Background(), w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel = 3
	parallel, err := Compare(context.Background(), w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range cfg.Policies {
		if serial[i].Metrics.Name != name || serial[i].Metrics.Jobs == 0 {
			t.Errorf("run %d: %s with %d jobs, want %s with some", i, serial[i].Metrics.Name, serial[i].Metrics.Jobs, name)
		}
	}
	if d := cmp.Diff(serial, parallel); d != "" {
		t.Errorf("parallel runs differ from serial ones (-serial +parallel):\n%s", d)
	}
	cfg.Policies = []string{"fifo", "no-such-policy"}
	if _, err := Compare(context.Background(), w, cfg); err == nil || !strings.Contains(err.Error(), "no-such-policy") {
		t.Errorf("unknown policy: err = %v", err)
	}
}
