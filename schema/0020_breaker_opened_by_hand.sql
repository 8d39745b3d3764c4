-- Who opened a circuit breaker by hand, and why (pgbus circuit open): a
-- person's maintenance window, which an agent looking at an open breaker
-- must tell apart from one its failures opened before it resets it. Set
-- by the opening by hand; cleared when that open period ends (the next
-- probe is let through, or a reset). NULL for every other open period.
ALTER TABLE pgbus.circuit_breakers
    ADD COLUMN IF NOT EXISTS opened_by text,
    ADD COLUMN IF NOT EXISTS open_reason text;
