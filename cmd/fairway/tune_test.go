package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/policy/sim"
)

// synthTrace writes a small synthetic Helios trace (8 × 8 GPUs) and
// returns its path.
func synthTrace(t *testing.T) string {
	t.Helper()
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 1500, Seed: 2, Load: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "synth.csv")
	if err := trace.WriteHeliosFile(path, jobs); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTune_BadFlags(t *testing.T) {
	path := synthTrace(t)
	out := filepath.Join(t.TempDir(), "p.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"--out", ""}, "--out: required"},
		{"unknown objective", []string{"--objective", "speed"}, `--objective "speed": want fair, bsld or wait`},
		{"train above 1", []string{"--train", "1.5"}, "--train 1.5: want a fraction in (0, 1]"},
		{"no validation", []string{"--validate", "0"}, "--validate 0: want a fraction in (0, 1)"},
		{"sequences without bsld", []string{"--sequences", "3"}, "--sequences, --length: only with --objective bsld"},
		{"negative generations", []string{"--generations", "-1"}, "--generations -1: want >= 0"},
		{"population of one", []string{"--population", "1"}, "--population 1: want 0 (the larger of 9 and --parallel) or at least 2"},
		{"no nodes for Helios", []string{"--nodes", "0"}, "--nodes: required for Helios traces"},
		{"unknown predictor", []string{"--predictor", "crystal-ball"}, `unknown predictor "crystal-ball"`},
		{"loads without 1", []string{"--loads", "1.5"}, "--loads 1.5: loads [1.5]: want 1 (the windows as recorded) among them (or auto, the default)"},
		{"zero load", []string{"--loads", "1,0"}, "--loads 1,0: load 0: want a factor > 0 and at most 1000"},
		{"infinite load", []string{"--loads", "1,Inf"}, "--loads 1,Inf: load +Inf: want a factor > 0 and at most 1000"},
		{"load not a number", []string{"--loads", "1,heavy"}, `--loads 1,heavy: load "heavy": want a number like 1.5 (or auto, the default)`},
		{"loads with bsld", []string{"--loads", "1,1.5", "--objective", "bsld"}, "--loads 1,1.5: only with --objective fair or wait"},
		{"value loads without 1", []string{"--value-loads", "1.5"}, "--value-loads 1.5: loads [1.5]: want 1 (the windows as recorded) among them"},
		{"zero value load", []string{"--value-loads", "1,0"}, "--value-loads 1,0: load 0: want a factor > 0 and at most 1000"},
		{"value load twice", []string{"--value-loads", "1,1.5,1.5"}, "--value-loads 1,1.5,1.5: load 1.5: given twice"},
		{"value load not a number", []string{"--value-loads", "1,heavy"}, `--value-loads 1,heavy: load "heavy": want a number like 1.5`},
		{"empty value loads", []string{"--value-loads", ""}, `--value-loads : load "": want a number like 1.5`},
		{"value loads with bsld", []string{"--value-loads", "1,1.5", "--objective", "bsld"}, "--value-loads 1,1.5: only with --objective fair or wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", out, "--progress", "never"}, tc.args...)
			got, err := runApp(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, got)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused run wrote %s", out)
			}
		})
	}
}

// TestTune_OutCheckedFirst: an --out tune cannot write is refused before
// the trace is read, not after a search that may have run for --budget
// (10 minutes by default) and whose result would then be lost. The trace
// here is too short to tune on: the --out error must come first.
func TestTune_OutCheckedFirst(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 5, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "short.csv")
	if err := trace.WriteHeliosFile(path, jobs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out, want string
	}{
		{"missing directory", filepath.Join(dir, "missing", "p.json"), "--out: write " + filepath.Join(dir, "missing", "p.json") + ": no such file or directory"},
		{"a directory", dir, "--out: write " + dir + ": is a directory"},
		{"under a file", filepath.Join(path, "p.json"), "--out: write " + filepath.Join(path, "p.json") + ": not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runApp(t, "tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", tc.out, "--progress", "never")
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q; output:\n%s", err, tc.want, got)
			}
		})
	}
	if ns, err := os.ReadDir(dir); err != nil || len(ns) != 1 {
		t.Errorf("%s holds %v (%v), want only the trace: no file left by the check", dir, ns, err)
	}
}

