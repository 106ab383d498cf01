package prolog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRootPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other owners")
	}
	base := t.TempDir() // root's, 0700, under the sticky /tmp
	mk := func(rel string, mode os.FileMode, uid int, dir bool) string {
		p := filepath.Join(base, rel)
		var err error
		if dir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, []byte("#!/bin/sh\n"), mode)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err == nil {
			err = os.Chown(p, uid, uid)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := mk("ok", 0o755, 0, true)
	okBin := mk("ok/scontrol", 0o755, 0, false)
	userDir := mk("user", 0o755, 1001, true)
	worldDir := mk("world", 0o777, 0, true)
	stickyDir := mk("sticky", 0o777|os.ModeSticky, 0, true)
	rootUnderSticky := mk("sticky/root", 0o755, 0, true)
	groupBin := mk("ok/group-writable", 0o775, 0, false)
	userBin := mk("ok/users", 0o755, 1001, false)
	link := filepath.Join(base, "ok/link")
	if err := os.Symlink(filepath.Join(userDir), link); err != nil {
		t.Fatal(err)
	}

	// A user's link in a sticky directory, to a directory of root's: the
	// user can point it elsewhere after the check, at a directory of their
	// own where root would keep its state.
	userLink := filepath.Join(stickyDir, "users-link")
	if err := os.Symlink(ok, userLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(userLink, 1001, 1001); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		path string
		want string // "" accepted, else part of the error
	}{
		{okBin, ""},
		{ok, ""},
		{filepath.Join(ok, "state/not-yet"), ""},
		{rootUnderSticky, ""},
		{filepath.Join(rootUnderSticky, "state"), ""},
		{userDir, "belongs to uid 1001"},
		{filepath.Join(userDir, "state"), "belongs to uid 1001"},
		{filepath.Join(worldDir, "state"), "group or others can write it"},
		{filepath.Join(stickyDir, "state"), "group or others can write it"}, // a user may create it first
		{groupBin, "group or others can write it"},
		{userBin, "belongs to uid 1001"},
		{filepath.Join(link, "state"), "belongs to uid 1001"},
		{userLink, "belongs to uid 1001"},
		{filepath.Join(userLink, "state"), "belongs to uid 1001"},
		{"relative/dir", "absolute"},
	}
	for _, tt := range tests {
		err := CheckRootPath(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckRootPath(%s): %v, want accepted", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckRootPath(%s): %v, want an error with %q", tt.path, err, tt.want)
		}
	}
	if err := CheckRootPath("/dev/kmsg"); err != nil {
		t.Errorf("/dev/kmsg: %v", err)
	}
}
