-- 0007_power: serve's power-saving decisions (docs/POWER.md, INSTALL.md).
-- One row per node powered down or up (or, in a dry run, that would have
-- been), and one row (node '') per cycle in which jobs waiting for nodes
-- found fewer powered idle nodes than they need: `fairway explain --node`
-- and the report's power section read them. Rows are few (at most
-- --power-max-changes-per-hour actions an hour, plus the cycles with lack),
-- so the table is not partitioned.
CREATE TABLE power_action (
	cluster     text        NOT NULL,
	decided_at  timestamptz NOT NULL, -- the cycle's start
	cycle       bigint      NOT NULL,
	node        text        NOT NULL, -- '' on a lack row
	action      text        NOT NULL CHECK (action IN ('power-down', 'power-up', 'lack')),
	reason      text        NOT NULL DEFAULT '',
	parts       jsonb       NOT NULL DEFAULT '{}', -- the numbers the reason was computed from
	lack_nodes  integer     NOT NULL DEFAULT 0,
	span_s      double precision NOT NULL DEFAULT 0, -- lack rows: seconds since the previous cycle
	dry_run     boolean     NOT NULL,
	error       text        NOT NULL DEFAULT '', -- Slurm refused it: it did not happen
	PRIMARY KEY (cluster, decided_at, cycle, node, action)
);

CREATE INDEX power_action_node_idx ON power_action (cluster, node, decided_at);
