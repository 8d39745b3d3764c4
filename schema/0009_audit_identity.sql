-- How each audited call reached pgbus, and who authenticated it, next to
-- the client it named. The client column is what the caller said it is (an
-- MCP client declares its own name); these are what pgbus saw:
--   transport  cli (the command line), stdio, sse or http (MCP)
--   principal  who authenticated: over HTTP with the bearer token,
--              'token sha256:' and the start of the token's SHA-256; ''
--              when nobody did
-- Entries recorded before have '' in both: older versions did not tell an
-- MCP client calling itself cli from the command line, so they are not
-- guessed.
ALTER TABLE pgbus.audit_log
    ADD COLUMN IF NOT EXISTS transport text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS principal text NOT NULL DEFAULT '';
