package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/google/go-cmp/cmp"
)

func TestSimulateProtocol_BadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"split of 1.5", []string{"--split", "1.5"}, "--split 1.5: want a fraction in (0, 1)"},
		{"both protocols", []string{"--split", "0.7", "--sequences", "3"}, "choose one protocol"},
		{"length without sequences", []string{"--split", "0.7", "--length", "5"}, "--length: only with --sequences"},
		{"no sequences", []string{"--sequences", "0"}, "--sequences 0: want >= 1"},
		{"reversed window", []string{"--sequences", "2", "--window-from", "0.8", "--window-to", "0.2"}, "want 0 <= from < to <= 1"},
		{"unknown predictions", []string{"--split", "0.7", "--predictions", "later"}, `--predictions "later"`},
		{"with power", []string{"--split", "0.7", "--power"}, "--power: not with --split or --sequences"},
		{"window too short", []string{"--sequences", "2", "--length", "700", "--window-from", "0.7", "--predictor", "none"}, "a sequence needs 700"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runApp(t, append([]string{"simulate", "--progress", "never"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, out)
			}
		})
	}
}

// TestSimulate_FlagOfAnotherMode: a flag that only one mode reads is
// refused in the others, naming the modes that read it, instead of being
// left out of the replay without a word.
func TestSimulate_FlagOfAnotherMode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-jobs", "500"}, "--max-jobs: only with --suite, --split or --sequences"},
		{[]string{"--loads", "1,2"}, "--loads: only with --suite"},
		{[]string{"--split", "0.7", "--markdown"}, "--markdown: only with --suite"},
		{[]string{"--seed", "3"}, "--seed: only with --sequences"},
		{[]string{"--cold"}, "--cold: only with --split or --sequences"},
		{[]string{"--resume-time", "1m"}, "--resume-time: only with --power"},
		{[]string{"--forecast", "--nowcast", "gain=1"}, "--nowcast: only with --power"},
		{[]string{"--forecast-oracle"}, "--forecast-oracle: only with --forecast"},
		{[]string{"--suite", "--trace", "x.swf"}, "--trace: not with --suite"},
		{[]string{"--suite", "--json"}, "--json: not with --suite"},
		{[]string{"--suite", "--split", "0.7"}, "--split: not with --suite"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runApp(t, append([]string{"simulate", "--progress", "never"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, out)
			}
		})
	}
}

// TestSimulateProtocol_Split replays the bundled workload's last 30% and
// checks the table adds fairshare, the reference, and judges every row.
func TestSimulateProtocol_Split(t *testing.T) {
	out, err := runApp(t, "simulate", "--split", "0.7", "--policies", "fifo,qssf", "--predictor", "none", "--json", "--progress", "never")
	if err != nil {
		t.Fatal(err)
	}
	var tab sim.ProtocolTable
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Name)
		if r.Meets == nil {
			t.Errorf("%s: constraints not judged", r.Name)
		}
		if r.Jobs != 600 {
			t.Errorf("%s: %d jobs evaluated, want the last 600 of 2000", r.Name, r.Jobs)
		}
	}
	if diff := cmp.Diff([]string{"fifo", "qssf", "fairshare"}, names); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
	if tab.Window != [2]int{1400, 2000} || tab.History == 0 || tab.SplitAt.IsZero() {
		t.Errorf("window %v, history %d, split at %v: want [1400, 2000), some history and an instant", tab.Window, tab.History, tab.SplitAt)
	}
}

// TestSimulateProtocol_Sequences checks that the same seed draws the same
// sequences, within the window asked for, and another seed others.
func TestSimulateProtocol_Sequences(t *testing.T) {
	run := func(seed string) sim.ProtocolTable {
		t.Helper()
		out, err := runApp(t, "simulate", "--sequences", "3", "--length", "100", "--seed", seed, "--window-from", "0.7",
			"--policies", "fifo,sjf-oracle", "--predictor", "none", "--json", "--progress", "never")
		if err != nil {
			t.Fatal(err)
		}
		var tab sim.ProtocolTable
		if err := json.Unmarshal([]byte(out), &tab); err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		return tab
	}
	a, b, c := run("5"), run("5"), run("6")
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("seed 5 twice (-first +second):\n%s", diff)
	}
	if slices.Equal(a.Starts, c.Starts) {
		t.Errorf("seeds 5 and 6 drew the same starts %v", a.Starts)
	}
	for _, s := range append(a.Starts, c.Starts...) {
		if s < 1400 || s+100 > 2000 {
			t.Errorf("sequence [%d, %d) outside the last 30%% [1400, 2000)", s, s+100)
		}
	}
	for _, r := range a.Rows {
		if len(r.Sequences) != 3 || r.Meets != nil {
			t.Errorf("%s: %d sequences, meets %v; want 3 and no constraints", r.Name, len(r.Sequences), r.Meets)
		}
	}
}

// TestSimulateProtocol_LeftOut: --split and --sequences say which jobs of
// the trace no replay runs (records the reader left out, jobs larger than
// the cluster), as the plain simulate table and tune do.
func TestSimulateProtocol_LeftOut(t *testing.T) {
	var swf strings.Builder
	swf.WriteString("; MaxProcs: 8\n")
	for i := range 40 {
		procs, run, limit := 1+i%4, 100+i, 600
		switch i {
		case 7:
			procs = 16 // larger than the machine
		case 11, 12:
			run = -1 // unknown run time
		case 30:
			run, limit = 8*86400, -1 // no limit, longer than the replay lets it run
		}
		fmt.Fprintf(&swf, "%d %d 0 %d %d -1 -1 %d %d -1 1 %d 1 -1 -1 -1 -1 -1\n", i+1, 60*i, run, procs, procs, limit, 1+i%3)
	}
	path := filepath.Join(t.TempDir(), "t.swf")
	if err := os.WriteFile(path, []byte(swf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "left out: 1 larger than the cluster; 2 records with unknown run time\n" +
		"warning: 1 jobs without a time limit ran longer than 7 days; the replay cuts them there (as timeouts), where Slurm let them run\n"
	for _, args := range [][]string{{"--split", "0.5"}, {"--sequences", "2", "--length", "10"}} {
		t.Run(args[0], func(t *testing.T) {
			out, err := runApp(t, append([]string{"simulate", "--trace", path, "--format", "swf", "--policies", "fifo",
				"--predictor", "none", "--progress", "never"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
			out, err = runApp(t, append([]string{"simulate", "--trace", path, "--format", "swf", "--policies", "fifo",
				"--predictor", "none", "--progress", "never", "--json"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			var tab struct {
				LeftOut map[string]int `json:"left_out"`
				Cut     int            `json:"cut_at_default_limit"`
			}
			if err := json.Unmarshal([]byte(out), &tab); err != nil {
				t.Fatalf("%v in:\n%s", err, out)
			}
			wantLeft := map[string]int{sim.SkipTooLarge: 1, trace.LeftUnknownRun: 2}
			if diff := cmp.Diff(wantLeft, tab.LeftOut); diff != "" {
				t.Errorf("left_out (-want +got):\n%s", diff)
			}
			if tab.Cut != 1 {
				t.Errorf("cut_at_default_limit %d, want 1", tab.Cut)
			}
		})
	}
}
