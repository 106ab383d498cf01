package accounting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoDatabase is returned by Open when no URL is given.
var ErrNoDatabase = errors.New("no database: set --database-url or FAIRWAY_DATABASE_URL")

// Open connects to the PostgreSQL database at url with a small pool,
// checks that its schema is current, and says which server and database
// when it cannot. The pool is returned for callers that also query it;
// closing it closes the Store.
func Open(ctx context.Context, url string, log *slog.Logger) (*pgxpool.Pool, *Store, error) {
	if url == "" {
		return nil, nil, ErrNoDatabase
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, errBadURL
	}
	cfg.MaxConns = 4
	where := target(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	store := New(pool, log.With("component", "accounting"))
	if err := store.Check(ctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	return pool, store, nil
}

// Connect opens one connection to the database at url, for the commands
// that need a single session (migrate takes an advisory lock on it), and
// says which server and database when it cannot. Like Open, its errors
// never repeat the URL, which may hold the password.
func Connect(ctx context.Context, url string) (*pgx.Conn, error) {
	if url == "" {
		return nil, ErrNoDatabase
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errBadURL
	}
	where := target(cfg)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	return conn, nil
}

// errBadURL stands for pgx's parse error, which repeats the URL, password
// included.
var errBadURL = errors.New("--database-url is not a valid PostgreSQL URL or DSN")

// target gives c the connect timeout Open and Connect share when the URL
// sets none (a dead server must not hang a command) and names the server
// and database for errors, without the password.
func target(c *pgx.ConnConfig) string {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	return fmt.Sprintf("PostgreSQL at %s:%d database %q", c.Host, c.Port, c.Database)
}

// LoggedDecision is the newest decision-log row of a job.
type LoggedDecision struct {
	At      time.Time `json:"at"`
	Rank    int       `json:"rank"`
	Field   string    `json:"field"`
	Value   int64     `json:"value"`
	Planned bool      `json:"dry_run"`
}

// FrozenPriority is an admin priority serve wrote (rest-priority), as the
// decision log has it, with the job's nice from before.
type FrozenPriority struct {
	Priority int64
	Nice     int64 // 0 when the row predates the nice column
}

// FrozenPriorities returns, for those of ids whose newest decision-log row
// on cluster that was written to Slurm (not a dry run) set a priority, that
// priority and the nice kept with it: the admin priorities a rest-priority
// serve left, which a later serve adopts or hands back. Whether Slurm
// still holds each is for the caller to compare with what it reads.
func (s *Store) FrozenPriorities(ctx context.Context, cluster string, ids []int64) (map[int64]FrozenPriority, error) {
	out := map[int64]FrozenPriority{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT job_id, field, value, coalesce(nice, 0) FROM (
		SELECT DISTINCT ON (job_id) job_id, field, value, nice FROM decision
		WHERE cluster = $1 AND job_id = ANY($2) AND NOT dry_run
		ORDER BY job_id, decided_at DESC, cycle DESC) newest
		WHERE field = 'priority'`, cluster, ids)
	if err != nil {
		return nil, fmt.Errorf("read frozen priorities from the decision log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, v, nice int64
		var field string
		if err := rows.Scan(&id, &field, &v, &nice); err != nil {
			return nil, fmt.Errorf("read frozen priorities from the decision log: %w", err)
		}
		out[id] = FrozenPriority{Priority: v, Nice: nice}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read frozen priorities from the decision log: %w", err)
	}
	return out, nil
}

// LastDecision reads the newest decision-log row of job id on cluster; nil
// when serve never logged one.
func (s *Store) LastDecision(ctx context.Context, cluster string, id int64) (*LoggedDecision, error) {
	var l LoggedDecision
	err := s.pool.QueryRow(ctx, `SELECT decided_at, rank, field, value, dry_run FROM decision
		WHERE cluster = $1 AND job_id = $2 ORDER BY decided_at DESC, cycle DESC LIMIT 1`, cluster, id).
		Scan(&l.At, &l.Rank, &l.Field, &l.Value, &l.Planned)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the decision log: %w", err)
	}
	return &l, nil
}
