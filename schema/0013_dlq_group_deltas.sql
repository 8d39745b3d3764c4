-- Dead-letter group counts that writers add to without waiting for each
-- other.
--
-- Until now every statement on a DLQ table upserted the statement's net
-- change into pgbus.dlq_groups (0007, 0010). A DLQ's messages mostly fall
-- into a few groups, so concurrent dead-lettering (worker processes, and
-- the routing of messages past their retries at read time) and DLQ
-- retries all updated the same few rows: each waited for the row lock of
-- the one before it until that one committed, and each left a dead row
-- version behind. The trigger also normalized every error message three
-- times (pgbus.dlq_error_norm, ten regular expressions, behind the group
-- key, the row key and the error_norm column), which cost as much as the
-- insert of the DLQ row itself.
--
-- Now a statement appends its net change per group to
-- pgbus.dlq_group_deltas: a plain insert, with no key to conflict on and
-- no row anyone else writes, so writers never wait for each other. The
-- count of a group is its row in pgbus.dlq_groups (the base) plus its
-- pending deltas; pgbus.dlq_group_counts adds them up, and every reader
-- reads it. A fold (pgbus.dlq_groups_fold) moves a DLQ's deltas into its
-- base rows in one statement: DELETE ... RETURNING the deltas, then add
-- them, in one transaction. A reader's snapshot sees the fold whole or
-- not at all, and a delta committed after the fold's snapshot is not
-- deleted, so it stays pending: the sum is exact at every moment. Sharded
-- counters would still have put writers of one shard in line and made
-- every reader add up all shards; deltas keep the writer's path a single
-- insert. The trigger also counts a statement's rows by the raw values
-- their group is made of first, and normalizes each distinct error message
-- once: a burst of the same failure costs one normalization, not one a
-- row.
--
-- Deltas are folded by the retention pass of the engine (store.RunRetention)
-- and, so that they stay few where no engine runs retention, by about one
-- in 64 writing statements, when no other fold of that DLQ is under way
-- (a transaction-scoped advisory lock, taken without waiting) and only in
-- READ COMMITTED: a REPEATABLE READ writer could find a fold committed
-- after its snapshot and fail with a serialization error. Only folds,
-- backfills, truncates and drops write base rows, and all of them take the
-- same lock, so writers never wait for a base row either.
--
-- pgbus.dlq_groups_tracked, pgbus.dlq_groups_attach and
-- pgbus.dlq_groups_backfill keep their meaning. The counts already in
-- pgbus.dlq_groups stay as they are: they become the base, with no
-- pending deltas.

CREATE TABLE IF NOT EXISTS pgbus.dlq_group_deltas (
    dlq          text NOT NULL,
    row_key      uuid NOT NULL,
    group_key    uuid NOT NULL,
    source_queue text NOT NULL,
    kind         text NOT NULL,
    error_class  text NOT NULL,
    error_norm   text NOT NULL,
    reason       text,
    -- the net change of one statement: negative for rows that left
    delta        bigint NOT NULL
);
-- Readers select by DLQ and folds delete by DLQ.
CREATE INDEX IF NOT EXISTS dlq_group_deltas_dlq_idx ON pgbus.dlq_group_deltas (dlq);
COMMENT ON TABLE pgbus.dlq_group_deltas IS
    'net changes of pgbus.dlq_groups not folded yet; a group counts its base row plus these (pgbus.dlq_group_counts)';

-- The count of every group: base plus pending deltas, groups at zero left
-- out. A filter on dlq reaches both tables' indexes.
CREATE OR REPLACE VIEW pgbus.dlq_group_counts AS
    SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, sum(n)::bigint AS count
    FROM (SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count AS n
          FROM pgbus.dlq_groups
          UNION ALL
          SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta
          FROM pgbus.dlq_group_deltas) c
    GROUP BY dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason
    HAVING sum(n) <> 0;

