package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/serve"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// capturedServer answers from the real Slurm 26.05.3 v0.0.45 captures
// (../shared/data/slurmrestd): the reads of a cycle, and every job update
// with the captured success, but for the jobs in refuse, which get the
// captured answer to an update of a job that does not exist (HTTP 404,
// error 2017).
func capturedServer(t *testing.T, refuse map[string]bool) *httptest.Server {
	t.Helper()
	dir := filepath.Join(shareddata.Dir(t, "data", "slurmrestd", "slurm-26.05.3"), "v0.0.45")
	read := func(name string) (int, []byte) { return readCapture(t, dir, name) }
	files := map[string]string{
		"GET /slurm/v0.0.45/jobs": "jobs.json", "GET /slurm/v0.0.45/nodes": "nodes.json", "GET /slurm/v0.0.45/partitions": "partitions.json",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.Method+" "+r.URL.Path]
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/slurm/v0.0.45/job/") {
			name, ok = "update.site_factor-14.json", true
			if refuse[strings.TrimPrefix(r.URL.Path, "/slurm/v0.0.45/job/")] {
				name = "err.update-nonexistent-999999.json"
			}
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		st, body := read(name)
		w.WriteHeader(st)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServeOnce_FailsOnAFailedWrite: `serve --once` with a REST writer
// against the captured 26.05.3 answers, where Slurm refuses job 13's
// update: the other jobs are written, and the run ends with an error (a
// non-zero exit) naming job 13. With no refusal it succeeds.
func TestServeOnce_FailsOnAFailedWrite(t *testing.T) {
	for _, mode := range []string{"rest-site-factor", "rest-priority"} {
		for _, refuse := range []map[string]bool{{"13": true}, {}} {
			t.Run(mode+"/refuse="+strconv.Itoa(len(refuse)), func(t *testing.T) {
				srv := capturedServer(t, refuse)
				cfg, err := settingsFromArgs(t, []string{"serve", "--cluster", "fwlab", "--slurm-url", srv.URL, "--database-url", "postgres://x/y",
					"--no-ha", "--once", "--write-mode", mode})
				if err != nil {
					t.Fatal(err)
				}
				enc := base64.RawURLEncoding.EncodeToString
				tok := enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"exp":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}`)) + ".sig"
				client, err := slurmctl.New(context.Background(), slurmctl.Config{URL: srv.URL, User: "root", Token: slurmctl.StaticToken(tok), Version: slurmctl.V0045}, nil)
				if err != nil {
					t.Fatal(err)
				}
				writer, err := slurmctl.NewWriter(slurmctl.WriterConfig{Mode: cfg.WriteMode, Range: cfg.Runner.Range}, client, nil)
				if err != nil {
					t.Fatal(err)
				}
				d, _, resizer, _ := rewriteDeps()
				d.Source, d.Values, d.Resizes, d.Comments = client, writer, resizer, resizer
				res := runCycle(t, cfg, d)
				var out bytes.Buffer
				err = printOnce(&out, res, cfg)
				if len(res.Report.Applied) == 0 {
					t.Fatalf("nothing written (report %+v): the test proves nothing", res.Report)
				}
				if len(refuse) == 0 {
					if err != nil || len(res.Report.Failed) != 0 {
						t.Errorf("all writes accepted: %v, failed %v", err, res.Report.Failed)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "job 13:") || !strings.Contains(err.Error(), "1 of ") {
					t.Fatalf("printOnce: %v, want an error naming job 13", err)
				}
				if !strings.Contains(out.String(), "1 failed") {
					t.Errorf("the summary does not count the failure:\n%s", out.String())
				}
				t.Logf("serve --once error: %v", err)
			})
		}
	}
}

var _ serve.Source = (*slurmctl.Client)(nil)

// readCapture is a captured slurmrestd answer in dir: the body of file
// name and the HTTP status from the first line of name.headers.
func readCapture(t *testing.T, dir, name string) (int, []byte) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(filepath.Join(dir, name+".headers"))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(h)).ReadLine()
	st, err := strconv.Atoi(strings.Fields(string(line))[1])
	if err != nil {
		t.Fatal(err)
	}
	return st, body
}

// otherLeader is the Leadership of a serve while another one holds the
// lease.
type otherLeader struct{}

func (otherLeader) Leader(context.Context) bool { return false }
func (otherLeader) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

// TestServeOnce_NotLeader: `serve --once` without --dry-run while another
// serve holds the lease writes nothing. It must say that is why and fail,
// not print "dry run" and exit 0 as if the values had been pushed; with
// --dry-run nothing was asked to be written, so it succeeds.
func TestServeOnce_NotLeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dry      bool
		wantLine string // the summary's mode
		wantErr  string // "" none
	}{
		{"write asked", false, "(not the leader: another serve holds the lease, nothing written)", "another fairway serve holds the leader lease of cluster c"},
		{"dry run", true, "(dry run: nothing written)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.New("fifo", nil)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := policy.NewEngine(policy.EngineParams{Policy: pol, GPUs: 8})
			if err != nil {
				t.Fatal(err)
			}
			var sink serve.Sink = &serve.Live{Values: appliedValues{}, Recorder: &countingStore{}}
			if tc.dry {
				sink = serve.NewPlanner(&countingStore{}, nil)
			}
			rcfg := serve.Config{Cluster: "c", Policy: "fifo", Field: "site_factor", Range: policy.SiteFactorRange()}
			r := serve.New(rcfg, serve.Parts{Source: &countingSource{cl: &slurmctl.Cluster{Jobs: []slurmctl.Job{textJob(1, "a", 0)}}},
				Sink: sink, Leader: otherLeader{}, Engine: eng}, quietLogger())
			res, err := r.RunCycle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = printOnce(&out, res, serveConfig{Runner: rcfg, Planned: tc.dry, HA: true, Once: true})
			if first, _, _ := strings.Cut(out.String(), "\n"); !strings.HasSuffix(first, tc.wantLine) {
				t.Errorf("summary %q, want it to end in %q", first, tc.wantLine)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("printOnce: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("printOnce: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
