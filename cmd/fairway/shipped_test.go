package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// listenSetting finds listen addresses in shipped files: environment
// files, unit files, docs and examples.
var listenSetting = regexp.MustCompile(`(?:FAIRWAY_LISTEN=|--listen[ =]|FAIRWAY_HTTP_ADDR=|--http-addr[ =])"?([^\s"'` + "`" + `]+)`)

// TestShippedListenIsLoopback: serve's default and every listen address in a
// shipped file bind to loopback, so /metrics is never exposed by copying
// an example (contrib/systemd/fairway.env used to say 0.0.0.0).
func TestShippedListenIsLoopback(t *testing.T) {
	for _, f := range serveCommand().Flags {
		if sf, ok := f.(*cli.StringFlag); ok && (sf.Name == "listen" || sf.Name == "http-addr") {
			checkLoopback(t, "serve --"+sf.Name+" default", sf.Value)
		}
	}
	root := "../.."
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "contrib/lab" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(rel, "contrib/") && !strings.HasSuffix(rel, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range listenSetting.FindAllStringSubmatch(string(b), -1) {
			seen++
			checkLoopback(t, rel, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no listen setting found in the shipped files: the pattern is stale")
	}
}

func checkLoopback(t *testing.T, where, addr string) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return // prose like "--listen on a private address", not an address
	}
	if host == "localhost" {
		return
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("%s: listen address %q is not loopback", where, addr)
	}
}

// TestShippedRewriteTableLocation: serve's default table, the place
// job_submit.lua looks first and the directory the systemd unit lets serve
// write agree, and none is /etc/slurm (the unit cannot write there, and
// making it writable would let SlurmUser rewrite slurm.conf).
func TestShippedRewriteTableLocation(t *testing.T) {
	var def string
	for _, f := range serveCommand().Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "rewrite-table" {
			def = sf.Value
		}
	}
	if def != "/var/lib/fairway/fairway-rewrite.table" {
		t.Fatalf("--rewrite-table default %q, want /var/lib/fairway/fairway-rewrite.table", def)
	}
	lua, err := os.ReadFile("../../contrib/slurm/job_submit.lua")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`TABLE_PATHS = \{ "([^"]+)"`).FindSubmatch(lua); m == nil || string(m[1]) != def {
		t.Errorf("job_submit.lua looks first at %q, want %q", m, def)
	}
	unit, err := os.ReadFile("../../contrib/systemd/fairway-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nStateDirectory=fairway\n", "\nProtectSystem=strict\n", "\nStateDirectoryMode=0750\n"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("fairway-serve.service lacks %q", strings.TrimSpace(want))
		}
	}
	if regexp.MustCompile(`(?m)^ReadWritePaths=.*/etc/slurm`).Match(unit) {
		t.Error("fairway-serve.service makes /etc/slurm writable")
	}
}

// TestShippedGoMod_PatchedToolchainAndImage: go.mod keeps the module off
// Go releases and x/image versions with known advisories.
//
// Why both a go line and a toolchain line: the go line is a hard minimum.
// A Go older than it refuses to build the module when GOTOOLCHAIN=local,
// and with GOTOOLCHAIN=auto (the default) switches to a newer toolchain,
// so go 1.26.6 makes the net/http, net/url and crypto/x509 fixes of
// 1.26.6 a floor that no GOTOOLCHAIN setting lowers. The toolchain line
// only names the toolchain auto mode switches to when the running Go is
// older (it is ignored under GOTOOLCHAIN=local), so it asks for the newest
// patched release known, go1.26.8; `go mod tidy` drops a toolchain line
// that is not above the go line, which is why the go line is not raised to
// 1.26.8 as well. golang.org/x/image below v0.45.0 has GO-2026-4962 and
// GO-2026-4815, reachable through the plots.
func TestShippedGoMod_PatchedToolchainAndImage(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := parseGoMod(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, got, least string }{
		{"go line", mod.goVersion, "1.26.6"},
		{"toolchain line", strings.TrimPrefix(mod.toolchain, "go"), "1.26.6"},
		{"golang.org/x/image", strings.TrimPrefix(mod.require["golang.org/x/image"], "v"), "0.45.0"},
	} {
		if c.got == "" {
			t.Errorf("go.mod has no %s: want at least %s", c.what, c.least)
			continue
		}
		less, err := versionLess(c.got, c.least)
		switch {
		case err != nil:
			t.Errorf("go.mod %s: %v", c.what, err)
		case less:
			t.Errorf("go.mod %s %s: want at least %s", c.what, c.got, c.least)
		}
	}
}

// goMod is what TestShippedGoMod_PatchedToolchainAndImage reads of go.mod.
type goMod struct {
	goVersion, toolchain string
	require              map[string]string // module path → version
}

