// Package buildinfo says which build a binary is, for `fairway version`
// and the logs: the version stamped at build time, or the commit the Go
// toolchain recorded when none was.
package buildinfo

import "runtime/debug"

// Version is stamped (set at build time; make build: git describe, else
// "dev") and " (commit)" from the Go toolchain's VCS stamp. A plain `go
// build` in a checkout stamps no version: the commit, with -dirty for local
// changes, stands in for it, so that no binary built from git reports just
// "dev".
func Version(stamped string) (v, rev string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return stamped, ""
	}
	return versionOf(stamped, bi.Settings)
}

func versionOf(stamped string, settings []debug.BuildSetting) (v, rev string) {
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
