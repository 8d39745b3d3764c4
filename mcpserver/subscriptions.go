package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/resources"
)

// defaultResourcePoll is how often the queue stats are read while a client
// is subscribed: one stats query per interval for the whole server, none
// when no one is subscribed.
const defaultResourcePoll = 2 * time.Second

// resourceWatch tells the sessions subscribed to pgbus://queues or to a
// queue's stats (pgbus://queues/{queue}/stats) that the resource changed,
// with notifications/resources/updated. It reads the queue stats every
// interval while any session is subscribed and compares what a reader
// would act on (depths, DLQ depth, messages sent, the last hour's
// outcomes, paused, settings), not the ages and rates that change every
// second. The archives are not counted: they hold the queues' history, and
// counting them every interval would take time in proportion to it; a
// message sent and settled between two reads shows in the messages sent.
//
// A subscription to a URI whose read fails fails as the read does
// (frontDoor); other URIs that can be read (a dead message) may be
// subscribed to, as the protocol allows, but send no updates: a dead
// message only ever leaves its DLQ.
//
// Clients of protocol versions with sessions (2025-11-25 and earlier)
// subscribe with resources/subscribe and are told on their session; those
// of 2026-07-28 and later name the URIs in a subscriptions/listen request
// and are told on its stream, for as long as it is open.
type resourceWatch struct {
	svc   *ops.Service
	srv   *server.MCPServer
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	subs    map[subscriber]map[string]struct{} // who -> URIs
	seen    map[string]string                  // URI -> what it showed when last compared
	running bool
	// emptied wakes run when the last subscription ends, so that it ends
	// then, not at its next interval: a server shut down leaves no reader.
	emptied chan struct{}
}

// subscriber is who is told of updates: a session, by its id, or a
// subscriptions/listen stream.
type subscriber struct {
	session string
	stream  *listenStream
}

// listenStream is an open subscriptions/listen request: its context, which
// ends when the stream closes, and the id its notifications are tagged with.
type listenStream struct {
	ctx context.Context
	id  any
}

func newResourceWatch(svc *ops.Service, every time.Duration, log *slog.Logger) *resourceWatch {
	if every <= 0 {
		every = defaultResourcePoll
	}
	return &resourceWatch{svc: svc, every: every, log: log, subs: map[subscriber]map[string]struct{}{}, seen: map[string]string{},
		emptied: make(chan struct{}, 1)}
}

// attach makes w follow the subscriptions of s's sessions and of its
// subscriptions/listen streams.
func (w *resourceWatch) attach(s *server.MCPServer, hooks *server.Hooks) {
	w.srv = s
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && watched(req.Params.URI) {
			w.subscribe(ctx, subscriber{session: sess.SessionID()}, req.Params.URI)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			w.unsubscribe(subscriber{session: sess.SessionID()}, req.Params.URI)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		w.forget(subscriber{session: sess.SessionID()})
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		if id == nil || server.ClientSessionFromContext(ctx) == nil {
			return // refused: no stream opens
		}
		who := subscriber{stream: &listenStream{ctx: ctx, id: id}}
		watching := false
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			if watched(uri) {
				w.subscribe(ctx, who, uri)
				watching = true
			}
		}
		if watching {
			// The request's context ends when the stream closes, however
			// it closes: the client cancels it or goes away.
			context.AfterFunc(ctx, func() { w.forget(who) })
		}
	})
}

// unsubscribe ends who's subscription to uri.
func (w *resourceWatch) unsubscribe(who subscriber, uri string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs[who], uri)
	if len(w.subs[who]) == 0 {
		// Subscribed to nothing now: run stops once no one is.
		delete(w.subs, who)
	}
	w.wakeIfEmpty()
}

// wakeIfEmpty wakes run when no one is subscribed any more; w.mu is held.
func (w *resourceWatch) wakeIfEmpty() {
	if len(w.subs) > 0 {
		return
	}
	select {
	case w.emptied <- struct{}{}:
	default:
	}
}

// forget ends every subscription of who.
func (w *resourceWatch) forget(who subscriber) {
	w.mu.Lock()
	delete(w.subs, who)
	w.wakeIfEmpty()
	w.mu.Unlock()
}

