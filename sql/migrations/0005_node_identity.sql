-- 0005_node_identity: one database login per GPU node, and a node may
-- write only its own, current usage. With one login shared by every node
-- (0004), root on one node could store records for any job under any node
-- name, and rows of a made-up node were averaged into a job's reading of
-- its GPUs; and every distinct month in a call made a partition, so a node
-- could create thousands of future partitions that retention never
-- dropped and that slowed every query on job_gpu_usage.
--
-- fairway_node_login says which node each login is. The administrator
-- fills it (INSTALL.md, "Security model", has the statements); the schema
-- owner and its members are not nodes and may store any record (serve,
-- fixtures, an admin importing a node's set-aside records).
CREATE TABLE fairway_node_login (
	login   text PRIMARY KEY, -- the database role the node logs in as (session_user)
	cluster text NOT NULL CHECK (cluster <> ''),
	node    text NOT NULL CHECK (node <> '')    -- Slurm's node name (SLURMD_NODENAME)
);

-- A node's call is refused with SQLSTATE FW001 when a record is not the
-- node's own (cluster and node), ends more than a day from now (clock skew
-- and a short outage, not history), or the call spans more than two
-- months: so a node makes at most this month's and next month's
-- partitions. A refusal refuses the whole call and creates nothing; the
-- client finds the refused records by splitting the call
-- (accounting.Store.RecordGPUUsage). A login that is neither the owner's
-- nor in fairway_node_login gets insufficient_privilege: a set-up mistake
-- the spool waits out, not a record to set aside.
--
-- Identity is session_user, the role that logged in: inside a SECURITY
-- DEFINER function current_user is the owner, and SET ROLE does not change
-- session_user (SET SESSION AUTHORIZATION needs a superuser).
CREATE OR REPLACE FUNCTION fairway_record_gpu_usage(
	p_cluster text[], p_job_id bigint[], p_node text[], p_gpu_minor integer[], p_ended_at timestamptz[],
	p_started_at timestamptz[], p_gpu_uuid text[], p_gpu_model text[], p_shards integer[],
	p_util_avg_pct real[], p_util_max_pct real[], p_mem_peak_mb bigint[], p_mem_total_mb bigint[],
	p_energy_joules double precision[]
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
	n       integer := coalesce(cardinality(p_job_id), 0);
	at      timestamptz;
	months  integer;
	stored  integer;
	mine    fairway_node_login%ROWTYPE;
	bad     record;
BEGIN
	IF n > 10000 THEN
		RAISE EXCEPTION 'fairway_record_gpu_usage: % records in one call, at most 10000', n;
	END IF;
	IF NOT pg_has_role(session_user, current_user, 'MEMBER') THEN
		SELECT * INTO mine FROM fairway_node_login WHERE login = session_user;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'fairway_record_gpu_usage: login % is not a GPU node''s: fairway_node_login has no row for it', session_user
				USING ERRCODE = 'insufficient_privilege',
				HINT = 'As the schema owner: INSERT INTO fairway_node_login (login, cluster, node) VALUES (...); see INSTALL.md, "Security model".';
		END IF;
		SELECT count(DISTINCT date_trunc('month', e AT TIME ZONE 'UTC')) INTO months FROM unnest(p_ended_at) AS e;
		IF months > 2 THEN
			RAISE EXCEPTION 'fairway_record_gpu_usage: records of % months in one call; a node may send at most 2', months
				USING ERRCODE = 'FW001';
		END IF;
		SELECT r.i, r.c, r.nd INTO bad
		FROM unnest(p_cluster, p_node) WITH ORDINALITY AS r(c, nd, i)
		WHERE r.c IS DISTINCT FROM mine.cluster OR r.nd IS DISTINCT FROM mine.node
		LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'fairway_record_gpu_usage: record % is of node % in cluster %; login % may record node % in cluster % only',
				bad.i, bad.nd, bad.c, session_user, mine.node, mine.cluster
				USING ERRCODE = 'FW001';
		END IF;
		SELECT r.i, r.e INTO bad
		FROM unnest(p_ended_at) WITH ORDINALITY AS r(e, i)
		WHERE r.e IS NULL OR r.e < now() - interval '1 day' OR r.e > now() + interval '1 day'
		LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'fairway_record_gpu_usage: record % ends at %, more than a day from now (%); a node records only current usage',
				bad.i, bad.e, now()
				USING ERRCODE = 'FW001';
		END IF;
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

-- CREATE OR REPLACE keeps the grants but resets the function's settings:
-- pin search_path again (see 0004 for why).
DO $$
BEGIN
	EXECUTE format('ALTER FUNCTION fairway_record_gpu_usage(text[], bigint[], text[], integer[], timestamptz[], '
		'timestamptz[], text[], text[], integer[], real[], real[], bigint[], bigint[], double precision[]) '
		'SET search_path = pg_catalog, %I, pg_temp', current_schema());
END $$;

-- fairway_drop_months_from drops up to max_parts monthly partitions of
-- parent whose month starts on or after start, latest first, and returns
-- their names. Years past 9999 (which 0004's function let a node create)
-- have more than four digits in the name. Retention calls it until it returns fewer than max_parts:
-- each dropped table is locked until commit, and thousands in one
-- transaction exhaust the lock table ("out of shared memory").
CREATE FUNCTION fairway_drop_months_from(parent regclass, start timestamptz, max_parts integer) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	part text;
BEGIN
	FOR part IN
		SELECT p.relname FROM (
			SELECT c.relname, substring(c.relname FROM '_p([0-9]{6,})$') AS ym
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = parent
		) p
		WHERE p.ym IS NOT NULL
			AND make_date(left(p.ym, -2)::integer, right(p.ym, 2)::integer, 1)::timestamp AT TIME ZONE 'UTC' >= start
		ORDER BY length(p.ym) DESC, p.ym DESC
		LIMIT max_parts
	LOOP
		EXECUTE format('DROP TABLE %I', part);
		RETURN NEXT part;
	END LOOP;
END $$;

REVOKE ALL ON FUNCTION fairway_drop_months_from(regclass, timestamptz, integer) FROM PUBLIC;
REVOKE ALL ON TABLE fairway_node_login FROM PUBLIC;
