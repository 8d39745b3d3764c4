package engine

import (
	"time"

	"github.com/pgbus/pgbus/store"
)

// schemaGone reports whether err says pgbus's schema is gone under the
// running workers, or part of it (store.SchemaGone: dropped by hand, or a
// restore that left it out), logging so for the whole process at the
// first such failure and then once a minute (quietlog.Every) while it
// lasts: every job's circuit breaker, every outcome write and every
// settings refresh meets it, and each used to say so. A caller that gets
// true must not log err itself.
func (c *Client) schemaGone(err error) bool {
	if !store.SchemaGone(err) {
		return false
	}
	if c.schemaLog.Due(time.Now()) {
		c.log.Warn("pgbus: the pgbus schema is gone, or part of it: jobs run without their circuit breakers, their outcomes are not written "+
			"(their messages run again after the visibility timeout) and settings keep their last values; "+
			"migrate the database to make it again (what pgbus's migrate command or Store.Migrate does), and restore its rows from a backup if it was dropped",
			"err", err)
	}
	return true
}

// quiet reports whether err is one the process logs for all its loops at
// once: the database cannot be reached (outage), or pgbus's schema is gone
// (schemaGone). A caller that gets true must not log err itself.
func (c *Client) quiet(err error) bool {
	return c.outage.failed(err) || c.schemaGone(err)
}
