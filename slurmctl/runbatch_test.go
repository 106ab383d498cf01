package slurmctl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunBatch_Outcomes: the one classifier of a scontrol batch run, which
// the site-factor writer, the resize writer and the hand-back share, gives each target
// its outcome from what scontrol said.
func TestRunBatch_Outcomes(t *testing.T) {
	plan := []Change{{JobID: 10, Target: "10"}, {JobID: 12, Target: "12_[2-4]"}, {JobID: 13, Target: "13"}}
	exit := exitError(t)
	tests := []struct {
		name   string
		runner *fakeRunner
		want   []string // "" = applied
	}{
		{"all applied", &fakeRunner{}, []string{"", "", ""}},
		{"one refused", &fakeRunner{err: exit, stderr: []byte("Invalid job id specified for job 12_[2-4]\n")},
			[]string{"", "/s update jobid=12_[2-4]: Invalid job id specified", ""}},
		{"refused by leading id", &fakeRunner{err: exit, stderr: []byte("Job has already finished for job 12_3\n")},
			[]string{"", "/s update jobid=12_[2-4]: Job has already finished", ""}},
		{"line naming no job", &fakeRunner{err: exit, stderr: []byte("Invalid job id specified for job 13\nslurm_update error: Zero Bytes were transmitted\n")},
			[]string{"/s: outcome unknown: slurm_update error: Zero Bytes were transmitted", "/s: outcome unknown: slurm_update error: Zero Bytes were transmitted", "/s update jobid=13: Invalid job id specified"}},
		{"failed exit, no per-job error", &fakeRunner{err: exit},
			[]string{"/s: outcome unknown: exit status 1 with no per-job error", "/s: outcome unknown: exit status 1 with no per-job error", "/s: outcome unknown: exit status 1 with no per-job error"}},
		{"not started", &fakeRunner{err: errors.New("fork/exec /s: no such file or directory")},
			[]string{"/s: outcome unknown: fork/exec /s: no such file or directory", "/s: outcome unknown: fork/exec /s: no such file or directory", "/s: outcome unknown: fork/exec /s: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := runBatch(context.Background(), tt.runner, "/s", time.Minute, []byte("update jobid=10 sitefactor=1\n"), plan)
			got := make([]string, len(errs))
			for i, err := range errs {
				if err != nil {
					got[i] = err.Error()
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("outcomes (-want +got):\n%s", d)
			}
			if want := []string{"/s"}; !cmp.Equal(want, tt.runner.calls) || string(tt.runner.stdin[0]) != "update jobid=10 sitefactor=1\n" {
				t.Errorf("ran %v with stdin %q, want one /s reading the batch", tt.runner.calls, tt.runner.stdin)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range runBatch(ctx, &fakeRunner{}, "/s", time.Minute, nil, plan) {
		if err == nil || err.Error() != "/s: outcome unknown: scontrol stopped: context canceled" {
			t.Errorf("stopped run: %v, want outcome unknown", err)
		}
	}
}
