package accounting_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// dbjobsFixture is slurmrestd's answer to a /slurmdb/v0.0.38/jobs query,
// captured from the lab by slurmctl's TestRecordDBJobs (make record): four
// finished jobs (one failed, two array tasks) and one still running.
const dbjobsFixture = "../slurmctl/testdata/v0.0.38/dbjobs.200.json"

// fakeSlurmdb answers DBJobs with fixed bytes and remembers the queries.
type fakeSlurmdb struct {
	body    []byte
	err     error
	cluster string
	windows [][2]time.Time
}

func (f *fakeSlurmdb) DBJobs(_ context.Context, cluster string, since, until time.Time, sink accounting.JobRecordSink) (bool, error) {
	f.cluster = cluster
	f.windows = append(f.windows, [2]time.Time{since, until})
	if f.err != nil {
		return false, f.err
	}
	return sendRecords(f.body, sink)
}

// sendRecords hands sink the job records of body, an answer of slurmdbd,
// as slurmctl's client does; a nil body is slurmdbd finding nothing.
func sendRecords(body []byte, sink accounting.JobRecordSink) (bool, error) {
	if body == nil {
		return false, nil
	}
	var doc struct {
		Jobs *[]json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return false, err
	}
	if doc.Jobs == nil {
		return false, errors.New(`no "jobs" array`)
	}
	sink.Restart()
	for _, r := range *doc.Jobs {
		sink.Record(r)
	}
	return true, nil
}

