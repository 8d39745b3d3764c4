-- The last check of the process that sends alerts: when it was and the
-- health verdict it saw. The process elected after it (another worker, or
-- the first one after a restart) goes on from there, reporting the groups
-- that appeared and the verdict that changed meanwhile, instead of taking
-- what it finds as its baseline. One row.
CREATE TABLE IF NOT EXISTS pgbus.alert_checks (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    checked_at timestamptz NOT NULL,
    status     text NOT NULL
);
