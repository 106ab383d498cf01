package serve

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/slurmctl"
)

// capturedAnswer is a real slurmrestd answer of the 26.05.3 capture
// (shared data, read in place) and its HTTP status, from the .headers file
// beside it.
type capturedAnswer struct {
	status int
	body   []byte
}

func capture2605(t *testing.T, version, name string) capturedAnswer {
	t.Helper()
	dir := filepath.Join(shareddata.Dir(t, "data", "slurmrestd", "slurm-26.05.3"), version)
	body, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	h, err := os.Open(filepath.Join(dir, name+".headers"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sc := bufio.NewScanner(h)
	sc.Scan()
	f := strings.Fields(sc.Text())
	if len(f) < 2 {
		t.Fatalf("%s.headers: status line %q", name, sc.Text())
	}
	st, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("%s.headers: status line %q", name, sc.Text())
	}
	return capturedAnswer{st, body}
}

// cycleThrough runs one leader cycle of fifo against the slurmrestd at
// url (v0.0.45), reading its queue and writing in mode through the real
// client and Writer (timeout: the request timeout, 0 the default), and
// returns the result and what was recorded.
func cycleThrough(t *testing.T, url string, mode slurmctl.Mode, timeout time.Duration) (*CycleResult, *fakeStore) {
	t.Helper()
	const v = slurmctl.V0045
	client, err := slurmctl.New(context.Background(), slurmctl.Config{URL: url, User: "root",
		Token: slurmctl.StaticToken(testToken(t)), Version: v, RequestTimeout: timeout}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	field, rng := "site_factor", policy.SiteFactorRange()
	if mode == slurmctl.ModeRESTPriority {
		field, rng = "priority", policy.PriorityRange()
	}
	writer, err := slurmctl.NewWriter(slurmctl.WriterConfig{Mode: mode, Range: rng}, client, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	queue, err := client.ListJobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{}
	r := New(Config{Cluster: "fwlab", Policy: "fifo", Field: field, Range: rng},
		Parts{Source: &fakeReader{cl: &slurmctl.Cluster{Jobs: queue, Version: v}}, Sink: &Live{Values: writer, Recorder: store},
			Leader: &fakeLeader{leader: true}, Engine: fifoEngine(t)}, quietLogger())
	res, err := r.RunCycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, store
}

// TestRunner_WriteRefusedForOneJobLogsNoDecision: job 13 ended between
// the read and the write, so slurmrestd refuses its update (the captured
// 404, error 2017 "Invalid job id specified"); every other pending job is
// still written, and the cycle's records say only what Slurm took: no
// decision row claims a value was written to job 13, and the cycle row
// counts one write error.
func TestRunner_WriteRefusedForOneJobLogsNoDecision(t *testing.T) {
	const v = slurmctl.V0045
	jobs := capture2605(t, v, "jobs.json")
	ok := capture2605(t, v, "update.site_factor-14.json")
	gone := capture2605(t, v, "err.update-nonexistent-999999.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a capturedAnswer
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/slurm/"+v+"/jobs":
			a = jobs
		case r.Method == http.MethodPost && r.URL.Path == "/slurm/"+v+"/job/13":
			a = gone
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/slurm/"+v+"/job/"):
			a = ok
		default: // nodes, partitions, the writer's read-back: not needed here
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	defer srv.Close()
	res, store := cycleThrough(t, srv.URL, slurmctl.ModeRESTSiteFactor, 0)
	if len(res.Report.Failed) != 1 || res.Report.Failed[0].JobID != 13 {
		t.Fatalf("failed writes %+v, want job 13's alone", res.Report.Failed)
	}
	applied := map[int64]bool{}
	for _, ch := range res.Report.Applied {
		applied[ch.JobID] = true
	}
	if len(applied) != len(res.Report.Planned)-1 || len(applied) < 5 {
		t.Errorf("%d of %d planned writes applied, want all but job 13's", len(applied), len(res.Report.Planned))
	}
	for _, d := range store.decisions {
		if !applied[d.JobID] {
			t.Errorf("decision logged for job %d, value %d, whose write Slurm refused", d.JobID, d.Value)
		}
	}
	if len(store.decisions) != len(applied) {
		t.Errorf("%d decisions logged, want one per applied write (%d)", len(store.decisions), len(applied))
	}
	if len(store.cycles) != 1 || store.cycles[0].Written != len(applied) || store.cycles[0].WriteErrors != 1 {
		t.Errorf("cycle rows %+v, want one counting %d written and 1 write error", store.cycles, len(applied))
	}
}

// TestRunner_WriteOutcomeUnknownLogsDecision: in rest-priority mode the
// update of job 13 is sent and slurmrestd stalls past the request timeout.
// Slurm may hold that admin priority, so it is logged as a decision (a
// later site-factor serve's takeOver finds it there and hands it back
// once Slurm shows it frozen); the jobs the stopped batch never sent are
// not.
func TestRunner_WriteOutcomeUnknownLogsDecision(t *testing.T) {
	const v = slurmctl.V0045
	jobs := capture2605(t, v, "jobs.json")
	ok := capture2605(t, v, "update.priority-22.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a capturedAnswer
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/slurm/"+v+"/jobs":
			a = jobs
		case r.Method == http.MethodPost && r.URL.Path == "/slurm/"+v+"/job/13":
			// Sent, and no answer comes; the body is read first, as
			// only then does the server see the client give up.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/slurm/"+v+"/job/"):
			a = ok
		default: // the writer's read-back: not needed here
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	defer srv.Close()
	res, store := cycleThrough(t, srv.URL, slurmctl.ModeRESTPriority, 50*time.Millisecond)
	want := map[int64]bool{}
	for _, ch := range res.Report.Applied {
		want[ch.JobID] = true
	}
	var unknown, notSent int
	for _, f := range res.Report.Failed {
		if f.Unknown {
			unknown++
			want[f.JobID] = true
			if f.JobID != 13 {
				t.Errorf("job %d's outcome unknown, want job 13's alone", f.JobID)
			}
		} else {
			notSent++
		}
	}
	if unknown != 1 {
		t.Fatalf("failed writes %+v: want job 13's outcome unknown", res.Report.Failed)
	}
	logged := map[int64]bool{}
	for _, d := range store.decisions {
		logged[d.JobID] = true
	}
	if !maps.Equal(logged, want) {
		t.Errorf("decisions logged for %v, want the %d applied writes and job 13's (%d not sent logged none)", logged, len(res.Report.Applied), notSent)
	}
}
