-- An entry written before a long write starts (a retry, discard or purge
-- by filter over many messages), so that a process killed partway (SIGKILL,
-- out of memory, a pod evicted) leaves a record of what was asked and by
-- whom:
--   pending    true on the entry written before the work: what was asked,
--              by whom, with no outcome yet
--   completes  on the entry written at the end, with the outcome, the id
--              of the pending entry it completes
-- The log stays append-only (an operator's role may insert, not update):
-- a pending entry is never changed; one that an entry completes is left
-- out of the list, and one nothing completes is shown as not finished.
ALTER TABLE pgbus.audit_log
    ADD COLUMN IF NOT EXISTS pending boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS completes bigint;
CREATE INDEX IF NOT EXISTS audit_log_completes_idx ON pgbus.audit_log (completes) WHERE completes IS NOT NULL;
