-- pgbus's functions (the triggers that count dead-letter groups, the keys
-- their indexes hold) called PostgreSQL's own functions, operators and
-- types by name: md5, left, regexp_replace, random, ||, ->>, text. A
-- function runs with its caller's search_path, so a role whose path lists
-- a schema before pg_catalog (search_path = ext, pg_catalog) ran whatever
-- that schema held under those names instead: an md5 of its own gave every
-- group one key, and whoever could create functions there ran code as the
-- role that dead-letters.
--
-- The functions a statement calls once per row (the keys DLQ indexes hold,
-- computed at every dead-letter insert, and what the triggers count rows
-- under) now name everything of PostgreSQL's in full, pg_catalog.md5 and
-- OPERATOR(pg_catalog.||), and pgbus's own as pgbus.x. They take no
-- search_path of their own: the planner never expands a function with a
-- setting in place into the statement that calls it, and every call would
-- then cost a function call of its own, several times the expression's
-- work. Named in full, each resolves to the very functions and operators
-- it called before: every key, and so every index, stays as it is, and
-- each expands to the expression it expanded to before, which sessions
-- open before this migration hold for each DLQ's index of error groups and
-- go on matching. Never change what they compute: indexes are built on
-- them.
--
-- The functions called once per statement or per DLQ (the triggers, the
-- count folding, attaching and forgetting a DLQ) run with search_path
-- pg_catalog, pg_temp, whoever calls them. A function added later takes
-- one of the two forms.

CREATE OR REPLACE FUNCTION pgbus.dlq_error_norm(msg pg_catalog.text) RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- As in 0023, named in full.
    SELECT pg_catalog.left(pg_catalog.btrim(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(
        pg_catalog.translate(coalesce(msg, ''), pg_catalog.chr(1) OPERATOR(pg_catalog.||) pg_catalog.chr(2), ''),
        '"(?:[^"\\]|\\.)*"|`[^`]*`', pg_catalog.chr(1) OPERATOR(pg_catalog.||) '\&' OPERATOR(pg_catalog.||) pg_catalog.chr(2), 'g'),
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

-- As in 0007, named in full.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_key(headers pg_catalog.jsonb, message pg_catalog.jsonb) RETURNS pg_catalog.uuid
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
        coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', '')
    )::pg_catalog.uuid
$$;

-- As in 0007, named in full.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_reason_key(headers pg_catalog.jsonb, message pg_catalog.jsonb) RETURNS pg_catalog.uuid
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
        coalesce(pg_catalog.length(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason')::pg_catalog.text
            OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||)
            (headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason'), '-')
    )::pg_catalog.uuid
$$;

-- As in 0010, named in full.
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
        pgbus.dlq_error_norm(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message')
    )::pg_catalog.uuid
$$;

-- As in 0013, named in full.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_from(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text)
RETURNS TABLE (row_key pg_catalog.uuid, group_key pg_catalog.uuid, source_queue pg_catalog.text, kind pg_catalog.text,
               error_class pg_catalog.text, error_norm pg_catalog.text, reason pg_catalog.text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pg_catalog.md5(g.k::pg_catalog.text OPERATOR(pg_catalog.||)
               coalesce(pg_catalog.length($5)::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) $5, '-'))::pg_catalog.uuid,
           g.k, $1, $2, $3, g.nm, $5
    FROM (SELECT pg_catalog.md5(
                     pg_catalog.length($1)::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) $1 OPERATOR(pg_catalog.||)
                     pg_catalog.length($2)::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) $2 OPERATOR(pg_catalog.||)
                     pg_catalog.length($3)::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) $3 OPERATOR(pg_catalog.||)
                     v.nm)::pg_catalog.uuid AS k, v.nm
          FROM (SELECT pgbus.dlq_error_norm($4) AS nm OFFSET 0) v) g
$$;

-- As in 0013, named in full.
CREATE OR REPLACE FUNCTION pgbus.dlq_group_of(headers pg_catalog.jsonb, message pg_catalog.jsonb)
RETURNS TABLE (row_key pg_catalog.uuid, group_key pg_catalog.uuid, source_queue pg_catalog.text, kind pg_catalog.text,
               error_class pg_catalog.text, error_norm pg_catalog.text, reason pg_catalog.text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT f.* FROM pgbus.dlq_group_from(
        coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'source_queue', ''),
        coalesce(headers OPERATOR(pg_catalog.->>) 'pgbus_kind', message OPERATOR(pg_catalog.->>) 'job_class', ''),
        coalesce(headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_class', ''),
        headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'error_message',
        headers OPERATOR(pg_catalog.->) 'pgbus_dead_letter' OPERATOR(pg_catalog.->>) 'reason') f
$$;

ALTER FUNCTION pgbus.dlq_groups_lock_key(pg_catalog.text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_tracked(pg_catalog.regclass) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_forget(pg_catalog.text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_fold(pg_catalog.text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_track() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_backfill(pg_catalog.text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_attach(pg_catalog.text) SET search_path = pg_catalog, pg_temp;
