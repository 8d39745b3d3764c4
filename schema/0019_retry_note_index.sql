-- dlq discarded and dlq restore tell whether an archived message with no
-- failure history under its DLQ is the original of a retry with a
-- corrected payload by the note that retry left on the corrected message
-- (error class pgbus.payload_replaced), which begins with the DLQ and the
-- original's id. With no index for it, that look-up read the whole of
-- pgbus.failures once per message listed. This index holds those notes
-- alone, each by its first 256 characters in byte order (COLLATE "C"), so
-- that the notes beginning with a given text are one range of it: the
-- whole message would not fit an index entry (a note carries the original
-- payload, up to 64 KiB), and 256 characters hold a note's beginning up to
-- the id, queue names having at most 63 bytes.
--
-- Built in the migration's transaction, as every migration runs in one
-- (where CREATE INDEX CONCURRENTLY cannot run), it holds a SHARE lock on
-- pgbus.failures until the migration commits: reads go on, but writes to
-- the history (workers recording failed attempts, dead letters and retries
-- moving it, retention pruning it) wait for as long as the build takes:
-- one pass over the whole table, as it enters only the notes, about twice
-- the time of SELECT count(*) FROM pgbus.failures (0.2 s for 1,000,000
-- rows on 2 cores). For a history too large to pause its writes that
-- long, build the index beforehand with this statement and CONCURRENTLY
-- after INDEX, which blocks no writes; the migration then finds it and
-- builds nothing. A concurrent build that failed leaves the index INVALID
-- (\d pgbus.failures): drop it and build it again first.
CREATE INDEX IF NOT EXISTS failures_payload_replaced_idx
    ON pgbus.failures ((left(error_message, 256) COLLATE "C"))
    WHERE error_class = 'pgbus.payload_replaced';
