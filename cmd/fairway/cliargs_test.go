package main

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp is a small app shaped like fairway's: a global flag, a command
// with a value flag and a boolean, and a command with subcommands whose
// parent has a flag of its own.
func testApp(ran *[]string) *cli.App {
	action := func(c *cli.Context) error {
		*ran = append(*ran, c.Command.FullName()+" "+strings.Join(c.Args().Slice(), ",")+" json="+map[bool]string{true: "1", false: "0"}[c.Bool("json")])
		return nil
	}
	app := &cli.App{
		Name:  "tool",
		Flags: []cli.Flag{&cli.StringFlag{Name: "log-level", Value: "info"}},
		Commands: []*cli.Command{
			{Name: "explain", ArgsUsage: "JOBID", Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}, &cli.StringFlag{Name: "cluster"}}, Action: action},
			{Name: "migrate", Flags: []cli.Flag{&cli.StringFlag{Name: "database-url"}}, Subcommands: []*cli.Command{{Name: "up", Action: action}}},
		},
		HideHelpCommand: true,
	}
	withUsageHelp(app)
	return app
}

func TestNormalizeArgs(t *testing.T) {
	app := testApp(new([]string))
	for _, tc := range []struct{ in, want []string }{
		{[]string{"tool"}, []string{"tool"}},
		{[]string{"tool", "explain", "176", "--json"}, []string{"tool", "explain", "--json", "176"}},
		{[]string{"tool", "explain", "176", "--cluster", "lab", "--json"}, []string{"tool", "explain", "--cluster", "lab", "--json", "176"}},
		{[]string{"tool", "explain", "176", "--cluster=lab"}, []string{"tool", "explain", "--cluster=lab", "176"}},
		{[]string{"tool", "explain", "--log-level", "warn", "176"}, []string{"tool", "--log-level", "warn", "explain", "176"}},
		{[]string{"tool", "explain", "--", "--weird"}, []string{"tool", "explain", "--", "--weird"}},
		{[]string{"tool", "migrate", "--database-url", "x", "up"}, []string{"tool", "migrate", "--database-url", "x", "up"}},
		{[]string{"tool", "servee", "--json"}, []string{"tool", "servee", "--json"}},
	} {
		if got := normalizeArgs(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("normalizeArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNormalizeArgs_Runs: the reordered line runs the command with its flag
// and argument both read.
func TestNormalizeArgs_Runs(t *testing.T) {
	var ran []string
	app := testApp(&ran)
	if err := app.RunContext(context.Background(), normalizeArgs(app, []string{"tool", "explain", "176", "--json"})); err != nil {
		t.Fatal(err)
	}
	if want := []string{"explain 176 json=1"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"serve", "explain", "queue", "report"}
	for _, tc := range []struct{ in, want string }{
		{"servee", "serve"}, {"expalin", "explain"}, {"qeueu", "queue"}, {"zzzzzzzz", ""}, {"", ""},
	} {
		if got := closest(tc.in, names); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUsageHelp_OneLine(t *testing.T) {
	app := testApp(new([]string))
	err := app.RunContext(context.Background(), normalizeArgs(app, []string{"tool", "explain", "--jsn", "12"}))
	if err == nil || err.Error() != "unknown flag --jsn for tool explain; did you mean --json? (tool explain --help lists them)" {
		t.Errorf("bad flag: %v", err)
	}

	var stderr bytes.Buffer
	app.ErrWriter = &stderr
	exited := -1
	defer func(f func(int)) { cli.OsExiter = f }(cli.OsExiter)
	cli.OsExiter = func(code int) { exited = code }
	_ = app.RunContext(context.Background(), []string{"tool", "explian"})
	if exited != exitUsage || stderr.String() != "tool: unknown command \"explian\"; did you mean \"explain\"?\n" {
		t.Errorf("unknown command: exit %d, stderr %q", exited, stderr.String())
	}
	stderr.Reset()
	_ = app.RunContext(context.Background(), []string{"tool", "zzzzzzzz"})
	if stderr.String() != "tool: unknown command \"zzzzzzzz\"; commands: explain, migrate\n" {
		t.Errorf("unknown command, nothing close: stderr %q", stderr.String())
	}
}

// TestNoArgs: a command that takes only flags refuses a word left over (a
// forgotten --trace would otherwise replay the bundled workload instead),
// naming it and the flag it was likely meant for; commands that take
// arguments still get them.
func TestNoArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "kth.swf"}, `simulate takes no arguments, got "kth.swf"; did you mean --trace kth.swf?`},
		{[]string{"power", "eval", "nodes.csv"}, `power eval takes no arguments, got "nodes.csv"; did you mean --sequence nodes.csv?`},
		{[]string{"trace", "synth", "--jobs", "5", "x"}, `trace synth takes no arguments, got "x" (options start with --; fairway trace synth --help lists them)`},
		{[]string{"explain", "x"}, "usage: fairway explain JOBID"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(append([]string{"fairway"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestExitStatus: a command line that cannot be read exits 2, a run that
// fails on its input exits 1, so a script can tell the two apart.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"simulate", "--nodse", "3"}, exitUsage},
		{[]string{"simulate", "--nodes", "x"}, exitUsage},
		{[]string{"simulate", "--nodes"}, exitUsage},
		{[]string{"simulate", "kth.swf"}, exitUsage},
		{[]string{"explain", "abc"}, exitUsage},
		{[]string{"explain", "--node", "n1", "12"}, exitUsage},
		// A month or a date that does not parse is the command line's
		// fault too, like --interval abc, not a run that failed.
		{[]string{"report", "--database-url", "postgres://db/x", "--month", "2026-13"}, exitUsage},
		{[]string{"simulate", "--from-db", "--database-url", "postgres://db/x", "--month", "11-2026"}, exitUsage},
		{[]string{"ingest", "--database-url", "postgres://db/x", "--from", "slurmdbd", "--cluster", "c", "--slurm-url", "", "--since", "yesterday"}, exitUsage},
		{[]string{"tune", "--from-db", "--database-url", "postgres://db/x", "--since", "last week"}, exitUsage},
		{[]string{"tune", "--from-db", "--database-url", "postgres://db/x", "--until", "2026-02-30"}, exitUsage},
		{[]string{"simulate", "--trace", t.TempDir() + "/missing.swf"}, 1},
		{[]string{"version"}, 0},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		if got := exitStatus(app.Run(append([]string{"fairway"}, tc.args...))); got != tc.want {
			t.Errorf("%v: exit status %d, want %d", tc.args, got, tc.want)
		}
	}
}

// TestUsageError_Values: a flag value that does not parse, or a flag left
// without one, gets a line saying what the flag wants, not the flag
// package's "parse error".
func TestUsageError_Values(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "synth", "--seed", "-1"}, `--seed "-1": want a whole number >= 0`},
		{[]string{"simulate", "--nodes", "abc"}, `--nodes "abc": want a whole number`},
		{[]string{"simulate", "--load", "x"}, `--load "x": want a number`},
		{[]string{"tune", "--budget", "5q"}, `--budget "5q": want a duration such as 90s, 10m or 2h30m`},
		{[]string{"serve", "--dry-run=maybe"}, `--dry-run "maybe": want true or false`},
		{[]string{"simulate", "--nodes"}, "--nodes: needs a value (a whole number)"},
		{[]string{"simulate", "--policies"}, "--policies: needs a value"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(append([]string{"fairway"}, tc.args...))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
