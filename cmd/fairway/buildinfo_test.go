package main

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersionOf(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "2252f4f0123456789abcdef"}
	clean, dirty := debug.BuildSetting{Key: "vcs.modified", Value: "false"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	for _, tc := range []struct {
		name, stamped string
		settings      []debug.BuildSetting
		v, rev        string
	}{
		{"released", "v1.2.0", []debug.BuildSetting{rev, clean}, "v1.2.0", " (2252f4f01234)"},
		{"plain go build", "dev", []debug.BuildSetting{rev, clean}, "2252f4f01234", ""},
		{"plain go build, local changes", "dev", []debug.BuildSetting{rev, dirty}, "2252f4f01234-dirty", ""},
		{"no VCS stamp", "dev", nil, "dev", ""},
		{"stamped, no VCS stamp", "v1.2.0", []debug.BuildSetting{{Key: "vcs.revision", Value: "short"}}, "v1.2.0", ""},
	} {
		if v, r := buildVersionOf(tc.stamped, tc.settings); v != tc.v || r != tc.rev {
			t.Errorf("%s: (%q, %q), want (%q, %q)", tc.name, v, r, tc.v, tc.rev)
		}
	}
}
