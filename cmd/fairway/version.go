package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/fairway-hpc/fairway/sql"
	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, the Go version and the newest schema version this binary knows",
		Action: func(c *cli.Context) error {
			v, rev := buildVersion()
			latest, err := sql.Latest()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "fairway %s%s %s schema %d\n", v, rev, runtime.Version(), latest)
			return nil
		},
	}
}

// buildVersion is the version set at build time (make build: git describe)
// and " (commit)" from the Go toolchain's VCS stamp. A plain `go build` in
// a checkout sets no version: the commit, with -dirty for local changes,
// stands in for it, so that no binary built from git reports just "dev".
func buildVersion() (v, rev string) {
	v = version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v, ""
	}
	var commit string
	var dirty bool
	for _, s := range bi.Settings {
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
