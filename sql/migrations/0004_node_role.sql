-- 0004_node_role: least privilege for GPU nodes. Root on one compute node
-- must not be able to forge other jobs' GPU usage (which steers the share
-- rule), rewrite history or drop tables, so a node's database login gets
-- one right: EXECUTE on fairway_record_gpu_usage. The function runs with
-- its owner's rights (SECURITY DEFINER; the owner is the role that owns the
-- schema and runs `fairway migrate` and serve), creates the month's
-- partition of job_gpu_usage when needed (which PostgreSQL allows only to
-- the table's owner) and inserts new rows; an existing row is never
-- changed (ON CONFLICT DO NOTHING). It reads nothing back.
--
-- The node role itself is made by the administrator (INSTALL.md, "Security
-- model", has the exact statements): creating roles needs CREATEROLE, which
-- the schema owner should not hold.
-- fairway_ensure_month as in 0002, but creating the partition in its
-- parent's schema: called from fairway_record_gpu_usage, whose search_path
-- starts with pg_catalog, an unqualified name would land there.
CREATE OR REPLACE FUNCTION fairway_ensure_month(parent regclass, at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	lo   timestamptz := date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
	hi   timestamptz := (date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
	nsp  text;
	name text;
BEGIN
	SELECT n.nspname, format('%s_p%s', c.relname, to_char(at AT TIME ZONE 'UTC', 'YYYYMM')) INTO nsp, name
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = parent;
	IF to_regclass(format('%I.%I', nsp, name)) IS NOT NULL THEN
		RETURN name;
	END IF;
	PERFORM pg_advisory_xact_lock(hashtext('fairway_ensure_month:' || name));
	EXECUTE format('CREATE TABLE IF NOT EXISTS %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', nsp, name, parent, lo, hi);
	RETURN name;
END $$;

CREATE FUNCTION fairway_record_gpu_usage(
	p_cluster text[], p_job_id bigint[], p_node text[], p_gpu_minor integer[], p_ended_at timestamptz[],
	p_started_at timestamptz[], p_gpu_uuid text[], p_gpu_model text[], p_shards integer[],
	p_util_avg_pct real[], p_util_max_pct real[], p_mem_peak_mb bigint[], p_mem_total_mb bigint[],
	p_energy_joules double precision[]
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
	n  integer := coalesce(cardinality(p_job_id), 0);
	at timestamptz;
	stored integer;
BEGIN
	IF n > 10000 THEN
		RAISE EXCEPTION 'fairway_record_gpu_usage: % records in one call, at most 10000', n;
	END IF;
	FOR at IN SELECT DISTINCT date_trunc('month', e AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM unnest(p_ended_at) AS e
	LOOP
		PERFORM fairway_ensure_month('job_gpu_usage'::regclass, at);
	END LOOP;
	INSERT INTO job_gpu_usage (cluster, job_id, node, gpu_minor, ended_at, started_at, gpu_uuid, gpu_model, shards,
		util_avg_pct, util_max_pct, mem_peak_mb, mem_total_mb, energy_joules)
	SELECT * FROM unnest(p_cluster, p_job_id, p_node, p_gpu_minor, p_ended_at, p_started_at, p_gpu_uuid, p_gpu_model,
		p_shards, p_util_avg_pct, p_util_max_pct, p_mem_peak_mb, p_mem_total_mb, p_energy_joules)
	ON CONFLICT DO NOTHING;
	GET DIAGNOSTICS stored = ROW_COUNT;
	RETURN stored;
END $$;

-- A SECURITY DEFINER function must not resolve names through a search_path
-- its caller controls (a caller's temporary table named job_gpu_usage, or
-- a function in a schema it may create in): pin it to pg_catalog first (so
-- no caller-made function shadows a built-in), then the schema Fairway's
-- tables are in, with pg_temp last.
DO $$
BEGIN
	EXECUTE format('ALTER FUNCTION fairway_record_gpu_usage(text[], bigint[], text[], integer[], timestamptz[], '
		'timestamptz[], text[], text[], integer[], real[], real[], bigint[], bigint[], double precision[]) '
		'SET search_path = pg_catalog, %I, pg_temp', current_schema());
END $$;

-- PostgreSQL lets PUBLIC execute every new function. The node role is
-- granted this one by name; the partition helpers are for the owner only.
REVOKE ALL ON FUNCTION fairway_record_gpu_usage(text[], bigint[], text[], integer[], timestamptz[], timestamptz[],
	text[], text[], integer[], real[], real[], bigint[], bigint[], double precision[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION fairway_ensure_month(regclass, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fairway_drop_months_before(regclass, timestamptz) FROM PUBLIC;
