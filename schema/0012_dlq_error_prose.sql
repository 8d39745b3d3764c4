-- Error groups keep what an error says, not only its shape.
--
-- 0010 replaced every quoted string of an error message by <str>. Services
-- answer errors in JSON, so {"error":"amount is missing"} and
-- {"error":"currency \"GBP\" is not supported"} both became
-- {<str>:<str>}: two causes in one group, shown with one message. Now a
-- quoted string is a value (replaced) only when it holds no white space;
-- one that does is prose and stays, its own values normalized like the
-- rest of the text (a value quoted inside it, as JSON in text writes
-- \"GBP\", included). Identifiers mixing letters and digits (ord_8f7a6b5c,
-- req-20240101x) become <id>, since one quoted as prose no longer hides
-- them.
--
-- Pairs of double quotes and backticks are found in one pass (each string
-- wrapped in \x01 \x02), so that a prose string left as it is cannot make
-- its closing quote open the next one.
CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Ten replacements, innermost first: wrap each quoted string; replace
    -- those without white space; values quoted inside prose; single-quoted
    -- values; uuids; hex; identifiers; digit runs; unwrap; white space.
    SELECT left(btrim(
        regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        translate(coalesce(msg, ''), chr(1) || chr(2), ''),
        '"(?:[^"\\]|\\.)*"|`[^`]*`', chr(1) || '\&' || chr(2), 'g'),
        '\x01("[^[:space:]\x01\x02]*"|`[^[:space:]\x01\x02]*`)\x02', '<str>', 'g'),
        '\\"[^"\\[:space:]\x01\x02]*\\"', '<str>', 'g'),
        '(^|[^[:alnum:]_])''[^''[:space:]]*''', '\1<str>', 'g'),
        '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<uuid>', 'g'),
        '\m0[xX][0-9a-fA-F]+\M|\m(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\M', '<hex>', 'g'),
        '\m(?=[[:alnum:]_-]*[0-9])(?=[[:alnum:]_-]*[[:alpha:]])[[:alnum:]][[:alnum:]_-]{5,}\M', '<id>', 'g'),
        '[0-9]+', '<n>', 'g'),
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
