package sql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/sql"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

func TestMigrations_WellFormed(t *testing.T) {
	ms, err := sql.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no embedded migrations")
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d has version %d: versions must be 1..n without gaps", i, m.Version)
		}
		if strings.Contains(strings.ToUpper(m.SQL), "FAIRWAY_SCHEMA") {
			t.Errorf("migration %04d_%s touches fairway_schema, which only the migrator writes", m.Version, m.Name)
		}
	}
	latest, err := sql.Latest()
	if err != nil || latest != ms[len(ms)-1].Version {
		t.Fatalf("Latest() = %d, %v; want %d", latest, err, ms[len(ms)-1].Version)
	}
}

// freshDB connects to an empty database of the test's own on the lab's
// PostgreSQL.
func freshDB(t *testing.T) *pgx.Conn {
	t.Helper()
	e := lab.Get(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.EmptyDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// TestUp_TwiceOnLabPostgres applies every migration to an empty database on
// the lab's PostgreSQL, then again: the second run must apply nothing and
// leave the recorded schema unchanged.
func TestUp_TwiceOnLabPostgres(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	all, _ := sql.Migrations()

	first, err := sql.Up(ctx, conn)
	if err != nil {
		t.Fatalf("first Up: %v", err)
	}
	if len(first) != len(all) {
		t.Fatalf("first Up applied %d migrations, want %d", len(first), len(all))
	}
	before, err := sql.Status(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	second, err := sql.Up(ctx, conn)
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if len(second) != 0 {
		t.Fatalf("second Up applied %d migrations, want 0", len(second))
	}
	after, err := sql.Status(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != len(all) || len(after) != len(before) {
		t.Fatalf("status rows: %d before, %d after, want %d", len(before), len(after), len(all))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("status row %d changed: %+v -> %+v", i, before[i], after[i])
		}
	}
	if err := sql.CheckCurrent(ctx, conn); err != nil {
		t.Fatalf("CheckCurrent after Up: %v", err)
	}
}

// TestUp_RefusesNewerSchema records a migration this binary does not know and
// checks Up and CheckCurrent refuse with ErrSchemaNewer and change nothing.
func TestUp_RefusesNewerSchema(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	if _, err := sql.Up(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO fairway_schema (version, name) VALUES (9999, 'from_the_future')`); err != nil {
		t.Fatal(err)
	}
	_, err := sql.Up(ctx, conn)
	if !errors.Is(err, sql.ErrSchemaNewer) {
		t.Fatalf("Up on a newer schema: err = %v, want ErrSchemaNewer", err)
	}
	if !strings.Contains(err.Error(), "9999_from_the_future") {
		t.Errorf("error %q does not name the unknown migration", err)
	}
	if err := sql.CheckCurrent(ctx, conn); !errors.Is(err, sql.ErrSchemaNewer) {
		t.Fatalf("CheckCurrent: %v, want ErrSchemaNewer", err)
	}
}

// TestUp_FailedMigrationLeavesNothing checks the per-migration transaction:
// a database where a migration cannot apply keeps no trace of it.
func TestUp_FailedMigrationLeavesNothing(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	// Make migration 1 fail half-way: its first table already exists.
	if _, err := conn.Exec(ctx, `CREATE TABLE kv_state (x int)`); err != nil {
		t.Fatal(err)
	}
	done, err := sql.Up(ctx, conn)
	if err == nil {
		t.Fatal("Up succeeded although migration 1 must fail")
	}
	if len(done) != 0 {
		t.Fatalf("Up reported %d applied migrations, want 0", len(done))
	}
	applied, err := sql.Status(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("fairway_schema has %d rows after a failed migration, want 0", len(applied))
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'cluster'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table cluster exists after migration 1 failed: the migration was not atomic")
	}
}

// TestUp_JobDeadlineOnStoredJobs upgrades a database that has schema 2 and
// stored jobs in a monthly partition: 0003 alone applies, and the job table
// and its existing partition gain a nullable deadline, NULL for the jobs
// already there. Schema 2 is made by migrating fully and taking 0003 back
// out by hand, since the migrator only goes forward.
func TestUp_JobDeadlineOnStoredJobs(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	if _, err := sql.Up(ctx, conn); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE job DROP COLUMN deadline`,
		`DELETE FROM fairway_schema WHERE version = 3`,
		`SELECT fairway_ensure_month('job', '2026-10-05T00:00:00Z')`,
		`INSERT INTO job (cluster, job_id, submit_time, state, source) VALUES ('c', 1, '2026-10-05T00:00:00Z', 'COMPLETED', 'test')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	done, err := sql.Up(ctx, conn)
	if err != nil {
		t.Fatalf("Up from schema 2: %v", err)
	}
	if len(done) != 1 || done[0].Version != 3 || done[0].Name != "job_deadline" {
		t.Fatalf("Up from schema 2 applied %+v, want 0003_job_deadline alone", done)
	}
	// The column, on the parent and on the partition that existed before.
	rows, err := conn.Query(ctx, `SELECT c.relname, format_type(a.atttypid, a.atttypmod), a.attnotnull
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relname IN ('job', 'job_p202610') AND a.attname = 'deadline' AND NOT a.attisdropped ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct {
		Table, Type string
		NotNull     bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	want := []column{{"job", "timestamp with time zone", false}, {"job_p202610", "timestamp with time zone", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deadline columns (-want +got):\n%s", diff)
	}
	var n, nulls int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deadline IS NULL) FROM job`).Scan(&n, &nulls); err != nil {
		t.Fatal(err)
	}
	if n != 1 || nulls != 1 {
		t.Errorf("after 0003: %d jobs, %d with a NULL deadline; want the one stored job, NULL", n, nulls)
	}
}

// TestUp_RefusesRenumberedMigration is a database that a build from the
// power-serve branch migrated: that branch numbered its power migration
// 0006, which main had already given to decision_nice, and the merge made
// it 0007. Taken by version alone, the database looks one migration from
// current: Up would skip 0006_decision_nice for good (so decision.nice,
// which a hand-back reads, never exists) and then fail in 0007_power on a
// table that is already there. Up and CheckCurrent must instead refuse at
// once, naming both migrations, and change nothing.
func TestUp_RefusesRenumberedMigration(t *testing.T) {
	conn := freshDB(t)
	ctx := context.Background()
	if err := sql.UpTo(ctx, conn, 5); err != nil {
		t.Fatal(err)
	}
	ms, err := sql.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	// The branch's 0006_power was main's 0007_power but for its number.
	branch := ms[6]
	if branch.Name != "power" {
		t.Fatalf("migration 7 is %s, want power", branch.Name)
	}
	if _, err := conn.Exec(ctx, branch.SQL); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO fairway_schema (version, name) VALUES (6, 'power')`); err != nil {
		t.Fatal(err)
	}
	before, err := sql.Status(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}

	done, err := sql.Up(ctx, conn)
	if !errors.Is(err, sql.ErrSchemaForeign) || len(done) != 0 {
		t.Fatalf("Up on a branch's schema: applied %d, err = %v; want none and ErrSchemaForeign", len(done), err)
	}
	for _, name := range []string{"0006_power", "0006_decision_nice"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	after, err := sql.Status(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("fairway_schema changed (-before +after):\n%s", diff)
	}
	if err := sql.CheckCurrent(ctx, conn); !errors.Is(err, sql.ErrSchemaForeign) {
		t.Errorf("CheckCurrent on a branch's schema: %v, want ErrSchemaForeign", err)
	}
}
