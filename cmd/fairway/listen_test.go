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
var listenSetting = regexp.MustCompile(`(?:FAIRWAY_LISTEN=|--listen[ =])"?([^\s"'` + "`" + `]+)`)

// TestShippedListenIsLoopback: serve's default and every listen address in a
// shipped file bind to loopback, so /metrics is never exposed by copying
// an example (contrib/systemd/fairway.env used to say 0.0.0.0).
func TestShippedListenIsLoopback(t *testing.T) {
	for _, f := range serveCommand().Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "listen" {
			checkLoopback(t, "serve --listen default", sf.Value)
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
