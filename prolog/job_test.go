package prolog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// envOf turns a map into a getenv func.
func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The environments below are the variables slurmd 22.05 set for the lab's
// Prolog/Epilog (contrib/lab/lab), trimmed to the ones JobFromEnv reads.
func TestJobFromEnv(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		want       Job
		wantUnread []string // the variables named in unread
		wantErr    bool
	}{
		{
			name: "whole GPUs prolog",
			env: map[string]string{"SLURM_JOB_ID": "19", "SLURM_JOB_UID": "1001", "SLURM_JOB_USER": "alice",
				"SLURMD_NODENAME": "gpu2", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"},
			want: Job{ID: 19, UID: 1001, User: "alice", Node: "gpu2", GPUs: []int{0, 1}, Shards: -1, ExitCode: -1},
		},
		{
			name: "shard job epilog looks like one GPU",
			env: map[string]string{"SLURM_JOB_ID": "20", "SLURM_JOB_UID": "1003", "SLURM_JOB_USER": "carol",
				"SLURMD_NODENAME": "gpu2", "SLURM_JOB_GPUS": "2", "CUDA_VISIBLE_DEVICES": "2", "SLURM_JOB_EXIT_CODE": "0"},
			want: Job{ID: 20, UID: 1003, User: "carol", Node: "gpu2", GPUs: []int{2}, Shards: -1, ExitCode: 0},
		},
		{
			name: "shards given, CUDA_VISIBLE_DEVICES only",
			env:  map[string]string{"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "3", "SLURM_SHARDS_ON_NODE": "4", "SLURM_JOB_EXIT_CODE": "256"},
			want: Job{ID: 7, UID: -1, GPUs: []int{3}, Shards: 4, ExitCode: 256},
		},
		{
			name: "no GPUs",
			env:  map[string]string{"SLURM_JOB_ID": "8", "SLURMD_NODENAME": "cpu1"},
			want: Job{ID: 8, UID: -1, Node: "cpu1", Shards: -1, ExitCode: -1},
		},
		{name: "not slurmd", env: map[string]string{}, wantErr: true},
		{name: "bad job id", env: map[string]string{"SLURM_JOB_ID": "x"}, wantErr: true},
		{name: "bad gpu list", env: map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "GPU-abc"}, wantErr: true},
		{name: "device number out of range", env: map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "9223372036854775807"}, wantErr: true},
		{
			// A variable the hooks can do without costs its field only: the
			// GPUs are still checked and the usage record still written.
			name: "unreadable details left unknown",
			env: map[string]string{"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "1", "SLURM_JOB_UID": "alice",
				"SLURM_SHARDS_ON_NODE": "-2", "SLURM_JOB_EXIT_CODE": "0:9"},
			want:       Job{ID: 9, UID: -1, GPUs: []int{1}, Shards: -1, ExitCode: -1},
			wantUnread: []string{"SLURM_JOB_UID", "SLURM_SHARDS_ON_NODE", "SLURM_JOB_EXIT_CODE"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, unread, err := JobFromEnv(envOf(tt.env))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("JobFromEnv (-want +got):\n%s", diff)
			}
			var named []string
			for _, e := range unread {
				named = append(named, strings.SplitN(e.Error(), "=", 2)[0])
			}
			if diff := cmp.Diff(tt.wantUnread, named); diff != "" {
				t.Errorf("unread variables (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDeviceList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "NoDevFiles", want: nil},
		{in: "2", want: []int{2}},
		{in: "3,1,1", want: []int{1, 3}},
		{in: "0-2,6", want: []int{0, 1, 2, 6}},
		{in: "2-1", wantErr: true},
		{in: "a", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "65535", want: []int{65535}},
		// Beyond any device number: refused, and no loop runs to the top
		// of int's range (where d++ would wrap and never end).
		{in: "65536", wantErr: true},
		{in: "9223372036854775807", wantErr: true},
		{in: "9223372036854775806-9223372036854775807", wantErr: true},
		{in: "65000-65536", wantErr: true},
		{in: "0-1023", want: seq(0, 1023)},
		// Every range short, the list longer than any node's: the epilog
		// would spool one record per device, each fsynced, far past its
		// time budget (4,100 devices took 10.5 s on an ext4 disk).
		{in: "0-1000,1001-2001", wantErr: true},
		{in: "0-1024,1025-2049,2050-3074,3075-4099", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDeviceList(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseDeviceList_ErrorNamesEntry: an error quoted the whole list
// and said only what a list should look like ("bad range" for a range
// backwards, beyond any device or too long alike), which in a list of
// many entries left the reader to find the one at fault. It names the
// entry and what is wrong with it.
func TestParseDeviceList_ErrorNamesEntry(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0,1,x,3", `"0,1,x,3": entry "x": "x" is not a device number (0 to 65535); want a list like 0,1 or 0-3`},
		{"0,,1", `"0,,1": entry "": "" is not a device number`},
		{"0, 65536", `"0, 65536": entry "65536": "65536" is not a device number (0 to 65535)`},
		{"0,3-1", `"0,3-1": entry "3-1": 3 to 1 runs backwards`},
		{"65000-65536", `entry "65000-65536": end "65536" is not a device number`},
		{"-1", `"-1": entry "-1": start "" is not a device number`},
		{"GPU-abc", `"GPU-abc": entry "GPU-abc": start "GPU" is not a device number`},
		{"0-1,2-2049", `"0-1,2-2049": entry "2-2049": 2048 devices, more than any node has (1024)`},
		{"0-1000,1001-2001", `"0-1000,1001-2001": more than 1024 devices`},
	} {
		_, err := ParseDeviceList(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDeviceList(%q): err %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// seq is lo, lo+1, ..., hi.
func seq(lo, hi int) []int {
	var out []int
	for d := lo; d <= hi; d++ {
		out = append(out, d)
	}
	return out
}
