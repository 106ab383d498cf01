package trace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/google/go-cmp/cmp"
)

// TestWriteHelios_QuotesAndReadsBack: names with a comma or a quote
// are quoted, and the trace reader reads back exactly what
// was written. (A newline inside a field is valid CSV that the line-based
// reader does not take.)
func TestWriteHelios_QuotesAndReadsBack(t *testing.T) {
	t0 := time.Date(2020, 4, 1, 8, 0, 0, 0, time.UTC)
	var jobs []policy.Job
	for i, name := range []string{"plain", "train,eval", `say "hi"`, ""} {
		jobs = append(jobs, policy.Job{ID: int64(i + 1), User: "u,1", Partition: "vc1", Name: name, GPUs: 1, CPUs: 4, Nodes: 1,
			State: policy.StateCompleted, Submit: t0, Start: t0.Add(time.Minute), End: t0.Add(time.Hour), TimeLimit: 2 * time.Hour})
	}
	var b bytes.Buffer
	if err := trace.WriteHelios(&b, jobs); err != nil {
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

// TestWriteHeliosFile_GzipReadsBack: a .gz path is compressed and the
// reader (which detects gzip) reads every job back with its time limit; a
// path in a missing directory fails naming it.
func TestWriteHeliosFile_GzipReadsBack(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 50, Users: 5, Nodes: 2, GPUsPerNode: 8, Load: 0.9, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"synth.csv", "synth.csv.gz"} {
		path := filepath.Join(dir, name)
		if err := trace.WriteHeliosFile(path, jobs); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if gz := len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b; gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: gzip %v", name, gz)
		}
		tr, err := trace.ReadAll(bytes.NewReader(b), trace.Helios, trace.Options{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(tr.Jobs) != len(jobs) {
			t.Fatalf("%s: read %d jobs back, want %d", name, len(tr.Jobs), len(jobs))
		}
		for i, got := range tr.Jobs {
			if got.ID != jobs[i].ID || got.TimeLimit != jobs[i].TimeLimit || got.GPUs != jobs[i].GPUs || !got.Submit.Equal(jobs[i].Submit) {
				t.Errorf("%s job %d: read %+v, wrote %+v", name, i, got, jobs[i])
				break
			}
		}
	}
	bad := filepath.Join(dir, "missing", "synth.csv")
	if err := trace.WriteHeliosFile(bad, jobs); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteHeliosFile(%s): %v, want an error naming the path", bad, err)
	}
}
