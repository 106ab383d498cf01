package accounting_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/jackc/pgx/v5"
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

// TestNodeRole_Lab connects as the GPU nodes' role, made with INSTALL.md's
// statements, and shows it can store usage records (a new month's
// partition included) and nothing else: no UPDATE, DELETE or SELECT of
// job_gpu_usage, no access to any other table, no partition functions, no
// DDL.
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

	role := fmt.Sprintf("fairway_node_%d", time.Now().UnixNano())
	grants := strings.NewReplacer("fairway_node", role, "DATABASE fairway ", "DATABASE "+ocfg.Database+" ", "'PASSWORD'", "'node-secret'").
		Replace(nodeRoleGrants(t))
	if _, err := owner.Exec(ctx, grants); err != nil {
		t.Fatalf("INSTALL.md's grants:\n%s\n%v", grants, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, e.DatabaseURL)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		// The test database is dropped by then, taking the role's grants along.
		_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	// A few owner rows the node must not see or change.
	for _, q := range []string{
		`INSERT INTO cluster (name) VALUES ('c')`,
		`SELECT fairway_ensure_month('job', '2026-10-05T00:00:00Z')`,
		`INSERT INTO job (cluster, job_id, submit_time, state, source) VALUES ('c', 1, '2026-10-05T00:00:00Z', 'COMPLETED', 'test')`,
		`SELECT fairway_ensure_month('job_gpu_usage', '2026-10-05T00:00:00Z')`,
		`INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at) VALUES ('c', 1, 'gpu1', 0, '2026-10-05T01:00:00Z')`,
	} {
		if _, err := owner.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	nodeURL := fmt.Sprintf("postgres://%s:node-secret@%s:%d/%s?sslmode=disable", role, ocfg.Host, ocfg.Port, ocfg.Database)
	pool, err := pgxpool.New(ctx, nodeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := accounting.New(pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// November has no partition yet: the function makes it.
	end := time.Date(2026, 11, 3, 4, 5, 6, 0, time.UTC)
	us := []accounting.GPUUsage{{Cluster: "c", JobID: 2, Node: "gpu1", GPUMinor: 1, Started: end.Add(-time.Hour), Ended: end, Shards: 3}}
	for i, want := range []int{1, 0} {
		if n, err := store.RecordGPUUsage(ctx, us); err != nil || n != want {
			t.Fatalf("as the node role, RecordGPUUsage #%d = %d, %v; want %d", i+1, n, err, want)
		}
	}
	var n int
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM job_gpu_usage_p202611 WHERE job_id = 2`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the node's record in the new partition: %d rows, %v", n, err)
	}

	for _, q := range []string{
		`UPDATE job_gpu_usage SET util_avg_pct = 1`,
		`UPDATE job_gpu_usage_p202610 SET util_avg_pct = 1`,
		`DELETE FROM job_gpu_usage`,
		`DELETE FROM job_gpu_usage_p202611`,
		`SELECT count(*) FROM job_gpu_usage`,
		`INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at) VALUES ('c', 3, 'gpu1', 0, '2026-10-05T02:00:00Z')`,
		`SELECT count(*) FROM job`,
		`SELECT count(*) FROM decision`,
		`SELECT count(*) FROM kv_state`,
		`SELECT count(*) FROM fairway_schema`,
		`UPDATE job SET state = 'FAILED'`,
		`SELECT fairway_drop_months_before('job_gpu_usage', now())`,
		`SELECT fairway_ensure_month('job', '2027-01-01T00:00:00Z')`,
		`DROP TABLE job_gpu_usage_p202610`,
		`CREATE TABLE job_gpu_usage_x (a int)`,
		`TRUNCATE job_gpu_usage`,
	} {
		_, err := pool.Exec(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "permission denied") && !strings.Contains(err.Error(), "must be owner") {
			t.Errorf("as the node role, %s: %v; want permission denied", q, err)
		}
	}
	if err := owner.QueryRow(ctx, `SELECT count(*) FROM job_gpu_usage WHERE util_avg_pct IS NULL`).Scan(&n); err != nil || n != 2 {
		t.Errorf("usage rows after the node's attempts: %d untouched, %v; want 2", n, err)
	}
}
