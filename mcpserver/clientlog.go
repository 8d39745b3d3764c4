package mcpserver

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/mcpnotify"
	"github.com/pgbus/pgbus/ops"
)

// clientLogger names pgbus in the log notifications clients receive.
const clientLogger = "pgbus"

// ClientLog forwards log records to MCP clients as notifications/message,
// redacted as every other log line is, to the clients that asked for them
// at a level: each session that sent logging/setLevel receives the records
// at or above the level it chose; a client of protocol 2026-07-28 and
// later, which sets its level in a request's _meta instead, receives them
// on each subscriptions/listen stream whose request carries a level, for
// as long as it is open, and a call that carries a level receives the
// records logged for it (the result of a write call) in its answer, and
// its own connection's session and listen streams not again.
// Clients that never set a level receive nothing, so that a client is
// not sent log lines it did not ask for.
//
// A process makes one ClientLog, logs through Tee (its workers, for
// instance) and passes it to New in Options.ClientLog; the zero value is
// not usable, make one with NewClientLog.
type ClientLog struct {
	mu       sync.Mutex
	srv      *server.MCPServer
	sessions map[string]server.SessionWithLogging
	streams  map[*logStream]struct{}
}

// logStream is an open subscriptions/listen request that carries a log
// level: its context, which ends when the stream closes, the id its
// notifications are tagged with, the level, and the session it came on.
type logStream struct {
	ctx     context.Context
	id      any
	level   mcp.LoggingLevel
	session server.ClientSession
}

// NewClientLog returns a ClientLog that forwards nothing until New attaches
// it to a server and clients set a level.
func NewClientLog() *ClientLog {
	return &ClientLog{sessions: map[string]server.SessionWithLogging{}, streams: map[*logStream]struct{}{}}
}

// Tee returns a logger that writes to log, as before, and also forwards to
// the clients that asked for log notifications. A nil log only forwards.
func (l *ClientLog) Tee(log *slog.Logger) *slog.Logger {
	fwd := ops.RedactingHandler(clientLogHandler{l: l})
	if log == nil {
		return slog.New(fwd)
	}
	return slog.New(teeHandler{log.Handler(), fwd})
}

// attach makes l forward through s, to the sessions whose level hooks
// record and to the listen streams that carry a level. A ClientLog serves
// one server: attaching it again replaces the server.
func (l *ClientLog) attach(s *server.MCPServer, hooks *server.Hooks) {
	l.mu.Lock()
	l.srv = s
	l.mu.Unlock()
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging); ok {
			l.mu.Lock()
			l.sessions[sess.SessionID()] = sess
			l.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		l.mu.Lock()
		delete(l.sessions, sess.SessionID())
		l.mu.Unlock()
	})
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, _ *mcp.SubscriptionsListenRequest) {
		level := requestLogLevel(ctx)
		if id == nil || level == "" || server.ClientSessionFromContext(ctx) == nil {
			return
		}
		st := &logStream{ctx: ctx, id: id, level: level, session: server.ClientSessionFromContext(ctx)}
		l.mu.Lock()
		l.streams[st] = struct{}{}
		l.mu.Unlock()
		// The request's context ends when the stream closes, however it
		// closes: the client cancels it or goes away.
		context.AfterFunc(ctx, func() {
			l.mu.Lock()
			delete(l.streams, st)
			l.mu.Unlock()
		})
	})
}

// requestLogLevel is the log level the request in ctx carries in its
// _meta (protocol 2026-07-28 and later), or "" when it carries none.
func requestLogLevel(ctx context.Context) mcp.LoggingLevel {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel
	}
	return ""
}

// wants reports whether some session or listen stream asked for records
// of level, or the request in ctx did.
func (l *ClientLog) wants(ctx context.Context, level slog.Level) bool {
	if own := requestLogLevel(ctx); own != "" && level >= slogLevel(own) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv == nil {
		return false
	}
	for _, s := range l.sessions {
		if level >= slogLevel(s.GetLogLevel()) {
			return true
		}
	}
	for st := range l.streams {
		if level >= slogLevel(st.level) {
			return true
		}
	}
	return false
}

