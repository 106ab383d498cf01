package accounting

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrInvalidRecord is wrapped by the errors RecordDecisions,
// RecordPredictions and RecordCycle return for a record they refuse before
// sending it: one missing what its table requires.
var ErrInvalidRecord = errors.New("invalid record")

// Refused reports whether err says the records sent were refused for what
// they hold, not that the database could not take them now: sent again
// unchanged, they would be refused again. That is ErrInvalidRecord and
// ErrInvalidJob, and PostgreSQL's data exceptions (SQLSTATE class 22:
// invalid UTF-8, a number or time out of range) and integrity violations
// (class 23, which ON CONFLICT does not absorb; a unique violation aside). A caller retrying a batch
// until the database is back must set such records aside, or they hold up
// every record behind them for ever. Everything else (a connection lost, a
// timeout, a cancelled context, class 08, 40, 53, 57) is not a refusal.
func Refused(err error) bool {
	if errors.Is(err, ErrInvalidRecord) || errors.Is(err, ErrInvalidJob) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "22"):
		return true
	case noPartition(pgErr), pgErr.Code == "23505":
		// A unique violation past ON CONFLICT and MERGE is a race with
		// another writer of the same rows (two serves at a handover, an
		// ingest beside serve): the next try finds the row stored.
		return false
	case strings.HasPrefix(pgErr.Code, "23"):
		return true
	}
	return false
}

// noPartition reports whether pgErr is PostgreSQL's "no partition of
// relation ... found for row": a check_violation (23514) that names no
// constraint. It is no fault of the record: retention dropped a month
// this Store believed exists, and once the Store forgets its partition
// cache the next try creates the month again.
func noPartition(pgErr *pgconn.PgError) bool {
	return pgErr.Code == "23514" && pgErr.ConstraintName == ""
}

// forgetMonthsIfGone drops the partition cache when err says a month it
// holds is gone (see noPartition), so that the next try creates it.
func (s *Store) forgetMonthsIfGone(err error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && noPartition(pgErr) {
		s.forgetMonths()
	}
}