func TestRESTHistory_FinishedJobs(t *testing.T) {
	body, err := os.ReadFile(dbjobsFixture)
	if err != nil {
		t.Fatalf("fixture: %v (capture it with make record)", err)
	}
	doc, err := accounting.ParseSacctJSON("fixture", body)
	if err != nil || len(doc.Jobs) != 5 || len(doc.Bad) != 0 {
		t.Fatalf("fixture: %d jobs, %d bad, %v; want 5 jobs", len(doc.Jobs), len(doc.Bad), err)
	}
	// The finished jobs, by role (the part of the name after the run's tag).
	type job struct {
		Role, User string
		State      policy.State
		Task       int
	}
	role := func(name string) string { return name[strings.LastIndexByte(name, '-')+1:] }
	var end time.Time
	for _, j := range doc.Jobs {
		if j.End.After(end) {
			end = j.End
		}
	}
	finished := []job{
		{"array", "carol", policy.StateCompleted, 0},
		{"array", "carol", policy.StateCompleted, 1},
		{"gpu", "alice", policy.StateCompleted, -1},
		{"shardfail", "bob", policy.StateFailed, -1},
	}
	const h = time.Hour
	for _, tc := range []struct {
		name         string
		since, until time.Time
		windows      [][2]time.Time // the queries DBJobs got
		want         []job
	}{
		{"window around the jobs", end.Add(-h), end.Add(h), [][2]time.Time{{end.Add(-h), end.Add(h)}}, finished},
		{"window starts at the last end (inclusive)", end, end.Add(h), [][2]time.Time{{end, end.Add(h)}}, finished},
		{"window ends at the last end (exclusive)", end.Add(-h), end, [][2]time.Time{{end.Add(-h), end}}, nil},
		{"window after the jobs", end.Add(time.Second), end.Add(h), [][2]time.Time{{end.Add(time.Second), end.Add(h)}}, nil},
		// Every chunk's answer holds the jobs (the fake repeats it); only
		// the chunk they ended in keeps them.
		{"three days in chunks", end.Add(-36 * h), end.Add(36 * h),
			[][2]time.Time{{end.Add(-36 * h), end.Add(-12 * h)}, {end.Add(-12 * h), end.Add(12 * h)}, {end.Add(12 * h), end.Add(36 * h)}}, finished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSlurmdb{body: body}
			rh := &accounting.RESTHistory{Client: f, Cluster: "fairwaylab"}
			jobs, _, err := rh.FinishedJobs(context.Background(), tc.since, tc.until)
			if err != nil {
				t.Fatal(err)
			}
			if f.cluster != "fairwaylab" {
				t.Errorf("DBJobs asked for cluster %q, want fairwaylab", f.cluster)
			}
			if diff := cmp.Diff(tc.windows, f.windows); diff != "" {
				t.Errorf("DBJobs windows (-want +got):\n%s", diff)
			}
			var got []job
			for _, j := range jobs {
				got = append(got, job{role(j.Name), j.User, j.State, j.ArrayTask})
			}
			slices.SortFunc(got, func(a, b job) int {
				if c := strings.Compare(a.Role, b.Role); c != 0 {
					return c
				}
				return a.Task - b.Task
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("finished jobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRESTHistory_NothingOrError(t *testing.T) {
	now := time.Now()
	h := &accounting.RESTHistory{Client: &fakeSlurmdb{}}
	if jobs, _, err := h.FinishedJobs(context.Background(), now.Add(-time.Hour), now); err != nil || len(jobs) != 0 {
		t.Errorf("nothing found: %d jobs, %v; want none and no error", len(jobs), err)
	}
	boom := errors.New("slurmrestd: unreachable")
	h = &accounting.RESTHistory{Client: &fakeSlurmdb{err: boom}}
	if _, _, err := h.FinishedJobs(context.Background(), now.Add(-time.Hour), now); !errors.Is(err, boom) {
		t.Errorf("DBJobs error: got %v, want it passed on", err)
	}
	h = &accounting.RESTHistory{Client: &fakeSlurmdb{body: []byte("Unable find requested URL.")}}
	if _, _, err := h.FinishedJobs(context.Background(), now.Add(-time.Hour), now); err == nil {
		t.Error("a body that is not JSON: no error")
	}
}

// TestRESTHistory_Captured reads Fairway's own /slurmdb/<v>/jobs query as
// Slurm 24.11.7 and 26.05.3 answered it, in every version: the five jobs
// that had finished (manifests: 1 COMPLETED, 2 FAILED exit 3, 3 COMPLETED
// shard, 4 CANCELLED, 5 FAILED signal 9). Then one record is spoiled: it is
// skipped and counted, the other four are read.
func TestRESTHistory_Captured(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	type fin struct {
		ID    int64
		User  string
		State policy.State
		Exit  int
		GPUs  int
	}
	want := []fin{{1, "alice", policy.StateCompleted, 0, 1}, {2, "bob", policy.StateFailed, 3, 1}, {3, "carol", policy.StateCompleted, 0, 0},
		{4, "carol", policy.StateCancelled, 0, 1}, {5, "alice", policy.StateFailed, 0, 0}}
	for rel, vs := range map[string][]string{
		"slurm-24.11.7": {"v0.0.40", "v0.0.41", "v0.0.42"},
		"slurm-26.05.3": {"v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"},
	} {
		for _, v := range vs {
			body, err := os.ReadFile(filepath.Join(root, rel, v, "slurmdb.jobs.fairway-query.json"))
			if err != nil {
				t.Fatal(err)
			}
			at, err := os.ReadFile(filepath.Join(root, rel, "cli", "captured-at.txt"))
			if err != nil {
				t.Fatal(err)
			}
			now, err := time.Parse(time.RFC3339, strings.TrimSpace(string(at)))
			if err != nil {
				t.Fatal(err)
			}
			since := now.Add(-24 * time.Hour) // the jobs ran in the hour before the capture
			h := &accounting.RESTHistory{Client: &fakeSlurmdb{body: body}}
			jobs, _, err := h.FinishedJobs(context.Background(), since, now)
			if err != nil {
				t.Fatalf("%s %s: %v", rel, v, err)
			}
			var got []fin
			for _, j := range jobs {
				got = append(got, fin{j.ID, j.User, j.State, j.ExitCode, j.GPUs})
			}
			slices.SortFunc(got, func(a, b fin) int { return int(a.ID - b.ID) })
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(fin{}, "Exit")); diff != "" {
				t.Errorf("%s %s (-manifest +read):\n%s", rel, v, diff)
			}
			if len(got) > 1 && got[1].Exit != 3 {
				t.Errorf("%s %s: job 2 exit code %d, want 3", rel, v, got[1].Exit)
			}

			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			for _, ji := range doc["jobs"].([]any) {
				if j := ji.(map[string]any); j["job_id"].(float64) == 3 {
					j["state"] = "not an object"
				}
			}
			spoiled, _ := json.Marshal(doc)
			h = &accounting.RESTHistory{Client: &fakeSlurmdb{body: spoiled}}
			jobs, bad, err := h.FinishedJobs(context.Background(), since, now)
			if err != nil || len(jobs) != 4 || len(bad) != 1 || !errors.Is(bad[0], accounting.ErrMalformed) {
				t.Errorf("%s %s, one spoiled record: %d jobs, %v, bad %v; want 4, nil, one malformed record", rel, v, len(jobs), err, bad)
			}
		}
	}
}

// TestParseSacctJSON_NeverAllocatedHasNoStart reads slurmdbd's REST answers
// of 24.11.7 and 26.05.3 (Fairway's own query, every version). Slurm sends
// the jobs that never got a node with a start time anyway (the end of the
// query window; sacct sends NO_VAL for a job cancelled while pending): a
// job without allocated nodes must parse with no start, and every job that
// was allocated keeps its own.
func TestParseSacctJSON_NeverAllocatedHasNoStart(t *testing.T) {
	root := shareddata.Dir(t, "data", "slurmrestd")
	for rel, vs := range map[string][]string{
		"slurm-24.11.7": {"v0.0.40", "v0.0.41", "v0.0.42"},
		"slurm-26.05.3": {"v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"},
	} {
		for _, v := range vs {
			name := filepath.Join(rel, v, "slurmdb.jobs.fairway-query.json")
			body, err := os.ReadFile(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Jobs []struct {
					ID    int64           `json:"job_id"`
					Nodes string          `json:"nodes"`
					Time  json.RawMessage `json:"time"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatal(err)
			}
			allocated := map[int64]bool{}
			for _, j := range raw.Jobs {
				allocated[j.ID] = j.Nodes != "" && j.Nodes != "None assigned"
			}
			doc, err := accounting.ParseSacctJSON(name, body)
			if err != nil || len(doc.Bad) != 0 {
				t.Fatalf("%s: %v, bad %v", name, err, doc.Bad)
			}
			never := 0
			for _, j := range doc.Jobs {
				switch {
				case !allocated[j.ID] && !j.Start.IsZero():
					t.Errorf("%s: job %d never had a node but starts at %v", name, j.ID, j.Start)
				case allocated[j.ID] && j.Start.IsZero():
					t.Errorf("%s: job %d ran on a node but has no start", name, j.ID)
				}
				if !allocated[j.ID] {
					never++
				}
			}
			if never == 0 {
				t.Errorf("%s: no job without a node; the capture should hold pending ones", name)
			}
		}
	}
}

// TestRESTHistory_EmptyDaysLogOneLine: thirty days with no jobs give one
// summary line, not one per day.
func TestRESTHistory_EmptyDaysLogOneLine(t *testing.T) {
	var logged bytes.Buffer
	now := time.Now()
	h := &accounting.RESTHistory{Client: &fakeSlurmdb{}, Log: slog.New(slog.NewTextHandler(&logged, nil))}
	if jobs, _, err := h.FinishedJobs(context.Background(), now.AddDate(0, 0, -30), now); err != nil || len(jobs) != 0 {
		t.Fatalf("%d jobs, %v; want none and no error", len(jobs), err)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "empty_windows=30 windows=30") {
		t.Errorf("logged %d lines, want one INFO summary of 30 empty windows:\n%s", len(lines), logged.String())
	}
}

// cappedSlurmdb is a bigSlurmdb whose client refuses any answer larger
// than max bytes, as slurmctl's does past Config.MaxResponseBytes.
type cappedSlurmdb struct {
	bigSlurmdb
	max int
}

type errTooLarge struct{}

func (errTooLarge) Error() string  { return "body larger than the response cap" }
func (errTooLarge) TooLarge() bool { return true }

func (f *cappedSlurmdb) DBJobs(_ context.Context, _ string, since, until time.Time, sink accounting.JobRecordSink) (bool, error) {
	body, err := f.bigSlurmdb.answer(since, until)
	if err == nil && len(body) > f.max {
		return false, errTooLarge{}
	}
	if err != nil {
		return false, err
	}
	return sendRecords(body, sink)
}

// TestRESTHistory_SplitsAnswerOverCap: a day whose answer is over the
// slurmrestd client's size cap (measured on slurmrestd 26.05.3's real
// answer repeated: 60,000 jobs in a day are 318 MB, over the default 256
// MiB) failed the whole ingest with "body larger than 268435456 bytes",
// and every rerun failed on the same day. The day is now read again in
// halves until each fits, down to 15 minutes; below that the error stands.
func TestRESTHistory_SplitsAnswerOverCap(t *testing.T) {
	day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
	h := newBigHistory(t, 96) // one job every 15 minutes
	quarter := 0              // the largest answer of a quarter of the day
	for q := range 4 {
		var b bytes.Buffer
		if _, err := h.write(&b, day.Add(time.Duration(q)*6*time.Hour), day.Add(time.Duration(q+1)*6*time.Hour)); err != nil {
			t.Fatal(err)
		}
		quarter = max(quarter, b.Len())
	}
	slurmdb := &cappedSlurmdb{bigSlurmdb: bigSlurmdb{h: h}, max: quarter} // a quarter of the day fits, a half does not
	jobs, bad, err := (&accounting.RESTHistory{Client: slurmdb}).FinishedJobs(context.Background(), day, day.Add(24*time.Hour))
	if err != nil || len(bad) != 0 {
		t.Fatalf("FinishedJobs: %v, %d bad", err, len(bad))
	}
	if len(jobs) != 96 {
		t.Errorf("%d jobs, want the day's 96", len(jobs))
	}
	seen := map[int64]bool{}
	for _, j := range jobs {
		if seen[j.ID] {
			t.Errorf("job %d read twice", j.ID)
		}
		seen[j.ID] = true
	}
	// 1 day, 2 halves, 4 quarters.
	if len(slurmdb.windows) != 7 {
		t.Errorf("%d queries %v, want 7 (the day, its halves, its quarters)", len(slurmdb.windows), slurmdb.windows)
	}

	slurmdb = &cappedSlurmdb{bigSlurmdb: bigSlurmdb{h: h}, max: 10}
	_, _, err = (&accounting.RESTHistory{Client: slurmdb}).FinishedJobs(context.Background(), day, day.Add(24*time.Hour))
	if err == nil || !strings.Contains(err.Error(), "raise the cap") {
		t.Errorf("nothing fits: %v, want the cap error with its window", err)
	}
	if last := slurmdb.windows[len(slurmdb.windows)-1]; last[1].Sub(last[0]) < 15*time.Minute {
		t.Errorf("split down to %s, want 15 minutes at least", last[1].Sub(last[0]))
	}
}
