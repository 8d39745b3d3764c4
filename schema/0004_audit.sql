-- Every write operation from the MCP tools and the CLI.
CREATE TABLE IF NOT EXISTS pgbus.audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    client     text NOT NULL,
    tool       text NOT NULL,
    arguments  jsonb NOT NULL DEFAULT '{}',
    result     jsonb NOT NULL DEFAULT '{}',
    is_error   boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS audit_log_at_idx ON pgbus.audit_log (at);
