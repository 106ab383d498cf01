// Package sim is Fairway's trace-driven cluster simulator: what a policy
// would do to a workload, on a virtual clock, with the same code serve runs.
//
// A simulation replays a trace's jobs (internal/trace parses SWF, Helios and
// Philly-MIX; Synth generates a Helios-like workload) on a Slurm-like
// cluster of nodes holding GPUs, or processors for CPU traces. It is
// event-driven: at every arrival and completion the cluster's state becomes
// a policy.Observation, policy.Engine.Cycle updates the fairness ledger,
// lets the predictor learn from the jobs that finished and predicts the
// pending ones, and ranks them with the policy — exactly the cycle of
// `fairway serve` — and the simulator then starts jobs from the ranking as
// Slurm would: in priority order with EASY backfill judged by time limits,
// on nodes chosen by Helios' consolidated placement, or preemptively for
// policies built for it (Tiresias). Options of the same simulator model
// partitions and GPU types (Layout), power saving (Power) and GPU sharing
// with an interference model (Share).
//
//	trace jobs ──► events ──► Observation ──► policy.Engine.Cycle ──► ranking
//	                 ▲                                                   │
//	                 └──── starts, completions ◄── Slurm model (EASY) ◄──┘
//
// Measure turns a Result into the metrics of the side-by-side table.
//
// The package is pure: no I/O, no logging, no wall clock. The caller reads
// traces and writes reports.
package sim
