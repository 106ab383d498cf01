// Package accounting is Fairway's memory in PostgreSQL: the history of
// finished jobs, per-job per-GPU usage from the epilog, the decision log,
// prediction outcomes, the daily usage ledger per user and account, the
// share tree and cycle timings. Prediction, fairness and the monthly report
// read from here. The schema is in package sql (0002_accounting.sql).
//
// Ingest is idempotent everywhere: a job is keyed by cluster, job id, array
// task and submit time, and importing the same input twice leaves every
// table identical (a row whose values did not change is not rewritten).
// Bulk input (slurmdbd windows, `sacct --json` files, workload traces) is
// streamed with COPY into a session-private staging table and merged with
// one INSERT ... ON CONFLICT; the merge, the usage-ledger rebuild and the
// incremental watermark commit in one transaction, so bad input, a dead
// database or a cancelled import never leaves a partial import.
//
//	Source (trace.Reader | sacct doc | HistorySource window)
//	   │ validate, count            COPY (binary)
//	   └──────────────► staging (temp) ─────► INSERT INTO job ... ON CONFLICT DO UPDATE
//	                                          WHERE values changed
//	                                     └──► usage_daily rebuilt for the days touched
//	                                     └──► kv_state watermark (incremental sources)
//
// Retention: job, prediction, decision and job_gpu_usage are partitioned by
// calendar month (UTC). The Store creates the partitions a batch needs
// before writing it (outside the batch's transaction, so readers are never
// blocked for long), and DropMonthsBefore drops whole months: instant, no
// vacuum debt. Keep job for as long as reports and predictors look back
// (a year is typical), decision for a few months; cycle is small and
// pruned with PruneCycles.
//
// The package talks to slurmdbd only through HistorySource (implemented by
// slurmctl over slurmrestd) and to sacctmgr for the share tree; it opens no
// files.
package accounting
