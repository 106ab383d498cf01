package main

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgLeader is serve's leader election: a PostgreSQL session-level advisory
// lock, keyed by cluster, held on a connection of its own. PostgreSQL
// releases the lock the moment that session ends (the process died, the
// host vanished, the connection broke), so a standby that tries every cycle
// takes over within one cycle of the leader's death. The holder checks its
// session at every cycle before writing; a lease it cannot confirm counts
// as lost, so two processes never both write.
type pgLeader struct {
	cfg *pgx.ConnConfig
	key int64
	log *slog.Logger

	mu   sync.Mutex
	conn *pgx.Conn
	held bool
}

func newPGLeader(cfg *pgx.ConnConfig, cluster string, log *slog.Logger) *pgLeader {
	h := fnv.New64a()
	h.Write([]byte("fairway-serve-leader/" + cluster))
	cfg = cfg.Copy()
	cfg.ConnectTimeout = 5 * time.Second
	return &pgLeader{cfg: cfg, key: int64(h.Sum64() >> 1), log: log}
}

// Leader implements leadership.
func (l *pgLeader) Leader(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if l.conn != nil {
		if err := l.conn.Ping(ctx); err != nil {
			if l.held {
				l.log.Warn("leader session lost", "err", err)
			}
			l.drop()
		}
	}
	if l.conn == nil {
		c, err := pgx.ConnectConfig(ctx, l.cfg)
		if err != nil {
			return false
		}
		l.conn = c
	}
	if l.held {
		return true
	}
	var got bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, l.key).Scan(&got); err != nil {
		l.drop()
		return false
	}
	l.held = got
	if got {
		l.log.Info("acquired leader lease", "lock_key", l.key)
	}
	return got
}

func (l *pgLeader) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, false
}

// Close releases the lease (by ending its session).
func (l *pgLeader) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}

// alwaysLeader is the leadership of a serve run without HA (--no-ha).
type alwaysLeader struct{}

func (alwaysLeader) Leader(context.Context) bool { return true }
