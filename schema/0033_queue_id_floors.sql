-- A queue dropped and made again under its name handed its ids out from 1
-- again. A job's default idempotency key is "<queue>:<msg_id>", so the new
-- queue's jobs carried the keys of the old one's, and a downstream that
-- de-duplicates by key (as payment APIs do) ignored them as repeats; a
-- DLQ id someone noted before the drop named another message after it.
-- A drop through pgbus now notes the highest id each physical queue (its
-- levels and DLQ included) handed out, and a queue made under the name
-- again starts its id sequence after it: the sequence's start value,
-- which every role may read in the catalog, is where the count of what
-- the new queue was sent begins.
CREATE TABLE IF NOT EXISTS pgbus.queue_id_floors (
    queue_name text PRIMARY KEY,
    last_id    bigint NOT NULL
);
