-- How often each worker process sends its heartbeat (engine.Config's
-- ProcessHeartbeat), so that a reader counts a process stale only once it
-- missed beats at its own pace: a process beating every minute is not
-- stale 30 seconds after a beat. Rows written before this column beat
-- every 10 seconds, the default.
ALTER TABLE pgbus.workers ADD COLUMN IF NOT EXISTS heartbeat_interval_ms bigint NOT NULL DEFAULT 10000
    CHECK (heartbeat_interval_ms > 0);
