// Package sql holds Fairway's PostgreSQL schema as versioned migrations,
// embedded in the binary, and applies them.
//
// Migrations live in migrations/NNNN_name.sql and are applied in order, each
// in its own transaction, recorded in the table fairway_schema. Applying is
// idempotent, and a database whose schema is newer than this binary knows is
// refused with ErrSchemaNewer rather than touched, as is one that records
// a version under another migration's name (ErrSchemaForeign: a branch's
// build migrated it before its migrations were renumbered in the merge).
// A cluster-wide advisory lock keeps two processes (say two `fairway
// serve` replicas starting at once) from migrating concurrently.
package sql
