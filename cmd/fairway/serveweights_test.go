package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/slurmctl"
)

// configRunner answers `scontrol show config` with out, or fails with err.
type configRunner struct {
	out []byte
	err error
}

func (r configRunner) Run(context.Context, []byte, string, ...string) ([]byte, []byte, error) {
	return r.out, nil, r.err
}

// TestCheckSlurmWeights: serve warns at start when Slurm's own priority
// terms can reorder the site factors it writes, on real captured configs.
func TestCheckSlurmWeights(t *testing.T) {
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lab := read(labConfig) // age 1000, fair share 10000, partition 2000
	noNormal := read("../../slurmctl/testdata/tres-26.05.3-no-normal/scontrol-show-config.txt")
	basic := []byte(strings.Replace(string(lab), "priority/multifactor", "priority/basic", 1))
	for _, tc := range []struct {
		name string
		r    configRunner
		gap  int64
		want string // "" for no warning or note
	}{
		{"weights above the gap", configRunner{out: lab}, 1, `level=WARN msg="Slurm's own priority terms can reorder Fairway's ranking: set them to 0, or --gap above their sum (INSTALL.md, Slurm priority settings)" sum=13000 gap=1 weights="PriorityWeightAge=1000 PriorityWeightFairshare=10000 PriorityWeightPartition=2000"`},
		{"gap equal to the weights", configRunner{out: lab}, 13000, "level=WARN"},
		{"gap above the weights", configRunner{out: lab}, 13001, ""},
		{"NO_NORMAL_TRES", configRunner{out: noNormal}, 1 << 30, `level=WARN msg="Slurm's own priority terms can reorder Fairway's ranking by any amount`},
		{"priority/basic", configRunner{out: basic}, 1, `level=WARN msg="Slurm ignores the site factors Fairway writes: PriorityType is not priority/multifactor (INSTALL.md, Slurm priority settings)" priority_type=priority/basic`},
		{"no scontrol", configRunner{err: errors.New(`exec: "scontrol": executable file not found in $PATH`)}, 1, `level=INFO msg="cannot read Slurm's priority weights`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			checkSlurmWeights(context.Background(), slurmctl.Commands{Runner: tc.r}, tc.gap, slog.New(slog.NewTextHandler(&logs, nil)))
			got := logs.String()
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("logged:\n%s\nwant: %q", got, tc.want)
			}
		})
	}
}
