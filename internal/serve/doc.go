// Package serve is `fairway serve`: the process that runs beside
// slurmctld, reads the queue, ranks it with policy.Engine and writes the
// order back. It holds the serve cycle (numbered steps in Runner.RunCycle),
// the outage rules (Slurm unreadable: write nothing; PostgreSQL down: keep
// ranking and buffer what must be recorded), the resource rewriter, the
// loop, and the metrics and health endpoints.
//
// A cycle reads from a Source and has effects only through a Sink: the
// Slurm writers, the job_submit.lua table and the decision log. A dry run,
// explain, and a serve that does not hold the lease hand their decisions to
// a Planner, the Sink that works out what would change and writes nothing,
// so "writes nothing" is one type rather than a flag every step must check.
//
// A serve that becomes the leader takes over what an earlier serve left in
// Slurm (Runner.takeOver): admin priorities a rest-priority serve wrote,
// found in the decision log with each job's nice from before. A
// rest-priority serve adopts them; a site-factor serve hands them back to
// multifactor, nice restored, before it writes site factors (a site factor
// does not move a frozen priority). At start, slurmrestd being down or
// restarting is waited out with the loop's backoff (StartRetry), as it is
// mid-run.
//
// Why here: its Source and most of its Sink are Slurm (package slurmctl),
// and the project's top-level folders are fixed. Living beneath slurmctl
// does not change slurmctl's own imports: slurmctl imports only policy,
// while sidecar is the one package that joins slurmctl, accounting and
// policy. cmd/fairway only turns flags into a Config and wires adapters.
package serve
