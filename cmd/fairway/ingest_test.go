package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/internal/shareddata"
	"github.com/fairway-hpc/fairway/slurmctl"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// migratedDB creates a database on the lab's PostgreSQL, applies the schema
// through the CLI, and returns its URL and a connection; both go when the
// test ends.
func migratedDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := lab.Get(t).EmptyDatabase(t)
	if out, err := runApp(t, "migrate", "--database-url", url, "up"); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return url, conn
}

// sharedTraceHead writes the first n lines of a shared trace to a file in
// a temporary directory, corrupting line bad (1-based) when bad > 0.
func sharedTraceHead(t *testing.T, file string, n, bad int) string {
	t.Helper()
	f, err := os.Open(shareddata.Trace(t, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(zr)
	for i := 1; i <= n && sc.Scan(); i++ {
		line := sc.Text()
		if i == bad {
			line = "17 18 garbage"
		}
		b.WriteString(line + "\n")
	}
	path := filepath.Join(t.TempDir(), "kth-head.swf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func ingestJSON(t *testing.T, args ...string) accounting.IngestResult {
	t.Helper()
	out, err := runApp(t, append([]string{"ingest", "--json", "--progress", "never"}, args...)...)
	if err != nil {
		t.Fatalf("ingest %v: %v\n%s", args, err, out)
	}
	var r accounting.IngestResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ingest printed %q: %v", out, err)
	}
	return r
}

func TestIngestCommand_TraceTwiceAndCorrupt(t *testing.T) {
	url, conn := migratedDB(t)
	path := sharedTraceHead(t, "KTH-SP2-filtered.swf.gz", 500, 0)
	first := ingestJSON(t, "--database-url", url, "--from", "swf", path)
	if first.Cluster != "kth-head" || first.Inserted == 0 || first.Inserted != first.Read {
		t.Fatalf("first import: %+v", first)
	}
	second := ingestJSON(t, "--database-url", url, "--from", "swf", path)
	if second.Unchanged != first.Inserted || second.Inserted+second.Updated != 0 {
		t.Errorf("second import: %+v, want all %d unchanged", second, first.Inserted)
	}

	bad := sharedTraceHead(t, "KTH-SP2-filtered.swf.gz", 500, 444)
	out, err := runApp(t, "ingest", "--progress", "never", "--database-url", url, "--from", "swf", "--cluster", "other", bad)
	if err == nil || !strings.Contains(err.Error(), bad+":444:") || !strings.Contains(err.Error(), "nothing imported") {
		t.Fatalf("corrupt trace: err = %v, want %s:444 and 'nothing imported'\n%s", err, bad, out)
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM job WHERE cluster = 'other'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the failed import: %d (%v), want 0", n, err)
	}
	skipped := ingestJSON(t, "--database-url", url, "--from", "swf", "--cluster", "other", "--skip-bad", bad)
	// The skipped line is counted and named, with why.
	if skipped.Rejected != 1 || skipped.Inserted != first.Inserted-1 || len(skipped.Rejects) != 1 ||
		!strings.HasPrefix(skipped.Rejects[0], bad+":444: ") {
		t.Errorf("--skip-bad: %+v, want 1 rejected, named %s:444", skipped, bad)
	}
}

func TestIngestCommand_SacctTable(t *testing.T) {
	url, _ := migratedDB(t)
	fixture := filepath.Join("..", "..", "accounting", "testdata", "sacct-22.05.json")
	out, err := runApp(t, "ingest", "--progress", "never", "--database-url", url, "--from", "sacct-json", fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source      sacct-json", "read        10", "inserted    10", "rejected    0"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestIngestCommand_Errors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown source", []string{"--from", "csv", "x"}, `--from "csv": want one of slurmdbd, sacct-json, swf, helios, philly-mix`},
		{"no file", []string{"--from", "swf"}, "--from swf needs exactly one FILE argument"},
		{"slurmdbd without cluster", []string{"--from", "slurmdbd"}, "--cluster: required with --from slurmdbd"},
		{"bad since", []string{"--from", "slurmdbd", "--cluster", "c", "--since", "yesterday"}, `--since "yesterday"`},
		{"no database", []string{"--database-url", "", "--from", "swf", "x"}, "no database: set --database-url"},
		{"dead database", []string{"--database-url", "postgres://fairway@127.0.0.1:1/gone?connect_timeout=2", "--from", "swf", "x"},
			`connect to PostgreSQL at 127.0.0.1:1 database "gone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAIRWAY_DATABASE_URL", "")
			_, err := runApp(t, append([]string{"ingest", "--progress", "never"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSharesCommand_SyncShow(t *testing.T) {
	e := lab.Get(t)
	url, _ := migratedDB(t)
	t.Setenv("SLURM_CONF", e.SlurmConf)
	out, err := runApp(t, "shares", "sync", "--database-url", url, "--cluster", e.Cluster)
	if err != nil || !strings.Contains(out, "from slurmdbd: 6 nodes") {
		t.Fatalf("sync from slurmdbd: %v\n%s", err, out)
	}
	conf := filepath.Join(t.TempDir(), "shares.conf")
	if err := os.WriteFile(conf, []byte("physics 75\nchem:carol 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runApp(t, "shares", "sync", "--database-url", url, "--cluster", e.Cluster, "--from", "config", "--file", conf); err != nil {
		t.Fatalf("sync from config: %v\n%s", err, out)
	}
	out, err = runApp(t, "shares", "show", "--database-url", url, "--cluster", e.Cluster, "--json")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Account, User, Parent, Source string
		Shares                        float64
	}
	var got []row
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []row{
		{Account: "chem", Shares: 40, Source: "slurmdbd"},
		{Account: "physics", Shares: 75, Source: "config"},
		{Account: "chem", User: "carol", Shares: 3, Source: "config"},
		{Account: "physics", User: "alice", Shares: 1, Source: "slurmdbd"},
		{Account: "physics", User: "bob", Shares: 1, Source: "slurmdbd"},
		{Account: "root", User: "root", Shares: 1, Source: "slurmdbd"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shares show (-want +got):\n%s", diff)
	}
}

// TestIngestCommand_SlurmdbdVia pulls the lab's slurmdbd history through
// slurmrestd, then through sacct: the summary says which reader ran, and
// the second pull finds every job the first stored with the same values.
func TestIngestCommand_SlurmdbdVia(t *testing.T) {
	e := lab.Get(t)
	url, _ := migratedDB(t)
	t.Setenv("SLURM_CONF", e.SlurmConf)
	since := time.Now().Add(-15 * time.Minute).UTC().Format(time.RFC3339)
	rest := ingestJSON(t, "--database-url", url, "--from", "slurmdbd", "--cluster", e.Cluster, "--since", since,
		"--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile)
	if !strings.HasPrefix(rest.Via, "slurmrestd v0.0.") || !strings.HasSuffix(rest.Via, " at "+e.RESTURL) || rest.Rejected != 0 {
		t.Errorf("through slurmrestd: %+v", rest)
	}
	t.Logf("through slurmrestd: %+v", rest)
	out, err := runApp(t, "ingest", "--progress", "never", "--database-url", url, "--from", "slurmdbd", "--cluster", e.Cluster, "--slurm-url", "")
	t.Logf("through sacct:\n%s", out)
	if err != nil {
		t.Fatalf("through sacct: %v\n%s", err, out)
	}
	for _, want := range []string{"via         sacct\n", "updated     0\n", "rejected    0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary through sacct lacks %q:\n%s", want, out)
		}
	}
}

func TestIngestCommand_SlurmdbdNoToken(t *testing.T) {
	t.Setenv("SLURM_JWT", "")
	t.Setenv("FAIRWAY_SLURM_TOKEN_FILE", "")
	t.Setenv("FAIRWAY_SCONTROL_TOKEN", "")
	_, err := runApp(t, "ingest", "--progress", "never", "--database-url", "postgres://x@127.0.0.1:1/x", "--from", "slurmdbd",
		"--cluster", "c", "--slurm-url", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "no slurmrestd token") {
		t.Fatalf("err = %v, want the missing token named", err)
	}
}

// TestSharesCommand_SyncFromSlurmrestd runs `shares sync --from slurmrestd`
// against the lab. Debian's 22.05 (REST v0.0.38) has no /shares endpoint:
// the command must fail with an error that says so and names the way out,
// and store nothing. A lab on a newer Slurm (FAIRWAY_LAB_SLURM_PREFIX) must
// store exactly the tree `--from slurmdbd` (sacctmgr) stores.
func TestSharesCommand_SyncFromSlurmrestd(t *testing.T) {
	e := lab.Get(t)
	url, _ := migratedDB(t)
	t.Setenv("SLURM_CONF", e.SlurmConf)
	show := func() string {
		out, err := runApp(t, "shares", "show", "--database-url", url, "--cluster", e.Cluster, "--json")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := show()
	out, err := runApp(t, "shares", "sync", "--database-url", url, "--cluster", e.Cluster, "--from", "slurmrestd",
		"--slurm-url", e.RESTURL, "--slurm-user", e.RESTUser, "--slurm-token-file", e.TokenFile)
	c, cerr := slurmctl.New(t.Context(), slurmctl.Config{URL: e.RESTURL, User: e.RESTUser, Token: slurmctl.FileToken(e.TokenFile)}, nil)
	if cerr != nil {
		t.Fatal(cerr)
	}
	if c.Version() == slurmctl.V0038 {
		if err == nil || !strings.Contains(err.Error(), "no /shares endpoint") || !strings.Contains(err.Error(), "--from slurmdbd") {
			t.Fatalf("sync from slurmrestd %s: %v\n%s; want the clear error", c.Version(), err, out)
		}
		if after := show(); after != before {
			t.Errorf("a failed sync changed the stored tree:\n%s\nwas\n%s", after, before)
		}
		t.Logf("Slurm %s (%s): %v", c.Release(), c.Version(), err)
		return
	}
	if err != nil || !strings.Contains(out, "from slurmdbd through slurmrestd: 6 nodes") {
		t.Fatalf("sync from slurmrestd %s: %v\n%s", c.Version(), err, out)
	}
	viaRest := show()
	if out, err := runApp(t, "shares", "sync", "--database-url", url, "--cluster", e.Cluster); err != nil {
		t.Fatalf("sync from slurmdbd: %v\n%s", err, out)
	}
	if viaSacctmgr := show(); viaSacctmgr != viaRest {
		t.Errorf("slurmrestd and sacctmgr give different trees:\n%s\n%s", viaRest, viaSacctmgr)
	}
}