-- What a dead letter is counted under, from the values its group is made
-- of (source queue, kind and error class coalesced to '', the error
-- message and reason as the block holds them, NULL when missing). The
-- error message is normalized once: the OFFSET 0 subquery keeps the
-- planner from pasting the normalization into every place that uses it.
-- group_key is the value of pgbus.dlq_cause_key, whose body indexes are
-- built on and which stays as it is; this one spells the same expression
-- out around the one normalized message (the store's tests compare the
-- two on every message they write).
CREATE OR REPLACE FUNCTION pgbus.dlq_group_from(text, text, text, text, text)
RETURNS TABLE (row_key uuid, group_key uuid, source_queue text, kind text, error_class text, error_norm text, reason text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(g.k::text || coalesce(length($5)::text || ':' || $5, '-'))::uuid, g.k, $1, $2, $3, g.nm, $5
    FROM (SELECT md5(length($1)::text || ':' || $1 || length($2)::text || ':' || $2 ||
                     length($3)::text || ':' || $3 || v.nm)::uuid AS k, v.nm
          FROM (SELECT pgbus.dlq_error_norm($4) AS nm OFFSET 0) v) g
$$;

-- What a DLQ row is counted under, as in 0010, through
-- pgbus.dlq_group_from.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_of(headers jsonb, message jsonb)
RETURNS TABLE (row_key uuid, group_key uuid, source_queue text, kind text, error_class text, error_norm text, reason text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT f.* FROM pgbus.dlq_group_from(
        coalesce(headers->'pgbus_dead_letter'->>'source_queue', ''),
        coalesce(headers->>'pgbus_kind', message->>'job_class', ''),
        coalesce(headers->'pgbus_dead_letter'->>'error_class', ''),
        headers->'pgbus_dead_letter'->>'error_message',
        headers->'pgbus_dead_letter'->>'reason') f
$$;

-- The advisory lock key of the counts of one DLQ: held, transaction-scoped,
-- by whoever writes its base rows or removes its deltas.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_lock_key(p_dlq text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('pgbus.dlq_groups:' || p_dlq, 0)
$$;

-- Moves the pending deltas of p_dlq into its base rows and returns how many
-- delta rows it folded. It waits for a fold of the same DLQ under way.
-- Run it in READ COMMITTED: each statement then sees what folds before it
-- committed.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_fold(p_dlq text) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    n    bigint;
    gone uuid[];
BEGIN
    PERFORM pg_advisory_xact_lock(pgbus.dlq_groups_lock_key(p_dlq));
    WITH d AS (
        DELETE FROM pgbus.dlq_group_deltas WHERE dlq = p_dlq
        RETURNING row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta
    ), s AS (
        SELECT d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason,
               sum(d.delta) AS n, count(*) AS nrows
        FROM d
        GROUP BY d.row_key, d.group_key, d.source_queue, d.kind, d.error_class, d.error_norm, d.reason
    ), up AS (
        INSERT INTO pgbus.dlq_groups AS g (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count)
        SELECT p_dlq, s.row_key, s.group_key, s.source_queue, s.kind, s.error_class, s.error_norm, s.reason, s.n
        FROM s WHERE s.n <> 0
        ORDER BY s.row_key
        ON CONFLICT (dlq, row_key) DO UPDATE SET count = g.count + excluded.count
        RETURNING g.row_key, g.count
    )
    SELECT (SELECT coalesce(sum(s.nrows), 0) FROM s),
           (SELECT array_agg(up.row_key) FILTER (WHERE up.count <= 0) FROM up)
    INTO n, gone;
    IF gone IS NOT NULL THEN
        DELETE FROM pgbus.dlq_groups WHERE dlq = p_dlq AND row_key = ANY(gone) AND count <= 0;
    END IF;
    RETURN n;
END
$fn$;

-- Forgets every count of p_dlq, base and deltas: for a DLQ truncated,
-- dropped or about to be recounted.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_forget(p_dlq text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(pgbus.dlq_groups_lock_key(p_dlq));
    DELETE FROM pgbus.dlq_group_deltas WHERE dlq = p_dlq;
    DELETE FROM pgbus.dlq_groups WHERE dlq = p_dlq;
END
$fn$;

-- The trigger function of every DLQ table, as in 0010, appending deltas
-- instead of updating counts (see the top of this file). The statement's
-- rows are first counted by the values their group is made of, the raw
-- error message included, and each distinct one is then normalized once:
-- a burst of the same failure costs one normalization, not one a row.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    q text := substr(TG_TABLE_NAME, 3);  -- the table is q_<dlq>
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pgbus.dlq_groups_forget(q);
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, sum(a.n)
        FROM (SELECT coalesce(x.headers->'pgbus_dead_letter'->>'source_queue', '') AS sq,
                     coalesce(x.headers->>'pgbus_kind', x.message->>'job_class', '') AS kd,
                     coalesce(x.headers->'pgbus_dead_letter'->>'error_class', '') AS ec,
                     x.headers->'pgbus_dead_letter'->>'error_message' AS em,
                     x.headers->'pgbus_dead_letter'->>'reason' AS r,
                     count(*) AS n
              FROM pgbus_new x
              GROUP BY 1, 2, 3, 4, 5) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, -sum(a.n)
        FROM (SELECT coalesce(x.headers->'pgbus_dead_letter'->>'source_queue', '') AS sq,
                     coalesce(x.headers->>'pgbus_kind', x.message->>'job_class', '') AS kd,
                     coalesce(x.headers->'pgbus_dead_letter'->>'error_class', '') AS ec,
                     x.headers->'pgbus_dead_letter'->>'error_message' AS em,
                     x.headers->'pgbus_dead_letter'->>'reason' AS r,
                     count(*) AS n
              FROM pgbus_old x
              GROUP BY 1, 2, 3, 4, 5) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason;
    ELSE
        -- An UPDATE moves each row out of its old group into its new one;
        -- for rows whose group did not change (a pgmq.read of the DLQ) the
        -- two cancel and nothing is written.
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, sum(a.n)
        FROM (SELECT coalesce(x.h->'pgbus_dead_letter'->>'source_queue', '') AS sq,
                     coalesce(x.h->>'pgbus_kind', x.m->>'job_class', '') AS kd,
                     coalesce(x.h->'pgbus_dead_letter'->>'error_class', '') AS ec,
                     x.h->'pgbus_dead_letter'->>'error_message' AS em,
                     x.h->'pgbus_dead_letter'->>'reason' AS r,
                     sum(x.n) AS n
              FROM (SELECT headers AS h, message AS m, 1 AS n FROM pgbus_new
                    UNION ALL
                    SELECT headers, message, -1 FROM pgbus_old) x
              GROUP BY 1, 2, 3, 4, 5
              HAVING sum(x.n) <> 0) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason
        HAVING sum(a.n) <> 0;
    END IF;
    -- Now and then, fold: see the top of this file.
    IF random() < 1.0 / 64
       AND current_setting('transaction_isolation') = 'read committed'
       AND pg_try_advisory_xact_lock(pgbus.dlq_groups_lock_key(q)) THEN
        PERFORM pgbus.dlq_groups_fold(q);
    END IF;
    RETURN NULL;
END
$fn$;

-- As in 0010, forgetting the deltas too.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_backfill(p_dlq text) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    rel regclass := to_regclass(format('pgmq.%I', 'q_' || p_dlq));
    n   bigint;
BEGIN
    IF rel IS NOT NULL THEN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', rel);
    END IF;
    PERFORM pgbus.dlq_groups_forget(p_dlq);
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
