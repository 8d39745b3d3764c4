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
// Other URIs may be subscribed to, as the protocol allows, but send no
// updates: a dead message only ever leaves its DLQ.
type resourceWatch struct {
	svc   *ops.Service
	srv   *server.MCPServer
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[string]struct{} // session id -> URIs
	seen    map[string]string              // URI -> what it showed when last compared
	running bool
}

func newResourceWatch(svc *ops.Service, every time.Duration, log *slog.Logger) *resourceWatch {
	if every <= 0 {
		every = defaultResourcePoll
	}
	return &resourceWatch{svc: svc, every: every, log: log, subs: map[string]map[string]struct{}{}, seen: map[string]string{}}
}

// attach makes w follow the subscriptions of s's sessions.
func (w *resourceWatch) attach(s *server.MCPServer, hooks *server.Hooks) {
	w.srv = s
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && watched(req.Params.URI) {
			w.subscribe(ctx, sess.SessionID(), req.Params.URI)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			w.mu.Lock()
			delete(w.subs[sess.SessionID()], req.Params.URI)
			if len(w.subs[sess.SessionID()]) == 0 {
				// Subscribed to nothing now: run stops once no session is.
				delete(w.subs, sess.SessionID())
			}
			w.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		w.mu.Lock()
		delete(w.subs, sess.SessionID())
		w.mu.Unlock()
	})
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
func (w *resourceWatch) subscribe(ctx context.Context, session, uri string) {
	w.mu.Lock()
	_, known := w.seen[uri]
	w.mu.Unlock()
	var now map[string]string
	if !known {
		now = w.read(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[session] == nil {
		w.subs[session] = map[string]struct{}{}
	}
	w.subs[session][uri] = struct{}{}
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
	for range t.C {
		w.mu.Lock()
		if len(w.subs) == 0 {
			w.running = false
			clear(w.seen)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), w.every+10*time.Second)
		now := w.read(ctx)
		cancel()
		if now != nil {
			w.notify(now)
		}
	}
}

// notify sends an update to each session subscribed to a URI whose content
// changed, and forgets the sessions that are gone.
func (w *resourceWatch) notify(now map[string]string) {
	type update struct{ session, uri string }
	var updates []update
	w.mu.Lock()
	for session, uris := range w.subs {
		for uri := range uris {
			if w.seen[uri] != now[uri] {
				updates = append(updates, update{session, uri})
			}
		}
	}
	for uri := range w.seen {
		w.seen[uri] = now[uri]
	}
	w.mu.Unlock()
	for _, u := range updates {
		err := w.srv.SendNotificationToSpecificClient(u.session, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": u.uri})
		if errors.Is(err, server.ErrSessionNotFound) {
			w.mu.Lock()
			delete(w.subs, u.session)
			w.mu.Unlock()
		}
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
