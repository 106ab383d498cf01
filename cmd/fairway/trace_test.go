package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/trace"
	"github.com/google/go-cmp/cmp"
)

// TestWriteHeliosCSV_QuotesAndReadsBack: names with a comma or a quote
// are quoted, and the trace reader reads back exactly what
// was written. (A newline inside a field is valid CSV that policy/trace's
// line-based reader does not take yet.)
func TestWriteHeliosCSV_QuotesAndReadsBack(t *testing.T) {
	t0 := time.Date(2020, 4, 1, 8, 0, 0, 0, time.UTC)
	var jobs []policy.Job
	for i, name := range []string{"plain", "train,eval", `say "hi"`, ""} {
		jobs = append(jobs, policy.Job{ID: int64(i + 1), User: "u,1", Partition: "vc1", Name: name, GPUs: 1, CPUs: 4, Nodes: 1,
			State: policy.StateCompleted, Submit: t0, Start: t0.Add(time.Minute), End: t0.Add(time.Hour), TimeLimit: 2 * time.Hour})
	}
	var b bytes.Buffer
	if err := writeHeliosCSV(&b, jobs); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadAll(bytes.NewReader(b.Bytes()), trace.Helios, trace.Options{Name: "synth.csv"})
	if err != nil {
		t.Fatalf("the reader rejects what synth wrote: %v\n%s", err, b.String())
	}
	if len(tr.Jobs) != len(jobs) {
		t.Fatalf("read %d jobs back, want %d", len(tr.Jobs), len(jobs))
	}
	for i, got := range tr.Jobs {
		if d := cmp.Diff([]string{jobs[i].Name, jobs[i].User}, []string{got.Name, got.User}); d != "" {
			t.Errorf("job %d name, user (-want +got):\n%s", i+1, d)
		}
	}
}
