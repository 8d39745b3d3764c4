-- The key that signs page cursors (HMAC-SHA256): a cursor handed to a
-- client names a position in a DLQ, and the server only takes back
-- positions it issued. The key lives in the database, so that a cursor
-- issued by one pgbus process works in every other on the same database,
-- and in no other database. Roles that may read pgbus (see ReadGrants) may
-- read it: they can read every position directly anyway.
--
-- One row, made once. gen_random_uuid draws from PostgreSQL's strong random
-- source; three of them (366 random bits) hashed give 32 bytes without
-- needing the pgcrypto extension.
CREATE TABLE IF NOT EXISTS pgbus.cursor_key (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key       bytea NOT NULL CHECK (octet_length(key) = 32)
);
INSERT INTO pgbus.cursor_key (key)
SELECT sha256(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
ON CONFLICT (singleton) DO NOTHING;
