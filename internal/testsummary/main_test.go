package main

import (
	"strings"
	"testing"
)

// run is a test2json stream: one line per event, fields as test2json
// writes them.
func run(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestSummarize(t *testing.T) {
	const pkg = `"Package":"github.com/fairway-hpc/fairway/cmd/fairway"`
	cases := []struct {
		name       string
		in         string
		wantFailed bool
		want       []string // lines the output must hold
		notWant    []string
	}{
		{
			name: "slowest tests, longest first, subtests and short tests left out",
			in: run(
				`{"Action":"run",`+pkg+`,"Test":"TestLab_A"}`,
				`{"Action":"pass",`+pkg+`,"Test":"TestLab_A/sub","Elapsed":90}`,
				`{"Action":"pass",`+pkg+`,"Test":"TestLab_A","Elapsed":95.2}`,
				`{"Action":"pass",`+pkg+`,"Test":"TestLab_B","Elapsed":120.4}`,
				`{"Action":"pass",`+pkg+`,"Test":"TestQuick","Elapsed":0.3}`,
				`{"Action":"pass",`+pkg+`,"Elapsed":216}`,
			),
			want:    []string{"ok  \tgithub.com/fairway-hpc/fairway/cmd/fairway\t216.0s", "no test skipped", "slowest tests: TestLab_B (fairway) 120s, TestLab_A (fairway) 95s"},
			notWant: []string{"TestQuick", "sub"},
		},
		{
			name: "a failed test is timed and its output shown",
			in: run(
				`{"Action":"output",`+pkg+`,"Test":"TestLab_Power","Output":"power_lab_test.go:1: gpu2 not idle\n"}`,
				`{"Action":"fail",`+pkg+`,"Test":"TestLab_Power","Elapsed":102.6}`,
				`{"Action":"fail",`+pkg+`,"Elapsed":831.5}`,
			),
			wantFailed: true,
			want:       []string{"gpu2 not idle", "FAIL\tgithub.com/fairway-hpc/fairway/cmd/fairway\t831.5s", "slowest tests: TestLab_Power (fairway) 103s"},
		},
		{
			name:    "no test over the threshold: no slowest line",
			in:      run(`{"Action":"pass",` + pkg + `,"Test":"TestQuick","Elapsed":9.9}`),
			notWant: []string{"slowest tests"},
		},
		{
			name: "skips counted by reason",
			in: run(
				`{"Action":"output",`+pkg+`,"Test":"TestX","Output":"x_test.go:9: version has no settings\n"}`,
				`{"Action":"skip",`+pkg+`,"Test":"TestX","Elapsed":0}`,
			),
			want: []string{"1 tests skipped: 1: version has no settings"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			failed, err := summarize(strings.NewReader(c.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			if failed != c.wantFailed {
				t.Errorf("failed = %v, want %v", failed, c.wantFailed)
			}
			got := out.String()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
		})
	}
}
