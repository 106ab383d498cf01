package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// pingServer answers /ping with the ping captured from the lab's
// slurmrestd v0.0.38 (slurmctl/testdata), enough to connect.
func pingServer(t *testing.T) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "slurmctl", "testdata", "v0.0.38", "ping.200.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/ping") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenHistory(t *testing.T) {
	ctx := context.Background()
	h, err := openHistory(ctx, slurmctl.ConnectConfig{}, "/opt/slurm/bin/sacct", "kth", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := h.HistorySource.(*accounting.SacctHistory); !ok || h.Via != "sacct" || s.Path != "/opt/slurm/bin/sacct" || s.Cluster != "kth" {
		t.Errorf("no URL: got %T %+v via %q, want sacct at the given path for kth", h.HistorySource, h.HistorySource, h.Via)
	}

	srv := pingServer(t)
	h, err = openHistory(ctx, slurmctl.ConnectConfig{URL: srv.URL, User: "root", TokenEnv: "jwt", APIVersion: "v0.0.38"}, "sacct", "kth", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := h.HistorySource.(*accounting.RESTHistory); !ok || r.Cluster != "kth" || h.Via != "slurmrestd v0.0.38 at "+srv.URL {
		t.Errorf("URL: got %T via %q, want slurmrestd v0.0.38 at %s", h.HistorySource, h.Via, srv.URL)
	}

	if _, err := openHistory(ctx, slurmctl.ConnectConfig{URL: "http://127.0.0.1:1", TokenEnv: "jwt"}, "sacct", "kth", quietLogger()); err == nil || !strings.Contains(err.Error(), "slurmrestd at http://127.0.0.1:1") {
		t.Errorf("dead slurmrestd: err = %v, want it named", err)
	}
}

func TestConnectShares(t *testing.T) {
	srv := pingServer(t)
	for _, tc := range []struct {
		name string
		cfg  slurmctl.ConnectConfig
		want string // error text; "" connects
	}{
		{"no url", slurmctl.ConnectConfig{TokenEnv: "jwt"}, "--slurm-url (FAIRWAY_SLURM_URL) is required"},
		{"no token", slurmctl.ConnectConfig{URL: srv.URL}, "no token: set --slurm-token-file"},
		{"dead", slurmctl.ConnectConfig{URL: "http://127.0.0.1:1", TokenEnv: "jwt"}, "slurmrestd at http://127.0.0.1:1"},
		{"ok", slurmctl.ConnectConfig{URL: srv.URL, User: "root", TokenEnv: "jwt", APIVersion: "v0.0.38"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, url, err := connectShares(context.Background(), tc.cfg, quietLogger())
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.want)
				}
				return
			}
			if err != nil || url != srv.URL || c.Version() != "v0.0.38" {
				t.Fatalf("got %v at %q, err %v; want v0.0.38 at %s", c, url, err, srv.URL)
			}
		})
	}
}
