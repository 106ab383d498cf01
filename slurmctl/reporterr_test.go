package slurmctl

import (
	"errors"
	"strings"
	"testing"
)

func TestReport_Err(t *testing.T) {
	ok := Change{JobID: 12, Target: "12", To: 5}
	for _, tc := range []struct {
		name string
		rep  Report
		want []string // nil: no error
	}{
		{"all taken", Report{Planned: []Change{ok}, Applied: []Change{ok}}, nil},
		{"nothing planned", Report{}, nil},
		{"one refused", Report{Planned: []Change{ok, {JobID: 13, Target: "13_[2-4]"}}, Applied: []Change{ok},
			Failed: []Failure{{Change: Change{JobID: 13, Target: "13_[2-4]"}, Err: errors.New("HTTP 404: Invalid job id specified")}}},
			[]string{"1 of 2 writes failed", "\n  job 13_[2-4]: HTTP 404: Invalid job id specified"}},
		{"read back wrong", Report{Planned: []Change{ok}, Applied: []Change{ok},
			ReadBack: ReadBack{Checked: 1, Mismatches: []Mismatch{{JobID: 12, Why: "priority 7 after writing 5"}}}},
			[]string{"0 of 1 writes failed", "\n  job 12 read back wrong: priority 7 after writing 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rep.Err()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Err() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Err() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
