package nvmltest

import (
	"slices"
	"strings"
	"testing"
)

func running(g *GPU) []uint32 {
	ps, _ := g.GetComputeRunningProcesses()
	var pids []uint32
	for _, p := range ps {
		pids = append(pids, p.Pid)
	}
	slices.Sort(pids)
	return pids
}

func TestRunSpec(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want map[int][]uint32 // minor → running PIDs; minors not named run none
		err  string
	}{
		{spec: "", want: nil},
		{spec: "2:4711", want: map[int][]uint32{2: {4711}}},
		{spec: " 2:4711,4712 ; 0:99 ", want: map[int][]uint32{2: {4711, 4712}, 0: {99}}},
		{spec: "*:4800;3:5", want: map[int][]uint32{0: {4800}, 1: {4800}, 2: {4800}, 3: {5, 4800}}},
		{spec: "2", err: `"2": want MINOR:PID`},
		{spec: "x:5", err: `GPU "x" is neither`},
		{spec: "4:5", err: "no GPU with minor 4"},
		{spec: "1:5;2:1", err: `PID "1" is not a number above 1`},
		{spec: "1:5,", err: `PID "" is not`},
		{spec: "1:-5", err: `PID "-5"`},
		{spec: "1:99999999999", err: `PID "99999999999"`},
	} {
		m := New(4)
		err := m.RunSpec(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("RunSpec(%q) error %v, want one containing %q", tt.spec, err, tt.err)
			}
		} else if err != nil {
			t.Errorf("RunSpec(%q): %v", tt.spec, err)
		}
		for minor := range 4 {
			want := tt.want[minor]
			if tt.err != "" {
				want = nil // a bad spec puts nothing anywhere
			}
			if got := running(m.ByMinor(minor)); !slices.Equal(got, want) {
				t.Errorf("RunSpec(%q): GPU %d runs %v, want %v", tt.spec, minor, got, want)
			}
		}
	}
}
