package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// TestLoop_ShutdownWhileSlurmrestdStalls: SIGTERM comes while slurmrestd
// stalls mid-answer, through a database outage. Loop returns within
// StopGrace + drainTimeout (well within the unit's TimeoutStopSec), not
// when the request timeout (a minute here) or the cycle's deadline ends,
// and the records the cycles made, which the database did not take, are
// spilled to BufferDir for the next serve rather than lost with the
// process. A stalled read is given up at once; a stalled write gets the
// grace.
func TestLoop_ShutdownWhileSlurmrestdStalls(t *testing.T) {
	const v = slurmctl.V0045
	jobs := capture2605(t, v, "jobs.json")
	answers := map[string]capturedAnswer{
		"/slurm/" + v + "/nodes":      capture2605(t, v, "nodes.json"),
		"/slurm/" + v + "/partitions": capture2605(t, v, "partitions.json"),
	}
	update := capture2605(t, v, "update.site_factor-14.json")
	for _, tc := range []struct {
		name       string
		stallRead  bool // the second cycle's jobs read stalls; else the first cycle's writes
		wantCycles int
		decisions  bool
	}{
		{"read stalls", true, 2, true},
		{"write stalls", false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stalled, release := make(chan struct{}, 1), make(chan struct{})
			stall := func(w http.ResponseWriter, r *http.Request, a capturedAnswer) {
				w.WriteHeader(a.status)
				_, _ = w.Write(a.body[:len(a.body)/2])
				w.(http.Flusher).Flush()
				select {
				case stalled <- struct{}{}:
				default:
				}
				select {
				case <-r.Context().Done():
				case <-release: // the test is over
				}
			}
			var jobReads atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodGet && r.URL.Path == "/slurm/"+v+"/jobs":
					if jobReads.Add(1) > 1 && tc.stallRead {
						stall(w, r, jobs)
						return
					}
					w.WriteHeader(jobs.status)
					_, _ = w.Write(jobs.body)
				case r.Method == http.MethodPost:
					stall(w, r, update)
				default:
					a, ok := answers[r.URL.Path]
					if !ok {
						http.NotFound(w, r)
						return
					}
					w.WriteHeader(a.status)
					_, _ = w.Write(a.body)
				}
			}))
			defer srv.Close()
			defer close(release)
			client, err := slurmctl.New(context.Background(), slurmctl.Config{URL: srv.URL, User: "root",
				Token: slurmctl.StaticToken(testToken(t)), Version: v, RequestTimeout: time.Minute}, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			var values ValueWriter = &fakeWriter{}
			if !tc.stallRead {
				if values, err = slurmctl.NewWriter(slurmctl.WriterConfig{Mode: slurmctl.ModeRESTSiteFactor, Range: policy.SiteFactorRange()},
					client, quietLogger()); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			r := New(Config{Cluster: "fwlab", Policy: "fifo", Field: "site_factor", Range: policy.SiteFactorRange(), BufferDir: dir},
				Parts{Source: client, Sink: &Live{Values: values, Recorder: &fakeStore{down: true}},
					Leader: &fakeLeader{leader: true}, Engine: fifoEngine(t)}, quietLogger())

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := LoopConfig{Interval: time.Millisecond, MaxBackoff: time.Millisecond, StopGrace: 50 * time.Millisecond}
			done := make(chan error, 1)
			go func() {
				var ready atomic.Bool
				done <- r.Loop(ctx, cfg, &ready, nil)
			}()
			select {
			case <-stalled:
			case err := <-done:
				t.Fatalf("Loop returned before slurmrestd stalled: %v", err)
			}
			cancel() // SIGTERM
			bound := cfg.StopGrace + drainTimeout
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Loop: %v, want nil (exit status 0)", err)
				}
			case <-time.After(bound):
				t.Fatalf("Loop still running %s after the signal", bound)
			}

			files, err := r.buffer.spills()
			if err != nil {
				t.Fatal(err)
			}
			var cycles, decisions int
			for _, p := range files {
				bt, err := readSpill(p)
				if err != nil {
					t.Fatal(err)
				}
				cycles += len(bt.Cycles)
				decisions += len(bt.Decisions)
			}
			if cycles != tc.wantCycles || (decisions > 0) != tc.decisions {
				entries, _ := os.ReadDir(dir)
				t.Errorf("spilled %d cycle rows and %d decisions in %d files (%d entries in the buffer directory); want %d cycle rows and decisions %v",
					cycles, decisions, len(files), len(entries), tc.wantCycles, tc.decisions)
			}
		})
	}
}
