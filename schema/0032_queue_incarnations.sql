-- The incarnation of each PGMQ queue that pgbus's state about its messages
-- (their failure history, idempotency keys and the per-minute counters of
-- their queue) belongs to: the queue's pgmq.meta.created_at when pgbus
-- last looked. A queue dropped and made again outside pgbus
-- (pgmq.drop_queue, then pgmq.create) starts its message ids over under a
-- new created_at, and the old queue's state, keyed by queue and id, would
-- show on the new queue's messages of the same ids: pgbus, finding
-- created_at changed, forgets the state that came before it and records
-- the new one. The queues there now are recorded as they are.
CREATE TABLE IF NOT EXISTS pgbus.queue_incarnations (
    queue_name text PRIMARY KEY,
    created_at timestamptz NOT NULL
);
INSERT INTO pgbus.queue_incarnations (queue_name, created_at)
SELECT queue_name::text, created_at FROM pgmq.meta
ON CONFLICT (queue_name) DO NOTHING;
