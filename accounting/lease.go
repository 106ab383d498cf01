package accounting

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is serve's leader election: a PostgreSQL session-level advisory
// lock, keyed by cluster, held on a connection of its own. PostgreSQL
// releases the lock the moment that session ends (the process died, the
// host vanished, the connection broke), so a standby that tries every cycle
// takes over within one cycle of the leader's death. The holder checks its
// session at every cycle before writing; a lease it cannot confirm counts
// as lost, so two processes never both write.
type Lease struct {
	cfg *pgx.ConnConfig
	key int64
	log *slog.Logger

	mu   sync.Mutex
	conn *pgx.Conn
	held bool
}

// NewLease returns the lease of cluster's serve, taken on connections made
// from cfg. Nothing connects until Leader is called.
func NewLease(cfg *pgx.ConnConfig, cluster string, log *slog.Logger) *Lease {
	h := fnv.New64a()
	h.Write([]byte("fairway-serve-leader/" + cluster))
	cfg = cfg.Copy()
	cfg.ConnectTimeout = 5 * time.Second
	return &Lease{cfg: cfg, key: int64(h.Sum64() >> 1), log: log}
}

// Leader reports whether this process holds the lease now, taking it
// when free; false on any doubt.
func (l *Lease) Leader(ctx context.Context) bool {
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

func (l *Lease) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.conn.Close(ctx)
		cancel()
	}
	l.conn, l.held = nil, false
}

// Close releases the lease (by ending its session).
func (l *Lease) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
}
