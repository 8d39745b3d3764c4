-- The engine's own tables live in schema pgbus. schema_migrations itself is
-- created by the migration runner before any migration runs.

-- Logical queues: a queue X owns its physical PGMQ queues (X, or X_p0..X_pN-1
-- when it has priority levels) and its dead-letter queue X_dlq.
CREATE TABLE IF NOT EXISTS pgbus.queues (
    queue_name  text PRIMARY KEY,
    priorities  int NOT NULL DEFAULT 0 CHECK (priorities >= 0 AND priorities <= 10),
    created_at  timestamptz NOT NULL DEFAULT now()
);
