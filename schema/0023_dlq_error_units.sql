-- Error groups take a number with a unit or a name (1544ms, 2048KB,
-- user357, order-12345) as that number, whatever its width.
--
-- 0021 took a token of six characters or more holding a digit and a letter
-- for an identifier, <id>: "timeout after 919ms" became "timeout after
-- <n>ms" and "timeout after 1544ms" "timeout after <id>", one cause in two
-- groups by the width of a number, which a retry or discard by group took
-- only one of. A token that is one number with letters before or after it
-- is now that number; one whose letters and digits alternate more (a
-- generated key, k7Xq2Lp9) stays an identifier.
CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Eleven replacements, innermost first: wrap each quoted string;
    -- replace those without white space; values quoted inside prose;
    -- single-quoted values; uuids; hex; identifiers, but a number with a
    -- word before or after it; the minus sign of a number; numbers with
    -- their decimals; unwrap; white space.
    SELECT left(btrim(
        regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        regexp_replace(
        translate(coalesce(msg, ''), chr(1) || chr(2), ''),
        '"(?:[^"\\]|\\.)*"|`[^`]*`', chr(1) || '\&' || chr(2), 'g'),
        '\x01("[^[:space:]\x01\x02]*"|`[^[:space:]\x01\x02]*`)\x02', '<str>', 'g'),
        '\\"[^"\\[:space:]\x01\x02]*\\"', '<str>', 'g'),
        '(^|[^[:alnum:]_])''[^''[:space:]]*''', '\1<str>', 'g'),
        '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
        '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
        '\m(?=[[:alnum:]_-]*[0-9])(?=[[:alnum:]_-]*[[:alpha:]])(?![[:alpha:]_-]*[0-9]+(?:\.[0-9]+)*[[:alpha:]_-]*\M)[[:alnum:]][[:alnum:]_-]{5,}\M', '<id>', 'g'),
        '(^|[^[:alnum:]_])-(?=[0-9])', '\1', 'g'),
        '[0-9]+(?:\.[0-9]+)*', '<n>', 'g'),
        '[\x01\x02]', '', 'g'),
        '\s+', ' ', 'g')), 500)
$$;

-- Indexes and counts built on the old body are rebuilt: each DLQ's index on
-- pgbus.dlq_cause_key, and its groups recounted. A DLQ this role may not
-- alter loses its counts (they would never come down); its owner should
-- run SELECT pgbus.dlq_groups_attach('<dlq>') after REINDEX.
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
