// Package schedule models how Slurm places and backfills jobs once they are
// ranked: a Pool of identical nodes with best-fit placement, the EASY pass
// (start in ranking order while jobs fit, reserve the head's start, backfill
// jobs that do not delay it), and NewForecast, which plays a ranked
// policy.Snapshot forward on that model to say when each pending job is
// expected to start.
//
// The simulator (policy/sim) runs its clusters on the same Pool and EASY
// pass, so a forecast made with the true run times reproduces the
// simulator's starts. Like policy, it does no I/O.
package schedule
