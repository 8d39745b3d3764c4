-- Dead-letter summaries and DLQ depths without scanning the DLQs.
--
-- pgbus.dlq_groups counts, for every DLQ, its messages per (source queue,
-- kind, error class, reason). Statement-level triggers with transition
-- tables keep the counts exact on every insert, delete, update and truncate
-- of the DLQ table, whoever writes it (pgbus, pgmq.send, psql): one upsert
-- per statement, its rows locked in key order, so that concurrent statements
-- cannot deadlock on them; writers hold those locks for one short statement.
-- A group's first and last time and newest ids are not stored: a delete
-- could take them away at any moment. Readers find them through the index
-- q_<dlq>_grp_idx (group, enqueued_at, msg_id), two probes per group.
--
-- The derived values are exactly those SummarizeDead groups by:
--   source_queue  coalesce(headers->'pgbus_dead_letter'->>'source_queue', '')
--   kind          coalesce(headers->>'pgbus_kind', message->>'job_class', '')
--   error_class   coalesce(headers->'pgbus_dead_letter'->>'error_class', '')
--   reason        headers->'pgbus_dead_letter'->>'reason' (NULL without one)
-- Keys are md5s of these, length-prefixed, so that neither the primary key
-- nor the DLQ index holds the texts themselves: a message with a 10 kB kind
-- must still dead-letter (a btree entry holds at most about 2.7 kB).
--
-- A DLQ counts as tracked while its four triggers exist and are enabled
-- (pgbus.dlq_groups_tracked); readers count or scan untracked DLQs as before.
-- Writing to a DLQ with its triggers disabled (or with
-- session_replication_role = replica) leaves its counts wrong: run
-- SELECT pgbus.dlq_groups_backfill('<dlq>') afterwards.

CREATE TABLE IF NOT EXISTS pgbus.dlq_groups (
    dlq          text NOT NULL,
    -- pgbus.dlq_group_key: the group, without the reason
    group_key    uuid NOT NULL,
    -- pgbus.dlq_group_reason_key: the group and the reason
    row_key      uuid NOT NULL,
    source_queue text NOT NULL,
    kind         text NOT NULL,
    error_class  text NOT NULL,
    reason       text,
    count        bigint NOT NULL,
    PRIMARY KEY (dlq, row_key)
);

