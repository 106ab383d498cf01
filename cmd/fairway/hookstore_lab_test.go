package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/fairway-hpc/fairway/prolog"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestHookStore_FlushPoisonedRecord_Lab: a spooled record PostgreSQL
// cannot store (a NUL byte in its node name, which JSON keeps and text
// columns refuse) is set aside with the database's reason, and the
// records spooled around it are stored. Before, the error failed the whole
// batch at every flush, so the spool behind it never drained.
func TestHookStore_FlushPoisonedRecord_Lab(t *testing.T) {
	url := lab.Get(t).Database(t)
	ctx := context.Background()
	end := time.Now().UTC().Truncate(time.Microsecond)
	good1 := prolog.Usage{Cluster: "c", JobID: 1, Node: "gpu1", EndedAt: end}
	poison := prolog.Usage{Cluster: "c", JobID: 2, Node: "gpu\x001", EndedAt: end}
	good2 := prolog.Usage{Cluster: "c", JobID: 3, Node: "gpu1", EndedAt: end}
	s := prolog.Spool{Dir: t.TempDir()}
	if err := s.Put([]prolog.Usage{good1, poison, good2}); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))

	// With the database down nothing is set aside: the poisoned record
	// cannot be told from the others until the database answers.
	down := fmt.Sprintf("postgres://fairway@127.0.0.1:%d/fairway?sslmode=disable&connect_timeout=2", closedPort(t))
	if c, err := s.Flush(ctx, &hookUsageStore{URL: down, Log: log}, log); err == nil || c != (prolog.FlushCounts{Left: 3}) {
		t.Fatalf("flush with the database down = %+v, %v; want an error and 3 left", c, err)
	}
	refused := prolog.Spool{Dir: filepath.Join(s.Dir, prolog.RefusedDir)}
	us, _, _ := s.Pending()
	aside, _, _ := refused.Pending()
	if len(us) != 3 || len(aside) != 0 {
		t.Fatalf("spool after the failed flush: %d records, %d set aside; want 3 and 0", len(us), len(aside))
	}

	c, err := s.Flush(ctx, &hookUsageStore{URL: url, Log: log}, log)
	if err != nil {
		t.Fatalf("flush: %v\n%s", err, logged.String())
	}
	if d := cmp.Diff(prolog.FlushCounts{Stored: 2, Refused: 1}, c); d != "" {
		t.Errorf("flush counts (-want +got):\n%s", d)
	}
	if !strings.Contains(logged.String(), "invalid byte sequence") {
		t.Errorf("the log does not give the database's reason:\n%s", logged.String())
	}
	left, bad, err := s.Pending()
	if err != nil || len(left) != 0 || len(bad) != 0 {
		t.Errorf("spool after the flush: %v, bad %v, %v; want empty", left, bad, err)
	}
	aside, bad, err = refused.Pending()
	if d := cmp.Diff([]prolog.Usage{poison}, aside); d != "" || len(bad) != 0 || err != nil {
		t.Errorf("set aside (-want +got):\n%s\nbad %v, %v", d, bad, err)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT job_id FROM job_gpu_usage ORDER BY job_id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if d := cmp.Diff([]int64{1, 3}, ids); d != "" || err != nil {
		t.Errorf("stored job ids (-want +got):\n%s\n%v", d, err)
	}
}
