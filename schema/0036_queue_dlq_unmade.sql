-- A queue's DLQ dropped with PGMQ's own drop_queue takes its archive and
-- its row of pgmq.meta with it: nothing of PGMQ's showed it had been, so
-- health could not tell it from the DLQ a queue another PGMQ client made
-- never had, and said nothing while the messages that failed their last
-- attempt could not be dead-lettered. pgbus's create makes a DLQ with
-- every queue; pgbus.queues now marks a queue registered without one
-- (dlq_unmade), until a worker, or a create, makes it. A queue already
-- listed counts as registered without one when neither its DLQ nor a
-- trace of it (its archive, its row of pgmq.meta) is there now.
ALTER TABLE pgbus.queues ADD COLUMN IF NOT EXISTS dlq_unmade boolean NOT NULL DEFAULT false;

UPDATE pgbus.queues q SET dlq_unmade = true
WHERE to_regclass(format('pgmq.%I', 'q_' || q.queue_name || '_dlq')) IS NULL
  AND to_regclass(format('pgmq.%I', 'a_' || q.queue_name || '_dlq')) IS NULL
  AND NOT EXISTS (SELECT FROM pgmq.meta m WHERE m.queue_name = q.queue_name || '_dlq');
