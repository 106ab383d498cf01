package prolog

import (
	"os"
	"strings"
	"testing"
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
