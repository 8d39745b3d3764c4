// Package mcpnotify sends a tool call's progress notifications and counts
// them per session, so that the HTTP transport can hold the call's result
// until every one of them is recorded: mcp-go may hand a notification to
// the session's listening stream, which records it later than the call's
// own stream records the result. It also counts them per request
// (Delivery), for a call of protocol 2026-07-28 over HTTP to wait for its
// notifications to be written before its result.
package mcpnotify

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// MethodProgress is the method of a progress notification.
const MethodProgress = "notifications/progress"

var sent sync.Map // session id -> *atomic.Int64

// Progress sends a progress notification to the client of the call in ctx
// and counts it for the call's session.
func Progress(ctx context.Context, params map[string]any) error {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	if err := srv.SendNotificationToClient(ctx, MethodProgress, params); err != nil {
		return err
	}
	Sending(ctx)
	if s := server.ClientSessionFromContext(ctx); s != nil {
		counter(s.SessionID()).Add(1)
	}
	return nil
}

// Sent is how many progress notifications calls of sessionID have sent.
func Sent(sessionID string) int64 {
	if c, ok := sent.Load(sessionID); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// Forget drops the count of a session that ended.
func Forget(sessionID string) { sent.Delete(sessionID) }

func counter(sessionID string) *atomic.Int64 {
	c, _ := sent.LoadOrStore(sessionID, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// Delivery counts the notifications sent for one request and those the
// transport wrote to its stream, so that the request's handler can wait
// for them before its result: mcp-go v1.2.1 writes the notifications of a
// request of protocol 2026-07-28 from a goroutine of their own, and drops
// one that goroutine takes once the result is on its way.
type Delivery struct {
	mu      sync.Mutex
	sent    int64
	written int64
	changed chan struct{}
}

type deliveryKey struct{}

// WithDelivery returns ctx carrying a new Delivery, for the transport to
// report writes to and the request's handler to wait on.
func WithDelivery(ctx context.Context) (context.Context, *Delivery) {
	d := &Delivery{changed: make(chan struct{})}
	return context.WithValue(ctx, deliveryKey{}, d), d
}

// Sending counts one notification sent for the request in ctx, when its
// transport tracks them.
func Sending(ctx context.Context) {
	if d, ok := ctx.Value(deliveryKey{}).(*Delivery); ok {
		d.mu.Lock()
		d.sent++
		d.mu.Unlock()
	}
}

// Written records that the transport wrote one notification of the
// request to its stream.
func (d *Delivery) Written() {
	d.mu.Lock()
	d.written++
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// AwaitWritten waits until every notification sent for the request in ctx
// is written, at most max: a client that went away reads none. It returns
// at once when the transport tracks none.
func AwaitWritten(ctx context.Context, max time.Duration) {
	d, ok := ctx.Value(deliveryKey{}).(*Delivery)
	if !ok {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		d.mu.Lock()
		done, wake := d.written >= d.sent, d.changed
		d.mu.Unlock()
		if done {
			return
		}
		select {
		case <-wake:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
