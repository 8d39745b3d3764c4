-- The reasons of the health verdict the last alert check saw, each by what
-- tells it apart ({"code", "queue", "subject"}), all of them reported by
-- then. The process elected next reports a reason that is not among them
-- even when the verdict is the same (a second queue STALLED), and does not
-- report again one that is. A check recorded before this column has none:
-- the first check after it reports the reasons of a verdict that is not OK
-- once more, which is a duplicate rather than a loss.
ALTER TABLE pgbus.alert_checks ADD COLUMN IF NOT EXISTS reasons jsonb NOT NULL DEFAULT '[]';