// watched reports whether uri is a resource whose updates are sent.
func watched(uri string) bool {
	if uri == resources.URIQueues {
		return true
	}
	_, ok := statsQueue(uri)
	return ok
}

// statsQueue is the queue of a pgbus://queues/{queue}/stats URI.
func statsQueue(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "pgbus://queues/")
	if !ok {
		return "", false
	}
	queue, ok := strings.CutSuffix(rest, "/stats")
	return queue, ok && queue != "" && !strings.Contains(queue, "/")
}

// subscribe records the subscription and, for a URI no one watched yet,
// what it shows now, so that a change right after subscribing is one.
func (w *resourceWatch) subscribe(ctx context.Context, who subscriber, uri string) {
	w.mu.Lock()
	_, known := w.seen[uri]
	w.mu.Unlock()
	var now map[string]string
	if !known {
		now = w.read(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[who] == nil {
		w.subs[who] = map[string]struct{}{}
	}
	w.subs[who][uri] = struct{}{}
	if _, known := w.seen[uri]; !known && now != nil {
		w.seen[uri] = now[uri]
	}
	if !w.running {
		w.running = true
		go w.run()
	}
}

// run compares the watched resources every interval until no session is
// subscribed.
func (w *resourceWatch) run() {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		tick := false
		select {
		case <-t.C:
			tick = true
		case <-w.emptied:
		}
		w.mu.Lock()
		if len(w.subs) == 0 {
			w.running = false
			clear(w.seen)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if !tick {
			continue // subscribed to again meanwhile
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.every+10*time.Second)
		now := w.read(ctx)
		cancel()
		if now != nil {
			w.notify(now)
		}
	}
}

// notify sends an update to each subscriber of a URI whose content
// changed, and forgets the sessions that are gone.
func (w *resourceWatch) notify(now map[string]string) {
	type update struct {
		who subscriber
		uri string
	}
	var updates []update
	w.mu.Lock()
	for who, uris := range w.subs {
		for uri := range uris {
			if w.seen[uri] != now[uri] {
				updates = append(updates, update{who, uri})
			}
		}
	}
	for uri := range w.seen {
		w.seen[uri] = now[uri]
	}
	w.mu.Unlock()
	for _, u := range updates {
		if u.who.stream != nil {
			u.who.stream.send(u.uri)
			continue
		}
		err := w.srv.SendNotificationToSpecificClient(u.who.session, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": u.uri})
		if errors.Is(err, server.ErrSessionNotFound) {
			w.forget(u.who)
		}
	}
}

// send tells the client of l that uri changed, on l's stream and tagged
// with its id, unless the stream closed. A client that does not read
// misses the update, as a session's does: its next read shows the change.
func (l *listenStream) send(uri string) {
	sendOnStream(l.ctx, l.id, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
}

// sendOnStream sends a notification of method with fields on the
// subscriptions/listen stream of ctx, tagged with the stream's id, unless
// the stream closed; a client that does not read it misses it rather than
// hold up the sender.
func sendOnStream(ctx context.Context, id any, method string, fields map[string]any) {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil || ctx.Err() != nil {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: method,
			Params: mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: id}, AdditionalFields: fields},
		},
	}
	select {
	case sess.NotificationChannel() <- n:
	default:
	}
}

// read returns what each watched resource shows, for comparing: one
// entry for pgbus://queues and one per queue's stats; nil when the stats
// cannot be read (a later read compares again).
func (w *resourceWatch) read(ctx context.Context) map[string]string {
	res, err := w.svc.QueueStats(ctx, ops.QueueStatsRequest{All: true, NoArchive: true})
	if err != nil {
		w.log.Debug("mcp resource updates: could not read the queue stats; trying again at the next interval", "err", err)
		return nil
	}
	out := map[string]string{}
	var all strings.Builder
	for _, q := range res.Queues {
		shown := fmt.Sprintf("%d %d %d %d %d %d %d %+v %t %t %+v", q.Depth, q.Visible, q.InFlight, q.WaitingRetry, q.Scheduled,
			q.DLQDepth, q.TotalSent, q.LastHour, q.Dropped, q.Paused, q.Settings)
		out[strings.ReplaceAll(resources.URIQueueStats, "{queue}", q.Queue)] = shown
		all.WriteString(q.Queue + " " + shown + "\n")
	}
	out[resources.URIQueues] = all.String()
	return out
}
