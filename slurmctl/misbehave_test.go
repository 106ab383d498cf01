package slurmctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests here replay captured answers (capture_test.go) the way a
// slurmrestd in trouble sends them: stalled, cut, or refused half way.

// stallingServer sends the status and the first cut bytes of a captured
// answer, then sends nothing more until the client gives up: slurmrestd
// stuck behind a busy slurmctld after its headers went out.
func stallingServer(t *testing.T, rep reply, cut int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body[:cut])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClient_BodyStallsMidRecord: a jobs answer whose body stops in the
// middle of a job record is a timeout within the request timeout, retried
// like one. The decoder used to take the broken read for a bad record,
// skip it, and find the same half record again, for ever.
func TestClient_BodyStallsMidRecord(t *testing.T) {
	for _, c := range captureCombos(t) {
		if c.version != c.newest {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			jobs := c.reply(t, "jobs.json")
			srv := stallingServer(t, jobs, len(jobs.body)/2)
			cl := testClient(t, srv.URL, c.version, func(cfg *Config) { cfg.RequestTimeout = 100 * time.Millisecond })
			done := make(chan error, 1)
			go func() {
				_, err := cl.ListJobs(context.Background())
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("ListJobs: %v, want ErrTimeout", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ListJobs still running 10s after a stalled body, with a 100ms request timeout and 4 attempts")
			}
		})
	}
}

