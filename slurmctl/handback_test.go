package slurmctl

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriter_PriorityKeepsNice: Slurm resets a job's nice to 0 when an
// admin priority is set, so the nice a rest-priority Writer reports (and
// the decision log keeps, for the hand-back) is the one read before the
// first write, not the 0 read after it. Job 20 of the 24.11.7 capture has
// nice 100.
func TestWriter_PriorityKeepsNice(t *testing.T) {
	c := combo{captureReleases(t)[0], V0041}
	routes := writeRoutes(t, c)
	routes[postPath(c, "20")] = []reply{c.reply(t, "update.priority-22.json")}
	srv := newReplay(t, routes)
	jobs, w := captureWriter(t, c, srv, ModeRESTPriority, nil)
	job20 := func() *Job {
		for i := range jobs {
			if jobs[i].ID == 20 {
				return &jobs[i]
			}
		}
		t.Fatal("job 20 not in the capture")
		return nil
	}
	if j := job20(); j.Nice != 100 {
		t.Fatalf("job 20 read with nice %d, want the captured 100", j.Nice)
	}
	rep, err := w.Write(context.Background(), jobs, map[int64]int64{20: 500000})
	if err != nil || len(rep.Applied) != 1 || rep.Applied[0].Nice != 100 {
		t.Fatalf("first write: %v, applied %+v; want job 20 with nice 100", err, rep.Applied)
	}
	// What Slurm then holds: the admin priority, and nice 0.
	j := job20()
	j.Priority, j.Nice = 500000, 0
	rep, err = w.Write(context.Background(), jobs, map[int64]int64{20: 600000})
	if err != nil || len(rep.Applied) != 1 || rep.Applied[0].Nice != 100 {
		t.Fatalf("second write: %v, applied %+v; want nice 100 carried on", err, rep.Applied)
	}
	if diff := cmp.Diff(map[int64]Frozen{20: {Priority: 600000, Nice: 100}}, w.Frozen()); diff != "" {
		t.Errorf("Frozen (-want +got):\n%s", diff)
	}
	// A Writer started later learns the nice from the decision log.
	_, w2 := captureWriter(t, c, srv, ModeRESTPriority, nil)
	w2.Adopt(map[int64]Frozen{20: {Priority: 600000, Nice: 100}})
	j.Priority = 600000
	rep, err = w2.Write(context.Background(), jobs, map[int64]int64{20: 700000})
	if err != nil || len(rep.Applied) != 1 || rep.Applied[0].Nice != 100 {
		t.Errorf("adopted write: %v, applied %+v; want nice 100", err, rep.Applied)
	}
}

// TestWriter_HandBackREST: on 24.11.7 (v0.0.41), job 22 holds the admin
// priority 400000 a capture wrote. HandBack reads it again, sends one
// update resetting the priority (INFINITE) and restoring the nice, and
// reads it back: the capture taken before that priority was written
// (v0.0.40's jobs.json, priority 10000, multifactor's) is what a
// successful hand-back reads; the frozen capture again means it did not
// take, which is a failure, never Applied. A held job (16), a job whose
// priority is not the one written (20) and one not read are skipped.
func TestWriter_HandBackREST(t *testing.T) {
	c := combo{captureReleases(t)[0], V0041}
	frozenJobs := c.reply(t, "jobs.json")                             // 22 at 400000
	released := captured(t, filepath.Join(c.dir, V0040), "jobs.json") // 22 at 10000
	frozen := map[int64]Frozen{22: {400000, 0}, 16: {0, 0}, 20: {123456, 100}, 999: {5, 0}}
	for _, tc := range []struct {
		name     string
		readBack reply
		applied  int
	}{{"taken", released, 1}, {"not taken", frozenJobs, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			routes := writeRoutes(t, c)
			routes[c.path("GET", "slurm/job/22")] = []reply{frozenJobs, tc.readBack}
			routes[c.path("GET", "slurm/job/16")] = []reply{c.reply(t, "job.held-16.json")}
			routes[postPath(c, "22")] = []reply{c.reply(t, "update.priority-22.json")}
			srv := newReplay(t, routes)
			jobs, w := captureWriter(t, c, srv, ModeRESTSiteFactor, nil)
			rep, err := w.HandBack(context.Background(), jobs, frozen)
			if len(rep.Applied) != tc.applied || len(rep.Failed) != 1-tc.applied {
				t.Fatalf("HandBack: %v, applied %+v, failed %+v", err, rep.Applied, rep.Failed)
			}
			if tc.applied == 0 && !errors.Is(err, errStillFrozen) {
				t.Errorf("a hand-back that did not take: %v, want errStillFrozen", err)
			}
			skipped := map[int64]string{}
			for _, s := range rep.Skipped {
				skipped[s.JobID] = s.Reason
			}
			want := map[int64]string{16: "held", 20: "priority no longer Fairway's", 999: "not in the jobs read"}
			if diff := cmp.Diff(want, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			var posted []string
			for i, u := range srv.urls {
				if strings.HasSuffix(u.Path, "/job/22") && len(srv.bodies[i]) > 0 {
					posted = append(posted, string(srv.bodies[i]))
				}
			}
			if want := []string{`{"priority":{"set":false,"infinite":true,"number":0},"nice":0}`}; !cmp.Equal(want, posted) {
				t.Errorf("posted %q, want %q", posted, want)
			}
		})
	}
}

