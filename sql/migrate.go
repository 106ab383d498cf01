package sql

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaNewer means the database was migrated by a newer Fairway.
var ErrSchemaNewer = errors.New("database schema is newer than this fairway binary knows")

// ErrSchemaForeign means the database records a migration under a version
// this binary gives another migration: another build (a branch whose
// migrations were renumbered when it was merged) migrated it.
var ErrSchemaForeign = errors.New("database schema was made by another build of fairway")

// lockKey is the advisory lock taken while migrating ("fairway" as bytes).
const lockKey int64 = 0x66616972776179

// Migration is one embedded schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Applied is one row of fairway_schema.
type Applied struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

// Migrations returns the embedded migrations in version order. File names
// must be NNNN_name.sql with unique versions; anything else is an error (a
// build-time mistake the tests catch).
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		base, ok := strings.CutSuffix(name, ".sql")
		num, label, ok2 := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || v <= 0 || label == "" {
			return nil, fmt.Errorf("migration file %q: want NNNN_name.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: label, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Latest is the newest schema version embedded in this binary.
func Latest() (int, error) {
	ms, err := Migrations()
	if err != nil {
		return 0, err
	}
	if len(ms) == 0 {
		return 0, nil
	}
	return ms[len(ms)-1].Version, nil
}

const createSchemaTable = `CREATE TABLE IF NOT EXISTS fairway_schema (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// Status returns the migrations recorded in the database (oldest first). A
// database never migrated gives an empty list.
func Status(ctx context.Context, conn *pgx.Conn) ([]Applied, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('fairway_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look for fairway_schema: %w", err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := conn.Query(ctx, `SELECT version, name, applied_at FROM fairway_schema ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read fairway_schema: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Applied, error) {
		var a Applied
		err := r.Scan(&a.Version, &a.Name, &a.AppliedAt)
		return a, err
	})
}

// Up applies every embedded migration the database lacks, each in its own
// transaction, and returns the ones it applied. It holds an advisory lock for
// the duration so concurrent callers serialise. It refuses (ErrSchemaNewer)
// when the database records a version this binary does not have.
func Up(ctx context.Context, conn *pgx.Conn) ([]Migration, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey) //nolint:errcheck // released with the session anyway

	if _, err := conn.Exec(ctx, createSchemaTable); err != nil {
		return nil, fmt.Errorf("create fairway_schema: %w", err)
	}
	applied, err := Status(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := checkKnown(ms, applied); err != nil {
		return nil, err
	}
	have := map[int]bool{}
	for _, a := range applied {
		have[a.Version] = true
	}
	var done []Migration
	for _, m := range ms {
		if have[m.Version] {
			continue
		}
		if err := apply(ctx, conn, m); err != nil {
			return done, err
		}
		done = append(done, m)
	}
	return done, nil
}

func apply(ctx context.Context, conn *pgx.Conn, m Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO fairway_schema (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("record migration %04d_%s: %w", m.Version, m.Name, err)
		}
		return nil
	})
}

// CheckCurrent returns nil when the database has exactly the binary's schema,
// ErrSchemaNewer when it is ahead, and an error naming the missing versions
// (and saying to run `fairway migrate up`) when it is behind. Daemons call it
// at start instead of migrating implicitly.
func CheckCurrent(ctx context.Context, conn *pgx.Conn) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	applied, err := Status(ctx, conn)
	if err != nil {
		return err
	}
	if err := checkKnown(ms, applied); err != nil {
		return err
	}
	if p := pending(ms, applied); len(p) > 0 {
		return fmt.Errorf("database schema is behind: %d migration(s) pending (first %04d_%s); run `fairway migrate up`", len(p), p[0].Version, p[0].Name)
	}
	return nil
}

// Pending lists the embedded migrations not yet recorded in applied.
func Pending(applied []Applied) ([]Migration, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	return pending(ms, applied), nil
}

func pending(ms []Migration, applied []Applied) []Migration {
	have := map[int]bool{}
	for _, a := range applied {
		have[a.Version] = true
	}
	var p []Migration
	for _, m := range ms {
		if !have[m.Version] {
			p = append(p, m)
		}
	}
	return p
}

func checkKnown(ms []Migration, applied []Applied) error {
	known := map[int]string{}
	for _, m := range ms {
		known[m.Version] = m.Name
	}
	for _, a := range applied {
		name, ok := known[a.Version]
		if ok && name != a.Name {
			// Versions alone would skip this binary's migration for good
			// and apply the next ones over a schema they were not written
			// for.
			return fmt.Errorf("%w: database has migration %04d_%s where this binary has %04d_%s; the schema is not one this binary can migrate: restore a backup taken before that build migrated it, or bring it to %04d_%s by hand",
				ErrSchemaForeign, a.Version, a.Name, a.Version, name, a.Version, name)
		}
		if !ok {
			latest := 0
			if len(ms) > 0 {
				latest = ms[len(ms)-1].Version
			}
			return fmt.Errorf("%w: database has migration %04d_%s, this binary knows up to %04d; upgrade fairway before using this database", ErrSchemaNewer, a.Version, a.Name, latest)
		}
	}
	return nil
}
