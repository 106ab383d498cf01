package prolog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/slurmctl"
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
	_, err := Scontrol{Path: filepath.Join(dir, "scontrol"), Slurm: slurmctl.Commands{}}.JobShards(context.Background(), 42)
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
	n, err := Scontrol{Path: filepath.Join(dir, "scontrol"), Slurm: slurmctl.Commands{}}.JobShards(context.Background(), 42)
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

// recordingSlurm is SlurmCommands that records what it was asked to run.
type recordingSlurm struct{ asked []string }

func (r *recordingSlurm) JobShards(_ context.Context, squeue string, _ int64) (int, error) {
	r.asked = append(r.asked, squeue)
	return 2, nil
}

func (r *recordingSlurm) DrainNode(_ context.Context, scontrol, node, _ string) error {
	r.asked = append(r.asked, scontrol+" "+node)
	return nil
}

// TestScontrol_ChecksBeforeSlurmRuns: the root-only check of squeue's path
// is the prolog's and is made before Slurm's commands are asked to run
// anything; a path that passes is handed on as it is, the squeue next to
// scontrol unless Squeue names one. Without SlurmCommands the lookup and
// the drain fail (the prolog then fails closed) rather than run anything.
func TestScontrol_ChecksBeforeSlurmRuns(t *testing.T) {
	open := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	rec := &recordingSlurm{}
	if _, err := (Scontrol{Path: filepath.Join(open, "scontrol"), Slurm: rec}).JobShards(context.Background(), 42); err == nil || !strings.Contains(err.Error(), "squeue not run") {
		t.Errorf("JobShards with a squeue others can replace: %v, want refused", err)
	}
	if _, err := (Scontrol{Path: "scontrol", Slurm: rec}).JobShards(context.Background(), 42); err == nil || !strings.Contains(err.Error(), "want an absolute path") {
		t.Errorf("JobShards with a relative squeue: %v, want refused", err)
	}
	if len(rec.asked) != 0 {
		t.Fatalf("Slurm was asked to run %v", rec.asked)
	}
	dir := t.TempDir() // root's alone under root
	if n, err := (Scontrol{Path: filepath.Join(dir, "scontrol"), Slurm: rec}).JobShards(context.Background(), 42); err != nil || n != 2 {
		t.Errorf("JobShards = %d, %v; want 2", n, err)
	}
	if _, err := (Scontrol{Path: filepath.Join(dir, "scontrol"), Squeue: "/usr/bin/squeue", Slurm: rec}).JobShards(context.Background(), 42); err != nil {
		t.Errorf("JobShards with /usr/bin/squeue: %v", err)
	}
	if err := (Scontrol{Path: "/usr/bin/scontrol", Slurm: rec}).Drain(context.Background(), "", "x"); err == nil || !strings.Contains(err.Error(), "node name unknown") {
		t.Errorf("Drain without a node name: %v", err)
	}
	if err := (Scontrol{Path: "/usr/bin/scontrol", Slurm: rec}).Drain(context.Background(), "gpu1", "x"); err != nil {
		t.Errorf("Drain: %v", err)
	}
	want := []string{filepath.Join(dir, "squeue"), "/usr/bin/squeue", "/usr/bin/scontrol gpu1"}
	if diff := cmp.Diff(want, rec.asked); diff != "" {
		t.Errorf("Slurm asked to run (-want +got):\n%s", diff)
	}
	if _, err := (Scontrol{Path: filepath.Join(dir, "scontrol")}).JobShards(context.Background(), 42); !errors.Is(err, errNoSlurm) {
		t.Errorf("JobShards without SlurmCommands: %v, want errNoSlurm", err)
	}
	if err := (Scontrol{Path: "/usr/bin/scontrol"}).Drain(context.Background(), "gpu1", "x"); !errors.Is(err, errNoSlurm) {
		t.Errorf("Drain without SlurmCommands: %v, want errNoSlurm", err)
	}
}
