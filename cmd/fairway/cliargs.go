package main

// This file makes a urfave/cli app forgiving of how people type
// commands: flags anywhere on the line (normalizeArgs), and an unknown command
// or flag answered in one line naming the closest valid one
// (withUsageHelp). It is CLI plumbing shared by every command, apart from
// the flags and configs each command defines.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// normalizeArgs lets flags go anywhere on the command line, as people type
// them: urfave/cli stops reading a command's flags at its first argument
// (`explain 176 --json` would read --json as a second argument), and reads the
// global flags (--log-level) only before the command name. It moves a
// command's flags in front of its arguments and the global flags in front
// of the command, keeping their order; everything after "--" stays as is.
func normalizeArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	globals := flagIndex(app.Flags)
	out := []string{args[0]}
	var moved, path []string
	rest := args[1:]
	// the global flags before the command, and the command path
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "--" {
		n := flagSpan(globals, rest)
		out = append(out, rest[:n]...)
		rest = rest[n:]
	}
	cmds := app.Commands
	var leaf *cli.Command
	for len(rest) > 0 {
		c := findCommand(cmds, rest[0])
		if c == nil {
			break
		}
		leaf, cmds = c, c.Subcommands
		path = append(path, rest[0])
		rest = rest[1:]
		// flags between a command and its subcommand belong to the parent
		if len(cmds) > 0 {
			for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "--" && findCommand(cmds, rest[0]) == nil {
				n := flagSpan(flagIndex(c.Flags), rest)
				path = append(path, rest[:n]...)
				rest = rest[n:]
			}
		}
	}
	if leaf == nil {
		return args // an unknown command: cli says so (see commandNotFound)
	}
	own := flagIndex(leaf.Flags)
	var flags, positional []string
	for len(rest) > 0 {
		a := rest[0]
		if a == "--" {
			positional = append(positional, rest...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			rest = rest[1:]
			continue
		}
		name := flagName(a)
		if _, mine := own[name]; !mine {
			if _, global := globals[name]; global {
				n := flagSpan(globals, rest)
				moved = append(moved, rest[:n]...)
				rest = rest[n:]
				continue
			}
		}
		n := flagSpan(own, rest)
		flags = append(flags, rest[:n]...)
		rest = rest[n:]
	}
	out = append(out, moved...)
	out = append(out, path...)
	out = append(out, flags...)
	return append(out, positional...)
}

// flagIndex maps each name and alias of flags to whether it takes a value.
func flagIndex(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			m[n] = !isBool
		}
	}
	return m
}

func flagName(a string) string {
	n := strings.TrimLeft(a, "-")
	n, _, _ = strings.Cut(n, "=")
	return n
}

// flagSpan is how many tokens the flag at args[0] takes: 2 when it needs
// a value not given with "=", else 1.
func flagSpan(index map[string]bool, args []string) int {
	if strings.Contains(args[0], "=") {
		return 1
	}
	if index[flagName(args[0])] && len(args) > 1 {
		return 2
	}
	return 1
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// closest is the candidate nearest to s by edit distance, "" when none is
// near enough to be a typo (more than max(2, len(s)/2) edits away).
func closest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/2)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// commandNotFound answers an unknown command with one line naming the
// closest one, instead of "No help topic for 'servee'".
func commandNotFound(c *cli.Context, name string) {
	var names []string
	cmds := c.App.Commands
	if c.Command != nil && len(c.Command.Subcommands) > 0 {
		cmds = c.Command.Subcommands
	}
	for _, cmd := range cmds {
		if !cmd.Hidden {
			names = append(names, cmd.Name)
		}
	}
	msg := fmt.Sprintf("%s: unknown command %q", c.App.Name, name)
	if s := closest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else {
		msg += "; commands: " + strings.Join(names, ", ")
	}
	fmt.Fprintln(c.App.ErrWriter, msg)
	cli.OsExiter(exitUsage)
}

// exitUsage is the exit status of a command line that could not be read
// (an unknown command or flag, a value that does not parse, a word left
// over), as GNU tools and Go's flag package use it: scripts can tell "called
// wrongly" from a run that failed (1), and the hooks keep 1 for a hardware
// fault alone.
const exitUsage = 2

