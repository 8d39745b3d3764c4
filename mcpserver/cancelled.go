package mcpserver

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A request its client cancelled (notifications/cancelled) gets no
// answer, as the specification has it: the receiver of a cancellation
// does not send a response for the cancelled request. mcp-go stops the
// call (its context ends) but writes the answer all the same, so pgbus
// leaves it out where it is written: on Streamable HTTP, the event that
// carries it (recentEvents.StoreEvent keeps it from the events a resume
// replays, and trackingWriter from the stream), or the JSON body the POST
// would have had (silencingWriter: the POST answers an event stream that
// ends without a message); on stdio, its line (stdioCancels). An answer
// written before the cancellation arrived has left: the specification
// allows for that race.

// requestKey is the JSON-RPC id raw as mcp-go compares ids (7 and 7.0
// alike), and false for no id or null.
func requestKey(raw []byte) (string, bool) {
	var id mcp.RequestId
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &id) != nil || id.IsNil() {
		return "", false
	}
	return id.String(), true
}

// isCancelled reports whether the client cancelled the request.
func (e *sessionEnd) isCancelled() bool {
	select {
	case <-e.cancelled:
		return true
	default:
		return false
	}
}

// cancelledAnswer reports whether message is the answer to the request of
// e, which its client cancelled.
func (e *sessionEnd) cancelledAnswer(message json.RawMessage) bool {
	if e == nil || e.request == "" || !e.isCancelled() || !isResponse(message) {
		return false
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(message, &m) != nil {
		return false
	}
	got, ok := requestKey(m.ID)
	want, _ := requestKey([]byte(e.request))
	return ok && got == want
}

// silencingWriter passes on the answer of a session's POST of a request,
// but for the JSON body of a request its client cancelled before the
// answer started: that answer is an event stream without a message.
type silencingWriter struct {
	http.ResponseWriter
	end    *sessionEnd
	silent bool
}

func (w *silencingWriter) WriteHeader(status int) {
	if media, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); media == mediaJSON && status == http.StatusOK && w.end.isCancelled() {
		w.silent = true
		w.Header().Set("Content-Type", mediaStream)
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *silencingWriter) Write(p []byte) (int, error) {
	if w.silent {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on the flushes of a streamed (SSE) response.
func (w *silencingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *silencingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stdioCancels knows the requests of a stdio client under way, those it
// cancelled among them, so that the answer of a cancelled one is not
// written (stdioDoor tells it of the requests and cancellations it reads,
// lineWriter asks it of each answer it writes). Only a request under way
// is cancelled: a cancellation of one answered already, or never made,
// changes nothing, so that a later request with the same id is answered.
type stdioCancels struct {
	mu      sync.Mutex
	running map[string]bool // request id (requestKey): cancelled
}

// read notes the message line a client sent: a request starts, a
// notifications/cancelled cancels the request it names if it runs.
func (c *stdioCancels) read(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if key, ok := requestKey(m.ID); ok {
		if c.running == nil {
			c.running = map[string]bool{}
		}
		if _, dup := c.running[key]; !dup { // mcp-go refuses a duplicate id: the first runs on
			c.running[key] = false
		}
		return
	}
	if m.Method != string(mcp.MethodNotificationCancelled) {
		return
	}
	if key, ok := requestKey(m.Params.RequestID); ok {
		if _, runs := c.running[key]; runs {
			c.running[key] = true
		}
	}
}

// drops reports whether line, written to the client, is the answer to a
// request it cancelled, which is then not written; an answer ends its
// request either way.
func (c *stdioCancels) drops(line []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.running) == 0 {
		return false
	}
	key, ok := answerKey(line)
	if !ok {
		return false
	}
	cancelled, runs := c.running[key]
	if !runs {
		return false
	}
	delete(c.running, key)
	return cancelled
}

// answerKey is the id (requestKey) of line when it is a JSON-RPC answer:
// a result or an error, with no method. It reads the members of the
// object in order and stops at the answer's own, which mcp-go writes
// after the id, so that a long result is not read to its end.
func answerKey(line []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var id json.RawMessage
	answer := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch t {
		case "method":
			return "", false
		case "id":
			if dec.Decode(&id) != nil {
				return "", false
			}
			if answer {
				return requestKey(id)
			}
			continue
		case "result", "error":
			if id != nil {
				return requestKey(id)
			}
			answer = true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	if !answer {
		return "", false
	}
	return requestKey(id)
}
