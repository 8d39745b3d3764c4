-- A database as the Ruby gem pgbus leaves it, written from its formats: PGMQ
-- installed (its script runs first), queues pgbus_<name> with DLQs
-- pgbus_<name>_dlq, ActiveJob payloads, the pgbus_dead_letter header block
-- (version 1), DLQ rows from before the block existed, headers that were not
-- an object kept under pgbus_original_headers, and the gem's own tables in
-- schema public. Fixed ids and times make the tests' expectations exact.

CREATE TABLE public.pgbus_processes (
    id bigserial PRIMARY KEY,
    kind varchar NOT NULL,
    hostname varchar,
    pid integer,
    metadata jsonb DEFAULT '{}',
    last_heartbeat_at timestamp(6),
    created_at timestamp(6) NOT NULL,
    updated_at timestamp(6) NOT NULL
);
CREATE TABLE public.pgbus_failed_events (
    id bigserial PRIMARY KEY,
    queue_name varchar NOT NULL,
    msg_id bigint,
    payload jsonb,
    headers jsonb,
    error_class varchar,
    error_message text,
    backtrace text,
    retry_count integer DEFAULT 0,
    failed_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE public.pgbus_queue_states (
    id bigserial PRIMARY KEY,
    queue_name varchar NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    updated_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP
);

SELECT pgmq.create('pgbus_default');
SELECT pgmq.create('pgbus_default_dlq');
SELECT pgmq.create('pgbus_mailers');
SELECT pgmq.create('pgbus_mailers_dlq');

-- Live work, not yet picked up.
SELECT pgmq.send('pgbus_default',
    '{"job_class":"SyncInventoryJob","job_id":"a1","queue_name":"default","arguments":[{"sku":"X-1"}],"executions":0}');

-- Dead with the block: a worker gave up after its retries.
INSERT INTO pgmq.q_pgbus_default_dlq (msg_id, read_ct, enqueued_at, vt, message, headers) OVERRIDING SYSTEM VALUE VALUES
(101, 0, '2026-11-20 10:00:00+00', '2026-11-20 10:00:00+00',
 '{"job_class":"ChargeCardJob","job_id":"c1","queue_name":"default","arguments":[{"order_id":42}],"executions":5}',
 '{"trace_id":"t-42","pgbus_dead_letter":{"version":1,"reason":"max_retries_exceeded","source":"worker","source_queue":"pgbus_default","attempts":6,"max_retries":5,"dead_lettered_at":"2026-11-20T10:00:00Z","error_class":"Stripe::CardError","error_message":"Your card was declined."}}'),
-- The same, retried from the DLQ once before and dead again.
(102, 0, '2026-11-20 11:00:00+00', '2026-11-20 11:00:00+00',
 '{"job_class":"ChargeCardJob","job_id":"c2","queue_name":"default","arguments":[{"order_id":43}],"executions":5}',
 '{"pgbus_dlq_retries":1,"pgbus_dead_letter":{"version":1,"reason":"max_retries_exceeded","source":"worker","source_queue":"pgbus_default","attempts":6,"max_retries":5,"dead_lettered_at":"2026-11-20T11:00:00Z","retries_from_dlq":1,"error_class":"Stripe::CardError","error_message":"Your card was declined."}}'),
-- From before the block existed: no block, no headers at all.
(103, 2, '2026-10-01 09:00:00+00', '2026-10-01 09:00:00+00',
 '{"job_class":"ChargeCardJob","job_id":"c3","queue_name":"default","arguments":[{"order_id":7}],"executions":5}',
 NULL),
-- From before the block, with headers of its own.
(104, 0, '2026-10-02 09:00:00+00', '2026-10-02 09:00:00+00',
 '{"job_class":"SyncInventoryJob","job_id":"s4","queue_name":"default","arguments":[],"executions":5}',
 '{"trace_id":"t-104"}'),
-- Headers that were not an object, kept under pgbus_original_headers, from
-- an event consumer.
(105, 0, '2026-11-21 08:00:00+00', '2026-11-21 08:00:00+00',
 '{"event_type":"order.paid","payload":{"order_id":44}}',
 '{"pgbus_original_headers":["legacy","list"],"pgbus_dead_letter":{"version":1,"reason":"max_retries_exceeded","source":"consumer","source_queue":"pgbus_default","attempts":4,"max_retries":3,"dead_lettered_at":"2026-11-21T08:00:00Z","error_class":"ActiveRecord::RecordNotFound","error_message":"Couldn''t find Order with ''id''=44"}}');
SELECT setval(pg_get_serial_sequence('pgmq.q_pgbus_default_dlq', 'msg_id'), 105);

INSERT INTO pgmq.q_pgbus_mailers_dlq (msg_id, read_ct, enqueued_at, vt, message, headers) OVERRIDING SYSTEM VALUE VALUES
(201, 0, '2026-11-22 12:00:00+00', '2026-11-22 12:00:00+00',
 '{"job_class":"ActionMailer::MailDeliveryJob","job_id":"m1","queue_name":"mailers","arguments":["UserMailer","welcome","deliver_now"],"executions":4}',
 '{"pgbus_dead_letter":{"version":1,"reason":"max_retries_exceeded","source":"worker","source_queue":"pgbus_mailers","attempts":4,"max_retries":3,"dead_lettered_at":"2026-11-22T12:00:00Z","error_class":"Net::SMTPServerBusy","error_message":"421 try again later"}}');
SELECT setval(pg_get_serial_sequence('pgmq.q_pgbus_mailers_dlq', 'msg_id'), 201);

INSERT INTO public.pgbus_failed_events (queue_name, msg_id, payload, headers, error_class, error_message, retry_count)
VALUES ('pgbus_default', 101, '{"job_class":"ChargeCardJob"}', '{}', 'Stripe::CardError', 'Your card was declined.', 5);
INSERT INTO public.pgbus_queue_states (queue_name, paused) VALUES ('pgbus_default', false);

-- Processes: a worker that beat two minutes ago (the gem beats every
-- minute and counts a process alive for five), a supervisor that stopped
-- beating two hours ago.
INSERT INTO public.pgbus_processes (kind, hostname, pid, metadata, last_heartbeat_at, created_at, updated_at) VALUES
('worker', 'web-1', 4242, '{"queues":["default","mailers"],"threads":5}', now() AT TIME ZONE 'UTC' - interval '2 minutes', now() AT TIME ZONE 'UTC' - interval '1 hour', now() AT TIME ZONE 'UTC'),
('supervisor', 'web-1', 4241, '{}', now() AT TIME ZONE 'UTC' - interval '2 hours', now() AT TIME ZONE 'UTC' - interval '2 days', now() AT TIME ZONE 'UTC' - interval '2 hours');
