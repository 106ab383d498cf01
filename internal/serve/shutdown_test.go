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
		// The write cut when the grace ended was sent: Slurm may hold it,
		// so it is logged (TestRunner_WriteOutcomeUnknownLogsDecision).
		{"write stalls", false, 1, true},
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

// signalWriter is a value writer during whose priming or writes SIGTERM
// comes (signal is the Loop context's cancel).
type signalWriter struct {
	fakeWriter
	signal          func()
	onPrime, onSend bool
}

func (w *signalWriter) Prime(ctx context.Context) (int, error) {
	if w.onPrime {
		w.signal()
	}
	return w.fakeWriter.Prime(ctx)
}

func (w *signalWriter) Write(ctx context.Context, jobs []slurmctl.Job, want map[int64]int64) (slurmctl.Report, error) {
	if w.onSend {
		w.signal()
	}
	return w.fakeWriter.Write(ctx, jobs, want)
}

// TestLoop_SignalDuringApplyStartsNoNewWrites: SIGTERM comes while the
// cycle's writes are under way, as the new leader primes its writer (a
// read) or while the value batch goes out. The batch going on finishes,
// but nothing starts after the signal: no value batch after the priming,
// and no power action after the values.
func TestLoop_SignalDuringApplyStartsNoNewWrites(t *testing.T) {
	for _, tc := range []struct {
		name      string
		onPrime   bool
		wantCalls int // value batches sent
	}{
		{"during prime", true, 0},
		{"during the value writes", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			values := &signalWriter{signal: cancel, onPrime: tc.onPrime, onSend: !tc.onPrime}
			pw := &fakePower{}
			ps, err := NewPowerSaver(PowerConfig{Buffer: 1, MaxChangesPerHour: 10, Step: 10 * time.Minute, Horizon: time.Hour},
				"c", &PowerLive{PowerWriter: pw}, discardPowerRec{}, nil, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			running := slurmctl.Job{Job: policy.Job{ID: 1, ArrayTask: -1, User: "a", State: policy.StateRunning, Nodes: 1,
				Start: t0, Partition: "gpu"}, NodeList: []string{"gpu1"}}
			src := &fakeReader{cl: powerCluster(running, job(2, "b", policy.StatePending, time.Second))}
			r := New(Config{Cluster: "c", Policy: "fifo", Field: "site_factor", Range: policy.SiteFactorRange()},
				Parts{Source: src, Sink: &Live{Values: values, Recorder: &fakeStore{}}, Leader: &fakeLeader{leader: true},
					Engine: fifoEngine(t), Power: ps, Now: func() time.Time { return t0.Add(time.Minute) }}, quietLogger())
			var ready atomic.Bool
			if err := r.Loop(ctx, LoopConfig{Interval: time.Millisecond, MaxBackoff: time.Millisecond}, &ready, nil); err != nil {
				t.Fatalf("Loop: %v, want nil", err)
			}
			if values.calls != tc.wantCalls || len(pw.calls) != 0 {
				t.Errorf("after the signal: %d value batches, power actions %v; want %d value batches and no power action",
					values.calls, pw.calls, tc.wantCalls)
			}
		})
	}
}
