package accounting_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/fairway-hpc/fairway/accounting"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestRefused_RecordOrOutage: what the records hold is refused; what says
// the database cannot take them now is not, or serve would set aside
// records an outage only delayed.
func TestRefused_RecordOrOutage(t *testing.T) {
	pg := func(code, constraint string) error {
		return fmt.Errorf("record 3 decisions: %w", &pgconn.PgError{Code: code, ConstraintName: constraint})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"invalid record", fmt.Errorf("cycle 4: cluster and start time are required: %w", accounting.ErrInvalidRecord), true},
		{"invalid job", fmt.Errorf("%w: no cluster", accounting.ErrInvalidJob), true},
		{"invalid UTF-8", pg("22021", ""), true},
		{"numeric out of range", pg("22003", ""), true},
		{"datetime out of range", pg("22008", ""), true},
		{"not null", pg("23502", ""), true},
		{"check constraint", pg("23514", "share_shares_check"), true},
		{"no partition for the row", pg("23514", ""), false},
		{"unique violation (a race with another writer)", pg("23505", "job_pkey"), false},
		{"connection exception", pg("08006", ""), false},
		{"serialization failure", pg("40001", ""), false},
		{"too many connections", pg("53300", ""), false},
		{"admin shutdown", pg("57P01", ""), false},
		{"query canceled", pg("57014", ""), false},
		{"connection refused", fmt.Errorf("record cycle 1: %w", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}), false},
		{"context canceled", fmt.Errorf("record cycle 1: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"other", errors.New("connection refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := accounting.Refused(tc.err); got != tc.want {
				t.Errorf("Refused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestRecord_InvalidRecordRefused: the records the Store refuses before
// sending them are refusals, without a database.
func TestRecord_InvalidRecordRefused(t *testing.T) {
	s := accounting.New(nil, nil)
	ctx := context.Background()
	_, derr := s.RecordDecisions(ctx, []accounting.Decision{{JobID: 1}})
	for name, err := range map[string]error{
		"decision":   derr,
		"prediction": s.RecordPredictions(ctx, []accounting.Prediction{{JobID: 1}}),
		"cycle":      s.RecordCycle(ctx, accounting.Cycle{Cycle: 1}),
	} {
		if !errors.Is(err, accounting.ErrInvalidRecord) || !accounting.Refused(err) {
			t.Errorf("%s: %v, want ErrInvalidRecord, refused", name, err)
		}
	}
}

// TestLab_DataExceptionRefused: records PostgreSQL itself refuses for
// what they hold come back as refusals, with class 22 SQLSTATEs, and a
// call on a dead connection does not.
func TestLab_DataExceptionRefused(t *testing.T) {
	store, pool := freshStore(t)
	ctx := context.Background()
	at := time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)
	var (
		badText  = "fifo\xff"                                   // not UTF-8: 22021
		badStart = time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC) // before 4713 BC: 22008
	)
	_, derr := store.RecordDecisions(ctx, []accounting.Decision{{Cluster: "c", At: at, Cycle: 1, JobID: 1, Policy: badText, Field: "site_factor"}})
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"decision with invalid UTF-8", derr, "22021"},
		{"cycle starting before 4713 BC", store.RecordCycle(ctx, accounting.Cycle{Cluster: "c", Cycle: 1, Started: badStart, Policy: "fifo"}), "22008"},
		{"prediction with invalid UTF-8", store.RecordPredictions(ctx, []accounting.Prediction{{Cluster: "c", JobID: 1, Submit: at, At: at,
			Predictor: "fairway", Partition: badText}}), "22021"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pgErr *pgconn.PgError
			if !errors.As(tc.err, &pgErr) || pgErr.Code != tc.code {
				t.Fatalf("err = %v, want SQLSTATE %s", tc.err, tc.code)
			}
			if !accounting.Refused(tc.err) {
				t.Errorf("Refused(%v) = false", tc.err)
			}
		})
	}
	if n := countRows(t, pool, `SELECT (SELECT count(*) FROM decision) + (SELECT count(*) FROM cycle) + (SELECT count(*) FROM prediction)`); n != 0 {
		t.Errorf("%d rows stored from refused records", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := store.RecordCycle(cancelled, accounting.Cycle{Cluster: "c", Cycle: 2, Started: at, Policy: "fifo"}); err == nil || accounting.Refused(err) {
		t.Errorf("cancelled RecordCycle: %v, want an error that is not a refusal", err)
	}
}
