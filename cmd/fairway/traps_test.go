package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/policy/sim"
	"github.com/urfave/cli/v2"
)

// The CLI traps a first-day admin fell into, one test each.

func TestTrap_FlagsAfterArguments(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"fairway", "explain", "176", "--json"}, []string{"fairway", "explain", "--json", "176"}},
		{[]string{"fairway", "explain", "176", "--cluster", "lab", "--json"}, []string{"fairway", "explain", "--cluster", "lab", "--json", "176"}},
		{[]string{"fairway", "ingest", "f.swf", "--from=swf", "--cluster", "k"}, []string{"fairway", "ingest", "--from=swf", "--cluster", "k", "f.swf"}},
		{[]string{"fairway", "predict", "eval", "--trace", "t.swf", "--json"}, []string{"fairway", "predict", "eval", "--trace", "t.swf", "--json"}},
		{[]string{"fairway", "explain", "--", "--weird"}, []string{"fairway", "explain", "--", "--weird"}},
	} {
		if got := normalizeArgs(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("normalizeArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// through the app: the error is about what explain needs, not usage
	_, err := runApp(t, "explain", "176", "--json", "--database-url", "", "--cluster", "")
	if err == nil || strings.Contains(err.Error(), "usage: fairway explain JOBID") {
		t.Errorf("explain 176 --json: %v; want the flags read, not a usage error", err)
	}
}

func TestTrap_GlobalFlagsOnEveryCommand(t *testing.T) {
	app := newApp()
	got := normalizeArgs(app, []string{"fairway", "explain", "--log-level", "warn", "176"})
	if want := []string{"fairway", "--log-level", "warn", "explain", "176"}; !reflect.DeepEqual(got, want) {
		t.Errorf("normalizeArgs = %q, want %q", got, want)
	}
	got = normalizeArgs(app, []string{"fairway", "trace", "synth", "--jobs", "10", "--log-level=debug"})
	if want := []string{"fairway", "--log-level=debug", "trace", "synth", "--jobs", "10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("normalizeArgs = %q, want %q", got, want)
	}
	out, err := runApp(t, "trace", "synth", "--jobs", "5", "--log-level", "warn")
	if err != nil || !strings.Contains(out, "job_id") {
		t.Errorf("trace synth --log-level warn: %v\n%.200s", err, out)
	}
}

// runUsage runs the app as main does and returns what it printed and the
// exit code cli asked for.
func runUsage(t *testing.T, args ...string) (string, int) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	code := -1
	exit := cli.OsExiter
	cli.OsExiter = func(c int) { code = c }
	t.Cleanup(func() { cli.OsExiter = exit })
	err := app.RunContext(context.Background(), normalizeArgs(app, append([]string{"fairway"}, args...)))
	if err != nil {
		out.WriteString("fairway: " + err.Error() + "\n")
		code = exitStatus(err)
	}
	return out.String(), code
}

func TestTrap_UnknownCommandOrFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"servee"}, `unknown command "servee"; did you mean "serve"?`},
		{[]string{"predict", "evl"}, `unknown command "evl"; did you mean "eval"?`},
		{[]string{"simulate", "--trase", "x"}, "unknown flag --trase for fairway simulate; did you mean --trace?"},
		{[]string{"explain", "--jsn", "12"}, "unknown flag --jsn for fairway explain; did you mean --json?"},
	} {
		out, code := runUsage(t, tc.args...)
		if code != exitUsage || !strings.Contains(out, tc.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%q: exit %d, printed:\n%s\nwant one line with %q", tc.args, code, out, tc.want)
		}
	}
}

