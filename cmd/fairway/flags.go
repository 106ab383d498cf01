package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/urfave/cli/v2"
)

// Flag groups several commands share, so that a setting has one name, one
// environment variable and one meaning everywhere.

// slurmFlags reach slurmrestd (serve, ingest from slurmdbd, shares sync
// from slurmrestd). scope starts each usage where only one source of the
// command reads them; urlUsage says what setting the URL does.
func slurmFlags(scope, urlUsage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "slurm-url", Usage: urlUsage, EnvVars: []string{"FAIRWAY_SLURM_URL"}},
		&cli.StringFlag{Name: "slurm-user", Value: "slurm", Usage: scope + "user name sent to slurmrestd (an operator or SlurmUser)", EnvVars: []string{"FAIRWAY_SLURM_USER"}},
		&cli.StringFlag{Name: "slurm-token-file", Usage: scope + "file holding the JWT (re-read when it changes); else $SLURM_JWT", EnvVars: []string{"FAIRWAY_SLURM_TOKEN_FILE"}},
		&cli.BoolFlag{Name: "scontrol-token", Usage: scope + "mint and renew the JWT with \"scontrol token\" (Fairway runs as SlurmUser)", EnvVars: []string{"FAIRWAY_SCONTROL_TOKEN"}},
		&cli.StringFlag{Name: "slurm-api", Usage: scope + "pin the REST API version (v0.0.38, v0.0.40 to v0.0.45); default: negotiate", EnvVars: []string{"FAIRWAY_SLURM_API"}},
		&cli.BoolFlag{Name: "slurm-allow-insecure-http", Usage: scope + "allow an http:// --slurm-url on another host, which sends the Slurm token in clear text (refused otherwise; loopback and https need nothing)", EnvVars: []string{"FAIRWAY_SLURM_ALLOW_INSECURE_HTTP"}},
		&cli.Int64Flag{Name: "slurm-max-body", Value: slurmctl.DefaultMaxResponseBytes, Usage: scope + "largest slurmrestd answer read, in bytes: about 10 kB per job record on Slurm 24.11+ (3 kB on 22.05), so 256 MiB holds ~27,000 jobs; raise it with MaxJobCount", EnvVars: []string{"FAIRWAY_SLURM_MAX_BODY"}},
	}
}

// slurmConnect reads slurmFlags; the token may also come from $SLURM_JWT.
func slurmConnect(c *cli.Context) slurmctl.ConnectConfig {
	return slurmctl.ConnectConfig{URL: c.String("slurm-url"), User: c.String("slurm-user"), TokenFile: c.String("slurm-token-file"),
		TokenEnv: os.Getenv("SLURM_JWT"), ScontrolToken: c.Bool("scontrol-token"), APIVersion: c.String("slurm-api"), MaxBody: c.Int64("slurm-max-body"),
		AllowInsecureHTTP: c.Bool("slurm-allow-insecure-http")}
}

// printJSON is every command's --json output: indented, one value.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
