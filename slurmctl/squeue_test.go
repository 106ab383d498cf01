package slurmctl

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJobShardsText reads squeue output captured on the 22.05 lab
// (testdata/squeue-22.05.8/README.md): job 5's comment imitates the
// format's own fields and is not in the output; `--jobs=7` of an array's
// first task lists all three tasks.
func TestJobShardsText(t *testing.T) {
	tests := []struct {
		file string
		job  int64
		want int
	}{
		{"testdata/squeue-22.05.8/squeue-O.txt", 5, 3},
		{"testdata/squeue-22.05.8/squeue-O.txt", 6, 0},
		{"testdata/squeue-22.05.8/squeue-O.txt", 8, 2},
		{"testdata/squeue-22.05.8/squeue-O.array-base.txt", 7, 2},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := jobShardsText(b, tt.job); err != nil || got != tt.want {
			t.Errorf("%s job %d: %d, %v; want %d", tt.file, tt.job, got, err, tt.want)
		}
	}
	for _, bad := range []struct{ out, want string }{
		{"", "job 5 not listed"},
		{"6|N/A|cpu=1|1|\n", "job 5 not listed"},
		{"5|gres:shard:3|cpu=1|1\n", "want 4 fields"},
		{"5|gres:shard:3|cpu=1|1|x|\n", "want 4 fields"},
		{"5 |gres:shard:3|cpu=1|1|\n", "not a number"},
		{"5|N/A|cpu=1|-1|\n", "not a count"},
		{"5|gres:shard:x|cpu=1|1|\n", "bad shard count"},
	} {
		if _, err := jobShardsText([]byte(bad.out), 5); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("jobShardsText(%q): %v, want an error with %q", bad.out, err, bad.want)
		}
	}
}

// TestJobShards covers the request forms no capture has.
func TestJobShards(t *testing.T) {
	tests := []struct {
		j       squeueJob
		want    int
		wantErr bool
	}{
		{squeueJob{TresPerNode: "gres:shard:h100:5"}, 5, false},
		{squeueJob{TresPerNode: "gres:gpu:1,gres:shard:2"}, 2, false},
		{squeueJob{TresAlloc: "cpu=2,gres/shard=8", NodeCount: 2}, 4, false},
		{squeueJob{TresAlloc: "cpu=2,gres/shard:h100=6"}, 6, false},
		{squeueJob{TresPerNode: "gres:shard:x"}, 0, true},
	}
	for _, tt := range tests {
		got, err := jobShards(tt.j)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("jobShards(%+v) = %d, %v; want %d, err %v", tt.j, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestCommands_JobShardsNarrowQuery: the shard lookup asks squeue at the
// caller's path for the one job and four Slurm-written fields (Slurm
// 22.05's `squeue --json` ignores --jobs and printed the whole queue,
// comments included, to every prolog on a shard node), and reads the
// answer; a failure names the command and carries squeue's stderr.
func TestCommands_JobShardsNarrowQuery(t *testing.T) {
	b, err := os.ReadFile("testdata/squeue-22.05.8/squeue-O.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{stdout: b}
	n, err := Commands{Runner: r}.JobShards(context.Background(), "/opt/slurm/bin/squeue", 5)
	if err != nil || n != 3 {
		t.Errorf("JobShards = %d, %v; want 3", n, err)
	}
	want := []string{"/opt/slurm/bin/squeue --noheader --states=all --jobs=5 --Format=JobID:|,tres-per-node:|,tres-alloc:|,NumNodes:|"}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("squeue command (-want +got):\n%s", diff)
	}
	if r.stdin[0] != nil {
		t.Errorf("squeue got stdin %q, want none", r.stdin[0])
	}
	r = &fakeRunner{stderr: []byte("squeue: error: slurm_load_jobs error: Unable to contact slurm controller\n"), err: errors.New("exit status 1")}
	_, err = Commands{Runner: r}.JobShards(context.Background(), "/opt/slurm/bin/squeue", 5)
	if wantErr := "squeue --noheader --states=all --jobs=5 --Format=JobID:|,tres-per-node:|,tres-alloc:|,NumNodes:|: exit status 1: squeue: error: slurm_load_jobs error: Unable to contact slurm controller"; err == nil || err.Error() != wantErr {
		t.Errorf("JobShards error = %v, want %q", err, wantErr)
	}
}

// TestCommands_DrainNode: the drain is one scontrol update naming the
// node and the reason as one argument each (no shell: a reason with
// spaces stays one word).
func TestCommands_DrainNode(t *testing.T) {
	r := &fakeRunner{}
	if err := (Commands{Runner: r}).DrainNode(context.Background(), "/usr/bin/scontrol", "gpu1", "fairway: GPU 3 XID 79"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/scontrol update nodename=gpu1 state=drain reason=fairway: GPU 3 XID 79"}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("scontrol command (-want +got):\n%s", diff)
	}
	r = &fakeRunner{stderr: []byte("Invalid node name specified\n"), err: errors.New("exit status 1")}
	err := Commands{Runner: r}.DrainNode(context.Background(), "/usr/bin/scontrol", "gpu9", "x")
	if wantErr := "scontrol update nodename=gpu9 state=drain reason=x: exit status 1: Invalid node name specified"; err == nil || err.Error() != wantErr {
		t.Errorf("DrainNode error = %v, want %q", err, wantErr)
	}
}
