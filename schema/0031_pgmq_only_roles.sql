-- A PGMQ client's role with rights on schema pgmq alone (USAGE on it, and
-- on its tables and sequences) could not use a DLQ, nor any statement that
-- reads one, pgmq.metrics_all() included: "permission denied for schema
-- pgbus". Two of pgbus's objects sit on every DLQ table, and both asked
-- the caller for rights on schema pgbus.
--
-- The DLQ's index of error groups is built on pgbus.dlq_cause_key, which
-- called pgbus.dlq_error_norm by name. The planner expands the key in
-- place in every statement on the table (it matches statements against
-- the index's expression, and computes the expression so at each insert),
-- and expanding it parses its body as the caller, whose lookup of
-- pgbus.dlq_error_norm needs USAGE on schema pgbus. The key now spells
-- the normalization out (0030's body, its argument put in place of msg),
-- naming only PostgreSQL's functions and operators, in full. It computes
-- what it computed, and expands to the very expression it expanded to
-- before: indexes stay as they are, with nothing to rebuild, and sessions
-- open before this migration, which hold the index's expression expanded,
-- go on matching it. It still takes no settings, which would stop the
-- planner expanding it (0025): no search_path, no SECURITY DEFINER. A
-- migration that changes pgbus.dlq_error_norm changes the key with it,
-- as pgbus.dlq_group_of's group key (the counts') is the key of the
-- normalization (the store's tests compare the two).

CREATE OR REPLACE FUNCTION pgbus.dlq_cause_key(headers pg_catalog.jsonb, message pg_catalog.jsonb) RETURNS pg_catalog.uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pg_catalog.md5(
        pg_catalog.length(coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', ''))::pg_catalog.text
            OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||)
        coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', '') OPERATOR(pg_catalog.||)
        pg_catalog.length(coalesce(headers OPERATOR(pg_catalog.->>) 'pgbus_kind', message OPERATOR(pg_catalog.->>) 'job_class', ''))::pg_catalog.text
            OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||)
        coalesce(headers OPERATOR(pg_catalog.->>) 'pgbus_kind', message OPERATOR(pg_catalog.->>) 'job_class', '') OPERATOR(pg_catalog.||)
        pg_catalog.length(coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', ''))::pg_catalog.text
            OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||)
        coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', '') OPERATOR(pg_catalog.||)
        pg_catalog.left(pg_catalog.btrim(
            pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
            pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
            pg_catalog.regexp_replace(pg_catalog.regexp_replace(
            pg_catalog.translate(coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message', ''), pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.chr(2), ''),
            '"(?:[^"\\]|\\.)*"|`[^`]*`', pg_catalog.chr(1) OPERATOR(pg_catalog.||) '\&' OPERATOR(pg_catalog.||) pg_catalog.chr(2), 'g'),
            '\x01("[^[:space:]\x01\x02]*"|`[^[:space:]\x01\x02]*`)\x02', '<str>', 'g'),
            '\\"[^"\\[:space:]\x01\x02]*\\"', '<str>', 'g'),
            '(^|[^[:alnum:]_])''[^''[:space:]]*''', '\1<str>', 'g'),
            '(^|[^[:alnum:]._%+/:@-])[[:alnum:]._%+-]+@[[:alnum:]-]+(?:\.[[:alnum:]-]+)*\.[[:alpha:]]{2,}\M', '\1<email>', 'g'),
            '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
            '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
            '\m(?=[[:alnum:]_-]*[0-9])(?=[[:alnum:]_-]*[[:alpha:]])(?![[:alpha:]_-]*[0-9]+(?:\.[0-9]+)*[[:alpha:]_-]*\M)[[:alnum:]][[:alnum:]_-]{5,}\M', '<id>', 'g'),
            '(^|[^[:alnum:]_])-(?=[0-9])', '\1', 'g'),
            '[0-9]+(?:\.[0-9]+)*', '<n>', 'g'),
            '[\x01\x02]', '', 'g'),
            '\s+', ' ', 'g')), 500)
    )::pg_catalog.uuid
$$;