// TestTune_Interrupted: a tune stopped by a signal (its context
// cancelled) says so and what became of --out, which keeps its old
// contents; it used to print "tune: context canceled".
func TestTune_Interrupted(t *testing.T) {
	jobs, err := sim.Synth(sim.SynthParams{Jobs: 200, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, out := filepath.Join(dir, "t.csv"), filepath.Join(dir, "p.json")
	if err := trace.WriteHeliosFile(path, jobs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	app := newApp()
	var buf bytes.Buffer
	app.Writer, app.ErrWriter = &buf, &buf
	err = app.RunContext(ctx, normalizeArgs(app, []string{"fairway", "tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", out, "--progress", "never"}))
	if err == nil || !strings.Contains(err.Error(), "tune: interrupted before the search ended: "+out+" left as it was") || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want it to say the tune was interrupted and %s kept; output:\n%s", err, out, buf.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "old" {
		t.Errorf("%s after the interrupted tune: %q (%v), want its old contents", out, b, err)
	}
}

// TestTune_FileRunsInSimulate tunes a short search, checks the file loads
// with what it was trained on and the validation table, then replays the
// held-out part with it as simulate --policy-file's row.
func TestTune_FileRunsInSimulate(t *testing.T) {
	path := synthTrace(t)
	out := filepath.Join(t.TempDir(), "tuned.json")
	text, err := runApp(t, "tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", out, "--predictor", "none",
		"--generations", "1", "--parallel", "2", "--seed", "3", "--progress", "never")
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, text)
	}
	f := readPolicyFile(t, out)
	if f.TrainedOn.Jobs != 1050 || f.TrainedOn.Source != path || !f.TrainedOn.From.Before(f.TrainedOn.To) {
		t.Errorf("trained on %+v: want the first 1050 of 1500 jobs of %s", f.TrainedOn, path)
	}
	if f.Tuning == nil || f.Tuning.Seed != 3 || f.Tuning.Generations != 1 || f.Tuning.Evaluations != f.Tuning.Population {
		t.Errorf("tuning %+v: want seed 3, one generation", f.Tuning)
	}
	var rows []string
	for _, r := range f.Validation {
		rows = append(rows, r.Policy)
	}
	if want := append(policy.Compared(), tunedRow); !cmp.Equal(want, rows) {
		t.Errorf("validation rows %v, want %v", rows, want)
	}
	for _, want := range []string{"kept the start", "validation window:", "wait ≤ fairshare",
		"next: judge it on the 450 jobs held out: fairway simulate --trace " + path + " with this history's other flags, --split 0.7 --predictor none --policy-file " + out} {
		if want == "kept the start" && !f.Tuning.KeptStart {
			want = "chosen:"
		}
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	js, err := runApp(t, "simulate", "--trace", path, "--format", "helios", "--nodes", "8", "--split", "0.7", "--policies", "fifo",
		"--policy-file", out, "--predictor", "none", "--json", "--progress", "never")
	if err != nil {
		t.Fatalf("%v; output:\n%s", err, js)
	}
	var tab sim.ProtocolTable
	if err := json.Unmarshal([]byte(js), &tab); err != nil {
		t.Fatalf("%v in:\n%s", err, js)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Name)
		if r.Meets == nil || r.Jobs != 450 {
			t.Errorf("%s: %d jobs, judged %v: want the held-out 450, judged", r.Name, r.Jobs, r.Meets != nil)
		}
	}
	if diff := cmp.Diff([]string{"fifo", "fairshare", tunedRow}, names); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	// The time split's criterion, judged for the file's row.
	if len(tab.Verdicts) != 1 || tab.Verdicts[0].Row != tunedRow || tab.Verdicts[0].Meets != *tab.Rows[2].Meets {
		t.Errorf("verdicts %+v, want one for %s with its row's constraints", tab.Verdicts, tunedRow)
	}
}

// TestTune_SequenceAnchors checks that --objective bsld judges the
// family's points nearest RLScheduler's heuristics (the requested area by
// time limit, alone and with fair share) beside the other anchors, and
// that the time-split objectives keep their anchors.
func TestTune_SequenceAnchors(t *testing.T) {
	path := synthTrace(t)
	for _, tc := range []struct {
		objective string
		extra     []string
		want      bool
	}{
		{"bsld", []string{"--sequences", "2", "--length", "100"}, true},
		{"fair", nil, false},
	} {
		t.Run(tc.objective, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "tuned.json")
			args := append([]string{"tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", out, "--predictor", "none",
				"--objective", tc.objective, "--generations", "1", "--parallel", "2", "--progress", "never"}, tc.extra...)
			text, err := runApp(t, args...)
			if err != nil {
				t.Fatalf("%v; output:\n%s", err, text)
			}
			for _, a := range []string{"(anchor area-limit): run 0, limit 1, size 1, usage 0, counter 0, age 0.25, effective 0;",
				"(anchor fair-area-limit): run 0, limit 1, size 1, usage 2, counter 0, age 0.25, effective 0;"} {
				if got := strings.Contains(text, a); got != tc.want {
					t.Errorf("output lists %q: %v, want %v; output:\n%s", a, got, tc.want, text)
				}
			}
		})
	}
}

