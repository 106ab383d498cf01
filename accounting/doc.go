// Package accounting is Fairway's memory in PostgreSQL: the history of
// finished jobs, per-job per-GPU usage from the epilog, the decision log,
// prediction outcomes, the daily usage ledger per user and account, the
// share tree and cycle timings. Prediction, fairness and the monthly report
// read from here. The schema is in package sql (0002_accounting.sql, and
// 0003_job_deadline.sql for job.deadline).
//
// Ingest is idempotent everywhere: a job is keyed by cluster, job id, array
// task and submit time, and importing the same input twice leaves every
// table identical (a row whose values did not change is not rewritten).
// Everything an import writes commits in one transaction, so bad input, a
// dead database or a cancelled import never leaves a partial import:
//
//	input ──► check pass (inputs that can be read twice: validate every record,
//	   │        note months, key span, repeated keys)
//	   ├──► COPY straight into job under a savepoint      all keys new: done
//	   │      └─ a key is stored: roll back to the savepoint ─┐
//	   └──► COPY into a session-private staging table  ◄──────┘ (and inputs read once)
//	          └──► one MERGE into job (insert new keys, update changed rows only)
//	        then, same transaction: mark the touched days in usage_dirty,
//	        move the watermark of an incremental source (kv_state)
//
// The usage ledger (usage_daily) is derived from job: ingest only marks the
// days it touched (updates mark theirs through a trigger), and readers
// rebuild the marked days first (RefreshUsage, UsageBetween).
//
// Retention: job, prediction, decision and job_gpu_usage are partitioned by
// calendar month (UTC). The Store creates the partitions a batch needs
// before writing it (outside the batch's transaction, so readers are never
// blocked for long), and DropMonthsBefore drops whole months: instant, no
// vacuum debt. ApplyRetention, which serve's leader runs daily, does so
// for a Retention (by default 13 months of jobs, usage and predictions, 90
// days of decisions) and prunes cycle rows with PruneCycles. usage_daily
// keeps its days after their jobs are dropped. GPU nodes write only through
// fairway_record_gpu_usage (migrations 0004 and 0005), the one right their
// roles have, and only their own node's current records.
//
// The package reads slurmdbd through HistorySource (RESTHistory asks
// slurmrestd, through any client with a DBJobs method such as slurmctl's,
// which this package does not import; SacctHistory has `sacct --json` run)
// and sacctmgr for the share tree. It executes no command itself: sacct and
// sacctmgr run through small interfaces (SacctRunner, SacctUsageRunner,
// AssociationsRunner) that slurmctl.Commands implements, and it parses what
// they print, the formats it also reads from files and slurmrestd. It
// opens no files.
package accounting
