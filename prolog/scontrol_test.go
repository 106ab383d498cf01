package prolog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// script writes an executable shell script at path.
func script(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestScontrol_SqueueMustBeRootOnly: the squeue next to scontrol runs as
// root, so it must pass the same check as scontrol. One in a directory
// anyone can write is refused unrun (the old code ran it).
func TestScontrol_SqueueMustBeRootOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	script(t, filepath.Join(dir, "squeue"), "touch "+ran+"\necho '42|gres:shard:3|cpu=1|1|'\n")
	_, err := Scontrol{Path: filepath.Join(dir, "scontrol")}.JobShards(context.Background(), 42)
	if _, statErr := os.Stat(ran); statErr == nil {
		t.Fatal("the prolog ran a squeue from a directory others can write")
	}
	if err == nil || !strings.Contains(err.Error(), "group or others can write it") {
		t.Errorf("JobShards: %v, want an error naming the writable directory", err)
	}
}

// TestScontrol_JobShardsNarrowQuery: the shard lookup asks squeue for the
// one job and four Slurm-written fields. Slurm 22.05's `squeue --json`
// ignores --jobs and printed the whole queue (comments included) to every
// prolog on a shard node.
func TestScontrol_JobShardsNarrowQuery(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: squeue must be in a root-only directory")
	}
	dir := t.TempDir()
	args := filepath.Join(t.TempDir(), "args")
	script(t, filepath.Join(dir, "squeue"), `printf '%s\n' "$@" > `+args+"\necho '42|gres:shard:3|cpu=1,mem=1000M,node=1,billing=1,gres/shard=3|1|'\n")
	n, err := Scontrol{Path: filepath.Join(dir, "scontrol")}.JobShards(context.Background(), 42)
	if err != nil || n != 3 {
		t.Errorf("JobShards = %d, %v; want 3", n, err)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--noheader", "--states=all", "--jobs=42", "--Format=JobID:|,tres-per-node:|,tres-alloc:|,NumNodes:|"}
	if diff := cmp.Diff(want, strings.Fields(string(b))); diff != "" {
		t.Errorf("squeue arguments (-want +got):\n%s", diff)
	}
}
