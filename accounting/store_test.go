package accounting_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// freshStore creates an empty database on the lab's PostgreSQL, migrates
// it, and returns a Store and pool on it; both go when the test ends.
func freshStore(t testing.TB) (*accounting.Store, *pgxpool.Pool) {
	t.Helper()
	pool := lab.Get(t).DatabasePool(t)
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := store.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store, pool
}

// tracesDir returns the shared traces folder, skipping the test when it is
// absent (a fresh clone), failing it under CI=true.
func tracesDir(t testing.TB) string {
	t.Helper()
	return shareddata.Traces(t)
}

// traceHead returns the first n lines of a shared trace, uncompressed.
func traceHead(t testing.TB, file string, n int) []byte {
	t.Helper()
	return []byte(shareddata.GzipHead(t, filepath.Join(tracesDir(t), file), n))
}

// tableState is everything in the tables ingest writes, row by row, so two
// states compare equal only if the tables are identical (timestamps of
// insertion and update included).
func tableState(t testing.TB, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tbl := range []string{"job", "usage_daily", "usage_dirty", "cluster", "kv_state"} {
		var n int
		var sum *string
		err := pool.QueryRow(context.Background(),
			`SELECT count(*), md5(string_agg(t::text, E'\n' ORDER BY t::text)) FROM `+tbl+` t`).Scan(&n, &sum)
		if err != nil {
			t.Fatal(err)
		}
		s := "<empty>"
		if sum != nil {
			s = *sum
		}
		out[tbl] = fmt.Sprintf("%d rows, md5 %s", n, s)
	}
	return out
}

