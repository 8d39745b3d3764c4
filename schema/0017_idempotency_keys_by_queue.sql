-- Retention prunes the idempotency keys of one queue at a time: those
-- older than the queue's archive retention whose message is neither live
-- nor archived within it. This index finds them without reading the
-- queue's younger keys or the old keys of every other queue.
CREATE INDEX IF NOT EXISTS idempotency_keys_queue_created_idx ON pgbus.idempotency_keys (queue_name, created_at);
