-- A queue's max_retries of 0 dead-letters every message at its first read,
-- without running it, and logs nothing: the read itself is over the
-- limit. Every front end refuses 0 now, but a queue stored with it before
-- (by an older pgbus, or an UPDATE by hand) kept it, and the table still
-- took it. Such a queue now runs each message once, as 1 says, and the
-- table takes only what the front ends take.
UPDATE pgbus.queues SET max_retries = 1 WHERE max_retries < 1;

ALTER TABLE pgbus.queues
    DROP CONSTRAINT IF EXISTS queues_max_retries_check,
    ADD CONSTRAINT queues_max_retries_check CHECK (max_retries BETWEEN 1 AND 1000);
