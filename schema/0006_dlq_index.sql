-- Index dead-letter queues made before pgbus indexed them at creation, for
-- their newest-first keyset pages.
DO $$
DECLARE q text;
BEGIN
    FOR q IN SELECT queue_name FROM pgmq.meta WHERE queue_name LIKE '%\_dlq' LOOP
        IF to_regclass(format('pgmq.%I', 'q_' || q)) IS NOT NULL THEN
            EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (enqueued_at, msg_id)', 'q_' || q || '_enq_idx', 'q_' || q);
        END IF;
    END LOOP;
END $$;
