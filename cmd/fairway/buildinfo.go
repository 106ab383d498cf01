package main

// This file says which build a binary is, for `fairway version`
// and the logs: the version stamped at build time, or the commit the Go
// toolchain recorded when none was.

import "runtime/debug"

// buildVersion is stamped (set at build time; make build: git describe, else
// "dev") and " (commit)" from the Go toolchain's VCS stamp. A plain `go
// build` in a checkout stamps no version: the commit, with -dirty for local
// changes, stands in for it, so that no binary built from git reports just
// "dev".
func buildVersion(stamped string) (v, rev string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return stamped, ""
	}
	return buildVersionOf(stamped, bi.Settings)
}

func buildVersionOf(stamped string, settings []debug.BuildSetting) (v, rev string) {
	v = stamped
	var commit string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if commit == "" {
		return v, ""
	}
	if v == "dev" {
		if dirty {
			commit += "-dirty"
		}
		return commit, ""
	}
	return v, " (" + commit + ")"
}
