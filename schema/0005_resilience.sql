-- Resilience: idempotency keys, circuit breakers, per-queue deadlines and
-- retention, priority sub-queues.

-- The first message sent with a key on a queue. A later send with the same
-- key returns msg_id while that message is live or archived within the
-- retention window.
CREATE TABLE IF NOT EXISTS pgbus.idempotency_keys (
    queue_name text NOT NULL,
    key        text NOT NULL,
    msg_id     bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_name, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_idx ON pgbus.idempotency_keys (created_at);

-- Circuit breakers, shared by every worker process.
CREATE TABLE IF NOT EXISTS pgbus.circuit_breakers (
    name                 text PRIMARY KEY,
    state                text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures int NOT NULL DEFAULT 0,
    failure_threshold    int NOT NULL CHECK (failure_threshold > 0),
    cool_off_ms          bigint NOT NULL CHECK (cool_off_ms > 0),
    max_cool_off_ms      bigint NOT NULL CHECK (max_cool_off_ms > 0),
    current_cool_off_ms  bigint NOT NULL,
    opened_at            timestamptz,
    open_until           timestamptz,
    probe_until          timestamptz,
    last_error           text NOT NULL DEFAULT '',
    updated_at           timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE pgbus.queues
    -- messages older than this are dead-lettered with deadline_exceeded; NULL: none
    ADD COLUMN IF NOT EXISTS deadline_ms bigint CHECK (deadline_ms IS NULL OR deadline_ms > 0),
    ADD COLUMN IF NOT EXISTS archive_retention_ms bigint NOT NULL DEFAULT 604800000 CHECK (archive_retention_ms > 0),
    ADD COLUMN IF NOT EXISTS dead_retention_ms bigint NOT NULL DEFAULT 2592000000 CHECK (dead_retention_ms > 0);
