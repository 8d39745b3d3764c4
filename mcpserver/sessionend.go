package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// errSessionEnded is why the context of a tool call is cancelled when its
// session ends under it.
var errSessionEnded = errors.New("the MCP session ended")

// msgSessionEnded starts the answer of a call stopped because its session
// ended.
const msgSessionEnded = "pgbus: this call's MCP session ended while the call ran (ended by DELETE, expired after being idle, or the server shut down), so the call was stopped; start a new session to make it again. What the call said: "

// msgSessionEndedAsking answers a call stopped while it waited for the
// user's answer, before it changed anything: the operations that ask ask
// first, then act.
const msgSessionEndedAsking = "pgbus: this call's MCP session ended while the call waited for the user's answer (ended by DELETE, expired after being idle, or the server shut down), so the call was stopped before it changed anything: nothing was done. Start a new session and make the call again to have the user asked again"

// msgStreamClosed starts the answer of a call stopped because its
// client closed its event stream (the SSE transport).
const msgStreamClosed = "pgbus: this call's client closed its event stream, and with it its MCP session, while the call ran, so the call was stopped; connect again to make it again. What the call said: "

// msgStreamClosedAsking answers a call stopped, because its client closed
// its event stream, while it waited for the user's answer.
const msgStreamClosedAsking = "pgbus: this call's client closed its event stream, and with it its MCP session, while the call waited for the user's answer, so the call was stopped before it changed anything: nothing was done. Connect again and make the call again to have the user asked again"

// sessionEnd is how a request of a Streamable HTTP session, or a message
// of an SSE session, learns that its session ended: ended is closed then,
// and the end of a Streamable HTTP session waits for done, closed once the
// request answered. It also knows the questions (elicitation/create) the
// request asked the user and that are not yet answered.
type sessionEnd struct {
	ended chan struct{}
	done  chan struct{}
	// streamClosed tells that the session is an SSE event stream, ended
	// when its client closed it (or the server shut down).
	streamClosed bool

	// Of a Streamable HTTP POST: conn is its request's context, which
	// ends with its connection; request its JSON-RPC id, as sent, when it
	// is a request; cancelled is closed once the client cancelled it
	// (notifications/cancelled); streamed tells that its answer became an
	// event stream, which a client whose connection broke resumes.
	conn       context.Context
	request    string
	cancelled  chan struct{}
	cancelOnce sync.Once
	streamed   atomic.Bool

	mu   sync.Mutex
	asks map[string]struct{} // ids of unanswered elicitation/create
}

// cancel notes that the client cancelled the request.
func (e *sessionEnd) cancel() {
	e.cancelOnce.Do(func() { close(e.cancelled) })
}

// resumable reports whether the request's connection is gone after its
// answer became an event stream, which the client may resume (every event
// is kept for it, Last-Event-ID): the specification has a client cancel a
// request by notifications/cancelled, and a disconnection is no
// cancellation.
func (e *sessionEnd) resumable() bool {
	return e.conn != nil && e.conn.Err() != nil && e.streamed.Load()
}

// asked notes a question sent to the client with JSON-RPC id.
func (e *sessionEnd) asked(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.asks == nil {
		e.asks = map[string]struct{}{}
	}
	e.asks[id] = struct{}{}
}

// answered forgets the question of id, and reports whether it was one of
// this request's.
func (e *sessionEnd) answered(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.asks[id]
	delete(e.asks, id)
	return ok
}

// waiting reports whether the request waits for the user's answer.
func (e *sessionEnd) waiting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.asks) > 0
}

// askWriter passes on the answer of a session's POST, noting the
// questions to the user written on its event stream: mcp-go writes each
// event, with its data line, in a Write of its own.
type askWriter struct {
	http.ResponseWriter
	end *sessionEnd
}

// WriteHeader notes an answer that became an event stream.
func (w askWriter) WriteHeader(status int) {
	w.noteStream()
	w.ResponseWriter.WriteHeader(status)
}

func (w askWriter) noteStream() {
	if media, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); media == mediaStream {
		w.end.streamed.Store(true)
	}
}

func (w askWriter) Write(p []byte) (int, error) {
	w.noteStream()
	if bytes.Contains(p, []byte(mcp.MethodElicitationCreate)) {
		for line := range bytes.Lines(p) {
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				continue
			}
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(data, &msg) == nil && msg.Method == string(mcp.MethodElicitationCreate) && len(msg.ID) > 0 {
				w.end.asked(string(msg.ID))
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on the flushes of a streamed (SSE) response.
func (w askWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w askWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sessionEndKey keys the *sessionEnd of a request in its context.
type sessionEndKey struct{}

// stopCallsOfEndedSessions runs each tool call of a Streamable HTTP
// session, or of an SSE session, with a context that ends when the session
// does (sessionEnd): a call waiting for the user's answer to an
// elicitation would otherwise wait for an answer that can no longer come,
// holding its request and its goroutine for good, and over SSE, whose
// calls run detached from their POST, a call would run on for a client
// that closed its stream. A Streamable HTTP call also ends with its
// client's notifications/cancelled, and with its POST's connection, but
// for a connection that broke once the answer became an event stream: the
// client resumes that stream (Last-Event-ID), and the specification has
// a disconnection be no cancellation, so the call goes on for it.
// A call stopped so answers a tool error that says so: that nothing was
// done when it waited for the user's answer (the operations that ask ask
// first, then act), else followed by what the call itself said. What it
// did before it stopped is recorded as every call's outcome is. Calls of
// stdio, and of no session (protocol 2026-07-28 and later), are left as
// they are.
func stopCallsOfEndedSessions(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		end, _ := ctx.Value(sessionEndKey{}).(*sessionEnd)
		if end == nil {
			return next(ctx, req)
		}
		// The call's context ends with the session, with its client's
		// cancellation, and with its request's, but for a connection
		// that broke once the answer became an event stream, which the
		// client resumes (resumable): the call goes on for it.
		callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		defer cancel(nil)
		go func() {
			requestDone := ctx.Done()
			for {
				select {
				case <-end.ended:
					cancel(errSessionEnded)
					return
				case <-end.cancelled:
					cancel(context.Canceled)
					return
				case <-requestDone:
					if !end.resumable() {
						cancel(context.Cause(ctx))
						return
					}
					requestDone = nil
				case <-callCtx.Done():
					return
				}
			}
		}()
		res, err := next(callCtx, req)
		if callCtx.Err() != nil && (err != nil || res == nil || res.IsError) {
			markCancelled(ctx)
		}
		if !errors.Is(context.Cause(callCtx), errSessionEnded) || (err == nil && res != nil && !res.IsError) {
			return res, err // done before the session ended, or despite it
		}
		asking, stopped := msgSessionEndedAsking, msgSessionEnded
		if end.streamClosed {
			asking, stopped = msgStreamClosedAsking, msgStreamClosed
		}
		if end.waiting() {
			return mcp.NewToolResultError(asking), nil
		}
		said := ""
		if err != nil {
			said = err.Error()
		} else if res != nil {
			for _, content := range res.Content {
				if text, ok := content.(mcp.TextContent); ok {
					said = text.Text
					break
				}
			}
		}
		return mcp.NewToolResultError(stopped + said), nil
	}
}