-- The group of a DLQ row. Immutable and inlinable (one SELECT of immutable
-- operators), so that the DLQ index on it matches the readers' queries.
-- Never change its body: indexes are built on it.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_key(headers jsonb, message jsonb) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(
        length(coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'source_queue', '') ||
        length(coalesce(headers->>'pgbus_kind', message->>'job_class', ''))::text || ':' ||
        coalesce(headers->>'pgbus_kind', message->>'job_class', '') ||
        length(coalesce(headers->'pgbus_dead_letter'->>'error_class', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'error_class', '')
    )::uuid
$$;

-- The group and reason of a DLQ row: the key of its row in pgbus.dlq_groups.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_reason_key(headers jsonb, message jsonb) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(
        length(coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'source_queue', '') ||
        length(coalesce(headers->>'pgbus_kind', message->>'job_class', ''))::text || ':' ||
        coalesce(headers->>'pgbus_kind', message->>'job_class', '') ||
        length(coalesce(headers->'pgbus_dead_letter'->>'error_class', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'error_class', '') ||
        coalesce(length(headers->'pgbus_dead_letter'->>'reason')::text || ':' || (headers->'pgbus_dead_letter'->>'reason'), '-')
    )::uuid
$$;

-- What a DLQ row is counted under. A one-row set-returning SQL function, so
-- that the planner inlines it into the queries that call it.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_of(headers jsonb, message jsonb)
RETURNS TABLE (row_key uuid, group_key uuid, source_queue text, kind text, error_class text, reason text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pgbus.dlq_group_reason_key(headers, message), pgbus.dlq_group_key(headers, message),
           coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''),
           coalesce(headers->>'pgbus_kind', message->>'job_class', ''),
           coalesce(headers->'pgbus_dead_letter'->>'error_class', ''),
           headers->'pgbus_dead_letter'->>'reason'
$$;

-- The trigger function of every DLQ table pgmq.q_<dlq>: AFTER ... FOR EACH
-- STATEMENT, with transition tables pgbus_new and pgbus_old. One upsert adds
-- the statement's net change per row of pgbus.dlq_groups, in key order;
-- rows it brings to zero are then deleted. An UPDATE counts each row out of
-- its old group and into its new one: for rows whose group did not change
-- (a pgmq.read of the DLQ) the two cancel and nothing is written.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    q    text := substr(TG_TABLE_NAME, 3);  -- the table is q_<dlq>
    gone uuid[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM pgbus.dlq_groups WHERE dlq = q;
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        WITH up AS (
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason, sum(d.n)
            FROM (SELECT k.*, 1 AS n FROM pgbus_new x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason
            HAVING sum(d.n) <> 0
            ORDER BY d.row_key
            ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
            RETURNING g.row_key, g.count
        )
        SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) INTO gone FROM up;
    ELSIF TG_OP = 'DELETE' THEN
        WITH up AS (
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason, sum(d.n)
            FROM (SELECT k.*, -1 AS n FROM pgbus_old x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason
            HAVING sum(d.n) <> 0
            ORDER BY d.row_key
            ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
            RETURNING g.row_key, g.count
        )
        SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) INTO gone FROM up;
    ELSE
        WITH up AS (
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason, sum(d.n)
            FROM (SELECT k.*, 1 AS n FROM pgbus_new x, pgbus.dlq_group_of(x.headers, x.message) k
                  UNION ALL
                  SELECT k.*, -1 AS n FROM pgbus_old x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.reason
            HAVING sum(d.n) <> 0
            ORDER BY d.row_key
            ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
            RETURNING g.row_key, g.count
        )
        SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) INTO gone FROM up;
    END IF;
    IF gone IS NOT NULL THEN
        DELETE FROM pgbus.dlq_groups WHERE dlq = q AND row_key = ANY(gone) AND count <= 0;
    END IF;
    RETURN NULL;
END
$fn$;

-- Recounts the groups of one DLQ from its table, under a lock that holds
-- off writers meanwhile, and returns the number of rows. For a DLQ written
-- while its triggers were disabled.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_backfill(p_dlq text) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    rel regclass := to_regclass(format('pgmq.%I', 'q_' || p_dlq));
    n   bigint;
BEGIN
    IF rel IS NOT NULL THEN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    END IF;
    DELETE FROM pgbus.dlq_groups WHERE dlq = p_dlq;
    IF rel IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format($q$
        INSERT INTO pgbus.dlq_groups (dlq, row_key, group_key, source_queue, kind, error_class, reason, count)
        SELECT $1, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.reason, count(*)
        FROM %s x, pgbus.dlq_group_of(x.headers, x.message) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.reason$q$, rel) USING p_dlq;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$;

-- Whether the groups of a DLQ table are kept: its four triggers exist, call
-- pgbus.dlq_groups_track and fire in ordinary sessions.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_tracked(rel regclass) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT count(*) = 4 FROM pg_catalog.pg_trigger
    WHERE tgrelid = rel
      AND tgname IN ('pgbus_dlq_groups_ins', 'pgbus_dlq_groups_del', 'pgbus_dlq_groups_upd', 'pgbus_dlq_groups_trunc')
      AND tgfoid = 'pgbus.dlq_groups_track()'::regprocedure
      AND tgenabled IN ('O', 'A')
$$;

-- Indexes the DLQ table of p_dlq by group, creates its missing triggers and,
-- when it created any, counts its groups. Returns false, changing nothing,
-- for a name pgbus would not give a DLQ or a table without the columns the
-- groups are read from (PGMQ before 1.5 had no headers). Idempotent.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_attach(p_dlq text) RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    rel  regclass := to_regclass(format('pgmq.%I', 'q_' || p_dlq));
    made boolean := false;
    t    record;
BEGIN
    IF rel IS NULL OR p_dlq !~ '^[a-z][a-z0-9_]*_dlq$' OR length(p_dlq) > 47 THEN
        RETURN false;
    END IF;
    IF (SELECT count(*) FROM pg_catalog.pg_attribute
        WHERE attrelid = rel AND NOT attisdropped AND attnum > 0
          AND attname IN ('msg_id', 'enqueued_at', 'message', 'headers')) < 4 THEN
        RETURN false;
    END IF;
    IF pgbus.dlq_groups_tracked(rel) AND to_regclass(format('pgmq.%I', 'q_' || p_dlq || '_grp_idx')) IS NOT NULL THEN
        RETURN true;  -- the usual case, without holding off writers
    END IF;
    -- Writers wait from here to commit, so the count below misses nothing;
    -- so does a concurrent attach, which then finds the triggers in place.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s (pgbus.dlq_group_key(headers, message), enqueued_at, msg_id)',
                   'q_' || p_dlq || '_grp_idx', rel);
    FOR t IN SELECT * FROM (VALUES
            ('pgbus_dlq_groups_ins', 'AFTER INSERT ON %s REFERENCING NEW TABLE AS pgbus_new FOR EACH STATEMENT'),
            ('pgbus_dlq_groups_del', 'AFTER DELETE ON %s REFERENCING OLD TABLE AS pgbus_old FOR EACH STATEMENT'),
            ('pgbus_dlq_groups_upd', 'AFTER UPDATE ON %s REFERENCING OLD TABLE AS pgbus_old NEW TABLE AS pgbus_new FOR EACH STATEMENT'),
            ('pgbus_dlq_groups_trunc', 'AFTER TRUNCATE ON %s FOR EACH STATEMENT')) AS v(name, spec)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = rel AND tgname = t.name) THEN
            EXECUTE format('CREATE TRIGGER %I ', t.name) || format(t.spec, rel) || ' EXECUTE FUNCTION pgbus.dlq_groups_track()';
            made := true;
        END IF;
    END LOOP;
    IF made THEN
        PERFORM pgbus.dlq_groups_backfill(p_dlq);
    END IF;
    RETURN true;
END
$fn$;

-- Existing DLQs. One this role may not alter is left untracked: readers
-- scan it as before.
DO $$
DECLARE q text;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' ORDER BY queue_name LOOP
        BEGIN
            PERFORM pgbus.dlq_groups_attach(q);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'pgbus: DLQ % is not tracked in pgbus.dlq_groups: %', q, SQLERRM;
        END;
    END LOOP;
END $$;
