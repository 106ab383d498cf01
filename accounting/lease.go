package accounting

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is serve's leader election: a PostgreSQL session-level advisory
// lock, keyed by cluster, held on a connection of its own. PostgreSQL
// releases the lock the moment that session ends (the process died, the
// connection broke, the backend was terminated), and within
// deadPeerAfter of the last packet when the leader's host vanished or was
// cut off (the session's TCP keepalives, set below; the server's default
// waits two hours), so a standby that tries every cycle takes over within
// a cycle or two of the leader's death. The holder checks its session at
// every cycle before writing, and while it writes (Hold) every
// holdCheckEvery; a lease it cannot confirm counts as lost, so two
// processes never both write.
type Lease struct {
	cfg *pgx.ConnConfig
	key int64
	log *slog.Logger

	mu        sync.Mutex
	conn      *pgx.Conn
	held      bool
	confirmed time.Time // when the last check that found the lease held began
}

// The server ends a session whose peer stopped answering after
// keepaliveIdle without traffic and keepaliveCount unanswered probes
// keepaliveInterval apart: deadPeerAfter. A holder stops writing once it
// has not confirmed its lease for holdValid, well inside that, so the
// lease cannot pass to the standby while the old holder still writes.
const (
	keepaliveIdle     = 5 * time.Second
	keepaliveInterval = 2 * time.Second
	keepaliveCount    = 3
	deadPeerAfter     = keepaliveIdle + keepaliveCount*keepaliveInterval
	holdValid         = 5 * time.Second
	holdCheckEvery    = time.Second
)

// errLeaseLost and errLeaseUnconfirmed end a Hold's context.
var (
	errLeaseLost        = errors.New("leader lease lost")
	errLeaseUnconfirmed = errors.New("leader lease not confirmed in time")
)

// NewLease returns the lease of cluster's serve, taken on connections made
// from cfg. Nothing connects until Leader is called.
func NewLease(cfg *pgx.ConnConfig, cluster string, log *slog.Logger) *Lease {
	h := fnv.New64a()
	h.Write([]byte("fairway-serve-leader/" + cluster))
	cfg = cfg.Copy()
	cfg.ConnectTimeout = 5 * time.Second
	return &Lease{cfg: cfg, key: int64(h.Sum64() >> 1), log: log}
}

// setKeepalives makes the server probe the lease session's peer (no-ops on
// a Unix socket): without them the lock outlives a vanished leader by the
// kernel's two hours. Set by SET rather than as startup parameters, which
// a connection pooler in front of the server may refuse.
var setKeepalives = fmt.Sprintf("SET tcp_keepalives_idle = %d; SET tcp_keepalives_interval = %d; SET tcp_keepalives_count = %d",
	int(keepaliveIdle.Seconds()), int(keepaliveInterval.Seconds()), keepaliveCount)

// Leader reports whether this process holds the lease now, taking it
// when free; false on any doubt.
func (l *Lease) Leader(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
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
		if _, err := c.Exec(ctx, setKeepalives); err != nil {
			// The lease still works; only a vanished leader's is freed late.
			l.log.Warn("set the leader session's TCP keepalives: a leader whose host vanishes keeps the lease until the server's own keepalives end its session", "err", err)
		}
		l.conn = c
	}
	if l.held {
		l.confirmed = start
		return true
	}
	var got bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, l.key).Scan(&got); err != nil {
		l.drop()
		return false
	}
	l.held = got
	if got {
		l.confirmed = start
		l.log.Info("acquired leader lease", "lock_key", l.key)
	}
	return got
}

// Hold returns a context derived from ctx that ends when the lease can no
// longer be counted on: a check of its session, every holdCheckEvery,
// fails, or none has succeeded for holdValid (a check that hangs, as on a
// network cut, ends it too). serve writes to Slurm under it, so a write in
// flight stops before the standby can take the lease. release stops the
// checks, waiting for one in flight: a check cancelled half way would
// close the session, and with it the lease.
func (l *Lease) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	held, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	ok, confirmed := l.held, l.confirmed
	l.mu.Unlock()
	if !ok {
		cancel(errLeaseLost)
		return held, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		valid := time.NewTimer(time.Until(confirmed.Add(holdValid)))
		defer valid.Stop()
		tick := time.NewTicker(holdCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-valid.C:
				cancel(errLeaseUnconfirmed)
				return
			case <-tick.C:
				at, err := l.confirm(confirmed.Add(holdValid))
				if err != nil {
					cancel(fmt.Errorf("%w: %w", errLeaseLost, err))
					return
				}
				confirmed = at
				valid.Reset(time.Until(confirmed.Add(holdValid))) // no stale fire since Go 1.23
			}
		}
	}()
	return held, func() { cancel(context.Canceled); <-done }
}

// confirm checks the lease's session before deadline, dropping it when the
// check fails, and returns when the check began.
func (l *Lease) confirm(deadline time.Time) (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	if !l.held || l.conn == nil {
		return start, errors.New("not held")
	}
	// Not under the caller's context: cancelling a query closes the
	// connection, and the lock with it.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		l.log.Warn("leader session lost while writing", "err", err)
		l.drop()
		return start, err
	}
	l.confirmed = start
	return start, nil
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
