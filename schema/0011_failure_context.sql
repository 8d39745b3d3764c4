-- Failure context: what an agent needs to tell why an attempt failed, and
-- what each circuit breaker has seen lately and who uses it.

-- detail: how long the attempt ran and, for one cut off by its time limit,
-- the limit; what the downstream said (a command's stderr, a response body,
-- at most 2,000 characters). store.FailureDetail is its shape; NULL for
-- failures recorded before, or without any of it.
ALTER TABLE pgbus.failures
    ADD COLUMN IF NOT EXISTS detail jsonb;

-- last_success_at is kept to within a second, so that a busy breaker is not
-- written on every success.
ALTER TABLE pgbus.circuit_breakers
    ADD COLUMN IF NOT EXISTS last_success_at timestamptz,
    ADD COLUMN IF NOT EXISTS last_failure_at timestamptz;

-- The queues and kinds whose handlers use a breaker, as the worker processes
-- registered them; kind '' is a queue's default handler (kinds without one
-- of their own). seen_at is when a process last started with it.
CREATE TABLE IF NOT EXISTS pgbus.circuit_breaker_users (
    breaker    text NOT NULL,
    queue_name text NOT NULL,
    kind       text NOT NULL DEFAULT '',
    seen_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (breaker, queue_name, kind)
);
