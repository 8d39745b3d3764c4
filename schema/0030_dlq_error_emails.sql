-- Error groups take an e-mail address as one value, <email>.
--
-- An address was kept as it was written: "mailbox full for
-- bravo.delta@example.com" made a group for each address, one cause in as
-- many groups as it had recipients, which a retry or discard by group and
-- a page of the summary took only part of. An address (a local part, @,
-- a host name with a dot and a top-level domain of letters) is now
-- replaced before identifiers and numbers, so the digits in it stay in
-- it. A user before @ that follows / or : is a URL's (postgres://app@db,
-- https://svc:pw@host) and stays, as before. Everything else is as in
-- 0025, named in full.
CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg pg_catalog.text) RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Twelve replacements, innermost first: wrap each quoted string;
    -- replace those without white space; values quoted inside prose;
    -- single-quoted values; e-mail addresses; uuids; hex; identifiers, but
    -- a number with a word before or after it; the minus sign of a number;
    -- numbers with their decimals; unwrap; white space.
    SELECT pg_catalog.left(pg_catalog.btrim(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.translate(coalesce(msg, ''), pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.chr(2), ''),
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
$$;

-- Indexes and counts built on the old body are rebuilt, as in 0023: each
-- DLQ's index on pgbus.dlq_cause_key, and its groups recounted. A DLQ
-- this role may not alter loses its counts (they would never come down);
-- its owner should run SELECT pgbus.dlq_groups_attach('<dlq>') after
-- REINDEX.
DO $$
DECLARE q text;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' ORDER BY queue_name LOOP
        BEGIN
            IF to_regclass(format('pgmq.%I', 'q_' || q || '_cause_idx')) IS NOT NULL THEN
                EXECUTE format('REINDEX INDEX pgmq.%I', 'q_' || q || '_cause_idx');
                PERFORM pgbus.dlq_groups_backfill(q);
            END IF;
        EXCEPTION WHEN insufficient_privilege THEN
            DELETE FROM pgbus.dlq_groups WHERE dlq = q;
            RAISE NOTICE 'pgbus: DLQ % is not regrouped in pgbus.dlq_groups: %; its owner should run REINDEX INDEX pgmq.%I and SELECT pgbus.dlq_groups_attach(%L)', q, SQLERRM, 'q_' || q || '_cause_idx', q;
        END;
    END LOOP;
END $$;
