-- The end of the open period a circuit breaker was opened by hand for.
--
-- 0020 kept who opened a breaker by hand, and why, until that open period
-- ended, and pgbus clears both when it ends (a probe let through, a
-- reset). A pgbus of an older schema that closes or reopens the breaker
-- meanwhile (its reset, its probe, failures after either) knows nothing of
-- them and leaves them: the next opening by failures was shown as the
-- person's window, and a reset refused as one. An opening by hand now
-- counts only while the breaker is open until the end it set.
ALTER TABLE pgbus.circuit_breakers ADD COLUMN IF NOT EXISTS opened_by_hand_until timestamptz;

UPDATE pgbus.circuit_breakers SET opened_by_hand_until = open_until
WHERE opened_by IS NOT NULL AND state = 'open';
