-- The audit log's pages by client and by tool, newest first: a page of a
-- client or tool with few entries walks its own entries by id, not the
-- whole log from its newest entry down. Built in the migration's
-- transaction, which CREATE INDEX CONCURRENTLY cannot run in: on a large
-- log the build holds writes to the audit log (not reads) while it runs;
-- indexes of these names built beforehand (CONCURRENTLY) are kept.
CREATE INDEX IF NOT EXISTS audit_log_client_id_idx ON pgbus.audit_log (client, id);
CREATE INDEX IF NOT EXISTS audit_log_tool_id_idx ON pgbus.audit_log (tool, id);
