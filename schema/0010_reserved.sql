-- Version 10 is reserved for a migration being written on another branch;
-- this placeholder keeps the versions without gaps until it lands, and is
-- then deleted in favour of it.
SELECT 1;