-- The trigger that counts a DLQ's groups writes pgbus.dlq_group_deltas
-- (and, folding, pgbus.dlq_groups), which a PGMQ client's role may not.
-- It now runs as its owner, the role that migrates, SECURITY DEFINER, with
-- search_path pg_catalog, pg_temp and every object named in full, so that
-- no schema of the caller's is looked in. It counts only for tables in
-- schema pgmq: a role that may attach it to a table of its own elsewhere
-- (a temporary table named as a DLQ's) is refused, rather than wiping or
-- forging the counts of that DLQ with the owner's rights. A table in pgmq
-- is made only by a role that may create there, and holds its name alone.
-- Otherwise as in 0013.
CREATE OR REPLACE FUNCTION pgbus.dlq_groups_track() RETURNS pg_catalog.trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    q pg_catalog.text := pg_catalog.substr(TG_TABLE_NAME, 3);  -- the table is q_<dlq>
BEGIN
    IF TG_TABLE_SCHEMA OPERATOR(pg_catalog.<>) 'pgmq' THEN
        RAISE EXCEPTION 'pgbus.dlq_groups_track counts the DLQ tables of schema pgmq, not %.%', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Drop the trigger that calls it on this table.';
    END IF;
    IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
        PERFORM pgbus.dlq_groups_forget(q);
        RETURN NULL;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, pg_catalog.sum(a.n)
        FROM (SELECT coalesce(x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', '') AS sq,
                     coalesce(x.headers OPERATOR(pg_catalog.->>) 'pgbus_kind', x.message OPERATOR(pg_catalog.->>) 'job_class', '') AS kd,
                     coalesce(x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', '') AS ec,
                     x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message' AS em,
                     x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason' AS r,
                     pg_catalog.count(*) AS n
              FROM pgbus_new x
              GROUP BY 1, 2, 3, 4, 5) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, OPERATOR(pg_catalog.-) pg_catalog.sum(a.n)
        FROM (SELECT coalesce(x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', '') AS sq,
                     coalesce(x.headers OPERATOR(pg_catalog.->>) 'pgbus_kind', x.message OPERATOR(pg_catalog.->>) 'job_class', '') AS kd,
                     coalesce(x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', '') AS ec,
                     x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message' AS em,
                     x.headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason' AS r,
                     pg_catalog.count(*) AS n
              FROM pgbus_old x
              GROUP BY 1, 2, 3, 4, 5) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason;
    ELSE
        -- An UPDATE moves each row out of its old group into its new one;
        -- for rows whose group did not change (a pgmq.read of the DLQ) the
        -- two cancel and nothing is written.
        INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
        SELECT q, k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason, pg_catalog.sum(a.n)
        FROM (SELECT coalesce(x.h OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', '') AS sq,
                     coalesce(x.h OPERATOR(pg_catalog.->>) 'pgbus_kind', x.m OPERATOR(pg_catalog.->>) 'job_class', '') AS kd,
                     coalesce(x.h OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', '') AS ec,
                     x.h OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message' AS em,
                     x.h OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason' AS r,
                     pg_catalog.sum(x.n) AS n
              FROM (SELECT headers AS h, message AS m, 1 AS n FROM pgbus_new
                    UNION ALL
                    SELECT headers, message, -1 FROM pgbus_old) x
              GROUP BY 1, 2, 3, 4, 5
              HAVING pg_catalog.sum(x.n) OPERATOR(pg_catalog.<>) 0) a,
             pgbus.dlq_group_from(a.sq, a.kd, a.ec, a.em, a.r) k
        GROUP BY k.row_key, k.group_key, k.source_queue, k.kind, k.error_class, k.error_norm, k.reason
        HAVING pg_catalog.sum(a.n) OPERATOR(pg_catalog.<>) 0;
    END IF;
    -- Now and then, fold: see 0013.
    IF pg_catalog.random() OPERATOR(pg_catalog.<) (1.0 OPERATOR(pg_catalog./) 64)
       AND pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed'
       AND pg_catalog.pg_try_advisory_xact_lock(pgbus.dlq_groups_lock_key(q)) THEN
        PERFORM pgbus.dlq_groups_fold(q);
    END IF;
    RETURN NULL;
END
$fn$;
