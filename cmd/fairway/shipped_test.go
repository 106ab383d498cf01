package main

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
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