// send forwards one notification to the request in ctx when it carries
// a level, and to every session that set a level and every listen stream
// that carries one; mcp-go drops it for the sessions whose level is above
// it, and never blocks on a client that does not read, nor does send. A
// record the request in ctx received in its answer is not sent again to
// its own connection's session or listen streams (stdio's one session,
// say), which would deliver it twice; over Streamable HTTP, where each
// request of protocol 2026-07-28 is a session of its own, a client's
// listen stream cannot be told from another client's, and receives it.
func (l *ClientLog) send(ctx context.Context, n mcp.LoggingMessageNotification) {
	l.mu.Lock()
	srv := l.srv
	sessions := make([]server.ClientSession, 0, len(l.sessions))
	for _, sess := range l.sessions {
		sessions = append(sessions, sess)
	}
	streams := make([]*logStream, 0, len(l.streams))
	for st := range l.streams {
		streams = append(streams, st)
	}
	l.mu.Unlock()
	if srv == nil {
		return
	}
	var answered server.ClientSession
	if own := requestLogLevel(ctx); own != "" && n.Params.Level.ShouldSendTo(own) {
		// mcp-go sends it in the answer to the request.
		if srv.SendLogMessageToClient(ctx, n) == nil {
			mcpnotify.Sending(ctx)
			answered = server.ClientSessionFromContext(ctx)
		}
	}
	for _, sess := range sessions {
		if answered == nil || sess != answered {
			_ = srv.SendLogMessageToSpecificClient(sess.SessionID(), n)
		}
	}
	for _, st := range streams {
		if answered == nil || st.session != answered {
			st.send(n)
		}
	}
}

// send forwards n on the stream, tagged with its id, when its level
// admits it and the stream is still open.
func (st *logStream) send(n mcp.LoggingMessageNotification) {
	if n.Params.Level.ShouldSendTo(st.level) {
		sendOnStream(st.ctx, st.id, n.Method, map[string]any{"level": n.Params.Level, "logger": n.Params.Logger, "data": n.Params.Data})
	}
}

// slogLevel is the slog level of an MCP (syslog) level: notice counts as
// info, and everything from error up as error.
func slogLevel(l mcp.LoggingLevel) slog.Level {
	switch l {
	case mcp.LoggingLevelDebug:
		return slog.LevelDebug
	case mcp.LoggingLevelInfo, mcp.LoggingLevelNotice:
		return slog.LevelInfo
	case mcp.LoggingLevelWarning:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// mcpLevel is the MCP level of a slog level.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return mcp.LoggingLevelDebug
	case l < slog.LevelWarn:
		return mcp.LoggingLevelInfo
	case l < slog.LevelError:
		return mcp.LoggingLevelWarning
	}
	return mcp.LoggingLevelError
}

// clientLogHandler turns records into log notifications whose data is an
// object: the message under "message" and the attributes under their keys,
// groups as nested objects.
type clientLogHandler struct {
	l      *ClientLog
	groups []string
	attrs  []slog.Attr // already nested in the groups open when added
}

func (h clientLogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.l.wants(ctx, level)
}

func (h clientLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if !h.l.wants(ctx, rec.Level) {
		return nil
	}
	data := map[string]any{}
	for _, a := range h.attrs {
		addAttr(data, a)
	}
	var own []slog.Attr
	rec.Attrs(func(a slog.Attr) bool {
		own = append(own, a)
		return true
	})
	for _, a := range nest(h.groups, own) {
		addAttr(data, a)
	}
	data["message"] = rec.Message
	h.l.send(ctx, mcp.NewLoggingMessageNotification(mcpLevel(rec.Level), clientLogger, data))
	return nil
}

func (h clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clip(h.attrs), nest(h.groups, attrs)...)
	return h
}

func (h clientLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h.groups = append(slices.Clip(h.groups), name)
	return h
}

// nest wraps attrs in the groups, innermost last.
func nest(groups []string, attrs []slog.Attr) []slog.Attr {
	if len(attrs) == 0 {
		return nil
	}
	for i := len(groups) - 1; i >= 0; i-- {
		args := make([]any, len(attrs))
		for j, a := range attrs {
			args[j] = a
		}
		attrs = []slog.Attr{slog.Group(groups[i], args...)}
	}
	return attrs
}

// addAttr adds a to m, merging groups of the same key and leaving out
// empty attributes as slog's own handlers do.
func addAttr(m map[string]any, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if v.Kind() != slog.KindGroup {
		m[a.Key] = valueOf(v)
		return
	}
	into := m
	if a.Key != "" {
		sub, ok := m[a.Key].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[a.Key] = sub
		}
		into = sub
	}
	for _, g := range v.Group() {
		addAttr(into, g)
	}
}

// valueOf is v as a value that encodes to JSON as a log reader expects:
// durations and times as text, errors as their message.
func valueOf(v slog.Value) any {
	switch v.Kind() {
	case slog.KindDuration, slog.KindTime:
		return v.String()
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return v.Any()
}

// teeHandler hands each record to both handlers, each when it is enabled
// for the record's level.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	if t.a.Enabled(ctx, rec.Level) {
		err = t.a.Handle(ctx, rec.Clone())
	}
	if t.b.Enabled(ctx, rec.Level) {
		if e := t.b.Handle(ctx, rec.Clone()); err == nil {
			err = e
		}
	}
	return err
}

func (t teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(attrs), t.b.WithAttrs(attrs)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}
