-- What a circuit breaker's last failure was, besides its message: its
-- error class (http.429, http.503, ...) and the wait a Retry-After of the
-- response asked for, so that health can tell a downstream that limits
-- its rate or concurrency, which a breaker alone keeps opening, from one
-- that is down. A pgbus of an older schema leaves them NULL.
ALTER TABLE pgbus.circuit_breakers ADD COLUMN IF NOT EXISTS last_error_class text;
ALTER TABLE pgbus.circuit_breakers ADD COLUMN IF NOT EXISTS last_retry_after_ms bigint;
