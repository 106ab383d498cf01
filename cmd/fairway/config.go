package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// The config file is the one format every command reads for the settings
// not given on the command line or in the environment: systemd
// EnvironmentFile syntax (FAIRWAY_...=value lines), so the same file can be
// a unit's EnvironmentFile and a --config file. Precedence: command line,
// environment, config file, default.

// configFlag is --config for the commands that have no flag of their own
// (hooks and serve declare theirs with their own help text and default).
func configFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "config", Usage: "file of FAIRWAY_...=value lines for settings not given otherwise (owned by root or the user running fairway, mode 0600)", EnvVars: []string{"FAIRWAY_CONFIG"}}
}

// hookCommands read their config file themselves: a hook must never fail
// on it (slurmd would drain the node), so they log its error and go on.
var hookCommands = map[string]bool{"prolog": true, "epilog": true, "flush": true}

// withConfigFiles gives every command of app a --config flag (unless it
// declares its own) and reads the file before the command runs, except for
// the hooks, which read it themselves.
func withConfigFiles(app *cli.App) {
	var walk func(cmds []*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			walk(cmd.Subcommands)
			if cmd.Action == nil || hookCommands[cmd.Name] {
				continue
			}
			if !hasFlag(cmd, "config") {
				cmd.Flags = append(cmd.Flags, configFlag())
			}
			before := cmd.Before
			cmd.Before = func(c *cli.Context) error {
				if err := applyConfigFile(c); err != nil {
					return err
				}
				if before != nil {
					return before(c)
				}
				return nil
			}
		}
	}
	walk(app.Commands)
}

func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// applyConfigFile sets, from the --config file, every flag of the command
// that neither the command line nor the environment set, whatever its type
// (booleans, durations and lists included). The file may hold the database
// password, so it must belong to root or to the user fairway runs as (the
// service user of a systemd unit), and no one else may read or write it. A
// setting of another Fairway command is skipped, so one file can serve
// several; a name no command knows is an error (a typo would otherwise be
// silently ignored). A missing default file is no error; a missing named one
// is. Nothing is applied unless the whole file is good.
func applyConfigFile(c *cli.Context) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !c.IsSet("config") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := configFileSafe(path, st, os.Geteuid()); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	vals, err := parseEnvFile(b)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	byEnv := map[string]string{} // the command's flags and its parents' (migrate's --database-url)
	for _, cc := range c.Lineage() {
		if cc.Command == nil {
			continue
		}
		for env, name := range rootOnlySettings { // file-only settings: no environment variable
			if hasFlag(cc.Command, name) {
				byEnv[env] = name
			}
		}
		for _, fl := range cc.Command.Flags {
			for _, e := range flagEnvVars(fl) {
				if _, ok := byEnv[e]; !ok {
					byEnv[e] = fl.Names()[0]
				}
			}
		}
	}
	known := knownSettings(c.App)
	for _, kv := range vals { // all or nothing: check every line first
		if !known[kv.Key] {
			return fmt.Errorf("config file %s line %d: unknown setting %s", path, kv.Line, kv.Key)
		}
	}
	for _, kv := range vals {
		if kv.Key == "FAIRWAY_LOG_LEVEL" {
			if !c.IsSet("log-level") {
				if err := c.Set("log-level", kv.Value); err != nil {
					return fmt.Errorf("config file %s line %d: %w", path, kv.Line, err)
				}
			}
			continue
		}
		name, ok := byEnv[kv.Key]
		if !ok || c.IsSet(name) {
			continue // another command's setting, or set more directly
		}
		if err := c.Set(name, kv.Value); err != nil {
			return fmt.Errorf("config file %s line %d: %s: %w", path, kv.Line, kv.Key, err)
		}
	}
	return nil
}

// configFileSafe refuses a config file someone other than root or the
// process's own user could have written, or that others can read.
func configFileSafe(path string, st fs.FileInfo, euid int) error {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != euid {
		return fmt.Errorf("config file %s belongs to uid %d, want root or the user fairway runs as (uid %d): it may hold the database password", path, sys.Uid, euid)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("config file %s has mode %04o, want 0600 or stricter: it may hold the database password", path, st.Mode().Perm())
	}
	return nil
}

// flagEnvVars are the environment variables a flag reads, whatever its
// type.
func flagEnvVars(fl cli.Flag) []string {
	if f, ok := fl.(interface{ GetEnvVars() []string }); ok {
		return f.GetEnvVars()
	}
	return nil
}

// knownSettings are the variables a config file may set: those of every
// command's flags, so one file can serve several commands. Slurm's own
// variables and the file's own name are not settings.
func knownSettings(app *cli.App) map[string]bool {
	known := map[string]bool{}
	var walk func(flags []cli.Flag, cmds []*cli.Command)
	walk = func(flags []cli.Flag, cmds []*cli.Command) {
		for _, fl := range flags {
			for _, e := range flagEnvVars(fl) {
				known[e] = true
			}
		}
		for _, cmd := range cmds {
			walk(cmd.Flags, cmd.Subcommands)
		}
	}
	walk(app.Flags, app.Commands)
	for env := range rootOnlySettings {
		known[env] = true
	}
	for e := range known {
		if !strings.HasPrefix(e, "FAIRWAY_") || e == "FAIRWAY_CONFIG" {
			delete(known, e)
		}
	}
	return known
}
