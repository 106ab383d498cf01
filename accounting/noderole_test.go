package accounting_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// nodeRoleGrants returns the SQL block INSTALL.md gives administrators for
// the GPU nodes' role, so the test runs exactly what the guide says.
func nodeRoleGrants(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../INSTALL.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- node-role-grants:[^>]*-->\n```sql\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("INSTALL.md has no node-role-grants SQL block")
	}
	return string(m[1])
}

// TestNodeRole_Lab connects as a GPU node's login, made with INSTALL.md's
// statements, and shows it can store its own node's current usage records
// (a new month's partition included) and nothing else: no UPDATE, DELETE
// or SELECT of job_gpu_usage, no access to any other table, no partition
// functions, no DDL; and that fairway_record_gpu_usage refuses it another
// node's or cluster's record, a record ending more than a day from now
// (a far-future month among them) and a call spanning three months,
// creating no partition for them; a login without a fairway_node_login row
// is refused everything. The schema owner may still store any record.
func TestNodeRole_Lab(t *testing.T) {
	e := lab.Get(t)
	ctx := context.Background()
	ownerURL := e.Database(t)
	owner, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	ocfg := owner.Config()

	// Roles are the server's, not the database's: unique names.
	role := fmt.Sprintf("fairway_node_%d", time.Now().UnixNano())
	login, group, stray := role+"_gpu1", role+"s", role+"_stray"
	grants := strings.NewReplacer("fairway_node_login", "fairway_node_login", "fairway_node", role, "DATABASE fairway ", "DATABASE "+ocfg.Database+" ",
		"'PASSWORD'", "'node-secret'", "'CLUSTER'", "'c'").Replace(nodeRoleGrants(t))
	if _, err := owner.Exec(ctx, grants); err != nil {
		t.Fatalf("INSTALL.md's grants:\n%s\n%v", grants, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, e.DatabaseURL)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		// The test database is dropped by then, taking the roles' grants along.
		for _, r := range []string{login, stray, group} {
			_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+r)
		}
	})
	now := time.Now().UTC().Truncate(time.Microsecond)
	month := func(t time.Time) string { return t.Format("200601") }
	past := time.Date(now.Year(), now.Month()-3, 5, 0, 0, 0, 0, time.UTC)
	// A few owner rows the node must not see or change.
	for _, q := range []string{
		`INSERT INTO cluster (name) VALUES ('c')`,
		fmt.Sprintf(`SELECT fairway_ensure_month('job', '%s')`, past.Format(time.RFC3339)),
		fmt.Sprintf(`INSERT INTO job (cluster, job_id, submit_time, state, source) VALUES ('c', 1, '%s', 'COMPLETED', 'test')`, past.Format(time.RFC3339)),
		fmt.Sprintf(`SELECT fairway_ensure_month('job_gpu_usage', '%s')`, past.Format(time.RFC3339)),
		fmt.Sprintf(`INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at) VALUES ('c', 1, 'gpu1', 0, '%s')`, past.Add(time.Hour).Format(time.RFC3339)),
		// A login that is a node's (it holds the group's rights) but is in no fairway_node_login row.
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'node-secret' IN ROLE %s`, stray, group),
	} {
		if _, err := owner.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	connect := func(user string) *pgxpool.Pool {
		url := fmt.Sprintf("postgres://%s:node-secret@%s:%d/%s?sslmode=disable", user, ocfg.Host, ocfg.Port, ocfg.Database)
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	pool := connect(login)
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// This month has no partition yet: the function makes it.
	us := []accounting.GPUUsage{{Cluster: "c", JobID: 2, Node: "gpu1", GPUMinor: 1, Started: now.Add(-time.Hour), Ended: now, Shards: 3}}
	for i, want := range []int{1, 0} {
		if n, err := store.RecordGPUUsage(ctx, us); err != nil || n != want {
			t.Fatalf("as gpu1's login, RecordGPUUsage #%d = %d, %v; want %d", i+1, n, err, want)
		}
	}
	var n int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM job_gpu_usage_p`+month(now)+` WHERE job_id = 2`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the node's record in the new partition: %d rows, %v", n, err)
	}

	// What the node may not store, each alone: refused, nothing written.
	far := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		u      accounting.GPUUsage
		reason string
	}{
		{"another node's job", accounting.GPUUsage{Cluster: "c", JobID: 77, Node: "gpu9", Ended: now}, "may record node gpu1 in cluster c only"},
		{"another cluster", accounting.GPUUsage{Cluster: "c2", JobID: 77, Node: "gpu1", Ended: now}, "may record node gpu1 in cluster c only"},
		{"a far-future month", accounting.GPUUsage{Cluster: "c", JobID: 77, Node: "gpu1", Ended: far}, "more than a day from now"},
		{"a month after next", accounting.GPUUsage{Cluster: "c", JobID: 77, Node: "gpu1", Ended: now.AddDate(0, 2, 0)}, "more than a day from now"},
		{"two days ago", accounting.GPUUsage{Cluster: "c", JobID: 77, Node: "gpu1", Ended: now.Add(-48 * time.Hour)}, "more than a day from now"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := store.RecordGPUUsage(ctx, []accounting.GPUUsage{tt.u})
			var re *accounting.UsageRefusedError
			if n != 0 || !errors.Is(err, accounting.ErrUsageRefused) || !errors.As(err, &re) ||
				len(re.Refused) != 1 || re.Refused[0].Index != 0 || !strings.Contains(re.Refused[0].Reason, tt.reason) {
				t.Errorf("as gpu1's login: stored %d, %v; want refused: %s", n, err, tt.reason)
			}
		})
	}

	// Three months in one call are refused as a whole by the function,
	// before it creates a partition.
	third := []time.Time{now, now.AddDate(0, 1, 0), now.AddDate(0, 2, 0)}
	var stored int
	err = pool.QueryRow(ctx, `SELECT fairway_record_gpu_usage('{c,c,c}', '{78,78,78}', '{gpu1,gpu1,gpu1}', '{0,0,0}',
		$1::timestamptz[], NULL, '{"","",""}', '{"","",""}', '{0,0,0}', NULL, NULL, NULL, NULL, NULL)`, third).Scan(&stored)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "FW001" || !strings.Contains(pgErr.Message, "records of 3 months in one call; a node may send at most 2") {
		t.Errorf("as gpu1's login, a call spanning three months: %d, %v; want refused (FW001)", stored, err)
	}

	// A mixed batch: the store finds the refused records and stores the rest.
	mixed := []accounting.GPUUsage{
		{Cluster: "c", JobID: 3, Node: "gpu1", GPUMinor: 0, Ended: now},
		{Cluster: "c", JobID: 3, Node: "gpu2", GPUMinor: 0, Ended: now},
		{Cluster: "c", JobID: 4, Node: "gpu1", GPUMinor: 0, Ended: now.Add(-time.Hour)},
		{Cluster: "c", JobID: 4, Node: "gpu1", GPUMinor: 1, Ended: far},
		{Cluster: "c", JobID: 5, Node: "gpu1", GPUMinor: 0, Ended: now.Add(time.Minute)},
	}
	got, err := store.RecordGPUUsage(ctx, mixed)
	var re *accounting.UsageRefusedError
	if got != 3 || !errors.As(err, &re) || len(re.Refused) != 2 || re.Refused[0].Index != 1 || re.Refused[1].Index != 3 {
		t.Errorf("as gpu1's login, a mixed batch: stored %d, %v (%+v); want 3 stored, records 1 and 3 refused", got, err, re)
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM job_gpu_usage WHERE node <> 'gpu1' OR ended_at > now() + interval '1 day' OR job_id IN (77, 78)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows the node was refused: %d stored, %v; want 0", n, err)
	}
	var parts []string
	rows, err := owner.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'job_gpu_usage'::regclass ORDER BY 1`)
	if err == nil {
		parts, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	// Next month's too, when now is within a day of it.
	want := []string{"job_gpu_usage_p" + month(past), "job_gpu_usage_p" + month(now)}
	if next := now.Add(time.Minute); month(next) != month(now) {
		want = append(want, "job_gpu_usage_p"+month(next))
	}
	if err != nil || !slices.Equal(parts, want) {
		t.Errorf("job_gpu_usage partitions: %v, %v; want %v", parts, err, want)
	}

	// A node login without a fairway_node_login row stores nothing, and
	// it is not told its records are refused (they would be set aside):
	// the spool keeps them until an administrator adds the row.
	_, err = accounting.New(connect(stray), slog.New(slog.NewTextHandler(io.Discard, nil))).RecordGPUUsage(ctx, us[:1])
	if err == nil || errors.Is(err, accounting.ErrUsageRefused) || !strings.Contains(err.Error(), "fairway_node_login has no row for it") {
		t.Errorf("as a login with no fairway_node_login row: %v; want insufficient privilege naming fairway_node_login", err)
	}

	// The owner (serve, an administrator importing set-aside records) may
	// store any node's record of any time.
	ownerStore := accounting.New(connectOwner(t, ownerURL), slog.New(slog.NewTextHandler(io.Discard, nil)))
	old := []accounting.GPUUsage{{Cluster: "c", JobID: 6, Node: "gpu9", GPUMinor: 0, Ended: past.Add(2 * time.Hour)}}
	if n, err := ownerStore.RecordGPUUsage(ctx, old); err != nil || n != 1 {
		t.Errorf("as the owner, another node's record of %s: %d, %v; want stored", month(past), n, err)
	}

	for _, q := range []string{
		`UPDATE job_gpu_usage SET util_avg_pct = 1`,
		`UPDATE job_gpu_usage_p` + month(past) + ` SET util_avg_pct = 1`,
		`DELETE FROM job_gpu_usage`,
		`DELETE FROM job_gpu_usage_p` + month(now),
		`SELECT count(*) FROM job_gpu_usage`,
		`INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at) VALUES ('c', 3, 'gpu1', 0, now())`,
		`SELECT count(*) FROM job`,
		`SELECT count(*) FROM decision`,
		`SELECT count(*) FROM kv_state`,
		`SELECT count(*) FROM fairway_schema`,
		`SELECT count(*) FROM fairway_node_login`,
		`INSERT INTO fairway_node_login (login, cluster, node) VALUES ('` + login + `', 'c', 'gpu2')`,
		`UPDATE fairway_node_login SET node = 'gpu2'`,
		`DELETE FROM fairway_node_login`,
		`UPDATE job SET state = 'FAILED'`,
		`SELECT fairway_drop_months_before('job_gpu_usage', now())`,
		`SELECT fairway_drop_months_from('job_gpu_usage', now(), 1)`,
		`SELECT fairway_ensure_month('job', '2027-01-01T00:00:00Z')`,
		`DROP TABLE job_gpu_usage_p` + month(past),
		`CREATE TABLE job_gpu_usage_x (a int)`,
		`TRUNCATE job_gpu_usage`,
	} {
		_, err := pool.Exec(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "permission denied") && !strings.Contains(err.Error(), "must be owner") {
			t.Errorf("as gpu1's login, %s: %v; want permission denied", q, err)
		}
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM job_gpu_usage WHERE util_avg_pct IS NULL`).Scan(&n); err != nil || n != 6 {
		t.Errorf("usage rows after the node's attempts: %d untouched, %v; want 6", n, err)
	}
}

// connectOwner is a pool on the test database as its owner.
func connectOwner(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
