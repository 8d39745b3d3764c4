-- Extended statistics on what DLQ filters compare: a message's kind, and
-- its dead-letter block's error class and reason. They live inside jsonb,
-- where PostgreSQL keeps no statistics, so without these the planner
-- guesses that a group's kind and error class together keep almost no
-- rows, reads the whole DLQ and sorts it, where walking the newest-first
-- index would stop after one page. DLQs created from now on get them when
-- they are created; this adds them to the DLQs that exist, and analyzes
-- each so that they count at once. The expressions are exactly those the
-- store's filters use, so the planner matches them.
DO $$
DECLARE
    q text;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' ORDER BY queue_name LOOP
        -- A DLQ table of a PGMQ before 1.5 has no headers: no filter reads
        -- it, so it needs no statistics, and making them would fail.
        CONTINUE WHEN (SELECT count(*) FROM pg_catalog.pg_attribute
                       WHERE attrelid = to_regclass(format('pgmq.%I', 'q_' || q))
                         AND attnum > 0 AND NOT attisdropped AND attname IN ('message', 'headers')) < 2;
        -- A DLQ dropped while this runs (its queue dropped meanwhile) needs
        -- no statistics; one whose table another role owns is left for
        -- that role: each start of pgbus reports what such a DLQ lacks.
        BEGIN
            EXECUTE format('CREATE STATISTICS IF NOT EXISTS pgmq.%I (ndistinct, dependencies, mcv) ON '
                || '(coalesce(headers->>''pgbus_kind'', message->>''job_class'')), '
                || '((headers->''pgbus_dead_letter'')->>''error_class''), '
                || '((headers->''pgbus_dead_letter'')->>''reason'') FROM pgmq.%I', 'q_' || q || '_filter_stats', 'q_' || q);
            EXECUTE format('ANALYZE pgmq.%I', 'q_' || q);
        EXCEPTION
            WHEN undefined_table THEN
                NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'pgbus: DLQ % has no planner statistics of its filters: %', q, SQLERRM;
        END;
    END LOOP;
END $$;
