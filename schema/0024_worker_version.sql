-- The pgbus version each worker process runs, as it registered: in a
-- rolling deploy, pgbus workers shows which processes run the old version
-- and which the new. Processes of an older pgbus leave it NULL.
ALTER TABLE pgbus.workers ADD COLUMN IF NOT EXISTS version text;
