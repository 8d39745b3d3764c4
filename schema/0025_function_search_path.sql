-- pgbus's functions (the triggers that count dead-letter groups, the keys
-- their indexes hold) call PostgreSQL's own functions and operators by
-- name: md5, left, regexp_replace, random, ||, ->>. A function runs with its
-- caller's search_path, so a role whose path lists a schema before
-- pg_catalog (search_path = ext, pg_catalog) ran whatever that schema held
-- under those names instead: an md5 of its own gave every group one key,
-- and whoever could create functions there ran code as the role that
-- dead-letters. Each function now runs with search_path pg_catalog,
-- pg_temp, whoever calls it; they name pgbus's own objects in full
-- (pgbus.dlq_error_norm, pgmq.q_<dlq>), so nothing else changes. A function
-- added later gets the same setting where it is created.
ALTER FUNCTION pgbus.dlq_error_norm(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_group_key(jsonb, jsonb) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_group_reason_key(jsonb, jsonb) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_cause_key(jsonb, jsonb) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_group_from(text, text, text, text, text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_group_of(jsonb, jsonb) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_lock_key(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_tracked(regclass) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_forget(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_fold(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_track() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_backfill(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION pgbus.dlq_groups_attach(text) SET search_path = pg_catalog, pg_temp;

-- A function with a setting of its own is no longer expanded in place into
-- the statements that call it, and the planner matches a statement's call
-- to an index's expression only as both are written after that expansion.
-- Sessions open before this migration (older processes' among them) keep
-- each index's expression as they last read it, expanded, until something
-- makes them read it again: their plans would stop using each DLQ's index
-- of error groups (q_<dlq>_cause_idx), and read the whole DLQ instead. Its
-- statistics target, set to what it is, makes every session read the index
-- again, taking only a lock that writers do not wait for. A DLQ this role
-- does not own is left as it is: its sessions read the index again when
-- they reconnect.
DO $$
DECLARE
    ix record;
BEGIN
    FOR ix IN
        SELECT DISTINCT i.indexrelid::regclass AS idx, a.attnum, coalesce(a.attstattarget::int, -1) AS target
        FROM pg_catalog.pg_index i
        JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = i.indexrelid
             AND d.refclassid = 'pg_catalog.pg_proc'::regclass
        JOIN pg_catalog.pg_proc p ON p.oid = d.refobjid
        JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indexrelid AND a.attnum > 0
             AND i.indkey[a.attnum - 1] = 0
        WHERE p.pronamespace = 'pgbus'::regnamespace
          AND a.attnum = (SELECT min(b.attnum) FROM pg_catalog.pg_attribute b
                          WHERE b.attrelid = i.indexrelid AND b.attnum > 0 AND i.indkey[b.attnum - 1] = 0)
    LOOP
        BEGIN
            EXECUTE format('ALTER INDEX %s ALTER COLUMN %s SET STATISTICS %s', ix.idx, ix.attnum, ix.target);
        EXCEPTION
            WHEN insufficient_privilege OR undefined_table THEN
                RAISE NOTICE 'pgbus: index % is left as it is: %', ix.idx, SQLERRM;
        END;
    END LOOP;
END $$;