// TestWriterREST_ReadBackStopsWhenSlurmrestdStalls: the writes went
// through, then slurmrestd stalls (slurmctld busy) on the read-back of
// the first job. That read fails after its attempts and the read-back
// stops there: reading back the others would wait the same way for each,
// up to 64 jobs of four timed-out attempts, holding the cycle (and what
// follows the writes) until its own deadline. The writes stay applied.
func TestWriterREST_ReadBackStopsWhenSlurmrestdStalls(t *testing.T) {
	c := captureCombos(t)[6] // 26.05.3/v0.0.45
	routes := writeRoutes(t, c)
	ok := c.reply(t, "update.site_factor-14.json")
	want := map[int64]int64{}
	for i, id := range []int64{10, 13, 14, 15, 17, 20, 21, 22} {
		routes[postPath(c, strconv.FormatInt(id, 10))] = []reply{ok}
		want[id] = int64(100 * (i + 1))
	}
	replay := newReplay(t, routes)
	pending13 := c.reply(t, "job.pending-13.json")
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/slurm/"+c.version+"/job/") {
			replay.Config.Handler.ServeHTTP(w, r)
			return
		}
		reads.Add(1)
		w.WriteHeader(pending13.status)
		_, _ = w.Write(pending13.body[:len(pending13.body)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	cl := testClient(t, srv.URL, c.version, func(cfg *Config) { cfg.RequestTimeout = 50 * time.Millisecond })
	w, err := NewWriter(WriterConfig{Mode: ModeRESTSiteFactor, Range: siteRange()}, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := parseJobs(c.reply(t, "jobs.json").body)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Write(context.Background(), jobs, want)
	if err != nil || len(rep.Applied) != len(want) || len(rep.Failed) != 0 {
		t.Fatalf("Write: %v, applied %d, failed %v; want all %d applied", err, len(rep.Applied), rep.Failed, len(want))
	}
	if n, attempts := reads.Load(), int32(cl.cfg.ReadAttempts); n != attempts || rep.ReadBack.Checked != 0 {
		t.Errorf("%d read-back requests, %d jobs checked; want the %d attempts of the first job's read and none checked", n, rep.ReadBack.Checked, attempts)
	}
}

// TestWriter_HandBackStoppedReportsTheRest: slurmctld refuses the token
// (the captured HTTP 511, error 1007) at the first of three hand-backs.
// The batch stops there, and the two not attempted are reported failed,
// so the caller keeps them to hand back next time: left out of the
// report, serve forgot them, and wrote site factors to jobs whose frozen
// priority a site factor does not move.
func TestWriter_HandBackStoppedReportsTheRest(t *testing.T) {
	c := captureCombos(t)[6] // 26.05.3/v0.0.45
	routes := writeRoutes(t, c)
	routes[c.path("GET", "slurm/job/13")] = []reply{c.reply(t, "job.pending-13.json")}
	routes[postPath(c, "13")] = []reply{c.reply(t, "err.update-forged-token-14.json")}
	srv := newReplay(t, routes)
	jobs, w := captureWriter(t, c, srv, ModeRESTSiteFactor, nil)
	frozen := map[int64]Frozen{13: {Priority: 10000}, 15: {Priority: 10000}, 22: {Priority: 440000}}
	rep, err := w.HandBack(context.Background(), jobs, frozen)
	if !errors.Is(err, ErrTokenRejected) {
		t.Errorf("HandBack: %v, want ErrTokenRejected", err)
	}
	failed := map[int64]bool{}
	for _, f := range rep.Failed {
		failed[f.JobID] = true
	}
	if len(rep.Planned) != 3 || len(rep.Applied) != 0 || len(failed) != 3 {
		t.Errorf("planned %d, applied %d, failed %v; want all 3 planned reported failed", len(rep.Planned), len(rep.Applied), failed)
	}
	if n := srv.count(postPath(c, "15")) + srv.count(postPath(c, "22")); n != 0 {
		t.Errorf("%d hand-backs sent after the token was refused, want none", n)
	}
}

// TestWriter_HandBackStopsWhenSlurmrestdStalls: the re-read before the
// first hand-back stalls mid-answer (slurmctld busy). The hand-backs stop
// there, all reported failed for the next try, instead of each job's
// re-read waiting out its four timed-out attempts in turn.
func TestWriter_HandBackStopsWhenSlurmrestdStalls(t *testing.T) {
	c := captureCombos(t)[6] // 26.05.3/v0.0.45
	replay := newReplay(t, writeRoutes(t, c))
	pending13 := c.reply(t, "job.pending-13.json")
	var reads, posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			posts.Add(1)
			http.NotFound(w, r)
		case strings.HasPrefix(r.URL.Path, "/slurm/"+c.version+"/job/"):
			reads.Add(1)
			w.WriteHeader(pending13.status)
			_, _ = w.Write(pending13.body[:len(pending13.body)/2])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			replay.Config.Handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cl := testClient(t, srv.URL, c.version, func(cfg *Config) { cfg.RequestTimeout = 50 * time.Millisecond })
	w, err := NewWriter(WriterConfig{Mode: ModeRESTSiteFactor, Range: siteRange()}, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := parseJobs(c.reply(t, "jobs.json").body)
	if err != nil {
		t.Fatal(err)
	}
	frozen := map[int64]Frozen{13: {Priority: 10000}, 15: {Priority: 10000}, 22: {Priority: 440000}}
	rep, err := w.HandBack(context.Background(), jobs, frozen)
	if !errors.Is(err, ErrTimeout) || len(rep.Failed) != 3 || len(rep.Applied) != 0 {
		t.Errorf("HandBack: %v, failed %d, applied %d; want ErrTimeout and all 3 failed", err, len(rep.Failed), len(rep.Applied))
	}
	if n, attempts := reads.Load(), int32(cl.cfg.ReadAttempts); n != attempts || posts.Load() != 0 {
		t.Errorf("%d reads, %d hand-backs sent; want the %d attempts of the first job's read and none sent", n, posts.Load(), attempts)
	}
}

// scontrolHandBack hands back three frozen jobs of the v0.0.38 capture
// through scontrol (faked) against a slurmrestd that answers the first
// fine job reads with the captured answer and stalls every later one
// mid-answer (slurmctld busy).
func scontrolHandBack(t *testing.T, fine int32) stalledHandBack {
	t.Helper()
	jobs, _ := fixtureJobs(t)
	frozen := map[int64]Frozen{}
	for i := range jobs {
		if j := &jobs[i]; len(frozen) < 3 && handBackSkip(j, true, Frozen{Priority: j.Priority}) == "" {
			frozen[j.ID] = Frozen{Priority: j.Priority}
		}
	}
	if len(frozen) != 3 {
		t.Fatalf("%d jobs of the fixture can be handed back, want 3", len(frozen))
	}
	captured := fixture(t, "jobs.200.json")
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/slurm/"+V0038+"/job/") {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
		if n.Add(1) <= fine {
			_, _ = w.Write(captured)
			return
		}
		_, _ = w.Write(captured[:len(captured)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	cl := testClient(t, srv.URL, V0038, func(cfg *Config) { cfg.RequestTimeout = 50 * time.Millisecond })
	fake := &fakeRunner{}
	w, werr := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, cl, nil)
	if werr != nil {
		t.Fatal(werr)
	}
	rep, err := w.HandBack(context.Background(), jobs, frozen)
	return stalledHandBack{rep, err, n.Load(), len(fake.calls), int32(cl.cfg.ReadAttempts)}
}

// stalledHandBack is what scontrolHandBack saw: the report and error, the
// job reads slurmrestd answered, the scontrol runs and the client's read
// attempts.
type stalledHandBack struct {
	rep      HandBackReport
	err      error
	reads    int32
	runs     int
	attempts int32
}

// TestWriter_HandBackScontrolStopsWhenSlurmrestdStalls: on 22.05
// (v0.0.38) the hand-back goes through scontrol, but each job is read
// again over REST first; the first re-read stalls mid-answer (slurmctld
// busy). The hand-backs stop there, as over REST: the two jobs not read
// are reported failed (not attempted) for the next try, no scontrol runs,
// and no other job's re-read waits out its four timed-out attempts.
func TestWriter_HandBackScontrolStopsWhenSlurmrestdStalls(t *testing.T) {
	h := scontrolHandBack(t, 0)
	rep, err, reads, runs, attempts := h.rep, h.err, h.reads, h.runs, h.attempts
	if !errors.Is(err, ErrTimeout) || len(rep.Failed) != 3 || len(rep.Applied) != 0 {
		t.Fatalf("HandBack: %v, failed %d, applied %d; want ErrTimeout and all 3 failed", err, len(rep.Failed), len(rep.Applied))
	}
	for _, f := range rep.Failed[1:] {
		if !errors.Is(f.Err, errNotAttempted) {
			t.Errorf("job %d: %v, want not attempted", f.JobID, f.Err)
		}
	}
	if reads != attempts || runs != 0 {
		t.Errorf("%d reads, scontrol run %d times; want the %d attempts of the first job's read and no run", reads, runs, attempts)
	}
}

// TestWriter_HandBackScontrolConfirmStopsWhenSlurmrestdStalls: after the
// scontrol run, each job handed back is read back; once slurmrestd stalls
// on one, the rest are not read (each would wait its read attempts in
// turn) and are reported failed, to be re-read and retried.
func TestWriter_HandBackScontrolConfirmStopsWhenSlurmrestdStalls(t *testing.T) {
	h := scontrolHandBack(t, 3) // the 3 re-reads before the hand-back
	rep, err, reads, runs, attempts := h.rep, h.err, h.reads, h.runs, h.attempts
	if !errors.Is(err, ErrTimeout) || len(rep.Failed) != 3 || len(rep.Applied) != 0 || runs != 1 {
		t.Fatalf("HandBack: %v, failed %d, applied %d, scontrol runs %d; want ErrTimeout, all 3 failed, one run",
			err, len(rep.Failed), len(rep.Applied), runs)
	}
	for _, f := range rep.Failed[1:] {
		if !errors.Is(f.Err, errNotReadBack) || !errors.Is(f.Err, ErrTimeout) {
			t.Errorf("job %d: %v, want not read back after the timeout", f.JobID, f.Err)
		}
	}
	if want := 3 + attempts; reads != want {
		t.Errorf("%d reads; want the 3 re-reads and the %d attempts of the first read back", reads, attempts)
	}
}

// TestJobRejected_ControllerTrouble: an update slurmrestd answers with one
// of Slurm's communication errors (slurmctld busy or unreachable, a backup
// slurmctld in standby) would fail every other job of the batch alike, and
// stops it; a job's own refusal fails that job alone.
func TestJobRejected_ControllerTrouble(t *testing.T) {
	for _, tc := range []struct {
		kind   error
		status int
		number int
		msg    string
		perJob bool
	}{
		{ErrServer, 500, 5004, "Socket timed out on send/recv operation", false},
		{ErrServer, 500, 1001, "Unable to contact slurm controller (connect failure)", false},
		{ErrServer, 500, 1804, "Rate limit exceeded, please retry momentarily", false},
		{ErrServer, 500, 2027, "Slurm backup controller in standby mode", false},
		{ErrSlurm, 200, 1025, "Process is shutting down and closing all communications", false},
		{ErrHTTP, 404, 2017, "Invalid job id specified", true},
		{ErrServer, 500, 2021, "Job/step already completing or completed", true},
		{ErrSlurm, 200, 2084, "Job has already finished", true},
	} {
		err := fmt.Errorf("update job 14: %w", &APIError{Op: "POST /slurm/v0.0.42/job/14", Status: tc.status, Kind: tc.kind,
			Slurm: []SlurmError{{Number: tc.number, Error: tc.msg}}})
		if got := jobRejected(err); got != tc.perJob {
			t.Errorf("error %d (%s), HTTP %d: per-job rejection %v, want %v", tc.number, tc.msg, tc.status, got, tc.perJob)
		}
	}
}

// TestWriterREST_PriorityWriteOutcomeUnknown: in rest-priority mode the
// update of job 22 is sent and slurmrestd then stalls (slurmctld busy) past
// the request timeout. Slurm may hold the admin priority: the failure says
// its outcome is unknown and the Writer keeps the job to hand back, since
// the next cycle reads the value as the job's own and leaves it alone. A
// job Slurm refused (the captured 404, "Invalid job id specified") is no
// such case.
func TestWriterREST_PriorityWriteOutcomeUnknown(t *testing.T) {
	c := captureCombos(t)[6] // 26.05.3/v0.0.45
	replay := newReplay(t, writeRoutes(t, c))
	gone := c.reply(t, "err.update-nonexistent-999999.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/slurm/"+c.version+"/job/22":
			// The update went out; no answer comes. The body is read
			// first: only then does the server see the client go away.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		case r.Method == http.MethodPost && r.URL.Path == "/slurm/"+c.version+"/job/13":
			w.WriteHeader(gone.status)
			_, _ = w.Write(gone.body)
		default:
			replay.Config.Handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cl := testClient(t, srv.URL, c.version, func(cfg *Config) { cfg.RequestTimeout = 50 * time.Millisecond })
	w, err := NewWriter(WriterConfig{Mode: ModeRESTPriority, Range: restRange(ModeRESTPriority)}, cl, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := parseJobs(c.reply(t, "jobs.json").body)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Write(context.Background(), jobs, map[int64]int64{13: 5000, 22: 123456})
	if !errors.Is(err, ErrTimeout) || len(rep.Failed) != 2 {
		t.Fatalf("Write: %v, failed %+v; want ErrTimeout and both failed", err, rep.Failed)
	}
	for _, f := range rep.Failed {
		if want := f.JobID == 22; f.Unknown != want {
			t.Errorf("job %d: outcome unknown %v, want %v (%v)", f.JobID, f.Unknown, want, f.Err)
		}
	}
	frozen := w.Frozen()
	if f, ok := frozen[22]; !ok || f.Priority != 123456 {
		t.Errorf("frozen %+v: want job 22 kept to hand back at 123456", frozen)
	}
	if _, ok := frozen[13]; ok {
		t.Errorf("frozen %+v: job 13's write was refused, nothing to hand back", frozen)
	}
}