// usageErr marks an error as the command line's; run exits exitUsage on it.
type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

// usagef is fmt.Errorf for a command line that cannot be run as given.
func usagef(format string, a ...any) error { return usageErr{fmt.Errorf(format, a...)} }

// exitStatus is the process's exit status for the error a command returned.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	if errors.As(err, new(usageErr)) {
		return exitUsage
	}
	return 1
}

// undefinedFlag is compiled on first use: only a mistyped command line needs it.
var undefinedFlag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`flag provided but not defined: -+(\S+)`)
})

// badValue and noValue match the flag package's other usage errors.
var (
	badValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+(\S+): `)
	})
	noValue = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^flag needs an argument: -+(\S+)$`)
	})
)

// valueWanted says what a flag's value must look like.
func valueWanted(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		return "a whole number"
	case *cli.UintFlag, *cli.Uint64Flag:
		return "a whole number >= 0"
	case *cli.Float64Flag:
		return "a number"
	case *cli.DurationFlag:
		return "a duration such as 90s, 10m or 2h30m"
	case *cli.BoolFlag:
		return "true or false"
	}
	return "" // a string: any value parses
}

// flagNamed finds the flag called name (or one of its aliases) among flags.
func flagNamed(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// usageError turns a bad flag into one line naming the closest valid one,
// and a bad value into one line saying what the flag wants, instead of
// the flag package's "parse error" or the command's whole help.
func usageError(c *cli.Context, err error, _ bool) error {
	flags := c.App.Flags
	if c.Command != nil {
		flags = append(append([]cli.Flag{}, c.Command.Flags...), c.App.Flags...)
	}
	if m := badValue().FindStringSubmatch(err.Error()); m != nil {
		if want := valueWanted(flagNamed(flags, m[2])); want != "" {
			return usagef("--%s %q: want %s", m[2], m[1], want)
		}
		return usageErr{err}
	}
	if m := noValue().FindStringSubmatch(err.Error()); m != nil {
		if want := valueWanted(flagNamed(flags, m[1])); want != "" {
			return usagef("--%s: needs a value (%s)", m[1], want)
		}
		return usagef("--%s: needs a value", m[1])
	}
	m := undefinedFlag().FindStringSubmatch(err.Error())
	if m == nil {
		return usageErr{err}
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()[0])
	}
	where := c.App.Name
	if c.Command != nil && c.Command.Name != "" {
		where = strings.TrimSpace(c.Command.HelpName)
	}
	msg := fmt.Sprintf("unknown flag --%s for %s", m[1], where)
	if s := closest(m[1], names); s != "" {
		msg += fmt.Sprintf("; did you mean --%s?", s)
	}
	return usagef("%s (%s --help lists them)", msg, where)
}

// withUsageHelp installs commandNotFound and usageError on the app and
// every command under it, and makes every command that names no arguments
// (no ArgsUsage) refuse them.
func withUsageHelp(app *cli.App) {
	app.CommandNotFound = commandNotFound
	app.OnUsageError = usageError
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.OnUsageError = usageError
			if c.Action != nil && c.ArgsUsage == "" && len(c.Subcommands) == 0 {
				c.Action = noArgs(c.Action)
			}
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
}

// noArgs wraps the action of a command that takes only flags: a word left
// over (`fairway simulate kth.swf`, a forgotten --trace) would otherwise be
// ignored, and the command would run on its defaults, a different input.
func noArgs(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 {
			return action(c)
		}
		where := strings.TrimSpace(c.Command.HelpName)
		msg := fmt.Sprintf("%s takes no arguments, got %q", strings.TrimPrefix(where, c.App.Name+" "), c.Args().First())
		for _, f := range c.Command.Flags {
			if n := f.Names()[0]; n == "trace" || n == "sequence" {
				return usagef("%s; did you mean --%s %s?", msg, n, c.Args().First())
			}
		}
		return usagef("%s (options start with --; %s --help lists them)", msg, where)
	}
}
