-- Dead-letter groups split by what the error says, not only by its class.
--
-- 0007 grouped a DLQ's messages by (source queue, kind, error class). One
-- class often hides several causes ("card declined" and "address invalid"
-- are both a ValidationError), and one cause is spread over messages whose
-- texts differ only by an id. Groups now also carry the normalized error
-- message (pgbus.dlq_error_norm): the last error message with quoted values,
-- uuids, hex strings and numbers replaced by placeholders, so that
-- "order 42 failed" and "order 43 failed" are one group and "card declined"
-- another. The summary's fast path (these counts) and its filtered path
-- (reading the messages) both call pgbus.dlq_error_norm, so they agree.
--
-- The functions of 0007 that indexes were built on keep their bodies; the
-- new key has new names (pgbus.dlq_cause_key) and a new DLQ index
-- (q_<dlq>_cause_idx), which replaces q_<dlq>_grp_idx. Attaching a DLQ
-- whose new index is missing recounts it, so running the attach over every
-- DLQ at the end regroups the rows 0007 counted.

-- The error message as groups compare it. Replaced, in this order: quoted
-- values ('x', "x", `x`; a quote after a letter is an apostrophe, not a
-- quote) by <str>, uuids by <uuid>, 0x-numbers and runs of 8 or more hex
-- digits mixing digits and letters (hashes, ids) by <hex>, digit runs by
-- <n>; white space is collapsed. At most 500 characters are kept.
-- Immutable and inlinable, like the keys built on it.
CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT left(btrim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        coalesce(msg, ''),
        '"(?:[^"\\]|\\.)*"|`[^`]*`', '<str>', 'g'),
        '(^|[^[:alnum:]_])''[^'']*''', '\1<str>', 'g'),
        '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
        '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
        '[0-9]+', '<n>', 'g'),
        '\s+', ' ', 'g')), 500)
$$;

-- The group of a DLQ row: source queue, kind, error class (length-prefixed,
-- as in 0007) and the normalized error message. Never change its body:
-- indexes are built on it.
CREATE OR REPLACE FUNCTION pgbus.dlq_cause_key(headers jsonb, message jsonb) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(
        length(coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'source_queue', '') ||
        length(coalesce(headers->>'pgbus_kind', message->>'job_class', ''))::text || ':' ||
        coalesce(headers->>'pgbus_kind', message->>'job_class', '') ||
        length(coalesce(headers->'pgbus_dead_letter'->>'error_class', ''))::text || ':' ||
        coalesce(headers->'pgbus_dead_letter'->>'error_class', '') ||
        pgbus.dlq_error_norm(headers->'pgbus_dead_letter'->>'error_message')
    )::uuid
$$;

ALTER TABLE pgbus.dlq_groups ADD COLUMN IF NOT EXISTS error_norm text NOT NULL DEFAULT '';
COMMENT ON COLUMN pgbus.dlq_groups.group_key IS 'pgbus.dlq_cause_key: the group, without the reason';
COMMENT ON COLUMN pgbus.dlq_groups.error_norm IS 'pgbus.dlq_error_norm of the error message';

-- What a DLQ row is counted under; its result row gains error_norm, so it
-- is made again. The trigger function calls it by name.
DROP FUNCTION IF EXISTS pgbus.dlq_group_of(jsonb, jsonb);
CREATE FUNCTION pgbus.dlq_group_of(headers jsonb, message jsonb)
RETURNS TABLE (row_key uuid, group_key uuid, source_queue text, kind text, error_class text, error_norm text, reason text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(g.k::text || coalesce(length(g.r)::text || ':' || g.r, '-'))::uuid, g.k,
           coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''),
           coalesce(headers->>'pgbus_kind', message->>'job_class', ''),
           coalesce(headers->'pgbus_dead_letter'->>'error_class', ''),
           pgbus.dlq_error_norm(headers->'pgbus_dead_letter'->>'error_message'),
           g.r
    FROM (SELECT pgbus.dlq_cause_key(headers, message) AS k, headers->'pgbus_dead_letter'->>'reason' AS r) g
$$;

-- As in 0007, with error_norm.
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
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason, sum(d.n)
            FROM (SELECT k.*, 1 AS n FROM pgbus_new x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason
            HAVING sum(d.n) <> 0
            ORDER BY d.row_key
            ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
            RETURNING g.row_key, g.count
        )
        SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) INTO gone FROM up;
    ELSIF TG_OP = 'DELETE' THEN
        WITH up AS (
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason, sum(d.n)
            FROM (SELECT k.*, -1 AS n FROM pgbus_old x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason
            HAVING sum(d.n) <> 0
            ORDER BY d.row_key
            ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
            RETURNING g.row_key, g.count
        )
        SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) INTO gone FROM up;
    ELSE
        WITH up AS (
            INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count)
            SELECT q, d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason, sum(d.n)
            FROM (SELECT k.*, 1 AS n FROM pgbus_new x, pgbus.dlq_group_of(x.headers, x.message) k
                  UNION ALL
                  SELECT k.*, -1 AS n FROM pgbus_old x, pgbus.dlq_group_of(x.headers, x.message) k) d
            GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason
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

-- As in 0007, with error_norm.
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
        INSERT INTO pgbus.dlq_groups (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count)
        SELECT $1, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, count(*)
        FROM %s x, pgbus.dlq_group_of(x.headers, x.message) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason$q$, rel) USING p_dlq;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$fn$;

-- As in 0007, with the index on pgbus.dlq_cause_key. A DLQ whose index had
-- to be made (one counted by 0007's keys) is recounted too, and loses the
-- index on 0007's key.
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
    IF pgbus.dlq_groups_tracked(rel) AND to_regclass(format('pgmq.%I', 'q_' || p_dlq || '_cause_idx')) IS NOT NULL THEN
        RETURN true;  -- the usual case, without holding off writers
    END IF;
    -- Writers wait from here to commit, so the count below misses nothing;
    -- so does a concurrent attach, which then finds the triggers in place.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    IF to_regclass(format('pgmq.%I', 'q_' || p_dlq || '_cause_idx')) IS NULL THEN
        EXECUTE format('CREATE INDEX %I ON %s (pgbus.dlq_cause_key(headers, message), enqueued_at, msg_id)',
                       'q_' || p_dlq || '_cause_idx', rel);
        EXECUTE format('DROP INDEX IF EXISTS pgmq.%I', 'q_' || p_dlq || '_grp_idx');
        made := true;
    END IF;
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

-- Regroup existing DLQs. One this role may not alter keeps its old index
-- and loses its counts: its triggers now count under the new keys, so its
-- old rows would never come down. Its owner should run
-- SELECT pgbus.dlq_groups_attach('<dlq>') to count it again.
DO $$
DECLARE q text;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' ORDER BY queue_name LOOP
        BEGIN
            PERFORM pgbus.dlq_groups_attach(q);
        EXCEPTION WHEN insufficient_privilege THEN
            DELETE FROM pgbus.dlq_groups WHERE dlq = q;
            RAISE NOTICE 'pgbus: DLQ % is not regrouped in pgbus.dlq_groups: %; its owner should run SELECT pgbus.dlq_groups_attach(%L)', q, SQLERRM, q;
        END;
    END LOOP;
END $$;
