-- The PGMQ table layout, created only where the pgmq extension is not installed.
-- With the extension present these objects already exist and every statement
-- below is a no-op. Per-queue tables (q_<name>, a_<name>) are created by the
-- store when a queue is created.
CREATE SCHEMA IF NOT EXISTS pgmq;

CREATE TABLE IF NOT EXISTS pgmq.meta (
    queue_name     varchar UNIQUE NOT NULL,
    is_partitioned boolean NOT NULL,
    is_unlogged    boolean NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
