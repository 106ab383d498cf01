// Package policy is Fairway's pure ranking core: the domain types every
// adapter produces (Job), the Engine, the Ledger and shares, the fairness and
// ranking policies, the Predictor interface, and the mapping from scores to
// the integers written to Slurm. The predictors are in policy/predict, the
// resource rewriting rules in policy/rewrite.
//
// It does no I/O, never logs, and reads the time only from what it is given,
// so the same code runs in `fairway serve` (live Slurm) and `fairway simulate`
// (a trace replayed on a virtual clock):
//
//	Source ──► Observation ──► Engine.Cycle ──────────────────► Decision ──► Sink
//	(slurmctl+accounting │       (Ledger, Predictor, Snapshot,    (internal/serve: Slurm writer,
//	 | trace replay)     │        Policy.Rank)                     decision log, table; a Planner in
//	                                                               a dry run | policy/sim's model)
//
// Engine.Cycle is the one step serve and simulate share: both hand it what
// they observed and act on the ranking it returns.
//
// Fairness state that outlives a cycle (fair-share usage, VTC counters,
// attained service) lives in a Ledger, which the cycle owner charges and
// updates before it builds each Snapshot, and which policies only read (see
// Ledger for the contract). Policies are built by name from the Policies
// registry; Assign turns a ranking into the integers written to Slurm.
//
// How Slurm then places and backfills the ranked jobs is modelled in
// policy/schedule.
package policy