// TestJobUpdate_HandBackBody: the hand-back carries the nice to restore;
// v0.0.38 cannot express it and says what to use instead.
func TestJobUpdate_HandBackBody(t *testing.T) {
	n := int64(100)
	b, err := JobUpdate{HandBack: &n}.body(V0045)
	if err != nil || string(b) != `{"priority":{"set":false,"infinite":true,"number":0},"nice":100}` {
		t.Errorf("v0.0.45 body %s, %v", b, err)
	}
	if _, err := (JobUpdate{HandBack: &n}).body(V0038); err == nil || !strings.Contains(err.Error(), "scontrol release") {
		t.Errorf("v0.0.38: %v, want an error naming scontrol release", err)
	}
	p := int64(5)
	if _, err := (JobUpdate{HandBack: &n, Priority: &p}).body(V0045); err == nil {
		t.Error("a hand-back with a priority was accepted")
	}
}

// TestWriter_HandBackScontrol: without REST v0.0.40 (22.05), the hand-back
// is `scontrol release` then `scontrol update nice=N`, in one scontrol
// process; a job scontrol refuses fails alone.
func TestWriter_HandBackScontrol(t *testing.T) {
	jobs, by := fixtureJobs(t)
	a, b := by["pend-gpus"][0], by["pend-untyped"][0]
	frozen := map[int64]Frozen{a.ID: {a.Priority, 100}, b.ID: {b.Priority, 0}}
	fake := &fakeRunner{stderr: []byte("Job has already finished for job " + strconv.FormatInt(b.ID, 10) + "\n"), err: exitError(t)}
	w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: fake}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.HandBack(context.Background(), jobs, frozen)
	first, second := a, b
	if b.ID < a.ID {
		first, second = b, a
	}
	line := func(j *Job) string {
		return "release " + j.Target() + "\nupdate jobid=" + j.Target() + " nice=" + strconv.FormatInt(frozen[j.ID].Nice, 10) + "\n"
	}
	if len(fake.stdin) != 1 || string(fake.stdin[0]) != line(first)+line(second) {
		t.Errorf("scontrol stdin %q, want %q", fake.stdin, line(first)+line(second))
	}
	if err == nil || len(rep.Applied) != 1 || rep.Applied[0].JobID != a.ID || len(rep.Failed) != 1 || rep.Failed[0].JobID != b.ID {
		t.Errorf("HandBack: %v, applied %+v, failed %+v; want %d handed back and %d failed", err, rep.Applied, rep.Failed, a.ID, b.ID)
	}
}

// TestWriter_HandBackScontrolOutcomes: the scontrol hand-back classifies
// each job's outcome with runBatch, the classifier the site-factor and
// resize writers use: unattributed lines are joined with "; " and name the
// outcome even when scontrol exits non-zero, a failed exit without any
// per-job line says so, and a run that did not finish (not started,
// killed) leaves every job not named by a line unknown.
func TestWriter_HandBackScontrolOutcomes(t *testing.T) {
	jobs, by := fixtureJobs(t)
	a, b := by["pend-gpus"][0], by["pend-untyped"][0]
	if b.ID < a.ID {
		a, b = b, a
	}
	bid := strconv.FormatInt(b.ID, 10)
	exit := exitError(t)
	tests := []struct {
		name   string
		runner *fakeRunner
		want   map[int64]string // failed job → error; the others applied
	}{
		{"refused", &fakeRunner{err: exit, stderr: []byte("Job has already finished for job " + bid + "\n")},
			map[int64]string{b.ID: "/s update jobid=" + b.Target() + ": Job has already finished"}},
		{"unattributed lines, failed exit", &fakeRunner{err: exit, stderr: []byte("slurm_update error: Zero Bytes were transmitted\nsocket closed\n")},
			map[int64]string{a.ID: "/s: outcome unknown: slurm_update error: Zero Bytes were transmitted; socket closed",
				b.ID: "/s: outcome unknown: slurm_update error: Zero Bytes were transmitted; socket closed"}},
		{"unattributed lines, clean exit", &fakeRunner{stderr: []byte("slurm_update error: Zero Bytes were transmitted\nsocket closed\n")},
			map[int64]string{a.ID: "/s: outcome unknown: slurm_update error: Zero Bytes were transmitted; socket closed",
				b.ID: "/s: outcome unknown: slurm_update error: Zero Bytes were transmitted; socket closed"}},
		{"failed exit, no per-job error", &fakeRunner{err: exit},
			map[int64]string{a.ID: "/s: outcome unknown: exit status 1 with no per-job error", b.ID: "/s: outcome unknown: exit status 1 with no per-job error"}},
		{"killed after one refusal", &fakeRunner{err: errors.New("signal: killed"), stderr: []byte("Job has already finished for job " + bid + "\n")},
			map[int64]string{a.ID: "/s: outcome unknown: signal: killed", b.ID: "/s update jobid=" + b.Target() + ": Job has already finished"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frozen := map[int64]Frozen{a.ID: {a.Priority, 100}, b.ID: {b.Priority, 0}}
			w, err := NewWriter(WriterConfig{Mode: ModeScontrolSiteFactor, Range: siteRange(), Runner: tt.runner, Scontrol: "/s"}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.HandBack(context.Background(), jobs, frozen)
			got := map[int64]string{}
			for _, f := range rep.Failed {
				got[f.JobID] = f.Err.Error()
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("failed (-want +got):\n%s", d)
			}
			if len(rep.Applied)+len(rep.Failed) != 2 || (err == nil) != (len(tt.want) == 0) {
				t.Errorf("HandBack: %v, applied %+v, failed %+v", err, rep.Applied, rep.Failed)
			}
		})
	}
}
