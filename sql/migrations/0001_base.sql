-- 0001_base: the clusters Fairway knows and the key/value state it keeps
-- between cycles (watermarks, leader lease bookkeeping).
CREATE TABLE cluster (
	name       text PRIMARY KEY,
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE kv_state (
	cluster    text NOT NULL REFERENCES cluster(name) ON DELETE CASCADE,
	key        text NOT NULL,
	value      text NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster, key)
);
