-- The audit log's pages by client and by tool, newest first: a page of a
-- client or tool with few entries walks its own entries by id, not the
-- whole log from its newest entry down. Built in the migration's
-- transaction, which CREATE INDEX CONCURRENTLY cannot run in: on a large
-- log the build holds writes to the audit log (not reads) while it runs;
-- valid indexes of these names built beforehand (CONCURRENTLY) are kept,
-- and an invalid one, which a failed or cancelled concurrent build leaves
-- and the planner never uses, is dropped and built again.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('pgbus.audit_log_client_id_idx') AND NOT indisvalid) THEN
        DROP INDEX pgbus.audit_log_client_id_idx;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('pgbus.audit_log_tool_id_idx') AND NOT indisvalid) THEN
        DROP INDEX pgbus.audit_log_tool_id_idx;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS audit_log_client_id_idx ON pgbus.audit_log (client, id);
CREATE INDEX IF NOT EXISTS audit_log_tool_id_idx ON pgbus.audit_log (tool, id);
