package accounting

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/contrib/lab"
	"github.com/jackc/pgx/v5"
)

// leaseRig is two serves' leases on one fresh database of the lab, and an
// admin connection to it.
func leaseRig(t *testing.T) (a, b *Lease, admin *pgx.Conn) {
	t.Helper()
	url := lab.Get(t).Database(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, b = NewLease(cfg, "c", log), NewLease(cfg, "c", log)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	ctx := context.Background()
	admin, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	return a, b, admin
}

// TestLease_HoldEndsWhenSessionKilled: the leader's session is terminated
// (an admin, a failover, a restart) while it writes: the context its
// writes run under ends, and only then can the other serve take the lease.
func TestLease_HoldEndsWhenSessionKilled(t *testing.T) {
	a, b, admin := leaseRig(t)
	ctx := context.Background()
	if !a.Leader(ctx) {
		t.Fatal("first lease not taken on a fresh database")
	}
	if b.Leader(ctx) {
		t.Fatal("two leaders")
	}
	held, release := a.Hold(ctx)
	defer release()
	if err := held.Err(); err != nil {
		t.Fatalf("a held lease's context ended at once: %v", err)
	}
	var killed bool
	if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).
		Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the leader's session: %v (terminated %v)", err, killed)
	}
	select {
	case <-held.Done():
	case <-time.After(time.Minute): // a bound on a hang, not a timing
		t.Fatal("the leader's writes went on under a lease whose session was terminated")
	}
	if !errors.Is(context.Cause(held), errLeaseLost) {
		t.Errorf("cause = %v, want errLeaseLost", context.Cause(held))
	}
	if !b.Leader(ctx) {
		t.Error("the other serve cannot take the freed lease")
	}
	if a.Leader(ctx) {
		t.Error("the old leader still says it leads")
	}
}

// TestLease_SessionKeepalives: the lease's session asks the server to
// probe its peer, so a leader whose host vanished (no FIN, no RST) loses
// the lease in seconds, not after the kernel's two-hour default.
func TestLease_SessionKeepalives(t *testing.T) {
	a, _, _ := leaseRig(t)
	ctx := context.Background()
	if !a.Leader(ctx) {
		t.Fatal("lease not taken on a fresh database")
	}
	if a.conn.PgConn().Conn().RemoteAddr().Network() == "unix" {
		t.Skip("the lab's database is on a Unix socket: no TCP keepalives")
	}
	for name, want := range map[string]string{"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"} {
		var got string
		if err := a.conn.QueryRow(ctx, "SHOW "+name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("lease session %s = %s, want %s", name, got, want)
		}
	}
}

// TestLease_HoldOfNoLeaseIsOver: Hold without the lease gives a context
// already ended, so nothing is written under it.
func TestLease_HoldOfNoLeaseIsOver(t *testing.T) {
	a, b, _ := leaseRig(t)
	ctx := context.Background()
	if !a.Leader(ctx) || b.Leader(ctx) {
		t.Fatal("want a to lead, b to follow")
	}
	held, release := b.Hold(ctx)
	defer release()
	if held.Err() == nil {
		t.Error("a follower's Hold gave a live context")
	}
}
