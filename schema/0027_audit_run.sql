-- Who runs an operation whose audit entry was written before its work
-- (pending), so that a reader tells one still running from one whose
-- process is gone:
--   run_pid  the backend pid of the database session the operation holds
--            while it runs: a transaction left open, idle, holding a
--            shared advisory lock
--   run_key  that lock's key (pg_locks: classid 1885823585, objid run_key,
--            objsubid 2)
-- While pg_locks shows the lock held by that session, the operation runs;
-- once the session ended, it does not. Both stay NULL on the entries of an
-- older pgbus, and of an operation that could not hold its session: they
-- read as before. Adding nullable columns rewrites nothing, and older
-- processes, which do not name them, go on inserting as they did.
ALTER TABLE pgbus.audit_log
    ADD COLUMN IF NOT EXISTS run_pid integer,
    ADD COLUMN IF NOT EXISTS run_key integer;
