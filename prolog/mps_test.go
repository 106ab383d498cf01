package prolog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMPSControl_Environment: the control daemon, started by one job's
// prolog, serves the GPU's later jobs of other users; it gets its GPU and
// directories, keeps the node's own variables (PATH), and none of the
// starting job's Slurm, SPANK or CUDA settings. Stop reaches the same pipe.
func TestMPSControl_Environment(t *testing.T) {
	dir := t.TempDir()
	// A stand-in for nvidia-cuda-mps-control: it writes its arguments,
	// environment and standard input where the test reads them.
	bin := filepath.Join(dir, "mps-control")
	script := "#!/bin/sh\nout=\"$(dirname \"$0\")/run.$1\"\necho \"args=$*\" > \"$out\"\nenv >> \"$out\"\n[ \"$1\" = -d ] || cat >> \"$out\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_JOB_ID", "41")
	t.Setenv("SLURMD_NODENAME", "gpu1")
	t.Setenv("SPANK_X", "y")
	t.Setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "10")
	t.Setenv("CUDA_VISIBLE_DEVICES", "3")
	m := MPSControl{Binary: bin, Dir: filepath.Join(dir, "mps")}
	gpu := DeviceInfo{Minor: 3, UUID: "GPU-abc"}
	if err := m.Start(t.Context(), gpu); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(t.Context(), gpu); err != nil {
		t.Fatal(err)
	}
	pipe := MPSPipeDir(m.Dir, 3)
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"run.-d", []string{"args=-d", "CUDA_VISIBLE_DEVICES=GPU-abc", "CUDA_MPS_PIPE_DIRECTORY=" + pipe,
			"CUDA_MPS_LOG_DIRECTORY=" + filepath.Join(m.Dir, "3", "log"), "PATH=" + os.Getenv("PATH")}},
		{"run.", []string{"args=", "CUDA_MPS_PIPE_DIRECTORY=" + pipe, "PATH=" + os.Getenv("PATH"), "quit"}},
	} {
		b, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, w := range tc.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: no line %q in:\n%s", tc.file, w, b)
			}
		}
		for _, l := range lines {
			name, _, _ := strings.Cut(l, "=")
			if strings.HasPrefix(name, "SLURM") || strings.HasPrefix(name, "SPANK_") ||
				name == "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" || l == "CUDA_VISIBLE_DEVICES=3" {
				t.Errorf("%s: the daemon inherited the starting job's %q", tc.file, l)
			}
		}
	}
}
