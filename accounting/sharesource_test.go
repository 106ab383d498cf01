package accounting_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
)

// capturedShares is a SharesClient answering with a captured
// /slurm/<v>/shares body, or failing with err.
type capturedShares struct {
	body  []byte
	err   error
	calls int
}

func (c *capturedShares) Shares(context.Context) ([]byte, error) { c.calls++; return c.body, c.err }
func (c *capturedShares) Version() string                        { return "v0.0.42" }

func TestSharesSource_Read(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	conf := filepath.Join(dir, "shares.conf")
	if err := os.WriteFile(conf, []byte("physics 60\nchem 40\nphysics:alice 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	confText, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	wantConf, err := accounting.ParseSharesConfig(conf, strings.NewReader(string(confText)))
	if err != nil {
		t.Fatal(err)
	}
	// sacctmgr replayed: a script printing what sacctmgr printed on the lab.
	assoc, err := filepath.Abs("testdata/sacctmgr-assoc.txt")
	if err != nil {
		t.Fatal(err)
	}
	sacctmgr := filepath.Join(dir, "sacctmgr")
	if err := os.WriteFile(sacctmgr, []byte("#!/bin/sh\nexec cat "+assoc+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	assocText, err := os.ReadFile(assoc)
	if err != nil {
		t.Fatal(err)
	}
	wantAssoc, err := accounting.ParseAssociations("sacctmgr", assocText, "fairwaylab")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "data", "slurmrestd"), "slurm-24.11.7", "v0.0.42", "shares.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantREST, err := accounting.ParseRESTShares("captured", body, "fwlab24")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		src        accounting.SharesSource
		cluster    string
		client     *capturedShares
		connectErr error
		want       []accounting.ShareNode
		wantFrom   string
		wantErr    string
	}{
		{name: "config", src: accounting.SharesSource{From: "config", File: conf}, cluster: "fairwaylab", want: wantConf, wantFrom: "config"},
		{name: "slurmdbd", src: accounting.SharesSource{From: "slurmdbd", Sacctmgr: sacctmgr, Slurm: slurmctl.Commands{}}, cluster: "fairwaylab", want: wantAssoc, wantFrom: "slurmdbd"},
		{name: "slurmrestd is stored as slurmdbd", src: accounting.SharesSource{From: "slurmrestd"}, cluster: "fwlab24",
			client: &capturedShares{body: body}, want: wantREST, wantFrom: "slurmdbd"},
		{name: "slurmrestd refuses", src: accounting.SharesSource{From: "slurmrestd"}, cluster: "fwlab24",
			client: &capturedShares{err: errors.New("HTTP 404")}, wantErr: "slurmrestd at http://rest.example:6820: HTTP 404"},
		{name: "slurmrestd unreachable", src: accounting.SharesSource{From: "slurmrestd"}, cluster: "fwlab24",
			connectErr: errors.New("connection refused"), wantErr: "connection refused"},
		{name: "unknown source", src: accounting.SharesSource{From: "ldap"}, wantErr: `--from "ldap": want slurmdbd, slurmrestd or config`},
		{name: "file with slurmdbd", src: accounting.SharesSource{From: "slurmdbd", File: conf}, wantErr: "--file: only with --from config"},
		{name: "file with slurmrestd", src: accounting.SharesSource{From: "slurmrestd", File: conf}, client: &capturedShares{body: body},
			wantErr: "--file: only with --from config"},
		{name: "config without file", src: accounting.SharesSource{From: "config"}, wantErr: "--file: required with --from config"},
		{name: "missing file", src: accounting.SharesSource{From: "config", File: filepath.Join(dir, "none.conf")}, wantErr: "none.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			connects := 0
			if tc.client != nil || tc.connectErr != nil {
				tc.src.REST = func(context.Context) (accounting.SharesClient, string, error) {
					connects++
					if tc.connectErr != nil {
						return nil, "", tc.connectErr
					}
					return tc.client, "http://rest.example:6820", nil
				}
			}
			got, from, err := tc.src.Read(ctx, tc.cluster)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.HasPrefix(tc.wantErr, "--") && connects > 0 {
					t.Errorf("slurmrestd contacted %d times before a setting mistake was named", connects)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if from != tc.wantFrom {
				t.Errorf("stored as %q, want %q", from, tc.wantFrom)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
		})
	}
}

// TestSharesSource_Via: `shares sync --from slurmrestd` printed "from
// slurmdbd", the source the tree is stored under, not the road it came by.
func TestSharesSource_Via(t *testing.T) {
	for _, tc := range []struct {
		src  accounting.SharesSource
		want string
	}{
		{accounting.SharesSource{From: accounting.SharesFromSlurmdbd}, "slurmdbd"},
		{accounting.SharesSource{From: accounting.SharesFromSlurmrestd}, "slurmdbd through slurmrestd"},
		{accounting.SharesSource{From: accounting.SharesFromConfig, File: "/etc/fairway/shares.conf"}, "the config file /etc/fairway/shares.conf"},
	} {
		if got := tc.src.Via(); got != tc.want {
			t.Errorf("%s: Via() = %q, want %q", tc.src.From, got, tc.want)
		}
	}
}
