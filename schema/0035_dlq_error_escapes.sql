-- Error groups keep a character written as an escape (\u041e, and
-- \U0001f600 past U+FFFF) whole.
--
-- A database in LATIN1 (or another encoding without room for every
-- character) stores an error text's characters it has no room for as
-- escapes: the Russian for error as \u041e\u0448\u0438\u0431\u043a\u0430
-- (the store's textFit). This file holds ASCII alone, for such a database
-- to take it. The normalization took an escape's digits for a number,
-- \u0442 and \u0432 both \u<n>, so that different texts in Cyrillic, Greek
-- or Chinese of the same length made one group, and a retry or discard by
-- group took messages of causes it never showed. An escape is now kept as
-- it is: the digits of one are no number, one is no identifier's start,
-- and an e-mail address holding some is one address. Everything else is
-- as in 0030 (pgbus.dlq_error_norm) and 0031 (pgbus.dlq_cause_key, which
-- spells the same normalization out).
CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg pg_catalog.text) RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Twelve replacements, innermost first: wrap each quoted string;
    -- replace those without white space; values quoted inside prose;
    -- single-quoted values; e-mail addresses, escapes in them included;
    -- uuids; hex; identifiers, but a number with a word before or after it
    -- and an escape; the minus sign of a number; numbers with their
    -- decimals, but the digits of an escape; unwrap; white space.
    SELECT pg_catalog.left(pg_catalog.btrim(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.translate(coalesce(msg, ''), pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.chr(2), ''),
        '"(?:[^"\\]|\\.)*"|`[^`]*`', pg_catalog.chr(1) OPERATOR(pg_catalog.||) '\&' OPERATOR(pg_catalog.||) pg_catalog.chr(2), 'g'),
        '\x01("[^[:space:]\x01\x02]*"|`[^[:space:]\x01\x02]*`)\x02', '<str>', 'g'),
        '\\"[^"\\[:space:]\x01\x02]*\\"', '<str>', 'g'),
        '(^|[^[:alnum:]_])''[^''[:space:]]*''', '\1<str>', 'g'),
        '(^|[^[:alnum:]._%+/:@-])(?:[[:alnum:]._%+-]|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8})+@[[:alnum:]-]+(?:\.[[:alnum:]-]+)*\.[[:alpha:]]{2,}\M', '\1<email>', 'g'),
        '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
        '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
        '(?:(?<!\\)|(?![uU][0-9a-fA-F]{4}))\m(?=[[:alnum:]_-]*[0-9])(?=[[:alnum:]_-]*[[:alpha:]])(?![[:alpha:]_-]*[0-9]+(?:\.[0-9]+)*[[:alpha:]_-]*\M)[[:alnum:]][[:alnum:]_-]{5,}\M', '<id>', 'g'),
        '(^|[^[:alnum:]_])-(?=[0-9])', '\1', 'g'),
        '(?<!\\u[0-9a-fA-F]{0,3})(?<!\\U[0-9a-fA-F]{0,7})[0-9]+(?:\.[0-9]+)*', '<n>', 'g'),
        '[\x01\x02]', '', 'g'),
        '\s+', ' ', 'g')), 500)
$$;

-- As in 0031, with the normalization above.
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
            '(^|[^[:alnum:]._%+/:@-])(?:[[:alnum:]._%+-]|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8})+@[[:alnum:]-]+(?:\.[[:alnum:]-]+)*\.[[:alpha:]]{2,}\M', '\1<email>', 'g'),
            '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
            '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
            '(?:(?<!\\)|(?![uU][0-9a-fA-F]{4}))\m(?=[[:alnum:]_-]*[0-9])(?=[[:alnum:]_-]*[[:alpha:]])(?![[:alpha:]_-]*[0-9]+(?:\.[0-9]+)*[[:alpha:]_-]*\M)[[:alnum:]][[:alnum:]_-]{5,}\M', '<id>', 'g'),
            '(^|[^[:alnum:]_])-(?=[0-9])', '\1', 'g'),
            '(?<!\\u[0-9a-fA-F]{0,3})(?<!\\U[0-9a-fA-F]{0,7})[0-9]+(?:\.[0-9]+)*', '<n>', 'g'),
            '[\x01\x02]', '', 'g'),
            '\s+', ' ', 'g')), 500)
    )::pg_catalog.uuid
$$;

-- The DLQs whose groups change are rebuilt as 0030 rebuilt every DLQ: the
-- index on pgbus.dlq_cause_key, and the groups recounted. Only those: a
-- text changes group only if it holds a backslash outside its quoted
-- values (an escape's), and no replacement of the normalization before
-- this one took that backslash out, so that its group's pattern in the
-- counts holds it too. The counts are read, one row per group, rather
-- than each DLQ's messages: a DLQ of a database in UTF8, where texts hold
-- their characters as they are, is then neither read nor rebuilt, where a
-- REINDEX reads every message and normalizes it again. A DLQ whose groups
-- are not counted (its triggers off) has no counts to read: its messages
-- are read for a backslash instead.
--
-- Every other DLQ's index is only touched: a session open before this
-- migration holds each index's key as it expanded it then, and, its key
-- now expanding otherwise, would plan a lookup by group without the index
-- until it reconnects. Setting the statistics target of the key's column
-- to what it is (-1, the default) makes every session read the index
-- again, under a lock that holds up no read or write of the DLQ.
--
-- A DLQ this role may not alter loses its counts, as in 0030; its owner
-- should REINDEX its index and run SELECT pgbus.dlq_groups_attach('<dlq>').
DO $$
DECLARE
    q pg_catalog.text;
    changed pg_catalog.bool;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' ORDER BY queue_name LOOP
        IF to_regclass(format('pgmq.%I', 'q_' || q || '_cause_idx')) IS NULL THEN
            CONTINUE;
        END IF;
        IF pgbus.dlq_groups_tracked(to_regclass(format('pgmq.%I', 'q_' || q))) THEN
            changed := EXISTS (SELECT 1 FROM pgbus.dlq_groups g WHERE g.dlq = q AND strpos(g.error_norm, '\') > 0)
                    OR EXISTS (SELECT 1 FROM pgbus.dlq_group_deltas d WHERE d.dlq = q AND strpos(d.error_norm, '\') > 0);
        ELSE
            EXECUTE format($q$SELECT EXISTS (SELECT 1 FROM pgmq.%I WHERE strpos(headers->'pgbus_dead_letter'->>'error_message', '\') > 0)$q$, 'q_' || q)
                INTO changed;
        END IF;
        BEGIN
            IF changed THEN
                EXECUTE format('REINDEX INDEX pgmq.%I', 'q_' || q || '_cause_idx');
                PERFORM pgbus.dlq_groups_backfill(q);
            ELSE
                EXECUTE format('ALTER INDEX pgmq.%I ALTER COLUMN 1 SET STATISTICS -1', 'q_' || q || '_cause_idx');
            END IF;
        EXCEPTION WHEN insufficient_privilege THEN
            IF changed THEN
                DELETE FROM pgbus.dlq_groups WHERE dlq = q;
                RAISE NOTICE 'pgbus: DLQ % is not regrouped in pgbus.dlq_groups: %; its owner should run REINDEX INDEX pgmq.%I and SELECT pgbus.dlq_groups_attach(%L)', q, SQLERRM, 'q_' || q || '_cause_idx', q;
            ELSE
                RAISE NOTICE 'pgbus: the index of error groups of DLQ % is not read again by sessions open before this migration: %; they find its messages by group without it until they reconnect', q, SQLERRM;
            END IF;
        END;
    END LOOP;
END $$;
