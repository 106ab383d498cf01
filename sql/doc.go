// Package sql holds Fairway's PostgreSQL schema as versioned migrations,
// embedded in the binary, and applies them.
//
// Migrations live in migrations/NNNN_name.sql and are applied in order, each
// in its own transaction, recorded in the table fairway_schema. Applying is
// idempotent, and a database whose schema is newer than this binary knows is
// refused with ErrSchemaNewer rather than touched. A cluster-wide advisory
// lock keeps two processes (say two `fairway serve` replicas starting at
// once) from migrating concurrently.
package sql
