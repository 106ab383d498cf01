package accounting_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
)

// sacctRow is the part of a parsed job the fixture pins down; times are
// checked as invariants because they are whatever the lab's clock said.
type sacctRow struct {
	ID        int64
	ArrayJob  int64
	ArrayTask int
	Name      string // without the capture's unique prefix
	User      string
	Account   string
	Partition string
	QOS       string
	State     policy.State
	ExitCode  int
	Nodes     int
	CPUs      int
	MemoryMB  int64
	GPUs      int
	Shards    int
	TimeLimit time.Duration
	Started   bool
	Hosts     string
}

func TestParseSacctJSON_Captured(t *testing.T) {
	data, err := os.ReadFile(sacctFixture)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := accounting.ParseSacctJSON("sacct-22.05.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Bad) != 0 {
		t.Fatalf("bad records in the captured fixture: %v", doc.Bad)
	}
	row := func(id, arrayJob int64, task int, name, user, acct string, st policy.State, exit, nodes, cpus int, mem int64, gpus, shards int, limit time.Duration, hosts string) sacctRow {
		return sacctRow{id, arrayJob, task, name, user, acct, "gpu", "normal", st, exit, nodes, cpus, mem, gpus, shards, limit, hosts != "", hosts}
	}
	h := time.Hour
	want := []sacctRow{
		row(27, 0, -1, "gpu2", "alice", "physics", policy.StateCompleted, 0, 1, 1, 1000, 2, 0, 5*time.Minute, "gpu1"),
		// Slurm 22.05's JSON loses the exit code of a job that exited
		// non-zero (sacct's text output says 3:0): only the state tells.
		row(28, 0, -1, "shard-fail", "bob", "physics", policy.StateFailed, 0, 1, 1, 1000, 0, 3, h, "gpu1"),
		row(29, 29, 2, "array", "carol", "chem", policy.StateCompleted, 0, 1, 1, 1000, 1, 0, h, "gpu2"),
		row(30, 29, 0, "array", "carol", "chem", policy.StateCompleted, 0, 1, 1, 1000, 1, 0, h, "gpu1"),
		row(31, 29, 1, "array", "carol", "chem", policy.StateCompleted, 0, 1, 1, 1000, 1, 0, h, "gpu2"),
		row(32, 0, -1, "twonode", "carol", "chem", policy.StateCompleted, 0, 2, 2, 2000, 2, 0, h, "gpu[1-2]"),
		row(33, 0, -1, "signal", "alice", "physics", policy.StateFailed, 128+9, 1, 1, 1000, 0, 0, h, "gpu1"),
		row(34, 0, -1, "timeout", "alice", "physics", policy.StateTimeout, 0, 1, 1, 1000, 0, 0, time.Minute, "gpu1"),
		row(35, 0, -1, "cancel-running", "bob", "physics", policy.StateCancelled, 0, 1, 1, 1000, 0, 0, h, "gpu1"),
		// Never started: only requested TRES, and the lab's DefMemPerCPU;
		// no node ("None assigned").
		row(36, 0, -1, "cancel-pending", "bob", "physics", policy.StateCancelled, 0, 1, 1, 1000, 0, 0, h, ""),
	}
	var got []sacctRow
	for i, j := range doc.Jobs {
		_, name, _ := strings.Cut(j.Name, "-")
		got = append(got, sacctRow{j.ID, j.ArrayJob, j.ArrayTask, name, j.User, j.Account, j.Partition, j.QOS, j.State,
			j.ExitCode, j.Nodes, j.CPUs, j.MemoryMB, j.GPUs, j.Shards, j.TimeLimit, !j.Start.IsZero(), j.Hosts})
		if j.Cluster != "fairwaylab" {
			t.Errorf("job %d: cluster %q", j.ID, j.Cluster)
		}
		if j.Submit.IsZero() || j.End.IsZero() || (!j.Start.IsZero() && (j.Start.Before(j.Submit) || j.End.Before(j.Start))) {
			t.Errorf("job %d: times out of order: submit %v start %v end %v", j.ID, j.Submit, j.Start, j.End)
		}
		if !strings.Contains(doc.Where[i], "jobs[") {
			t.Errorf("job %d: location %q", j.ID, doc.Where[i])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed jobs (-want +got):\n%s", diff)
	}
}

func TestParseSacctJSON_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		malformed      bool
	}{
		{"not json", `{"jobs": [`, "in.json: not a sacct --json document", true},
		{"slurm errors", `{"errors": [{"error": "Invalid user", "description": "no such user"}], "jobs": []}`, "in.json: sacct reported errors: Invalid user (no such user)", false},
		// Not a sacct document: read as no jobs, a history sync would move
		// its watermark past a window it never read.
		{"no jobs array", `{"meta": {}, "errors": []}`, `in.json: not a sacct --json document: no "jobs" array`, true},
		{"an object, not a document", `{"job_id": 3}`, `in.json: not a sacct --json document: no "jobs" array`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := accounting.ParseSacctJSON("in.json", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
			if got := errors.Is(err, accounting.ErrMalformed); got != tc.malformed {
				t.Errorf("errors.Is(err, ErrMalformed) = %v, want %v", got, tc.malformed)
			}
		})
	}
}

// TestParseSacctJSON_EmptyWindow: an empty window is "Nothing found" with
// "jobs": [] (22.05's sacct, seen on the lab), or without the array: no
// jobs and no error either way.
func TestParseSacctJSON_EmptyWindow(t *testing.T) {
	nothing := `"errors": [{"description": "Nothing found", "error_number": 9003, "error": "Nothing found with query", "source": "slurmdb_jobs_get"}]`
	for _, in := range []string{`{"meta": {}, ` + nothing + `, "jobs": []}`, `{"meta": {}, ` + nothing + `}`, `{"jobs": []}`} {
		doc, err := accounting.ParseSacctJSON("in.json", []byte(in))
		if err != nil || len(doc.Jobs) != 0 || len(doc.Bad) != 0 {
			t.Errorf("%s: %+v, %v; want no jobs and no error", in, doc, err)
		}
	}
}

// TestParseSacctJSON_BadRecord corrupts one job object of the captured
// document: that job lands in Bad with its index, the others parse.
func TestParseSacctJSON_BadRecord(t *testing.T) {
	data, err := os.ReadFile(sacctFixture)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"job_id": 28,`, `"job_id": "twenty-eight",`, 1)
	if bad == string(data) {
		t.Fatal("fixture has no job 28 to corrupt")
	}
	doc, err := accounting.ParseSacctJSON("s.json", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Bad) != 1 || len(doc.Jobs) != 9 {
		t.Fatalf("got %d jobs and %d bad, want 9 and 1", len(doc.Jobs), len(doc.Bad))
	}
	if msg := doc.Bad[0].Error(); !strings.HasPrefix(msg, "s.json: jobs[1]") || !errors.Is(doc.Bad[0], accounting.ErrMalformed) {
		t.Errorf("bad record error %q", msg)
	}
}
