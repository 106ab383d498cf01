package lab

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	fsql "github.com/fairway-hpc/fairway/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbSeq atomic.Int64

// EmptyDatabase creates a database of its own on the lab's PostgreSQL for
// one test and returns its URL; it is dropped when the test ends. Tests never
// share the lab's `fairway` database, so they can run beside a demo or serve.
func (e *Env) EmptyDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, e.DatabaseURL)
	if err != nil {
		t.Fatalf("connect to the lab's PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("fairway_test_%d_%d", time.Now().UnixNano(), dbSeq.Add(1))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(ctx)
	})
	cfg, err := pgx.ParseConfig(e.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

// Database is EmptyDatabase with Fairway's schema applied.
func (e *Env) Database(t testing.TB) string {
	t.Helper()
	url := e.EmptyDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := fsql.Up(ctx, conn); err != nil {
		t.Fatalf("migrate test database: %v", err)
	}
	return url
}

// DatabasePool is a pool of at most four connections on a Database of the
// test's own, closed when the test ends.
func (e *Env) DatabasePool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(e.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