func TestSimulate_PolicyFileRefused(t *testing.T) {
	dir := t.TempDir()
	good, err := policy.NewLearnedFile(policy.DefaultLearnedParams()).Encode()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodPath, fifoPath := write("good.json", good), write("fifo.json", good)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another format version", []string{"--split", "0.7", "--policy-file", write("v3.json", []byte(`{"format_version": 3}`))}, "format_version 3"},
		{"missing file", []string{"--split", "0.7", "--policy-file", filepath.Join(dir, "nope.json")}, "--policy-file: open"},
		{"without a protocol", []string{"--policy-file", goodPath}, "--policy-file: only with --split, --sequences or --suite"},
		{"row named as a policy", []string{"--split", "0.7", "--policies", "fifo", "--policy-file", goodPath, "--policy-file", fifoPath}, `its row "fifo" is also a policy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runApp(t, append([]string{"simulate", "--predictor", "none", "--progress", "never"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q; output:\n%s", err, tc.want, got)
			}
		})
	}
	// Two files: each a row named after its file.
	other := write("other.json", good)
	js, err := runApp(t, "simulate", "--predictor", "none", "--progress", "never", "--split", "0.7", "--policies", "fair-sjf",
		"--policy-file", goodPath, "--policy-file", other, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var tab sim.ProtocolTable
	if err := json.Unmarshal([]byte(js), &tab); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range tab.Rows {
		names = append(names, r.Name)
		if r.Schedule != tab.Rows[0].Schedule && r.Name != sim.Reference {
			t.Errorf("%s: fair-sjf's point gave another schedule than fair-sjf", r.Name)
		}
	}
	if !slices.Equal(names, []string{"fair-sjf", "fairshare", "good", "other"}) {
		t.Errorf("rows %v, want fair-sjf, fairshare, good, other", names)
	}
}

// TestTune_ValueLoads checks that --value-loads reaches the tuner and its
// account of the windows: the constraints at --loads, the value over
// --value-loads; the same loads as --loads are the flag's absence.
func TestTune_ValueLoads(t *testing.T) {
	path := synthTrace(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"value over 1 and 1.5", []string{"--value-loads", "1,1.5"},
			"also replayed at its offered load × 1.5 (inter-arrival times divided about its first replayed submit), the constraints required at load 1 and the value averaged over loads 1, 1.5"},
		{"value over --loads", []string{"--loads", "1,1.5", "--value-loads", "1.5,1"},
			"also replayed at its offered load × 1.5 (inter-arrival times divided about its first replayed submit), the constraints required at each load and the value averaged over them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			args := append([]string{"tune", "--trace", path, "--format", "helios", "--nodes", "8", "--out", out, "--predictor", "none",
				"--generations", "1", "--parallel", "2", "--progress", "never"}, tc.args...)
			text, err := runApp(t, args...)
			if err != nil {
				t.Fatalf("%v; output:\n%s", err, text)
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, text)
			}
		})
	}
}

// readPolicyFile reads and parses the policy file tune wrote at path.
func readPolicyFile(t *testing.T, path string) *policy.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := policy.ParseFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTune_AutoLoads checks --loads auto, the default: on a machine so large
// that no two users ever queue at once, every window is also replayed at
// twice its load, and the output says why; on the machine the workload
// keeps busy, or with --loads 1, only at the recorded load.
func TestTune_AutoLoads(t *testing.T) {
	path := synthTrace(t)
	const why = "× 2 (--loads auto: under fairshare no hour of the validation window had two of its"
	for _, tc := range []struct {
		name    string
		args    []string
		doubled bool
	}{
		{"users queue", []string{"--nodes", "8"}, false},
		{"nobody queues", []string{"--nodes", "1000"}, true},
		{"nobody queues, --loads 1", []string{"--nodes", "1000", "--loads", "1"}, false},
		{"nobody queues, objective wait", []string{"--nodes", "1000", "--objective", "wait"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			args := append([]string{"tune", "--trace", path, "--format", "helios", "--out", out, "--predictor", "none",
				"--generations", "1", "--parallel", "2", "--progress", "never"}, tc.args...)
			text, err := runApp(t, args...)
			if err != nil {
				t.Fatalf("%v; output:\n%s", err, text)
			}
			if got := strings.Contains(text, why); got != tc.doubled {
				t.Errorf("output says %q: %v, want %v:\n%s", why, got, tc.doubled, text)
			}
			if got := strings.Contains(text, "also replayed at its offered load"); got != tc.doubled {
				t.Errorf("windows replayed at another load: %v, want %v:\n%s", got, tc.doubled, text)
			}
			// The file records it with the windows it was trained on.
			if f := readPolicyFile(t, out); strings.Contains(f.Tuning.Windows, why) != tc.doubled {
				t.Errorf("the file's windows %q: want the reason %v", f.Tuning.Windows, tc.doubled)
			}
		})
	}
}
