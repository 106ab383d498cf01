package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// leafCommand is a runnable command and the flags it sees (its own and
// its parents').
type leafCommand struct {
	cmd   *cli.Command
	flags []cli.Flag
}

// leafCommands are app's runnable commands by their full names.
func leafCommands(app *cli.App) map[string]leafCommand {
	out := map[string]leafCommand{}
	var walk func(prefix string, inherited []cli.Flag, cmds []*cli.Command)
	walk = func(prefix string, inherited []cli.Flag, cmds []*cli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			flags := append(slices.Clone(inherited), c.Flags...)
			walk(name, flags, c.Subcommands)
			if c.Action != nil {
				out[name] = leafCommand{c, flags}
			}
		}
	}
	walk("", nil, app.Commands)
	return out
}

// configValue is a value for fl, different from its default, as a config
// file spells it, and the check that the flag then holds it.
func configValue(fl cli.Flag) (string, func(*cli.Context) error) {
	name := fl.Names()[0]
	want := func(got, want any) error {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("--%s = %v, want %v", name, got, want)
		}
		return nil
	}
	switch f := fl.(type) {
	case *cli.StringFlag:
		v := "from-file-" + name
		return v, func(c *cli.Context) error { return want(c.String(name), v) }
	case *cli.BoolFlag:
		v := !f.Value
		return fmt.Sprint(v), func(c *cli.Context) error { return want(c.Bool(name), v) }
	case *cli.IntFlag:
		v := f.Value + 7
		return fmt.Sprint(v), func(c *cli.Context) error { return want(c.Int(name), v) }
	case *cli.Uint64Flag:
		v := f.Value + 7
		return fmt.Sprint(v), func(c *cli.Context) error { return want(c.Uint64(name), v) }
	case *cli.Int64Flag:
		v := f.Value + 7
		return fmt.Sprint(v), func(c *cli.Context) error { return want(c.Int64(name), v) }
	case *cli.Float64Flag:
		v := f.Value + 0.5
		return fmt.Sprint(v), func(c *cli.Context) error { return want(c.Float64(name), v) }
	case *cli.DurationFlag:
		v := f.Value + 7*time.Second
		return v.String(), func(c *cli.Context) error { return want(c.Duration(name), v) }
	case *cli.StringSliceFlag:
		return "file-a,file-b", func(c *cli.Context) error { return want(c.StringSlice(name), []string{"file-a", "file-b"}) }
	}
	return "", nil
}

// TestConfigFile_EveryCommand: for every command, a 0600 file owned by the
// user running fairway that sets every one of the command's settings
// (booleans, numbers, durations and lists included) reaches every flag.
func TestConfigFile_EveryCommand(t *testing.T) {
	cleanHookEnv(t)
	cmds := leafCommands(newApp())
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			app := newApp()
			leaf := leafCommands(app)[name]
			cmd := leaf.cmd
			var lines []string
			var checks []func(*cli.Context) error
			bools := 0
			for _, fl := range leaf.flags {
				envs := flagEnvVars(fl)
				for env, name := range rootOnlySettings { // set only from the file
					if fl.Names()[0] == name {
						envs = []string{env}
					}
				}
				if len(envs) == 0 || envs[0] == "FAIRWAY_CONFIG" || !strings.HasPrefix(envs[0], "FAIRWAY_") {
					continue
				}
				v, check := configValue(fl)
				if check == nil {
					t.Fatalf("--%s: a flag type the config file does not know", fl.Names()[0])
				}
				if _, ok := fl.(*cli.BoolFlag); ok {
					bools++
				}
				lines = append(lines, envs[0]+"="+v)
				checks = append(checks, check)
			}
			if len(lines) == 0 {
				t.Skipf("%s has no settings", name)
			}
			path := writeConfig(t, 0o600, strings.Join(lines, "\n")+"\n")
			if st, err := os.Stat(path); err != nil || ownerOf(st) != os.Geteuid() {
				t.Fatalf("config file not owned by the user running the test: %v", err)
			}
			ran := false
			cmd.Action = func(c *cli.Context) error {
				ran = true
				if hookCommands[cmd.Name] { // hooks read the file themselves
					if err := applyConfigFile(c); err != nil {
						return err
					}
				}
				for _, check := range checks {
					if err := check(c); err != nil {
						t.Error(err)
					}
				}
				return nil
			}
			args := append([]string{"fairway"}, strings.Fields(name)...)
			if err := app.Run(append(args, "--config", path)); err != nil {
				t.Fatal(err)
			}
			if !ran {
				t.Fatal("the command did not run")
			}
			t.Logf("%d settings from the file, %d of them booleans", len(lines), bools)
		})
	}
}

// TestConfigFile_Ownership: a file of the service user (the user fairway
// runs as) or of root is accepted at mode 0600; a file of anyone else, or
// one others may read or write, is refused.
func TestConfigFile_Ownership(t *testing.T) {
	const service = 65534 // nobody: the user a unit would run serve as
	path := writeConfig(t, 0o600, "FAIRWAY_CLUSTER=x\n")
	if os.Geteuid() == 0 {
		if err := os.Chown(path, service, service); err != nil {
			t.Fatal(err)
		}
	}
	owner := service
	if os.Geteuid() != 0 {
		owner = os.Geteuid() // cannot chown: the file is the test user's
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := configFileSafe(path, st, owner); err != nil {
		t.Errorf("service user's 0600 file refused: %v", err)
	}
	if err := configFileSafe(path, st, owner+1); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("another user's file: err = %v, want it refused", err)
	}
	for _, mode := range []os.FileMode{0o620, 0o602, 0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if err := configFileSafe(path, st, owner); err == nil || !strings.Contains(err.Error(), "want 0600") {
			t.Errorf("mode %04o: err = %v, want it refused", mode, err)
		}
	}
}

// TestConfigFile_ServeSettingsAndUnknown: the reported failure (serve
// rejecting FAIRWAY_SLURM_URL) and a typo, which is refused with its line.
func TestConfigFile_ServeSettingsAndUnknown(t *testing.T) {
	cleanHookEnv(t)
	t.Setenv("SLURM_JWT", "x")
	good := writeConfig(t, 0o600, "FAIRWAY_SLURM_URL=http://127.0.0.1:6820\nFAIRWAY_CLUSTER=c\nFAIRWAY_DATABASE_URL=postgres://x/y\nFAIRWAY_DRY_RUN=true\nFAIRWAY_NO_HA=1\nFAIRWAY_PARTITIONS=gpu,a100\n")
	cfg, err := settingsFromArgs(t, []string{"serve", "--config", good})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Slurm.URL != "http://127.0.0.1:6820" || !cfg.Planned || cfg.HA || !slices.Equal(cfg.Runner.Partitions, []string{"gpu", "a100"}) {
		t.Errorf("serve from file: url %q, dry run %v, HA %v, partitions %v", cfg.Slurm.URL, cfg.Planned, cfg.HA, cfg.Runner.Partitions)
	}
	bad := writeConfig(t, 0o600, "FAIRWAY_CLUSTER=c\nFAIRWAY_SLURM_ULR=http://x\n")
	_, err = settingsFromArgs(t, []string{"serve", "--config", bad})
	if err == nil || !strings.Contains(err.Error(), "line 2: unknown setting FAIRWAY_SLURM_ULR") {
		t.Errorf("typo: err = %v", err)
	}
}

func ownerOf(st os.FileInfo) int {
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
