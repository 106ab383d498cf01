package main

import (
	"fmt"
	"runtime"

	"github.com/fairway-hpc/fairway/sql"
	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print the version, the Go version and the newest schema version this binary knows",
		Action: printVersion,
	}
}

// printVersion is `fairway version` and `fairway --version`.
func printVersion(c *cli.Context) error {
	v, rev := buildVersion(version)
	latest, err := sql.Latest()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "fairway %s%s %s schema %d\n", v, rev, runtime.Version(), latest)
	return nil
}
