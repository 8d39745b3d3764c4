package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/pgbus/pgbus/store"
)

// HoldHeartbeat makes the visibility heartbeat of a client made with cfg
// skip its extensions while held reports true.
func HoldHeartbeat(cfg *Config, held func() bool) { cfg.heartbeatHeld = held }

// WatchHeartbeat calls turn at each turn of the visibility heartbeats of a
// client made with cfg, parked when the turn waits for a message to be
// held, holding none.
func WatchHeartbeat(cfg *Config, turn func(parked bool)) { cfg.heartbeatTurn = turn }

// Outage is the outage log of a client, for tests of what it says.
type Outage struct{ o *outage }

// NewOutage returns an outage logging to log.
func NewOutage(log *slog.Logger) Outage { return Outage{&outage{log: log}} }

// Failed tells the outage of a call's error, reporting whether it is one.
func (o Outage) Failed(err error) bool { return o.o.failed(err) }

// AnsweredAfterQuiet tells the outage of a call that succeeded after the
// quiet a refusing server needs, reporting whether the outage is over.
func (o Outage) AnsweredAfterQuiet() bool {
	o.o.mu.Lock()
	o.o.last = time.Now().Add(-crowdedQuiet)
	o.o.mu.Unlock()
	o.o.answered(time.Now())
	return !o.o.down.Load()
}

// AgeSendLayouts makes the send targets' layouts c has read as old as
// sendLayoutFresh and more, as if read that long ago.
func AgeSendLayouts(c *Client) {
	c.sendQueues.Range(func(queue, layout any) bool {
		l := layout.(sendLayout)
		l.read = l.read.Add(-sendLayoutFresh - time.Second)
		c.sendQueues.Store(queue, l)
		return true
	})
}

// LimitAdvice is what the workers' logs say of err, a refusal by a limit
// the role or database sets, naming role.
func LimitAdvice(err error, role string) string { return limitAdvice(err, role) }

// RunRetention runs one retention pass of c, as its loop does.
func RunRetention(ctx context.Context, c *Client) error { return c.retention(ctx) }

// RefreshSettings reads the settings of every queue for c, as its periodic
// refresh and a worker whose dropped queue is back do.
func RefreshSettings(ctx context.Context, c *Client) error { return c.refreshSettings(ctx) }

// SettingsOf returns the settings c works queue with now.
func SettingsOf(c *Client, queue string) store.QueueSettings { return c.settingsFor(queue) }

// SyncClock measures the database server's clock for c, and warns of a
// skew, as its heartbeat does.
func SyncClock(ctx context.Context, c *Client) { c.syncClock(ctx) }

// AgeClockWarning makes the last warning of a skew of c as old as
// clockWarnEvery, as if given that long ago.
func AgeClockWarning(c *Client) {
	c.clockWarn.Lock()
	defer c.clockWarn.Unlock()
	c.clockWarn.at = c.clockWarn.at.Add(-clockWarnEvery)
}

// CheckQueues checks the queues c works, and reads their layouts, as Run
// does as it starts.
func CheckQueues(ctx context.Context, c *Client) error { return c.checkQueues(ctx) }

// PhysicalOf returns the physical queues c's worker of queue reads, as
// CheckQueues found them.
func PhysicalOf(c *Client, queue string) []string { return c.physical[queue] }
