package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// The install layout, the shipped env files, unit files and scripts: what an
// administrator copies from this repository onto a cluster.

const repoRoot = "../.."

// installRun runs contrib/install into root with the given settings and
// returns its output.
func installRun(t *testing.T, root, bin string, env ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "contrib", "install"))
	cmd.Env = append(os.Environ(), append([]string{"DESTDIR=" + root, "FAIRWAY_BIN=" + bin}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("contrib/install %v: %v\n%s", env, err, out)
	}
	return string(out)
}

// serviceUser is the SlurmUser the install test uses: as root a real
// non-root user (nobody) so that owners can be checked, else the default
// (owners are then only listed).
func serviceUser(t *testing.T) (name, group string, uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return "slurm", "slurm", -1, -1
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("as root the test needs the user nobody: %v", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return u.Username, g.Name, uid, gid
}

// layoutRow is a row of INSTALL.md's install-layout table.
type layoutRow struct {
	path, owner string
	mode        fs.FileMode
}

func installLayout(t *testing.T) []layoutRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "INSTALL.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "<!-- install-layout:")
	if !ok {
		t.Fatal("INSTALL.md has no install-layout table")
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| (root|slurm) \\| (0[0-7]{3}) \\|")
	var rows []layoutRow
	for _, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		if strings.HasPrefix(line, "| Path") || strings.HasPrefix(line, "|---") {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("INSTALL.md install-layout row %q: want | `path` | root or slurm | 0NNN |", line)
		}
		mode, _ := strconv.ParseUint(m[3], 8, 32)
		rows = append(rows, layoutRow{m[1], m[2], fs.FileMode(mode)})
	}
	if len(rows) < 10 {
		t.Fatalf("INSTALL.md install-layout: %d rows, want the whole layout", len(rows))
	}
	return rows
}

