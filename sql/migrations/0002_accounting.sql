-- 0002_accounting: Fairway's memory. Finished jobs, per-job per-GPU usage,
-- the decision log, prediction outcomes, daily usage ledgers, the share tree
-- and cycle timings. Package accounting is the only writer.
--
-- Partitioning and retention. The four tables that grow with the number of
-- jobs (job, job_gpu_usage, decision, prediction) are partitioned by month
-- on a timestamp that is part of their key, one partition per calendar month
-- in UTC named <table>_pYYYYMM. There is no default partition: writers call
-- fairway_ensure_month(table, instant) for every month they are about to
-- write (package accounting does so before each batch), because a default
-- partition holding rows of a month would block creating that month later.
-- Retention is fairway_drop_months_before(table, cutoff): it drops whole
-- partitions that end on or before cutoff, which is instant and leaves no
-- bloat, unlike DELETE. The small tables (cycle, usage_daily, usage_dirty,
-- share) are not partitioned; cycle is pruned with a plain DELETE.
--
-- Big tables carry no foreign keys: bulk ingest would pay a lookup per row,
-- and the writers ensure the cluster row themselves.

-- fairway_ensure_month creates the monthly partition of parent that holds
-- instant at, if it does not exist yet. An advisory lock on the partition's
-- name serialises concurrent writers creating the same month.
CREATE FUNCTION fairway_ensure_month(parent regclass, at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	lo   timestamptz := date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
	hi   timestamptz := (date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
	name text := format('%s_p%s', (SELECT relname FROM pg_class WHERE oid = parent), to_char(at AT TIME ZONE 'UTC', 'YYYYMM'));
BEGIN
	IF to_regclass(quote_ident(name)) IS NOT NULL THEN
		RETURN name;
	END IF;
	PERFORM pg_advisory_xact_lock(hashtext('fairway_ensure_month:' || name));
	EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', name, parent, lo, hi);
	RETURN name;
END $$;

-- fairway_drop_months_before drops every monthly partition of parent whose
-- month ends on or before cutoff and returns the dropped names.
CREATE FUNCTION fairway_drop_months_before(parent regclass, cutoff timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	part text;
	hi   timestamptz;
BEGIN
	FOR part IN
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = parent AND c.relname ~ '_p[0-9]{6}$'
		ORDER BY c.relname
	LOOP
		hi := (to_date(right(part, 6), 'YYYYMM') + interval '1 month')::timestamp AT TIME ZONE 'UTC';
		IF hi <= cutoff THEN
			EXECUTE format('DROP TABLE %I', part);
			RETURN NEXT part;
		END IF;
	END LOOP;
END $$;

-- job: one finished Slurm job or array task. The key is what identifies a
-- job across every source (slurmdbd, sacct, traces): cluster, job id, array
-- task (-1 when not an array) and submit time (job ids are reused after a
-- cluster is rebuilt or the id counter wraps). Unknown times are NULL.
CREATE TABLE job (
	cluster       text        NOT NULL,
	job_id        bigint      NOT NULL,
	array_task    integer     NOT NULL DEFAULT -1,
	submit_time   timestamptz NOT NULL,
	array_job_id  bigint      NOT NULL DEFAULT 0,
	het_job       boolean     NOT NULL DEFAULT false,
	user_name     text        NOT NULL DEFAULT '',
	account       text        NOT NULL DEFAULT '',
	partition     text        NOT NULL DEFAULT '',
	qos           text        NOT NULL DEFAULT '',
	name          text        NOT NULL DEFAULT '',
	eligible_time timestamptz,
	start_time    timestamptz,
	end_time      timestamptz,
	time_limit_s  bigint,               -- requested wall time; NULL when unknown or unlimited
	nodes         integer     NOT NULL DEFAULT 0,
	cpus          integer     NOT NULL DEFAULT 0,
	memory_mb     bigint      NOT NULL DEFAULT 0,
	gpus          integer     NOT NULL DEFAULT 0, -- whole GPUs over all nodes
	gpu_type      text        NOT NULL DEFAULT '', -- e.g. h100; '' when untyped
	shards        integer     NOT NULL DEFAULT 0, -- GPU shards over all nodes
	state         text        NOT NULL,           -- Slurm spelling: COMPLETED, FAILED, ...
	exit_code     integer     NOT NULL DEFAULT 0,
	source        text        NOT NULL,           -- slurmdbd, sacct-json, swf, helios, philly-mix, serve
	ingested_at   timestamptz NOT NULL DEFAULT now(),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster, job_id, array_task, submit_time)
) PARTITION BY RANGE (submit_time);

-- The report, the usage ledger and serve's cold start read jobs by end
-- time (a month, or the last few half-lives). A BRIN index serves that: jobs
-- arrive roughly in end order, so block ranges have narrow end-time spans,
-- and BRIN costs almost nothing on insert, where a B-tree on end_time
-- doubled the cost of bulk ingest (docs/BENCHMARKS.md). Per-user questions
-- scan a month partition; none is on a hot path.
CREATE INDEX job_end_idx ON job USING brin (end_time);

-- job_gpu_usage: what one GPU did for one job, from the epilog. The epilog
-- knows the job id but not its submit time, so the key uses the node, the
-- device (by minor number, as /dev/nvidiaN) and the instant the record was
-- closed; a requeued job that runs twice gives two rows.
CREATE TABLE job_gpu_usage (
	cluster         text        NOT NULL,
	job_id          bigint      NOT NULL,
	node            text        NOT NULL,
	gpu_minor       integer     NOT NULL,
	ended_at        timestamptz NOT NULL,
	started_at      timestamptz,
	gpu_uuid        text        NOT NULL DEFAULT '',
	gpu_model       text        NOT NULL DEFAULT '',
	shards          integer     NOT NULL DEFAULT 0, -- 0 for a whole-GPU job
	util_avg_pct    real,                           -- NULL when unknown
	util_max_pct    real,
	mem_peak_mb     bigint,
	mem_total_mb    bigint,
	energy_joules   double precision,               -- NULL when the device cannot say
	recorded_at     timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster, job_id, node, gpu_minor, ended_at)
) PARTITION BY RANGE (ended_at);

CREATE INDEX job_gpu_usage_time_idx ON job_gpu_usage (cluster, ended_at);

-- cycle: one scheduling cycle of `fairway serve` and how long its phases
-- took. A few thousand rows a day; pruned by DELETE.
CREATE TABLE cycle (
	cluster         text        NOT NULL,
	cycle           bigint      NOT NULL,
	started_at      timestamptz NOT NULL,
	policy          text        NOT NULL,
	leader          boolean     NOT NULL,
	dry_run         boolean     NOT NULL,
	pending         integer     NOT NULL,
	running         integer     NOT NULL,
	written         integer     NOT NULL,
	write_errors    integer     NOT NULL,
	read_seconds    double precision NOT NULL,
	predict_seconds double precision NOT NULL,
	rank_seconds    double precision NOT NULL,
	write_seconds   double precision NOT NULL,
	record_seconds  double precision NOT NULL,
	total_seconds   double precision NOT NULL,
	error           text        NOT NULL DEFAULT '',
	PRIMARY KEY (cluster, started_at, cycle)
);

-- decision: per cycle and job, what the policy decided and why. Serve logs a
-- job when its value changed, so rows are few per job but many per month.
CREATE TABLE decision (
	cluster          text        NOT NULL,
	decided_at       timestamptz NOT NULL, -- the cycle's start
	cycle            bigint      NOT NULL,
	job_id           bigint      NOT NULL,
	policy           text        NOT NULL,
	rank             integer     NOT NULL, -- 1 is first
	score            double precision NOT NULL,
	parts            jsonb       NOT NULL DEFAULT '{}', -- Score.Parts
	predicted_run_s  double precision,     -- NULL when no prediction was used
	predictor        text        NOT NULL DEFAULT '',
	field            text        NOT NULL, -- what was written: site_factor, priority or nice
	value            bigint      NOT NULL, -- the value written (or that would be, in dry run)
	previous         bigint,               -- the value before, NULL when unknown
	dry_run          boolean     NOT NULL,
	PRIMARY KEY (cluster, decided_at, cycle, job_id)
) PARTITION BY RANGE (decided_at);

-- `fairway explain JOBID` and the report look decisions up by job.
CREATE INDEX decision_job_idx ON decision (cluster, job_id);

-- prediction: the run time predicted for a job while it was pending (the
-- last prediction before it started), one row per predictor. Its actual run
-- time comes from job through the prediction_outcome view.
CREATE TABLE prediction (
	cluster       text        NOT NULL,
	job_id        bigint      NOT NULL,
	array_task    integer     NOT NULL DEFAULT -1,
	submit_time   timestamptz NOT NULL,
	predictor     text        NOT NULL,
	predicted_at  timestamptz NOT NULL,
	predicted_s   double precision NOT NULL,
	upper_s       double precision, -- upper quantile, NULL when the predictor gives none
	quantile      double precision,
	rule          text        NOT NULL DEFAULT '', -- Prediction.Source
	partition     text        NOT NULL DEFAULT '',
	PRIMARY KEY (cluster, job_id, array_task, submit_time, predictor)
) PARTITION BY RANGE (submit_time);

CREATE INDEX prediction_time_idx ON prediction (cluster, predicted_at);

-- prediction_outcome pairs each prediction with the job's actual run time
-- once the job has finished: accuracy over time, per partition or user.
CREATE VIEW prediction_outcome AS
SELECT p.cluster, p.job_id, p.array_task, p.submit_time, p.predictor, p.predicted_at,
	p.predicted_s, p.upper_s, p.quantile, p.rule, j.partition, j.user_name, j.account,
	j.end_time, extract(epoch FROM j.end_time - j.start_time)::double precision AS actual_s,
	p.predicted_s - extract(epoch FROM j.end_time - j.start_time)::double precision AS error_s
FROM prediction p
JOIN job j USING (cluster, job_id, array_task, submit_time)
WHERE j.start_time IS NOT NULL AND j.end_time IS NOT NULL AND j.end_time >= j.start_time;

-- usage_daily: the per-association usage ledger, one row per cluster, UTC
-- day, account and user: resource-seconds the association's jobs ran that
-- day (a job running over midnight is split between the days) and the jobs
-- that ended that day. Derived from job: the days ingest touched are rebuilt
-- from job when next read (see usage_dirty), so it is exactly as idempotent
-- as job itself.
CREATE TABLE usage_daily (
	cluster       text    NOT NULL,
	day           date    NOT NULL,
	account       text    NOT NULL,
	user_name     text    NOT NULL,
	gpu_seconds   double precision NOT NULL, -- whole GPUs × seconds
	shard_seconds double precision NOT NULL, -- shards × seconds
	cpu_seconds   double precision NOT NULL,
	jobs_ended    integer NOT NULL,
	PRIMARY KEY (cluster, day, account, user_name)
);

-- usage_dirty lists the days whose usage_daily rows are stale: ingest marks
-- the days of the jobs it inserted, and the trigger below the old and new
-- days of a job whose usage changed. Readers rebuild dirty days first
-- (accounting.Store.RefreshUsage), so bulk ingest never pays for the ledger
-- and a serve cycle recording ten jobs does not re-aggregate a whole day.
CREATE TABLE usage_dirty (
	cluster text NOT NULL,
	day     date NOT NULL,
	PRIMARY KEY (cluster, day)
);

CREATE FUNCTION fairway_job_usage_dirty() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO usage_dirty (cluster, day)
	SELECT r.cluster, d::date
	FROM (VALUES (OLD.cluster, OLD.start_time, OLD.end_time), (NEW.cluster, NEW.start_time, NEW.end_time)) AS r(cluster, s, e),
		generate_series(date_trunc('day', r.s AT TIME ZONE 'UTC'), date_trunc('day', r.e AT TIME ZONE 'UTC'), interval '1 day') d
	WHERE r.s IS NOT NULL AND r.e IS NOT NULL AND r.e >= r.s
	ON CONFLICT DO NOTHING;
	RETURN NULL;
END $$;

CREATE TRIGGER job_usage_dirty AFTER UPDATE ON job FOR EACH ROW
WHEN ((OLD.account, OLD.user_name, OLD.start_time, OLD.end_time, OLD.gpus, OLD.shards, OLD.cpus)
	IS DISTINCT FROM (NEW.account, NEW.user_name, NEW.start_time, NEW.end_time, NEW.gpus, NEW.shards, NEW.cpus))
EXECUTE FUNCTION fairway_job_usage_dirty();

-- usage_daily_account is the per-account ledger.
CREATE VIEW usage_daily_account AS
SELECT cluster, day, account, sum(gpu_seconds) AS gpu_seconds, sum(shard_seconds) AS shard_seconds,
	sum(cpu_seconds) AS cpu_seconds, sum(jobs_ended)::integer AS jobs_ended
FROM usage_daily GROUP BY cluster, day, account;

-- share: the share tree, as Slurm associations. An account node has
-- user_name '' and a parent account ('' under root); a user node is an
-- association of user_name with account. Each source (slurmdbd, config)
-- keeps its own rows and is replaced whole by a sync; readers let config
-- override slurmdbd.
CREATE TABLE share (
	cluster    text NOT NULL,
	source     text NOT NULL CHECK (source IN ('slurmdbd', 'config')),
	account    text NOT NULL,
	user_name  text NOT NULL DEFAULT '',
	parent     text NOT NULL DEFAULT '',
	shares     double precision NOT NULL CHECK (shares >= 0),
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster, source, account, user_name)
);
