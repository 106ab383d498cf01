package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/atomicfile/fsizetest"
	"github.com/fairway-hpc/fairway/policy/power"
)

// TestOutputs_FailedWriteKeepsOld: each command that writes a file named
// on its command line, with the write failing part-way (a 1 KiB file size
// limit, as `ulimit -f` sets and as a full disk fails), leaves the old file
// byte for byte and no temporary file, and its error names the file once.
func TestOutputs_FailedWriteKeepsOld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		prefix string // the error before "write PATH: file too large"
		trace  bool   // run gets a synthetic trace, written before the limit is set
		run    func(t *testing.T, path, trace string) error
	}{
		{"trace synth --out", "s.csv.gz", "--out: ", false, func(t *testing.T, path, _ string) error {
			_, err := runApp(t, "trace", "synth", "--jobs", "300", "--out", path)
			return err
		}},
		{"simulate --power-sequence", "seq.csv", "--power-sequence: ", false, func(t *testing.T, path, _ string) error {
			t0 := time.Date(1997, 5, 13, 0, 0, 0, 0, time.UTC)
			var samples []power.Sample
			for i := range 100 {
				samples = append(samples, power.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Active: i, Total: 338})
			}
			return writeNodeSequence(path, samples)
		}},
		{"tune --out", "tuned.json", "--out: ", true, func(t *testing.T, path, trace string) error {
			_, err := runApp(t, "tune", "--trace", trace, "--format", "helios", "--nodes", "8", "--out", path, "--predictor", "none",
				"--generations", "1", "--parallel", "2", "--seed", "3", "--progress", "never")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			old := []byte("the old " + tc.file + ", which a failed write must not destroy\n")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			var trace string
			if tc.trace {
				trace = synthTrace(t)
			}
			err := fsizetest.Run(t, 1024, func() error { return tc.run(t, path, trace) })
			if want := tc.prefix + "write " + path + ": file too large"; err == nil || err.Error() != want {
				t.Errorf("error %v, want %q", err, want)
			}
			fsizetest.CheckKept(t, path, old)
		})
	}
}
