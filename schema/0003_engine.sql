-- The retry and dead-letter engine: per-queue settings, failure history,
-- worker processes and per-minute counters.

-- Per-queue settings. Queues without a row (made by another PGMQ client) use
-- the defaults below.
ALTER TABLE pgbus.queues
    ADD COLUMN IF NOT EXISTS max_retries int NOT NULL DEFAULT 5
        CHECK (max_retries BETWEEN 0 AND 1000),
    ADD COLUMN IF NOT EXISTS visibility_timeout_ms bigint NOT NULL DEFAULT 30000
        CHECK (visibility_timeout_ms BETWEEN 1000 AND 86400000),
    ADD COLUMN IF NOT EXISTS backoff_strategy text NOT NULL DEFAULT 'exponential'
        CHECK (backoff_strategy IN ('exponential', 'polynomial')),
    ADD COLUMN IF NOT EXISTS retry_backoff_ms bigint NOT NULL DEFAULT 5000
        CHECK (retry_backoff_ms BETWEEN 0 AND 86400000),
    ADD COLUMN IF NOT EXISTS retry_backoff_max_ms bigint NOT NULL DEFAULT 300000
        CHECK (retry_backoff_max_ms BETWEEN 0 AND 604800000),
    ADD COLUMN IF NOT EXISTS retry_backoff_jitter double precision NOT NULL DEFAULT 0.15
        CHECK (retry_backoff_jitter >= 0 AND retry_backoff_jitter <= 1),
    ADD COLUMN IF NOT EXISTS on_success text NOT NULL DEFAULT 'archive'
        CHECK (on_success IN ('archive', 'delete')),
    ADD COLUMN IF NOT EXISTS paused boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();

-- Every failed attempt. (queue_name, msg_id) names where the message lives
-- now: rows follow it into its DLQ and back out on retry, so its history stays
-- with it, and are pruned with it.
CREATE TABLE IF NOT EXISTS pgbus.failures (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_name    text NOT NULL,
    msg_id        bigint NOT NULL,
    attempt       int NOT NULL,
    kind          text NOT NULL DEFAULT '',
    error_class   text NOT NULL,
    error_message text NOT NULL,
    backtrace     text NOT NULL DEFAULT '',
    failed_at     timestamptz NOT NULL DEFAULT now(),
    -- when the engine scheduled the next attempt; NULL when none followed
    retry_at      timestamptz
);
CREATE INDEX IF NOT EXISTS failures_message_idx ON pgbus.failures (queue_name, msg_id, attempt);

-- Worker processes and their heartbeats.
CREATE TABLE IF NOT EXISTS pgbus.workers (
    id           text PRIMARY KEY,
    hostname     text NOT NULL,
    pid          int NOT NULL,
    queues       text[] NOT NULL,
    concurrency  int NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz
);

-- Per-minute counters per queue and kind, written by workers in batches.
-- latency_buckets[i] counts jobs whose enqueue-to-start latency fell in
-- [2^(i-2) ms, 2^(i-1) ms) (bucket 1: under 0.5 ms; the last: everything above).
CREATE TABLE IF NOT EXISTS pgbus.stats_minute (
    minute          timestamptz NOT NULL,
    queue_name      text NOT NULL,
    kind            text NOT NULL DEFAULT '',
    succeeded       bigint NOT NULL DEFAULT 0,
    failed          bigint NOT NULL DEFAULT 0,
    retried         bigint NOT NULL DEFAULT 0,
    dead_lettered   bigint NOT NULL DEFAULT 0,
    discarded       bigint NOT NULL DEFAULT 0,
    snoozed         bigint NOT NULL DEFAULT 0,
    latency_count   bigint NOT NULL DEFAULT 0,
    latency_sum_ms  double precision NOT NULL DEFAULT 0,
    latency_buckets bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (queue_name, minute, kind)
);
CREATE INDEX IF NOT EXISTS stats_minute_minute_idx ON pgbus.stats_minute (minute);