// parseGoMod reads the go and toolchain directives and the requirements,
// in one-line and block form, of a go.mod file. golang.org/x/mod/modfile
// is not a dependency of Fairway, and these three directives are all the
// test needs.
func parseGoMod(text string) (goMod, error) {
	mod := goMod{require: map[string]string{}}
	inRequire := false
	for n, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inRequire && f[0] == ")":
			inRequire = false
		case inRequire && len(f) == 2:
			mod.require[f[0]] = f[1]
		case inRequire:
			return mod, fmt.Errorf("go.mod line %d: %q in a require block: want module and version", n+1, line)
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inRequire = true
		case f[0] == "require" && len(f) == 3:
			mod.require[f[1]] = f[2]
		case f[0] == "go" && len(f) == 2:
			mod.goVersion = f[1]
		case f[0] == "toolchain" && len(f) == 2:
			mod.toolchain = f[1]
		}
	}
	if inRequire {
		return mod, errors.New("go.mod: a require block is not closed")
	}
	return mod, nil
}

// versionLess compares dotted release numbers ("1.26.6", "0.45.0"); a
// pre-release or pseudo-version suffix after '-' sorts below its release.
func versionLess(a, b string) (bool, error) {
	parse := func(v string) ([]int, bool, error) {
		v, suffix, _ := strings.Cut(v, "-")
		var out []int
		for _, p := range strings.Split(v, ".") {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, false, fmt.Errorf("version %q: %q is not a number", v, p)
			}
			out = append(out, n)
		}
		return out, suffix != "", nil
	}
	av, apre, err := parse(a)
	if err != nil {
		return false, err
	}
	bv, bpre, err := parse(b)
	if err != nil {
		return false, err
	}
	if c := slices.Compare(av, bv); c != 0 {
		return c < 0, nil
	}
	return apre && !bpre, nil
}

// TestServeSettings_JobAPIAudience: the job API is off unless asked for,
// and an address without an audience (the trusted user header, or every
// job to all) is refused at start, naming both: no local user of the
// serve host reads the whole queue unless the site chose that.
func TestServeSettings_JobAPIAudience(t *testing.T) {
	base := []string{"serve", "--cluster", "c", "--slurm-url", "http://127.0.0.1:6820", "--database-url", "postgres://x/y", "--no-ha"}
	for _, c := range []struct {
		name    string
		args    []string
		addr    string
		wantErr string
	}{
		{"off by default", nil, "", ""},
		{"address without an audience", []string{"--http-addr", "127.0.0.1:9465"}, "", "--http-all-users"},
		{"trusted header", []string{"--http-addr", "127.0.0.1:9465", "--http-user-header", "X-Remote-User"}, "127.0.0.1:9465", ""},
		{"every job to all", []string{"--http-addr", "127.0.0.1:9465", "--http-all-users"}, "127.0.0.1:9465", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := settingsFromArgs(t, append(slices.Clone(base), c.args...))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "--http-user-header") {
					t.Errorf("%v: want an error naming --http-user-header and %s", err, c.wantErr)
				}
				return
			}
			if err != nil || cfg.HTTPAddr != c.addr {
				t.Errorf("%v, job API on %q; want it on %q", err, cfg.HTTPAddr, c.addr)
			}
		})
	}
	// explain and queue read serve's environment, FAIRWAY_HTTP_ADDR
	// included, but answer no HTTP: a serve setting they do not use must
	// not stop them.
	for _, cmd := range []string{"explain", "queue"} {
		args := append([]string{cmd}, base[1:len(base)-1]...)
		if _, err := settingsFromArgs(t, append(args, "--http-addr", "127.0.0.1:9465")); err != nil {
			t.Errorf("%s with serve's --http-addr and no audience: %v; want it to run", cmd, err)
		}
	}
}

// TestShippedEnv_RewriteSettings: the shipped serve.env shows the resource
// rewriting settings an admin turns it on with, commented out (it had no
// FAIRWAY_REWRITE_* line at all), each a setting of serve with the binary's
// default, but for the partition, which is an example.
func TestShippedEnv_RewriteSettings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "contrib", "systemd", "fairway.env"))
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, fl := range serveFlags(false) {
		for _, e := range flagEnvVars(fl) {
			defaults[e] = flagDefault(fl)
		}
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# (FAIRWAY_REWRITE_[A-Z_]+)=(.*)$`).FindAllStringSubmatch(string(b), -1) {
		key, val := m[1], m[2]
		seen[key] = true
		def, ok := defaults[key]
		switch {
		case !ok:
			t.Errorf("fairway.env: %s is no setting of serve", key)
		case key != "FAIRWAY_REWRITE_PARTITIONS" && !sameSetting(val, def):
			t.Errorf("fairway.env: # %s=%s, but the binary's default is %q", key, val, def)
		}
	}
	for _, k := range []string{"FAIRWAY_REWRITE_PARTITIONS", "FAIRWAY_REWRITE_RULES", "FAIRWAY_REWRITE_TABLE"} {
		if !seen[k] {
			t.Errorf("fairway.env does not show %s (commented out)", k)
		}
	}
}
