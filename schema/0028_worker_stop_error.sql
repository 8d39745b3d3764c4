-- Why a worker process stopped, when it stopped on an error (its start
-- refused: a queue missing, a privilege the role lacks) rather than at a
-- shutdown: the health of every process reads it, not only the one that
-- stopped. NULL for a clean stop, and for processes of an older pgbus,
-- which neither write nor read it.
ALTER TABLE pgbus.workers ADD COLUMN IF NOT EXISTS stop_error text;