func countRows(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func importTrace(t testing.TB, store *accounting.Store, data []byte, f trace.Format, name string, skipBad bool) (accounting.Summary, error) {
	t.Helper()
	return importTraceFrom(t, store, bytes.NewReader(data), f, name, skipBad)
}

// importTraceFrom imports a trace from r: a seekable r takes the two-pass
// path, a stream (readOnce) the one-pass path.
func importTraceFrom(t testing.TB, store *accounting.Store, r io.Reader, f trace.Format, name string, skipBad bool) (accounting.Summary, error) {
	t.Helper()
	src, err := accounting.NewTraceSource(r, f, name, "kth", skipBad)
	if err != nil {
		t.Fatal(err)
	}
	return store.Import(context.Background(), src, accounting.ImportOptions{Source: string(f), SkipBad: skipBad})
}

// readOnce hides Seek: a pipe, as far as Import can tell.
type readOnce struct{ io.Reader }

// TestImport_TraceTwiceIdentical imports a real trace twice, on both import
// paths: the second run changes nothing, not even a timestamp, and the
// usage ledger matches the job table.
func TestImport_TraceTwiceIdentical(t *testing.T) {
	data := traceHead(t, "KTH-SP2-filtered.swf.gz", 3000)
	for _, tc := range []struct {
		name string
		in   func() io.Reader
	}{
		{"two pass", func() io.Reader { return bytes.NewReader(data) }},
		{"one pass", func() io.Reader { return readOnce{bytes.NewReader(data)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, pool := freshStore(t)
			first, err := importTraceFrom(t, store, tc.in(), trace.SWF, "kth.swf", false)
			if err != nil {
				t.Fatal(err)
			}
			if first.Inserted == 0 || first.Inserted != first.Read || first.Rejected != 0 {
				t.Fatalf("first import: %+v", first)
			}
			before := tableState(t, pool)
			second, err := importTraceFrom(t, store, tc.in(), trace.SWF, "kth.swf", false)
			if err != nil {
				t.Fatal(err)
			}
			want := accounting.Summary{Read: first.Read, Unchanged: first.Inserted}
			if diff := cmp.Diff(want, second); diff != "" {
				t.Errorf("second import summary (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tableState(t, pool)); diff != "" {
				t.Errorf("tables changed by the second import (-before +after):\n%s", diff)
			}
			days, err := store.RefreshUsage(context.Background(), "kth")
			if err != nil {
				t.Fatal(err)
			}
			if n := countRows(t, pool, `SELECT count(*) FROM usage_daily`); days == 0 || n == 0 {
				t.Errorf("usage ledger: %d days rebuilt, %d rows after importing a trace", days, n)
			}
			// The ledger equals a direct aggregate of job (CPU-seconds, all days).
			var ledger, direct float64
			if err := pool.QueryRow(context.Background(), `SELECT (SELECT sum(cpu_seconds) FROM usage_daily),
				(SELECT sum(cpus * extract(epoch FROM end_time - start_time)) FROM job WHERE end_time >= start_time)`).Scan(&ledger, &direct); err != nil {
				t.Fatal(err)
			}
			if ledger != direct || ledger == 0 {
				t.Errorf("ledger CPU-seconds %v, job table %v", ledger, direct)
			}
		})
	}
}

// TestImport_CorruptLine corrupts one line of a real trace: the import
// fails naming that line and leaves no rows; with SkipBad the rest goes in.
func TestImport_CorruptLine(t *testing.T) {
	store, pool := freshStore(t)
	lines := strings.SplitAfter(string(traceHead(t, "KTH-SP2-filtered.swf.gz", 400)), "\n")
	const bad = 321 // 1-based line number
	if strings.HasPrefix(lines[bad-1], ";") {
		t.Fatalf("line %d is a header line; pick a job line", bad)
	}
	lines[bad-1] = "12 not-a-number 3\n"
	data := []byte(strings.Join(lines, ""))

	sum, err := importTrace(t, store, data, trace.SWF, "kth.swf", false)
	if err == nil {
		t.Fatalf("import of a corrupt trace succeeded: %+v", sum)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("kth.swf:%d:", bad)) || !errors.Is(err, trace.ErrMalformed) {
		t.Errorf("error %q does not name kth.swf:%d or wrap trace.ErrMalformed", err, bad)
	}
	for tbl, state := range tableState(t, pool) {
		if !strings.HasPrefix(state, "0 rows") {
			t.Errorf("%s after a failed import: %s, want no rows", tbl, state)
		}
	}

	sum, err = importTrace(t, store, data, trace.SWF, "kth.swf", true)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rejected != 1 || sum.Inserted != sum.Read-1 {
		t.Errorf("skip-bad import: %+v, want 1 rejected and the rest inserted", sum)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job`); n != sum.Inserted {
		t.Errorf("job has %d rows, want %d", n, sum.Inserted)
	}
}

func sacctJobs(t testing.TB) *accounting.SacctDoc {
	t.Helper()
	data, err := os.ReadFile(sacctFixture)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := accounting.ParseSacctJSON("sacct-22.05.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestImport_SacctTwiceIdentical imports the captured sacct document twice
// and checks what it stored.
func TestImport_SacctTwiceIdentical(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	doc := sacctJobs(t)
	imp := func() accounting.Summary {
		sum, err := store.Import(ctx, accounting.NewJobsSource(doc.Jobs, doc.Where, 0), accounting.ImportOptions{Source: "sacct-json"})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if diff := cmp.Diff(accounting.Summary{Read: 10, Inserted: 10}, imp()); diff != "" {
		t.Errorf("first import (-want +got):\n%s", diff)
	}
	before := tableState(t, pool)
	if diff := cmp.Diff(accounting.Summary{Read: 10, Unchanged: 10}, imp()); diff != "" {
		t.Errorf("second import (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, tableState(t, pool)); diff != "" {
		t.Errorf("tables changed by the second import (-before +after):\n%s", diff)
	}

	// What went in comes back out, field for field.
	got, err := store.FinishedJobs(ctx, "fairwaylab", time.Unix(0, 0), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]policy.Job(nil), doc.Jobs...)
	if len(got) != len(want) {
		t.Fatalf("FinishedJobs returned %d jobs, want %d", len(got), len(want))
	}
	byKey := map[[2]int64]policy.Job{}
	for _, j := range got {
		byKey[[2]int64{j.ID, int64(j.ArrayTask)}] = j
	}
	for _, j := range want {
		if diff := cmp.Diff(j, byKey[[2]int64{j.ID, int64(j.ArrayTask)}]); diff != "" {
			t.Errorf("job %d round trip (-imported +loaded):\n%s", j.ID, diff)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].End.Before(got[i-1].End) {
			t.Errorf("FinishedJobs not in end order at %d", i)
		}
	}

	// FinishedJob finds one of them by id (explain's answer for a job
	// Slurm forgot), and nothing for an id the history lacks.
	one, err := store.FinishedJob(ctx, "fairwaylab", want[0].ID)
	if err != nil || one == nil || one.ID != want[0].ID || !one.End.Equal(byKey[[2]int64{one.ID, int64(one.ArrayTask)}].End) {
		t.Errorf("FinishedJob(%d) = %+v, %v", want[0].ID, one, err)
	}
	if none, err := store.FinishedJob(ctx, "fairwaylab", 987654321); err != nil || none != nil {
		t.Errorf("FinishedJob(unknown) = %+v, %v; want nil, nil", none, err)
	}
}

// TestImport_UpdateAndDuplicates changes one stored job and repeats a key
// within one input.
func TestImport_UpdateAndDuplicates(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	jobs := sacctJobs(t).Jobs[:3]
	if _, err := store.Import(ctx, accounting.NewJobsSource(jobs, nil, 0), accounting.ImportOptions{Source: "sacct-json"}); err != nil {
		t.Fatal(err)
	}
	changed := jobs[0]
	changed.ExitCode = 3
	again := jobs[1]
	again.Name = "renamed"
	pending := jobs[2]
	pending.ID, pending.State = 999, policy.StatePending
	in := []policy.Job{changed, jobs[1], again, jobs[2], pending}
	sum, err := store.Import(ctx, accounting.NewJobsSource(in, nil, 0), accounting.ImportOptions{Source: "slurmdbd"})
	if err != nil {
		t.Fatal(err)
	}
	// jobs[1] appears twice: the later (renamed) copy wins and counts as
	// the update; the earlier is the duplicate.
	want := accounting.Summary{Read: 5, Updated: 2, Unchanged: 1, Duplicates: 1, Unfinished: 1}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	var name, source string
	var exit int
	if err := pool.QueryRow(ctx, `SELECT name, source FROM job WHERE job_id = $1`, jobs[1].ID).Scan(&name, &source); err != nil {
		t.Fatal(err)
	}
	if name != "renamed" || source != "slurmdbd" {
		t.Errorf("job %d: name %q source %q, want renamed from slurmdbd", jobs[1].ID, name, source)
	}
	if err := pool.QueryRow(ctx, `SELECT exit_code FROM job WHERE job_id = $1`, jobs[0].ID).Scan(&exit); err != nil || exit != 3 {
		t.Errorf("job %d exit code %d (%v), want 3", jobs[0].ID, exit, err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE updated_at > ingested_at`); n != 2 {
		t.Errorf("%d rows have updated_at > ingested_at, want 2", n)
	}
}

// onePass hides Rewind: Import stages the input and inserts with MERGE
// instead of copying it straight into job.
type onePass struct{ accounting.Source }

// loadByKey loads every finished job of cluster, keyed by job id and array
// task.
func loadByKey(t *testing.T, store *accounting.Store, cluster string) map[[2]int64]policy.Job {
	t.Helper()
	jobs, err := store.FinishedJobs(context.Background(), cluster, time.Unix(0, 0), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]int64]policy.Job{}
	for _, j := range jobs {
		out[[2]int64{j.ID, int64(j.ArrayTask)}] = j
	}
	return out
}

func byKey(jobs []policy.Job) map[[2]int64]policy.Job {
	out := map[[2]int64]policy.Job{}
	for _, j := range jobs {
		out[[2]int64{j.ID, int64(j.ArrayTask)}] = j
	}
	return out
}

// TestImport_Deadline follows deadlines through the database the way serve
// and the history sync meet them: serve records the jobs it saw finish
// from slurmctld, which knows their deadlines, on either import path; the
// slurmdbd history, which has none (the captured /slurmdb/v0.0.38/jobs
// answer), is merged over them later and must keep them; a source that
// does know a deadline still replaces it.
func TestImport_Deadline(t *testing.T) {
	body, err := os.ReadFile(dbjobsFixture)
	if err != nil {
		t.Fatalf("fixture: %v (capture it with make record)", err)
	}
	// Should a recapture bring deadlines, sacctJob has to read them.
	for name, path := range map[string]string{"slurmrestd": dbjobsFixture, "sacct": sacctFixture} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(`"deadline"`)) {
			t.Errorf("%s: the %s history now carries deadlines; read them in sacctJob", path, name)
		}
	}
	doc, err := accounting.ParseSacctJSON("dbjobs", body)
	if err != nil {
		t.Fatal(err)
	}
	var fromDB []policy.Job // what slurmdbd says of the finished jobs
	var lo, hi time.Time
	for _, j := range doc.Jobs {
		if !j.State.Finished() {
			continue
		}
		fromDB = append(fromDB, j)
		if lo.IsZero() || j.End.Before(lo) {
			lo = j.End
		}
		if j.End.After(hi) {
			hi = j.End
		}
	}
	if len(fromDB) != 4 {
		t.Fatalf("fixture has %d finished jobs, want 4", len(fromDB))
	}
	for _, tc := range []struct {
		name   string
		src    func([]policy.Job) accounting.Source
		phases []string
	}{
		{"two pass", func(js []policy.Job) accounting.Source { return accounting.NewJobsSource(js, nil, 0) },
			[]string{"check", "copy", "commit"}},
		{"one pass", func(js []policy.Job) accounting.Source { return onePass{accounting.NewJobsSource(js, nil, 0)} },
			[]string{"copy", "merge", "commit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, pool := freshStore(t)
			ctx := context.Background()

			// Serve records the jobs from slurmctld: two with a deadline,
			// one of which slurmctld names differently from slurmdbd (so
			// the sync below updates that row), and two without.
			recorded := append([]policy.Job(nil), fromDB...)
			recorded[0].Deadline = recorded[0].Submit.Add(3 * time.Hour)
			recorded[1].Deadline = recorded[1].Submit.Add(90 * time.Minute)
			recorded[1].Name = "renamed-in-slurmctld"
			var phases []string
			sum, err := store.Import(ctx, tc.src(recorded), accounting.ImportOptions{Source: "slurmctld",
				Phase: func(p string) { phases = append(phases, p) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(accounting.Summary{Read: 4, Inserted: 4}, sum); diff != "" {
				t.Errorf("record from slurmctld (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.phases, phases); diff != "" {
				t.Errorf("import path (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(byKey(recorded), loadByKey(t, store, "fairwaylab")); diff != "" {
				t.Errorf("jobs loaded after recording (-recorded +loaded):\n%s", diff)
			}
			// No deadline is NULL, not some zero instant.
			if n := countRows(t, pool, `SELECT count(*) FROM job WHERE deadline IS NULL`); n != 2 {
				t.Errorf("%d rows with a NULL deadline, want 2", n)
			}

			// The slurmdbd history of the same jobs has no deadlines.
			h := &accounting.RESTHistory{Client: &fakeSlurmdb{body: body}, Cluster: "fairwaylab"}
			sum, _, _, err = store.SyncHistory(ctx, h, accounting.SyncOptions{Cluster: "fairwaylab", Initial: lo, Now: hi.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			// Only the renamed job changed; a deadline slurmdbd does not
			// know is no change.
			if diff := cmp.Diff(accounting.Summary{Read: 4, Updated: 1, Unchanged: 3}, sum); diff != "" {
				t.Errorf("sync from slurmdbd (-want +got):\n%s", diff)
			}
			want := append([]policy.Job(nil), recorded...)
			want[1].Name = fromDB[1].Name
			if diff := cmp.Diff(byKey(want), loadByKey(t, store, "fairwaylab")); diff != "" {
				t.Errorf("jobs loaded after the slurmdbd sync (-want +loaded):\n%s", diff)
			}
			var source string
			if err := pool.QueryRow(ctx, `SELECT source FROM job WHERE job_id = $1 AND array_task = $2`,
				want[1].ID, want[1].ArrayTask).Scan(&source); err != nil || source != "slurmdbd" {
				t.Errorf("job %d source %q (%v), want slurmdbd", want[1].ID, source, err)
			}

			// A later source that knows a deadline replaces the stored one.
			moved := want[0]
			moved.Deadline = moved.Deadline.Add(time.Hour)
			sum, err = store.RecordFinished(ctx, "slurmctld", []policy.Job{moved})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(accounting.Summary{Read: 1, Updated: 1}, sum); diff != "" {
				t.Errorf("record a moved deadline (-want +got):\n%s", diff)
			}
			want[0] = moved
			if diff := cmp.Diff(byKey(want), loadByKey(t, store, "fairwaylab")); diff != "" {
				t.Errorf("jobs loaded after moving a deadline (-want +loaded):\n%s", diff)
			}
		})
	}
}

// TestImport_Hosts follows the nodes each job ran on (the power forecast
// counts a node shared by several jobs once): slurmdbd's history names
// them and they load back as given; a source that does not (a trace)
// leaves them stored and changes nothing; a node list too long to be
// Slurm's is dropped whole rather than cut into other nodes' names.
func TestImport_Hosts(t *testing.T) {
	body, err := os.ReadFile(dbjobsFixture)
	if err != nil {
		t.Fatalf("fixture: %v (capture it with make record)", err)
	}
	doc, err := accounting.ParseSacctJSON("dbjobs", body)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []policy.Job
	for _, j := range doc.Jobs {
		if j.State.Finished() {
			jobs = append(jobs, j)
		}
	}
	named := 0
	for _, j := range jobs {
		if j.Hosts != "" {
			named++
		}
	}
	if named == 0 {
		t.Fatal("no finished job in the fixture names its nodes")
	}
	store, pool := freshStore(t)
	ctx := context.Background()
	if _, err := store.RecordFinished(ctx, "slurmdbd", jobs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(byKey(jobs), loadByKey(t, store, "fairwaylab")); diff != "" {
		t.Errorf("jobs loaded (-recorded +loaded):\n%s", diff)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job WHERE hosts IS NOT NULL`); n != named {
		t.Errorf("%d rows with hosts, want %d", n, named)
	}

	unnamed := append([]policy.Job(nil), jobs...)
	for i := range unnamed {
		unnamed[i].Hosts = ""
	}
	sum, err := store.Import(ctx, accounting.NewJobsSource(unnamed, nil, 0), accounting.ImportOptions{Source: "trace"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(accounting.Summary{Read: len(jobs), Unchanged: len(jobs)}, sum); diff != "" {
		t.Errorf("import without hosts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(byKey(jobs), loadByKey(t, store, "fairwaylab")); diff != "" {
		t.Errorf("jobs loaded after an import without hosts (-want +loaded):\n%s", diff)
	}

	long := jobs[0]
	long.ID += 1000
	long.Hosts = "gpu[" + strings.Repeat("1,", 40000) + "2]"
	if _, err := store.RecordFinished(ctx, "slurmctld", []policy.Job{long}); err != nil {
		t.Fatal(err)
	}
	got, err := store.FinishedJob(ctx, "fairwaylab", long.ID)
	if err != nil || got == nil {
		t.Fatalf("job %d: %v, %v", long.ID, got, err)
	}
	if got.Hosts != "" {
		t.Errorf("a %d-byte node list was stored (%d bytes), want it dropped", len(long.Hosts), len(got.Hosts))
	}
}

// TestImport_PhillyDeadlines imports the head of the Philly-MIX trace,
// whose strict jobs have deadlines: every job loads back with the deadline
// the trace reader gave it, none where it gave none.
func TestImport_PhillyDeadlines(t *testing.T) {
	store, _ := freshStore(t)
	data := traceHead(t, "Philly-MIX1.csv.gz", 2001)
	tr, err := trace.ReadAll(bytes.NewReader(data), trace.PhillyMIX, trace.Options{Name: "philly.csv", Cluster: "philly"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]time.Time{}
	with := 0
	for _, j := range tr.Jobs {
		want[j.ID] = j.Deadline
		if !j.Deadline.IsZero() {
			with++
		}
	}
	if with == 0 || with == len(tr.Jobs) {
		t.Fatalf("%d of %d trace jobs have a deadline; want some with and some without", with, len(tr.Jobs))
	}
	src, err := accounting.NewTraceSource(bytes.NewReader(data), trace.PhillyMIX, "philly.csv", "philly", false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := store.Import(context.Background(), src, accounting.ImportOptions{Source: string(trace.PhillyMIX)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Inserted != len(tr.Jobs) {
		t.Fatalf("import: %+v, want %d inserted", sum, len(tr.Jobs))
	}
	got := map[int64]time.Time{}
	for k, j := range loadByKey(t, store, "philly") {
		got[k[0]] = j.Deadline
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deadlines (-trace +loaded):\n%s", diff)
	}
	t.Logf("%d jobs, %d with a deadline", len(tr.Jobs), with)
}

// TestImport_InvalidJobs: a job that cannot be keyed fails the import with
// its location, or is counted under SkipBad; RecordFinished never fails on
// one.
func TestImport_InvalidJobs(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	jobs := append([]policy.Job(nil), sacctJobs(t).Jobs[:4]...)
	jobs[2].Submit = time.Time{}
	where := []string{"a:1", "a:2", "a:3", "a:4"}
	_, err := store.Import(ctx, accounting.NewJobsSource(jobs, where, 0), accounting.ImportOptions{Source: "sacct-json"})
	if err == nil || !strings.HasPrefix(err.Error(), "a:3: invalid job: no submit time") || !errors.Is(err, accounting.ErrInvalidJob) {
		t.Fatalf("err = %v, want a:3: invalid job: no submit time", err)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job`); n != 0 {
		t.Fatalf("%d rows after a failed import", n)
	}
	sum, err := store.RecordFinished(ctx, "slurmctld", jobs)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Inserted != 3 || sum.Rejected != 1 || len(sum.Rejects) != 1 {
		t.Errorf("RecordFinished: %+v, want 3 inserted and 1 rejected", sum)
	}
}

// onceSource hides a Source's Rewind: Import then takes the one-pass path.
type onceSource struct{ accounting.Source }

// TestImport_HostileText: text a Slurm user chooses (job name, account)
// holding bytes PostgreSQL text refuses (invalid UTF-8, NUL) used to fail
// the whole COPY, so one job cost every other job of the batch, even under
// SkipBad (RecordFinished, serve's history). The job is kept with U+FFFD
// in place of the bad bytes, the others are stored, and the repair is
// logged once; a cluster name, part of the key, is refused instead.
func TestImport_HostileText(t *testing.T) {
	_, pool := freshStore(t)
	ctx := context.Background()
	at := time.Date(2026, 10, 5, 1, 0, 0, 0, time.UTC)
	mk := func(id int64, name, account string) policy.Job {
		return policy.Job{Cluster: "c", ID: id, ArrayTask: -1, User: "alice", Account: account, Name: name,
			Submit: at, Start: at.Add(time.Minute), End: at.Add(time.Hour), GPUs: 1, State: policy.StateCompleted}
	}
	jobs := []policy.Job{
		mk(1, "fine", "physics"),
		mk(2, "bad\xff\xfe\x01name", "phy\x00sics"),
		mk(3, "=cmd|' /C calc'!A0", "physics"),
		mk(4, "fine", "physics"),
	}
	jobs[3].Cluster = "c\xff" // part of the key: refused, not changed
	want := map[int64][2]string{1: {"fine", "physics"}, 2: {"bad\uFFFD\x01name", "phy\uFFFDsics"}, 3: {"=cmd|' /C calc'!A0", "physics"}}
	for _, tc := range []struct {
		name string
		src  func() accounting.Source
	}{
		{"two-pass", func() accounting.Source { return accounting.NewJobsSource(jobs, nil, 0) }},
		{"one-pass", func() accounting.Source { return onceSource{accounting.NewJobsSource(jobs, nil, 0)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pool.Exec(ctx, `TRUNCATE job`); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			store := accounting.New(pool, slog.New(slog.NewTextHandler(&logs, nil)))
			sum, err := store.Import(ctx, tc.src(), accounting.ImportOptions{Source: "slurmctld", SkipBad: true})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Inserted != 3 || sum.Rejected != 1 || len(sum.Rejects) != 1 || !strings.Contains(sum.Rejects[0].Error(), `cluster name "c\xff"`) {
				t.Errorf("import: %+v, want 3 inserted and job 4 rejected for its cluster name", sum)
			}
			got := map[int64][2]string{}
			for k, j := range loadByKey(t, store, "c") {
				got[k[0]] = [2]string{j.Name, j.Account}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stored name and account (-want +got):\n%s", diff)
			}
			if n := strings.Count(logs.String(), "U+FFFD"); n != 1 || !strings.Contains(logs.String(), "job 2") {
				t.Errorf("log, want one line naming job 2:\n%s", logs.String())
			}
		})
	}
}

// TestImport_LongText: text longer than Slurm allows (1024 bytes a field,
// more only from files, or from invalid bytes JSON decoding widened) used
// to be stored whole, and an account of a few thousand bytes then failed
// every rebuild of the usage ledger ("index row size exceeds btree
// maximum 2704" on usage_daily's key), so UsageBetween and the report
// failed for its days until the row was fixed by hand. Such a field is
// cut at 1024 bytes, on a character boundary, and the job kept.
func TestImport_LongText(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	at := time.Date(2026, 10, 5, 1, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	long := func(n int, alphabet []rune) string {
		r := make([]rune, n)
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	ascii := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
	account := long(3000, ascii)
	name := "x" + long(1000, []rune("αβγδεζηθικλμνξοπρστυφχψω")) // 2001 bytes, byte 1024 inside a character
	jobs := []policy.Job{
		{Cluster: "c", ID: 1, ArrayTask: -1, User: "alice", Account: account, Name: name,
			Submit: at, Start: at.Add(time.Minute), End: at.Add(time.Hour), GPUs: 1, State: policy.StateCompleted},
		{Cluster: "c", ID: 2, ArrayTask: -1, User: "bob", Account: "physics", Name: "fine",
			Submit: at, Start: at.Add(time.Minute), End: at.Add(time.Hour), GPUs: 1, State: policy.StateCompleted},
	}
	sum, err := store.RecordFinished(ctx, "slurmctld", jobs)
	if err != nil || sum.Inserted != 2 {
		t.Fatalf("RecordFinished: %+v, %v; want 2 inserted", sum, err)
	}
	stored := loadByKey(t, store, "c")[[2]int64{1, -1}]
	if want := account[:1024]; stored.Account != want {
		t.Errorf("account stored as %d bytes, want its first 1024", len(stored.Account))
	}
	if want := name[:1023]; stored.Name != want {
		t.Errorf("name stored as %d bytes, want its first 1023, the characters that fit in 1024", len(stored.Name))
	}
	got, err := store.UsageBetween(ctx, "c", at, at.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("usage rows: %d, want 2", len(got))
	}
}

// TestImport_DatabaseDiesMidImport kills the import's backend while COPY
// streams (into the staging table on the one-pass path, into job on the
// two-pass path) and after everything was written but before the commit:
// each time the import fails and leaves nothing behind.
func TestImport_DatabaseDiesMidImport(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	data := traceHead(t, "KTH-SP2-filtered.swf.gz", 3000)
	kill := func() error {
		// pg_terminate_backend only signals: wait until the backends are
		// gone, however slow the machine, so the import meets a dead
		// connection and not one that is still closing.
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n); err != nil {
			return err
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			// The pool's own idle connections were terminated too: a query
			// that lands on one fails, and the next one reconnects.
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n)
			if err == nil && n == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("backends still alive 30 s after pg_terminate_backend (%d, %v)", n, err)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		rewind   bool   // a source that can be read twice (two-pass path)
		atPass   int    // kill in this pass over the source (0 for a one-pass source)...
		atRow    int    // ...at this row (0: never)
		atPhase  string // kill when Import enters this phase
		wantText string
	}{
		{name: "one pass, during copy", atRow: 1000, wantText: "copy jobs into staging table"},
		{name: "one pass, before commit", atPhase: "commit", wantText: "import swf jobs"},
		{name: "two pass, during copy", rewind: true, atPass: 2, atRow: 1000, wantText: "copy jobs into job"},
		{name: "two pass, before commit", rewind: true, atPhase: "commit", wantText: "import swf jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := accounting.NewTraceSource(bytes.NewReader(data), trace.SWF, "kth.swf", "kth", false)
			if err != nil {
				t.Fatal(err)
			}
			k := &killingSource{Source: tr, atPass: tc.atPass, at: tc.atRow, kill: kill}
			var src accounting.Source = k
			if tc.rewind {
				src = rewindingKiller{k}
			}
			var phaseErr error
			_, err = store.Import(ctx, src, accounting.ImportOptions{Source: "swf", Phase: func(p string) {
				if p == tc.atPhase {
					phaseErr = kill()
				}
			}})
			if err == nil {
				t.Fatal("import succeeded although its connection was terminated")
			}
			if k.err != nil || phaseErr != nil {
				t.Fatalf("terminate backend: %v %v", k.err, phaseErr)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not say %q", err, tc.wantText)
			}
			t.Logf("import error, as the CLI prints it: %v", err)
			for tbl, state := range tableState(t, pool) {
				if !strings.HasPrefix(state, "0 rows") {
					t.Errorf("%s after the backend died: %s, want no rows", tbl, state)
				}
			}
		})
	}
	// The store keeps working on a fresh connection.
	if _, err := importTrace(t, store, data, trace.SWF, "kth.swf", false); err != nil {
		t.Errorf("import after the failures: %v", err)
	}
}

// killingSource calls kill when it reaches row at of pass atPass. As a
// plain Source it cannot rewind; rewindingKiller can.
type killingSource struct {
	accounting.Source
	pass, atPass, at, n int
	kill                func() error
	err                 error
}

func (k *killingSource) Next() bool {
	k.n++
	if k.pass == k.atPass && k.n == k.at {
		k.err = k.kill()
	}
	return k.Source.Next()
}

type rewindingKiller struct{ *killingSource }

func (r rewindingKiller) Rewind() error {
	r.pass++
	r.n = 0
	return r.Source.(accounting.Rewinder).Rewind()
}

// TestImport_DeadDatabase: no server at all gives a clear error.
func TestImport_DeadDatabase(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://fairway@127.0.0.1:1/nowhere?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = store.Import(context.Background(), accounting.NewJobsSource(sacctJobs(t).Jobs, nil, 0), accounting.ImportOptions{Source: "sacct-json"})
	if err == nil || !strings.Contains(err.Error(), "connect to the accounting database") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("err = %v, want a connection error naming the server", err)
	}
}

// TestUsageDaily_SplitsAtMidnight checks the ledger arithmetic on a job that
// runs over midnight and one entirely inside a day.
func TestUsageDaily_SplitsAtMidnight(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	day := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)
	mk := func(id int64, user string, start, end time.Time, gpus, cpus int) policy.Job {
		return policy.Job{Cluster: "c", ID: id, ArrayTask: -1, User: user, Account: "physics", Submit: start.Add(-time.Minute),
			Start: start, End: end, GPUs: gpus, CPUs: cpus, State: policy.StateCompleted}
	}
	jobs := []policy.Job{
		mk(1, "alice", day.Add(23*time.Hour), day.Add(25*time.Hour), 2, 4),              // 1 h each side of midnight
		mk(2, "alice", day.Add(2*time.Hour), day.Add(3*time.Hour), 1, 1),                // 1 h on the 5th
		mk(3, "bob", day.Add(30*time.Hour), day.Add(30*time.Hour+30*time.Minute), 0, 8), // CPU only, on the 6th
	}
	if _, err := store.RecordFinished(ctx, "slurmctld", jobs); err != nil {
		t.Fatal(err)
	}
	got, err := store.UsageBetween(ctx, "c", day, day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []accounting.Usage{{Account: "physics", User: "alice", GPUSeconds: 2*3600 + 3600, CPUSeconds: 4*3600 + 3600, JobsEnded: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage on the 5th (-want +got):\n%s", diff)
	}
	got, err = store.UsageBetween(ctx, "c", day, day.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want = []accounting.Usage{
		{Account: "physics", User: "alice", GPUSeconds: 4*3600 + 3600, CPUSeconds: 8*3600 + 3600, JobsEnded: 2},
		{Account: "physics", User: "bob", CPUSeconds: 8 * 1800, JobsEnded: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage on the 5th and 6th (-want +got):\n%s", diff)
	}
}

// TestJobsThatRan: the jobs that ran during a period are those that ended
// in it and those that started before its end and ended after it (their
// nodes were held up to it); FinishedJobs keeps only the first.
func TestJobsThatRan(t *testing.T) {
	store, _ := freshStore(t)
	ctx := context.Background()
	day := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)
	mk := func(id int64, start, end time.Duration) policy.Job {
		return policy.Job{Cluster: "c", ID: id, ArrayTask: -1, User: "alice", Account: "physics", Submit: day.Add(start - time.Minute),
			Start: day.Add(start), End: day.Add(end), Nodes: 1, CPUs: 1, State: policy.StateCompleted}
	}
	if _, err := store.RecordFinished(ctx, "slurmctld", []policy.Job{
		mk(1, -3*time.Hour, -time.Hour),   // before the period
		mk(2, -time.Hour, time.Hour),      // into it
		mk(3, 2*time.Hour, 3*time.Hour),   // in it
		mk(4, 20*time.Hour, 30*time.Hour), // past its end
		mk(5, 25*time.Hour, 26*time.Hour), // after it
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(jobs []policy.Job, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	until := day.Add(24 * time.Hour)
	if got := ids(store.JobsThatRan(ctx, "c", day, until)); !cmp.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("JobsThatRan on the 5th: %v, want 2, 3, 4", got)
	}
	if got := ids(store.FinishedJobs(ctx, "c", day, until)); !cmp.Equal(got, []int64{2, 3}) {
		t.Errorf("FinishedJobs on the 5th: %v, want 2, 3", got)
	}
	if got := ids(store.JobsThatRan(ctx, "c", day, time.Time{})); !cmp.Equal(got, []int64{2, 3, 5, 4}) {
		t.Errorf("JobsThatRan since the 5th: %v, want 2, 3, 5, 4 (end order)", got)
	}
}

// TestImport_SharedTraces imports the three shared traces whole and logs
// rows and seconds; the counts are the traces' published job counts.
func TestImport_SharedTraces(t *testing.T) {
	dir := tracesDir(t)
	store, pool := freshStore(t)
	for _, tc := range []struct {
		file   string
		format trace.Format
		jobs   int
	}{
		{"CTC-SP2-1996-3.1-cln.swf.gz", trace.SWF, 77222},
		{"KTH-SP2-filtered.swf.gz", trace.SWF, 28481},
		{"Philly-MIX1.csv.gz", trace.PhillyMIX, 30940},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			src, err := accounting.NewTraceSource(f, tc.format, tc.file, tc.file, false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			sum, err := store.Import(context.Background(), src, accounting.ImportOptions{Source: string(tc.format)})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d rows in %.2f s", tc.file, sum.Inserted, time.Since(start).Seconds())
			if sum.Inserted != tc.jobs || sum.Read != tc.jobs {
				t.Errorf("summary %+v, want %d jobs read and inserted", sum, tc.jobs)
			}
			if n := countRows(t, pool, `SELECT count(*) FROM job WHERE cluster = $1`, tc.file); n != tc.jobs {
				t.Errorf("%d rows stored, want %d", n, tc.jobs)
			}
		})
	}
}

// TestImport_DirectCopyFallsBack stores some jobs from the middle of a
// trace, then imports the whole trace: the straight COPY into job meets a
// stored key, rolls back to its savepoint, and the staging path finishes
// the import in the same transaction.
func TestImport_DirectCopyFallsBack(t *testing.T) {
	store, pool := freshStore(t)
	data := traceHead(t, "KTH-SP2-filtered.swf.gz", 2000)
	lines := strings.SplitAfter(string(data), "\n")
	var header, middle []string
	for _, l := range lines {
		if strings.HasPrefix(l, ";") {
			header = append(header, l)
		}
	}
	middle = append(header, lines[1000:1010]...)
	if _, err := importTrace(t, store, []byte(strings.Join(middle, "")), trace.SWF, "middle.swf", false); err != nil {
		t.Fatal(err)
	}
	src, err := accounting.NewTraceSource(bytes.NewReader(data), trace.SWF, "kth.swf", "kth", false)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	sum, err := store.Import(context.Background(), src, accounting.ImportOptions{Source: "swf", Phase: func(p string) { phases = append(phases, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"check", "copy", "copy", "merge", "commit"}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if sum.Unchanged != 10 || sum.Inserted != sum.Read-10 || sum.Updated != 0 {
		t.Errorf("summary %+v, want 10 unchanged and the rest inserted", sum)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job`); n != sum.Read {
		t.Errorf("%d rows, want %d", n, sum.Read)
	}
}

// TestImport_NothingFinished: an input of pending jobs stores no job but
// still moves the watermark it carries.
func TestImport_NothingFinished(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	j := sacctJobs(t).Jobs[0]
	j.State = policy.StatePending
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sum, err := store.Import(ctx, accounting.NewJobsSource([]policy.Job{j}, nil, 0), accounting.ImportOptions{
		Source: "slurmdbd", Watermark: &accounting.WatermarkUpdate{Cluster: "fairwaylab", Source: "slurmdbd", At: at}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(accounting.Summary{Read: 1, Unfinished: 1}, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM job`); n != 0 {
		t.Errorf("%d jobs stored, want 0", n)
	}
	if wm, ok, err := store.Watermark(ctx, "fairwaylab", "slurmdbd"); err != nil || !ok || !wm.Equal(at) {
		t.Errorf("watermark = %v, %v, %v; want %v", wm, ok, err, at)
	}
}
