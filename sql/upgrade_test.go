package sql_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/accounting/report"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/internal/trace"
	"github.com/fairway-hpc/fairway/policy"
	"github.com/fairway-hpc/fairway/sql"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestUp_FromEachVersionWithData is the upgrade a site takes: a database
// that an older Fairway left at schema N, with the rows that binary wrote
// in every table it had, is migrated up by the current binary. For every
// N it checks that the remaining migrations, and only those, apply; that
// no row of any table that existed is lost or changed (count and a digest
// of every column the old schema had); that the columns added since are
// NULL on the old rows (no migration derives a value from older columns:
// 0003's deadline, 0006's nice and 0008's hosts are all unknown for rows
// written before them); and that what the current binary reads from the
// upgraded database works: Store.FinishedJobs (serve's warm-up, simulate
// and predict eval --from-db), the report's load, the frozen priorities
// a hand-back restores, and a re-import of the same capture, which must
// fill what the old rows lack without clearing what they have.
func TestUp_FromEachVersionWithData(t *testing.T) {
	e := lab.Get(t)
	all, err := sql.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := all[len(all)-1].Version
	capture, err := os.ReadFile("../accounting/testdata/sacct-22.05.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := accounting.ParseSacctJSON("sacct-22.05.json", capture)
	if err != nil {
		t.Fatal(err)
	}
	labJobs := finished(doc.Jobs)
	kth, err := trace.ReadAll(strings.NewReader(shareddata.GzipHead(t, shareddata.Trace(t, "KTH-SP2-filtered.swf.gz"), 3000)),
		trace.SWF, trace.Options{Name: "KTH-SP2-filtered.swf", Cluster: "kth"})
	if err != nil {
		t.Fatal(err)
	}
	traceJobs := finished(kth.Jobs)
	if len(labJobs) < 5 || len(traceJobs) < 1000 {
		t.Fatalf("%d jobs from the capture, %d from the trace: too few to test with", len(labJobs), len(traceJobs))
	}

	for from := 1; from < latest; from++ {
		t.Run(fmt.Sprintf("from=%04d", from), func(t *testing.T) {
			ctx := context.Background()
			url := e.EmptyDatabase(t)
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if err := sql.UpTo(ctx, conn, from); err != nil {
				t.Fatalf("migrate to %04d: %v", from, err)
			}
			fillAt(t, conn, url, from, labJobs, traceJobs)
			oldColumns := columnsOf(t, conn)
			before := contents(t, conn, oldColumns)
			beforeParts := partitions(t, conn)

			done, err := sql.Up(ctx, conn)
			if err != nil {
				t.Fatalf("Up from %04d: %v", from, err)
			}
			var got, want []int
			for _, m := range done {
				got = append(got, m.Version)
			}
			for v := from + 1; v <= latest; v++ {
				want = append(want, v)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Up from %04d applied (-want +got):\n%s", from, diff)
			}
			if diff := cmp.Diff(before, contents(t, conn, oldColumns)); diff != "" {
				t.Errorf("rows of the tables schema %04d had, over its columns (-before +after):\n%s", from, diff)
			}
			if diff := cmp.Diff(beforeParts, partitions(t, conn)); diff != "" {
				t.Errorf("monthly partitions (-before +after):\n%s", diff)
			}
			for table, cols := range columnsOf(t, conn) {
				old, existed := oldColumns[table]
				if !existed {
					continue
				}
				for _, c := range cols {
					if slices.Contains(old, c) {
						continue
					}
					var n int64
					q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s IS NOT NULL`, pgx.Identifier{table}.Sanitize(), pgx.Identifier{c}.Sanitize())
					if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n != 0 {
						t.Errorf("%s.%s, added after %04d: %d old rows have a value, want NULL on all", table, c, from, n)
					}
				}
			}
			if from >= 2 {
				checkReaders(t, url, from, labJobs, traceJobs, capture)
			}
		})
	}
}

// finished keeps the jobs Import keeps: the finished ones.
func finished(jobs []policy.Job) []policy.Job {
	var out []policy.Job
	for _, j := range jobs {
		if j.State.Finished() {
			out = append(out, j)
		}
	}
	return out
}

// withDeadline says which of the capture's jobs serve recorded with a
// deadline (slurmctld knows it, sacct does not), from schema 3 on.
func withDeadline(j policy.Job) bool { return j.ID%2 == 0 }

func deadlineOf(j policy.Job) time.Time { return j.End.Add(time.Hour) }

// fillAt writes what a Fairway binary at schema v wrote, in every table it
// had, with the columns it had: the clusters and a watermark; from 0002 the
// capture's jobs (as ingest from sacct or, with a deadline from 0003 on,
// as serve recorded them) and the trace's, the usage ledger, GPU usage
// (directly, then from 0004 through fairway_record_gpu_usage as the schema
// owner does), the decision log (priority rows with the nice from 0006),
// predictions, cycles and the share tree; from 0005 a node's login; from
// 0007 power actions.
func fillAt(t *testing.T, conn *pgx.Conn, url string, v int, labJobs, traceJobs []policy.Job) {
	t.Helper()
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("schema %04d: %s: %v", v, q, err)
		}
	}
	exec(`INSERT INTO cluster (name) VALUES ('fairwaylab'), ('kth')`)
	exec(`INSERT INTO kv_state (cluster, key, value) VALUES ('fairwaylab', 'watermark.slurmdbd', '2026-11-22T02:15:00Z'),
		('kth', 'watermark.swf', '1997-01-01T00:00:00Z')`)
	if v < 2 {
		return
	}
	have := columnsOf(t, conn)["job"]
	for _, j := range append(append([]policy.Job(nil), labJobs...), traceJobs...) {
		exec(`SELECT fairway_ensure_month('job', $1)`, j.Submit)
	}
	var rows [][]any
	var cols []string
	for _, c := range jobColumns {
		if slices.Contains(have, c.name) {
			cols = append(cols, c.name)
		}
	}
	add := func(j policy.Job, source string) {
		var r []any
		for _, c := range jobColumns {
			if slices.Contains(have, c.name) {
				r = append(r, c.value(&j, source))
			}
		}
		rows = append(rows, r)
	}
	for _, j := range labJobs {
		source := "sacct-json"
		if v >= 3 && withDeadline(j) {
			j.Deadline, source = deadlineOf(j), "slurmctld"
		}
		add(j, source)
	}
	for _, j := range traceJobs {
		add(j, "swf")
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"job"}, cols, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("schema %04d: copy jobs: %v", v, err)
	}
	// Import marked the days its jobs ran; a reader rebuilt the ledger.
	exec(`INSERT INTO usage_dirty (cluster, day)
		SELECT DISTINCT cluster, d::date FROM job, generate_series(date_trunc('day', start_time AT TIME ZONE 'UTC'),
			date_trunc('day', end_time AT TIME ZONE 'UTC'), interval '1 day') d
		WHERE start_time IS NOT NULL AND end_time >= start_time ON CONFLICT DO NOTHING`)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// RefreshUsage reads only columns 0002 made: the current Store
	// rebuilds an old schema's ledger as the binary of that time did.
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, c := range []string{"fairwaylab", "kth"} {
		if _, err := store.RefreshUsage(ctx, c); err != nil {
			t.Fatalf("schema %04d: %v", v, err)
		}
	}

	for i, j := range labJobs {
		for g := 0; g < j.GPUs; g++ {
			args := []any{[]string{j.Cluster}, []int64{j.ID}, []string{"gpu1"}, []int32{int32(g)}, []time.Time{j.End},
				[]time.Time{j.Start}, []string{fmt.Sprintf("GPU-%d-%d", j.ID, g)}, []string{"NVIDIA H100"}, []int32{0},
				[]float32{float32(40 + i)}, []float32{90}, []int64{int64(1000 * (i + 1))}, []int64{81559}, []float64{1234.5}}
			if v < 4 {
				exec(`SELECT fairway_ensure_month('job_gpu_usage', $1)`, j.End)
				exec(`INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at, started_at, gpu_uuid, gpu_model, shards,
					util_avg_pct, util_max_pct, mem_peak_mb, mem_total_mb, energy_joules)
					SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::integer[], $5::timestamptz[], $6::timestamptz[],
					$7::text[], $8::text[], $9::integer[], $10::real[], $11::real[], $12::bigint[], $13::bigint[], $14::double precision[])`, args...)
			} else {
				exec(`SELECT fairway_record_gpu_usage($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, args...)
			}
		}
	}
	for i, j := range labJobs {
		at := j.Submit.Add(-time.Minute)
		exec(`SELECT fairway_ensure_month('decision', $1)`, at)
		for cycle := int64(1); cycle <= 2; cycle++ {
			field, value := "site_factor", int64(1000*i)+cycle
			var nice any
			if i%2 == 1 {
				field = "priority"
				if v >= 6 {
					nice = int64(10 * i)
				}
			}
			if v < 6 {
				exec(`INSERT INTO decision (cluster, decided_at, cycle, job_id, policy, rank, score, parts, predicted_run_s, predictor,
					field, value, previous, dry_run) VALUES ($1, $2, $3, $4, 'fairshare', $5, 0.5, '{"share": 0.5}', 60, 'fairway', $6, $7, NULL, false)`,
					j.Cluster, at.Add(time.Duration(cycle)*time.Second), cycle, j.ID, i+1, field, value)
			} else {
				exec(`INSERT INTO decision (cluster, decided_at, cycle, job_id, policy, rank, score, parts, predicted_run_s, predictor,
					field, value, previous, dry_run, nice) VALUES ($1, $2, $3, $4, 'fairshare', $5, 0.5, '{"share": 0.5}', 60, 'fairway', $6, $7, NULL, false, $8)`,
					j.Cluster, at.Add(time.Duration(cycle)*time.Second), cycle, j.ID, i+1, field, value, nice)
			}
		}
		exec(`SELECT fairway_ensure_month('prediction', $1)`, j.Submit)
		exec(`INSERT INTO prediction (cluster, job_id, array_task, submit_time, predictor, predicted_at, predicted_s, upper_s, quantile, rule, partition)
			VALUES ($1, $2, $3, $4, 'fairway', $5, 60, 120, 0.9, 'user', $6)`, j.Cluster, j.ID, j.ArrayTask, j.Submit, at, j.Partition)
	}
	for c := int64(1); c <= 3; c++ {
		exec(`INSERT INTO cycle (cluster, cycle, started_at, policy, leader, dry_run, pending, running, written, write_errors,
			read_seconds, predict_seconds, rank_seconds, write_seconds, record_seconds, total_seconds, error)
			VALUES ('fairwaylab', $1, $2, 'fairshare', true, false, 4, 2, 3, 0, 0.01, 0.002, 0.001, 0.03, 0.02, 0.07, '')`,
			c, labJobs[0].Submit.Add(time.Duration(c)*time.Second))
	}
	exec(`INSERT INTO share (cluster, source, account, user_name, parent, shares) VALUES
		('fairwaylab', 'slurmdbd', 'physics', '', '', 60), ('fairwaylab', 'slurmdbd', 'chem', '', '', 40),
		('fairwaylab', 'slurmdbd', 'physics', 'alice', 'physics', 1), ('fairwaylab', 'slurmdbd', 'physics', 'bob', 'physics', 1),
		('fairwaylab', 'slurmdbd', 'chem', 'carol', 'chem', 1)`)
	if v >= 5 {
		exec(`INSERT INTO fairway_node_login (login, cluster, node) VALUES ('fairway_node_gpu1', 'fairwaylab', 'gpu1')`)
	}
	if v >= 7 {
		at := labJobs[0].End
		exec(`INSERT INTO power_action (cluster, decided_at, cycle, node, action, reason, parts, lack_nodes, span_s, dry_run, error) VALUES
			('fairwaylab', $1, 7, 'gpu2', 'power-down', 'idle 600s', '{"idle_s": 600}', 0, 0, true, ''),
			('fairwaylab', $2, 8, '', 'lack', 'jobs wait for 1 node', '{}', 1, 30, true, '')`, at, at.Add(30*time.Second))
	}
}

// jobColumns are the job table's columns as ingest fills them (accounting's
// copySource), deadline and hosts included: fillAt writes those the schema
// it fills has.
var jobColumns = []struct {
	name  string
	value func(j *policy.Job, source string) any
}{
	{"cluster", func(j *policy.Job, _ string) any { return j.Cluster }},
	{"job_id", func(j *policy.Job, _ string) any { return j.ID }},
	{"array_task", func(j *policy.Job, _ string) any { return int32(j.ArrayTask) }},
	{"submit_time", func(j *policy.Job, _ string) any { return j.Submit }},
	{"array_job_id", func(j *policy.Job, _ string) any { return j.ArrayJob }},
	{"het_job", func(j *policy.Job, _ string) any { return j.HetJob }},
	{"user_name", func(j *policy.Job, _ string) any { return j.User }},
	{"account", func(j *policy.Job, _ string) any { return j.Account }},
	{"partition", func(j *policy.Job, _ string) any { return j.Partition }},
	{"qos", func(j *policy.Job, _ string) any { return j.QOS }},
	{"name", func(j *policy.Job, _ string) any { return j.Name }},
	{"eligible_time", func(j *policy.Job, _ string) any { return timeOrNil(j.Eligible) }},
	{"start_time", func(j *policy.Job, _ string) any { return timeOrNil(j.Start) }},
	{"end_time", func(j *policy.Job, _ string) any { return timeOrNil(j.End) }},
	{"time_limit_s", func(j *policy.Job, _ string) any {
		if j.TimeLimit > 0 {
			return int64(j.TimeLimit / time.Second)
		}
		return nil
	}},
	{"nodes", func(j *policy.Job, _ string) any { return int32(j.Nodes) }},
	{"cpus", func(j *policy.Job, _ string) any { return int32(j.CPUs) }},
	{"memory_mb", func(j *policy.Job, _ string) any { return j.MemoryMB }},
	{"gpus", func(j *policy.Job, _ string) any { return int32(j.GPUs) }},
	{"gpu_type", func(j *policy.Job, _ string) any { return j.GPUType }},
	{"shards", func(j *policy.Job, _ string) any { return int32(j.Shards) }},
	{"state", func(j *policy.Job, _ string) any { return j.State.String() }},
	{"exit_code", func(j *policy.Job, _ string) any { return int32(j.ExitCode) }},
	{"deadline", func(j *policy.Job, _ string) any { return timeOrNil(j.Deadline) }},
	{"hosts", func(j *policy.Job, _ string) any {
		if j.Hosts == "" {
			return nil
		}
		return j.Hosts
	}},
	{"source", func(_ *policy.Job, source string) any { return source }},
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// columnsOf lists the columns of every table of the schema (partitioned
// parents, not their partitions), in column order; fairway_schema, which
// every migration adds to, is left out.
func columnsOf(t *testing.T, conn *pgx.Conn) map[string][]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT c.relname, a.attname
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
			AND c.relname <> 'fairway_schema' AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY c.relname, a.attnum`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var table, col string
	if _, err := pgx.ForEachRow(rows, []any{&table, &col}, func() error {
		out[table] = append(out[table], col)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// tableState is how many rows a table has and a digest of them.
type tableState struct {
	Rows   int64
	Digest string
}

// contents reads every table of cols over the columns cols names: a row
// lost, added or changed in one of them changes its state.
func contents(t *testing.T, conn *pgx.Conn, cols map[string][]string) map[string]tableState {
	t.Helper()
	out := map[string]tableState{}
	for table, cs := range cols {
		quoted := make([]string, len(cs))
		for i, c := range cs {
			quoted[i] = pgx.Identifier{c}.Sanitize()
		}
		q := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(r::text, E'\n' ORDER BY r::text)), '') FROM (SELECT %s FROM %s) r`,
			strings.Join(quoted, ", "), pgx.Identifier{table}.Sanitize())
		var s tableState
		if err := conn.QueryRow(context.Background(), q).Scan(&s.Rows, &s.Digest); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = s
	}
	return out
}

