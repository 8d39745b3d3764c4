-- The PGMQ table layout, created only where the pgmq extension is not installed.
-- With the extension present these objects already exist and every statement
-- below is a no-op. Per-queue tables (q_<name>, a_<name>) are created by the
-- store when a queue is created.
-- Only when it is missing: CREATE SCHEMA IF NOT EXISTS asks for CREATE on
-- the database even when the schema exists, which a role owning a schema
-- pgmq made for it need not have.
DO $$
BEGIN
    IF pg_catalog.to_regnamespace('pgmq') IS NULL THEN
        CREATE SCHEMA pgmq;
    END IF;
END
$$;

CREATE TABLE IF NOT EXISTS pgmq.meta (
    queue_name     varchar UNIQUE NOT NULL,
    is_partitioned boolean NOT NULL,
    is_unlogged    boolean NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