// TestTrap_NoPlaceholderInHelp: a backquoted word in a flag's usage becomes
// its value placeholder in urfave/cli's help ("--scontrol-token scontrol
// token"); no flag may have one.
func TestTrap_NoPlaceholderInHelp(t *testing.T) {
	var walk func(string, []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				if df, ok := f.(cli.DocGenerationFlag); ok && strings.Contains(df.GetUsage(), "`") {
					t.Errorf("%s %s --%s: usage has a backquote: %q", path, c.Name, f.Names()[0], df.GetUsage())
				}
			}
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("fairway", newApp().Commands)
	out, _ := runUsage(t, "serve", "--help")
	if strings.Contains(out, "--scontrol-token scontrol token") {
		t.Errorf("serve --help still shows a placeholder:\n%s", out)
	}
}

// TestTrap_FormatDetected: simulate reads the file `trace synth` just wrote
// without --format (it said: unknown trace format "").
func TestTrap_FormatDetected(t *testing.T) {
	file := filepath.Join(t.TempDir(), "w.csv.gz")
	if out, err := runApp(t, "trace", "synth", "--jobs", "60", "--out", file); err != nil {
		t.Fatalf("trace synth: %v\n%s", err, out)
	}
	out, err := runApp(t, "simulate", "--trace", file, "--nodes", "2", "--per-node", "8", "--policies", "fifo,fair-qssf")
	if err != nil || !strings.Contains(out, "(helios): 60 jobs") {
		t.Errorf("simulate without --format: %v\n%s", err, out)
	}
}

// TestTrap_IngestWithoutFrom: one line naming the choices.
func TestTrap_IngestWithoutFrom(t *testing.T) {
	out, code := runUsage(t, "ingest", "--database-url", "postgres://x@127.0.0.1:1/x")
	if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "slurmdbd") ||
		!strings.Contains(out, "sacct-json") || !strings.Contains(out, "swf, helios or philly-mix") {
		t.Errorf("ingest without --from: exit %d:\n%s", code, out)
	}
}

// TestTrap_ExplainHelpOwnFlags: explain's help listed 35 serve-only
// flags; it lists the ones that change a ranking (and still accepts the
// rest, from serve's environment or config file).
func TestTrap_ExplainHelpOwnFlags(t *testing.T) {
	out, _ := runUsage(t, "explain", "--help")
	for _, serveOnly := range []string{"--listen", "--interval", "--dry-run", "--rewrite-table", "--once", "--max-writes"} {
		if strings.Contains(out, serveOnly+" ") {
			t.Errorf("explain --help lists %s:\n%s", serveOnly, out)
		}
	}
	for _, own := range []string{"--cluster", "--policy", "--predictor", "--json"} {
		if !strings.Contains(out, own) {
			t.Errorf("explain --help lacks %s", own)
		}
	}
	if _, err := runApp(t, "explain", "--interval", "10s", "12", "--database-url", ""); err != nil && strings.Contains(err.Error(), "not defined") {
		t.Errorf("explain --interval: %v; hidden flags must still be accepted", err)
	}
}

// TestTrap_ProgressElapsedAndETA: a 448k-job simulation ran ten minutes
// without a word; progress lines go to a terminal only (their elapsed time
// and estimate: internal/progress's TestETA).
func TestTrap_ProgressElapsedAndETA(t *testing.T) {
	// not a terminal: quiet
	errOut, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "w.csv")
	if out, err := runApp(t, "trace", "synth", "--jobs", "40", "--out", file); err != nil {
		t.Fatalf("trace synth: %v\n%s", err, out)
	}
	var out bytes.Buffer
	cfg := simulateConfig{RunConfig: sim.RunConfig{Trace: file, Format: "helios", Nodes: 2, PerNode: 8, Policies: []string{"fifo"}, Predictor: "none", Parallel: 1, Load: 1, Backfill: sim.EASY}}
	if err := simulate(context.Background(), cfg, &out, errOut); err != nil {
		t.Fatalf("simulate: %v", err)
	}
	if st, _ := errOut.Stat(); st.Size() != 0 {
		t.Errorf("simulate wrote %d bytes of progress to a file; want none off a terminal", st.Size())
	}
}
