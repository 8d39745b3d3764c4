-- The handlers each worker process gave up on for ignoring their context
-- past their timeout and grace, and that still run: their messages stay
-- hidden, and their slots taken, until they return, which may be never.
-- Written at each heartbeat, so that health names them on every process,
-- not only in the log of the one running them. stuck_count counts them
-- all; stuck_handlers lists the oldest few (queue, msg_id, kind,
-- given_up_at). Processes of an older pgbus leave them at 0 and NULL.
ALTER TABLE pgbus.workers ADD COLUMN IF NOT EXISTS stuck_count int NOT NULL DEFAULT 0;
ALTER TABLE pgbus.workers ADD COLUMN IF NOT EXISTS stuck_handlers jsonb;