// TestInstall_Layout runs `contrib/install` (make install) into a temporary
// root and checks every path INSTALL.md lists has the owner and mode it
// states, that a Slurm prefix reaches the units' PATH, the hooks'
// scontrol and slurmrestd, that the units' Documentation= files are
// installed, and that STATE_DIR reaches hooks.env and the task prolog alike.
func TestInstall_Layout(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(t.TempDir(), "fairway")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho v1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	name, group, uid, gid := serviceUser(t)
	out := installRun(t, root, bin, "SLURM_PREFIX=/opt/slurm", "SLURM_USER="+name, "SLURM_GROUP="+group, "STATE_DIR=/run/fw-test")
	asRoot := os.Geteuid() == 0
	for _, r := range installLayout(t) {
		st, err := os.Lstat(filepath.Join(root, r.path))
		if err != nil {
			t.Errorf("%s: %v (INSTALL.md lists it)", r.path, err)
			continue
		}
		if st.Mode().Perm() != r.mode {
			t.Errorf("%s: mode %04o, INSTALL.md says %04o", r.path, st.Mode().Perm(), r.mode)
		}
		sys := st.Sys().(*syscall.Stat_t)
		switch {
		case asRoot && r.owner == "root" && (sys.Uid != 0 || sys.Gid != 0):
			t.Errorf("%s: owner %d:%d, want root:root", r.path, sys.Uid, sys.Gid)
		case asRoot && r.owner == "slurm" && (int(sys.Uid) != uid || int(sys.Gid) != gid):
			t.Errorf("%s: owner %d:%d, want SlurmUser %s:%s (%d:%d)", r.path, sys.Uid, sys.Gid, name, group, uid, gid)
		case !asRoot && r.owner == "slurm" && !strings.Contains(out, "owner slurm:slurm "+r.path+"\n"):
			t.Errorf("%s: not root, so the install must list owner slurm:slurm for the package; output:\n%s", r.path, out)
		}
	}

	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	units, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/*.service"))
	if len(units) < 5 {
		t.Fatalf("installed units: %v", units)
	}
	docRef := regexp.MustCompile(`(?m)^Documentation=file://(\S+)`)
	for _, u := range units {
		text := read(strings.TrimPrefix(u, root))
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: Documentation=%s is not installed: %v", filepath.Base(u), m[1], err)
			}
		}
		for _, line := range regexp.MustCompile(`(?m)^Environment=PATH=.*$`).FindAllString(text, -1) {
			if !strings.HasPrefix(line, "Environment=PATH=/opt/slurm/bin:") {
				t.Errorf("%s: %s; want SLURM_PREFIX's bin first", filepath.Base(u), line)
			}
		}
		if regexp.MustCompile(`(?m)^User=slurm$`).MatchString(text) && name != "slurm" {
			t.Errorf("%s still runs as slurm, want SLURM_USER %s", filepath.Base(u), name)
		}
	}
	for _, u := range []string{"fairway-serve.service", "fairway-shares-sync.service", "fairway-report.service", "fairway-token-renew.service"} {
		if !strings.Contains(read("etc/systemd/system/"+u), "\nEnvironment=PATH=/opt/slurm/bin:") {
			t.Errorf("%s: no PATH with the Slurm prefix: scontrol, sacct and sacctmgr would not be found", u)
		}
	}
	if s := read("etc/systemd/system/slurmrestd.service"); !strings.Contains(s, "\nExecStart=/opt/slurm/sbin/slurmrestd ") {
		t.Errorf("slurmrestd.service does not start the prefix's slurmrestd:\n%s", s)
	}
	hooksEnv := read("etc/fairway/hooks.env")
	for _, want := range []string{"\nFAIRWAY_SCONTROL=/opt/slurm/bin/scontrol\n", "\nFAIRWAY_STATE_DIR=/run/fw-test\n"} {
		if !strings.Contains(hooksEnv, want) {
			t.Errorf("hooks.env lacks %q", strings.TrimSpace(want))
		}
	}
	if s := read("usr/local/sbin/fairway-task-prolog"); !strings.Contains(s, "\nstate_dir=/run/fw-test\n") {
		t.Errorf("fairway-task-prolog does not read STATE_DIR's jobs:\n%s", s)
	}
	if s := read("etc/fairway/serve.env"); !strings.Contains(s, "\nFAIRWAY_SLURM_USER="+name+"\n") {
		t.Errorf("serve.env: FAIRWAY_SLURM_USER is not SLURM_USER %s", name)
	}
}

// TestInstall_KeepsEnvFiles: a second install (an upgrade) replaces the
// binary and the units but never an env file that exists, neither its
// contents (the passwords) nor its mode or owner, and says so.
func TestInstall_KeepsEnvFiles(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(t.TempDir(), "fairway")
	if err := os.WriteFile(bin, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	name, group, _, _ := serviceUser(t)
	env := []string{"SLURM_USER=" + name, "SLURM_GROUP=" + group}
	installRun(t, root, bin, env...)
	secrets := map[string]string{
		"etc/fairway/serve.env": "FAIRWAY_DATABASE_URL=postgres://fairway:serve-secret@db/fairway\n",
		"etc/fairway/hooks.env": "FAIRWAY_DATABASE_URL=postgres://fairway_node_gpu1:node-secret@db/fairway\n",
	}
	for p, s := range secrets {
		// An admin's choices: other contents, a stricter mode, root as owner.
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]os.FileInfo{}
	for p := range secrets {
		st, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		before[p] = st
	}
	if err := os.WriteFile(bin, []byte("v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := installRun(t, root, bin, env...)
	for p, s := range secrets {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(b) != s {
			t.Errorf("%s after a second install: %q, %v; want it untouched", p, b, err)
		}
		st, _ := os.Stat(filepath.Join(root, p))
		if st.Mode() != before[p].Mode() || st.Sys().(*syscall.Stat_t).Uid != before[p].Sys().(*syscall.Stat_t).Uid {
			t.Errorf("%s: mode or owner changed by a second install: %v → %v", p, before[p].Mode(), st.Mode())
		}
		if !strings.Contains(out, "kept /"+p+" ") {
			t.Errorf("the install does not say it kept /%s:\n%s", p, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "usr/local/bin/fairway")); string(b) != "v2" {
		t.Errorf("the binary was not replaced: %q", b)
	}
}

// TestShipped_OneBinaryPath: every unit, script, env file, Makefile and
// document names the binary as /usr/local/bin/fairway and the hook scripts
// under /usr/local/sbin, the paths make install uses (the serve unit once
// said /usr/local/sbin/fairway while the hooks ran /usr/local/bin/fairway).
func TestShipped_OneBinaryPath(t *testing.T) {
	ref := regexp.MustCompile(`/(?:usr|opt)[\w/.-]*?/s?bin/fairway[\w.-]*`)
	seen := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "contrib/lab" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(rel, "contrib/") && !strings.HasSuffix(rel, ".md") && rel != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range ref.FindAllString(string(b), -1) {
			seen++
			dir, base := filepath.Split(m)
			want := "/usr/local/bin/"
			if strings.HasPrefix(base, "fairway-") {
				want = "/usr/local/sbin/"
			}
			if dir != want {
				t.Errorf("%s names %s; the binary is /usr/local/bin/fairway and the hook scripts are in /usr/local/sbin", rel, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Fatalf("%d references to the binary found: the pattern is stale", seen)
	}
}

// flagDefault is the default of a flag as a config file would write it.
func flagDefault(fl cli.Flag) string {
	switch f := fl.(type) {
	case *cli.StringFlag:
		return f.Value
	case *cli.BoolFlag:
		return strconv.FormatBool(f.Value)
	case *cli.DurationFlag:
		return f.Value.String()
	case *cli.IntFlag:
		return strconv.Itoa(f.Value)
	case *cli.Int64Flag:
		return strconv.FormatInt(f.Value, 10)
	case *cli.Float64Flag:
		return strconv.FormatFloat(f.Value, 'g', -1, 64)
	case *cli.StringSliceFlag:
		if f.Value == nil {
			return ""
		}
		return strings.Join(f.Value.Value(), ",")
	}
	return fmt.Sprintf("<%T>", fl)
}

// sameSetting compares a file's value with a default: durations and
// booleans by meaning ("30s" is "30s", "1" is "true").
func sameSetting(a, b string) bool {
	if a == b {
		return true
	}
	if da, err := time.ParseDuration(a); err == nil {
		db, err := time.ParseDuration(b)
		return err == nil && da == db
	}
	if ba, err := strconv.ParseBool(a); err == nil {
		bb, err := strconv.ParseBool(b)
		return err == nil && ba == bb
	}
	return false
}

// TestShippedEnv_DefaultsOrChosen: each value in the shipped env files is
// the binary's default for that setting, or one chosen on purpose and listed
// here with the reason (serve.env once said FAIRWAY_POLICY=fair-qssf after
// the default had become fair-sjf, and hooks.env turned FAIRWAY_KILL_STRAY on
// while the binary leaves it off).
func TestShippedEnv_DefaultsOrChosen(t *testing.T) {
	hookFlagsOf := func(cmds ...*cli.Command) []cli.Flag {
		var out []cli.Flag
		for _, c := range cmds {
			out = append(out, c.Flags...)
		}
		return out
	}
	global := newApp().Flags
	for _, c := range []struct {
		file   string
		flags  []cli.Flag
		chosen map[string]string // setting → value shipped on purpose (the reason in the comment)
	}{
		{"contrib/systemd/fairway.env", append(serveFlags(false), global...), map[string]string{
			"FAIRWAY_CLUSTER":        "mycluster",                                                                                               // placeholder: slurm.conf's ClusterName
			"FAIRWAY_SLURM_URL":      "http://127.0.0.1:6820",                                                                                   // slurmrestd.service's address
			"FAIRWAY_SCONTROL_TOKEN": "true",                                                                                                    // the unit runs as SlurmUser, which mints tokens
			"FAIRWAY_DATABASE_URL":   "postgres://fairway:CHANGE-ME@dbhost:5432/fairway?sslmode=verify-full&sslrootcert=/etc/fairway/db-ca.crt", // placeholder, TLS verified
			"FAIRWAY_DRY_RUN":        "true",                                                                                                    // start in shadow mode
			"FAIRWAY_SHARDS_PER_GPU": "8",                                                                                                       // gres.conf.fairway's shards, as the hooks'
		}},
		{"contrib/slurm/hooks.env.example", hookFlagsOf(prologCommand(), epilogCommand()), map[string]string{
			"FAIRWAY_DATABASE_URL":   "postgres://fairway_node_gpu1:PASSWORD@dbhost:5432/fairway?sslmode=verify-full&sslrootcert=/etc/fairway/db-ca.crt", // placeholder: the node's own login
			"FAIRWAY_LOG_FILE":       "/var/log/fairway/hooks.log",                                                                                       // slurmd discards hook output; make install creates the directory
			"FAIRWAY_SHARDS_PER_GPU": "8",                                                                                                                // gres.conf.fairway's shards
		}},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, c.file))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := parseEnvFile(b)
			if err != nil {
				t.Fatal(err)
			}
			defaults := map[string]string{}
			for _, fl := range c.flags {
				envs := flagEnvVars(fl)
				for env, name := range rootOnlySettings { // the hooks' file-only settings
					if fl.Names()[0] == name {
						envs = append(envs, env)
					}
				}
				for _, e := range envs {
					if _, ok := defaults[e]; !ok {
						defaults[e] = flagDefault(fl)
					}
				}
			}
			for _, l := range lines {
				def, known := defaults[l.Key]
				want, isChosen := c.chosen[l.Key]
				switch {
				case !known:
					t.Errorf("%s line %d: %s is no setting of this command", c.file, l.Line, l.Key)
				case isChosen && l.Value != want:
					t.Errorf("%s line %d: %s=%s; the test records %q as chosen: update both together", c.file, l.Line, l.Key, l.Value, want)
				case !isChosen && !sameSetting(l.Value, def):
					t.Errorf("%s line %d: %s=%s, but the binary's default is %q: ship the default or list the choice and its reason in this test", c.file, l.Line, l.Key, l.Value, def)
				}
			}
		})
	}
}

// TestShippedHook_StderrToSyslogAndStatus runs contrib/slurm/fairway-hook with
// a stand-in fairway and logger: fairway's stdout (a fault's reason) stays on
// the hook's stdout, its stderr goes to syslog rather than to slurmd, which
// discards it, exit 1 (a hardware fault) fails the job, and any other
// failure (a missing or crashed binary) does not.
func TestShippedHook_StderrToSyslogAndStatus(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("sh is needed to run the shipped hook scripts")
	}
	dir := t.TempDir()
	syslog := filepath.Join(dir, "syslog")
	fake := filepath.Join(dir, "fairway")
	logger := filepath.Join(dir, "logger")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(fake, "#!/bin/sh\necho \"reason $1\"\necho \"log $1\" >&2\nexit $FAKE_RC\n")
	write(logger, "#!/bin/sh\necho \"[$*]\" >>"+syslog+"\ncat >>"+syslog+"\n")
	script, err := os.ReadFile(filepath.Join(repoRoot, "contrib/slurm/fairway-hook"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(script)
	for _, v := range []struct{ line, path string }{{"fairway=/usr/local/bin/fairway", fake}, {"logger=/usr/bin/logger", logger}} {
		if !strings.Contains(s, "\n"+v.line+"\n") {
			t.Fatalf("fairway-hook has no line %q", v.line)
		}
		s = strings.Replace(s, "\n"+v.line+"\n", "\n"+strings.SplitN(v.line, "=", 2)[0]+"="+v.path+"\n", 1)
	}
	hook := filepath.Join(dir, "hook")
	write(hook, s)
	for _, c := range []struct {
		context, rc string
		wantRC      int
		wantOut     string
		wantLog     []string
	}{
		{"prolog_slurmd", "0", 0, "reason prolog\n", []string{"[-t fairway-prolog -p daemon.err]", "log prolog"}},
		{"prolog_slurmd", "1", 1, "reason prolog\n", []string{"log prolog"}},
		{"prolog_slurmd", "2", 0, "reason prolog\n", []string{"log prolog", "fairway prolog exited with status 2: job not failed (job 42)"}},
		{"epilog_slurmd", "137", 0, "reason epilog\n", []string{"[-t fairway-epilog -p daemon.err]", "fairway epilog exited with status 137"}},
		{"other", "1", 0, "", nil},
	} {
		t.Run(c.context+"/"+c.rc, func(t *testing.T) {
			os.Remove(syslog)
			cmd := exec.Command(hook)
			cmd.Env = []string{"SLURM_SCRIPT_CONTEXT=" + c.context, "FAKE_RC=" + c.rc, "SLURM_JOB_ID=42", "PATH=/usr/bin:/bin"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			logged, _ := os.ReadFile(syslog)
			if rc != c.wantRC || stdout.String() != c.wantOut || stderr.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, nothing on stderr", rc, stdout.String(), stderr.String(), c.wantRC, c.wantOut)
			}
			for _, w := range c.wantLog {
				if !strings.Contains(string(logged), w) {
					t.Errorf("syslog got %q, want it to hold %q", logged, w)
				}
			}
		})
	}
}

// TestShippedTaskProlog_ReadsStateDir: fairway-task-prolog prints the job's
// MPS file from its state_dir, the line make install sets from STATE_DIR
// (it once read /run/fairway/jobs whatever FAIRWAY_STATE_DIR said).
func TestShippedTaskProlog_ReadsStateDir(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "jobs", "7.mps"), []byte("export CUDA_MPS_PIPE_DIRECTORY=/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "contrib/slurm/fairway-task-prolog"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nstate_dir=/run/fairway\n", "\nstate_dir="+state+"\n", 1)
	if s == string(b) {
		t.Fatal("fairway-task-prolog has no line state_dir=/run/fairway for make install's STATE_DIR")
	}
	script := filepath.Join(t.TempDir(), "task-prolog")
	if err := os.WriteFile(script, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"7": "export CUDA_MPS_PIPE_DIRECTORY=/x\n", "8": ""} {
		cmd := exec.Command(script)
		cmd.Env = []string{"SLURM_JOB_ID=" + id, "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Errorf("job %s: %q, %v; want %q and exit 0", id, out, err, want)
		}
	}
}

// TestShippedTokenRenew: fairway-token-renew writes scontrol's token to the
// file with the owner and mode Fairway accepts, by rename (a new inode, so a
// reader never sees half a token), and a failed scontrol leaves the old
// token in place and no temporary file behind.
func TestShippedTokenRenew(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	scontrol := filepath.Join(bin, "scontrol")
	writeScontrol := func(body string) {
		if err := os.WriteFile(scontrol, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(dir, "etc")
	if err := os.Mkdir(tokens, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tokens, "slurm.token")
	if err := os.WriteFile(file, []byte("SLURM_JWT=old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	owner, uid := me.Username, os.Geteuid()
	if uid == 0 {
		name, _, nuid, _ := serviceUser(t)
		owner, uid = name, nuid
	}
	run := func() (string, error) {
		cmd := exec.Command(filepath.Join(repoRoot, "contrib/systemd/fairway-token-renew"), "slurm", owner, file, "600")
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	old, _ := os.Stat(file)
	writeScontrol("echo \"SLURM_JWT=new-$2-$3\"\n")
	if out, err := run(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	if string(b) != "SLURM_JWT=new-username=slurm-lifespan=600\n" {
		t.Errorf("token file holds %q", b)
	}
	if st.Mode().Perm() != 0o600 || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("token file mode %04o owner %d; want 0600 and uid %d (Fairway refuses others)", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Uid, uid)
	}
	if os.SameFile(old, st) {
		t.Error("the token file was rewritten in place, not replaced by rename")
	}
	writeScontrol("echo 'slurmctld down' >&2; exit 1\n")
	if out, err := run(); err == nil {
		t.Errorf("a failed scontrol token exited 0: %s", out)
	}
	if b2, _ := os.ReadFile(file); !bytes.Equal(b2, b) {
		t.Errorf("a failed renewal changed the token file to %q", b2)
	}
	if left, _ := filepath.Glob(filepath.Join(tokens, ".fairway-token.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestShippedUnits_Order: serve starts after slurmrestd (a first cycle
// against a slurmrestd still starting fails), and every fairway unit that
// runs Slurm's commands sets a PATH make install can prefix.
func TestShippedUnits_Order(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "contrib/systemd/fairway-serve.service"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^After=.*$`).FindString(string(b)); !strings.Contains(m, " slurmrestd.service") {
		t.Errorf("fairway-serve.service: %q lacks slurmrestd.service", m)
	}
	if !regexp.MustCompile(`(?m)^Environment=PATH=`).Match(b) {
		t.Error("fairway-serve.service sets no PATH: scontrol under a Slurm prefix is not found")
	}
}