// partitions lists every partition as parent/partition.
func partitions(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT i.inhparent::regclass::text || '/' || i.inhrelid::regclass::text
		FROM pg_inherits i ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jobKey is what the current readers must give back of a stored job.
type jobKey struct {
	Cluster          string
	ID               int64
	ArrayTask        int
	Submit, End      time.Time
	Deadline         time.Time
	Hosts            string
	User, Account    string
	GPUs, Nodes      int
	State            string
	TimeLimitSeconds float64
}

func keyOf(j policy.Job) jobKey {
	return jobKey{Cluster: j.Cluster, ID: j.ID, ArrayTask: j.ArrayTask, Submit: j.Submit.UTC(), End: j.End.UTC(),
		Deadline: j.Deadline.UTC(), Hosts: j.Hosts, User: j.User, Account: j.Account, GPUs: j.GPUs, Nodes: j.Nodes,
		State: j.State.String(), TimeLimitSeconds: j.TimeLimit.Seconds()}
}

// checkReaders runs the current binary's readers on a database upgraded
// from schema from.
func checkReaders(t *testing.T, url string, from int, labJobs, traceJobs []policy.Job, capture []byte) {
	t.Helper()
	ctx := context.Background()
	pool, store, err := accounting.Open(ctx, url, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("accounting.Open after Up: %v", err)
	}
	defer pool.Close()

	// What the old binary stored, as the current one reads it back: the
	// deadline serve recorded from 0003 on, no node list (0008).
	var want []jobKey
	for _, j := range labJobs {
		j.Hosts = ""
		if from >= 3 && withDeadline(j) {
			j.Deadline = deadlineOf(j)
		}
		want = append(want, keyOf(j))
	}
	got, err := store.FinishedJobs(ctx, "fairwaylab", time.Time{}, time.Time{})
	if err != nil {
		t.Fatalf("FinishedJobs: %v", err)
	}
	sortKeys := func(ks []jobKey) {
		slices.SortFunc(ks, func(a, b jobKey) int {
			if c := a.End.Compare(b.End); c != 0 {
				return c
			}
			if a.ID != b.ID {
				return int(a.ID - b.ID)
			}
			return a.ArrayTask - b.ArrayTask
		})
	}
	var gotKeys []jobKey
	for _, j := range got {
		gotKeys = append(gotKeys, keyOf(j))
	}
	sortKeys(want)
	if diff := cmp.Diff(want, gotKeys); diff != "" {
		t.Errorf("FinishedJobs of the capture's cluster (-want +got):\n%s", diff)
	}

	// simulate --from-db and tune --from-db read the whole history,
	// predict eval --from-db the last days.
	hist, name, err := report.FinishedHistory(ctx, url, "kth", time.Time{}, time.Time{})
	if err != nil || name != "kth" || len(hist) != len(traceJobs) {
		t.Errorf("FinishedHistory(kth) = %d jobs of %q, %v; want the trace's %d", len(hist), name, err, len(traceJobs))
	}
	last := hist[len(hist)-1].End
	recent, _, err := report.RecentJobs(ctx, url, "kth", 30, last.Add(time.Second))
	if err != nil || len(recent) == 0 {
		t.Errorf("RecentJobs(kth) = %d jobs, %v; want some", len(recent), err)
	}

	// The report of the capture's month.
	src := report.NewSource(pool, store)
	cluster, month, err := src.Resolve(ctx, "fairwaylab", report.Month{})
	if err != nil {
		t.Fatalf("report Resolve: %v", err)
	}
	d, err := src.Load(ctx, cluster, month, true)
	if err != nil {
		t.Fatalf("report Load: %v", err)
	}
	gpus := 0
	for _, j := range labJobs {
		gpus += j.GPUs
	}
	if len(d.Jobs) != len(labJobs) || len(d.Decisions) != len(labJobs) || len(d.GPUUsage) != gpus ||
		d.Cycles.Cycles != 3 || d.Shares == nil {
		t.Errorf("report data: %d jobs, %d jobs decided, %d GPU records, %d cycles, shares %v; want %d, %d, %d, 3 and a tree",
			len(d.Jobs), len(d.Decisions), len(d.GPUUsage), d.Cycles.Cycles, d.Shares != nil, len(labJobs), len(labJobs), gpus)
	}
	wantPower := 0
	if from >= 7 {
		wantPower = 2
	}
	if len(d.PowerActions) != wantPower {
		t.Errorf("report data: %d power actions, want %d", len(d.PowerActions), wantPower)
	}

	// The admin priorities serve set, as a hand-back reads them: the nice
	// kept with them from 0006, 0 before.
	var ids []int64
	wantFrozen := map[int64]accounting.FrozenPriority{}
	for i, j := range labJobs {
		ids = append(ids, j.ID)
		if i%2 == 1 {
			fp := accounting.FrozenPriority{Priority: int64(1000*i) + 2}
			if from >= 6 {
				fp.Nice = int64(10 * i)
			}
			wantFrozen[j.ID] = fp
		}
	}
	frozen, err := store.FrozenPriorities(ctx, "fairwaylab", ids)
	if err != nil {
		t.Fatalf("FrozenPriorities: %v", err)
	}
	if diff := cmp.Diff(wantFrozen, frozen); diff != "" {
		t.Errorf("FrozenPriorities (-want +got):\n%s", diff)
	}

	// Ingest of the same capture by the current binary: the node lists the
	// old rows lack are filled in, the deadlines serve recorded are kept.
	sum, _, err := store.ImportFile(ctx, strings.NewReader(string(capture)), accounting.FileImport{Format: accounting.FormatSacctJSON, Name: "sacct-22.05.json"})
	if err != nil {
		t.Fatalf("re-import the capture: %v", err)
	}
	if sum.Inserted != 0 {
		t.Errorf("re-import inserted %d jobs, want 0: the upgraded rows are the same jobs", sum.Inserted)
	}
	got, err = store.FinishedJobs(ctx, "fairwaylab", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want, gotKeys = nil, nil
	for _, j := range labJobs {
		if from >= 3 && withDeadline(j) {
			j.Deadline = deadlineOf(j)
		}
		want = append(want, keyOf(j))
	}
	for _, j := range got {
		gotKeys = append(gotKeys, keyOf(j))
	}
	sortKeys(want)
	if diff := cmp.Diff(want, gotKeys); diff != "" {
		t.Errorf("FinishedJobs after re-importing the capture (-want +got):\n%s", diff)
	}
}
