package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// TestReadLayout_File reads --partitions from a file as from the flag, a
// file a Windows editor saved with a byte order mark included.
func TestReadLayout_File(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"plain": "gpu:nodes=2,per-node=8\ncpu:nodes=4,per-node=32\n",
		"bom":   "\ufeffgpu:nodes=2,per-node=8\ncpu:nodes=4,per-node=32\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := readLayout(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		fromFlag, err := readLayout("gpu:nodes=2,per-node=8;cpu:nodes=4,per-node=32")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fromFile.String(), fromFlag.String(); got != want {
			t.Errorf("%s: read %q, want %q", name, got, want)
		}
	}
}

// TestReadLayout_Errors: an error names the file and the line of the bad
// entry (comment and blank lines counted), and a directory is not taken
// for a missing file.
func TestReadLayout_Errors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "parts")
	if err := os.WriteFile(path, []byte("# gpus\na:nodes=2,per-node=4\n\nb:nodes=x,per-node=4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ spec, want string }{
		{path, "--partitions " + path + `: line 4: partition entry "b:nodes=x,per-node=4": nodes=x: want a whole number`},
		{dir, "not a regular file"},
		{"a:nodes=2,per-node=4;b:nodes=0,per-node=1", `--partitions: partition entry 2 "b:nodes=0,per-node=1": nodes=0`},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		if _, err := readLayout(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readLayout(%q) = %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestNotePartitions(t *testing.T) {
	jobs := func(parts ...string) []policy.Job {
		js := make([]policy.Job, len(parts))
		for i, p := range parts {
			js[i].Partition = p
		}
		return js
	}
	pool := sim.Cluster{Nodes: 4, PerNode: 8, Unit: sim.GPUs}
	layout, err := sim.ParseLayout("a:nodes=2,per-node=8;b:nodes=2,per-node=8")
	if err != nil {
		t.Fatal(err)
	}
	laidOut := pool.WithLayout(layout)
	for _, tc := range []struct {
		name    string
		jobs    []policy.Job
		cluster sim.Cluster
		want    string
	}{
		{"two partitions on one pool", jobs("b", "a", "", "b"), pool,
			"note: the jobs name 2 partitions (a, b); without --partitions they replay on one pool of 4 × 8 gpus\n"},
		{"more than six are counted", jobs("p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"), pool,
			"note: the jobs name 8 partitions (p1, p2, p3, p4, p5, p6 and 2 more); without --partitions they replay on one pool of 4 × 8 gpus\n"},
		{"one partition says nothing", jobs("a", "a", ""), pool, ""},
		{"no partitions say nothing", jobs("", ""), pool, ""},
		{"a layout routes them", jobs("a", "b"), laidOut, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			notePartitions(&b, &sim.Workload{Jobs: tc.jobs, Cluster: tc.cluster})
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// TestNoteFlatTrace: a trace of one user (or none) or without time limits
// says what that leaves the comparison (a Lublin model trace showed Jain
// 1.000 and sjf-limit's rows equal to fifo's without a word); a trace with
// both says nothing.
func TestNoteFlatTrace(t *testing.T) {
	const oneUser = "note: every job has the same user (or none): the fairness figures (Jain, the spread of waits between users) have nothing to compare\n"
	const noLimit = "note: no job has a time limit: the policies that rank by it (sjf-limit, f1, wfp3, unicep) see the same 7 days for every job\n"
	job := func(user string, limit time.Duration) policy.Job { return policy.Job{User: user, TimeLimit: limit} }
	for _, tc := range []struct {
		name string
		jobs []policy.Job
		want string
	}{
		{"users and limits", []policy.Job{job("a", time.Hour), job("b", 0)}, ""},
		{"one user", []policy.Job{job("a", time.Hour), job("a", time.Hour)}, oneUser},
		{"no users", []policy.Job{job("", time.Hour), job("", 0)}, oneUser},
		{"no limits", []policy.Job{job("a", 0), job("b", 0)}, noLimit},
		{"neither", []policy.Job{job("", 0), job("", 0)}, oneUser + noLimit},
		{"no jobs", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			noteFlatTrace(&b, &sim.Workload{Jobs: tc.jobs})
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
