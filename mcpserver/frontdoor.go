package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/resources"
)

// Each transport shows every message to frontDoor before mcp-go serves it,
// and sends the client pgbus's own answer to the messages frontDoor
// answers, in place of mcp-go's: mcp-go offers no hook that answers a
// request with an error of a code pgbus picks (a request hook's error is
// always an invalid request, -32600), nor one that refuses a subscription.
//
// The transports deliver an answer as they deliver mcp-go's: Streamable
// HTTP in the POST's response (answerPOST), the SSE transport on the
// session's event stream, stdio as a line of its output (stdioDoor).

// frontDoor answers the messages pgbus refuses before mcp-go serves them.
type frontDoor struct {
	// s is the server, whose resources a subscription may name.
	s *server.MCPServer
	// each says how the transport takes requests one by one (eachPOST,
	// eachLine), for the refusal of a batch.
	each string
}

// frontMessage is what frontDoor reads of a JSON-RPC message.
type frontMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// answer returns pgbus's answer to the JSON-RPC message raw, or nil when
// mcp-go serves it.
func (d frontDoor) answer(ctx context.Context, raw []byte) mcp.JSONRPCMessage {
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' && json.Valid(raw) {
		// A batch, which MCP dropped: valid JSON, so no parse error,
		// which mcp-go answers.
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, msgBatches+d.each, nil)}
	}
	var msg frontMessage
	if json.Unmarshal(raw, &msg) != nil {
		return nil // not one message: mcp-go answers it
	}
	if msg.Method != "" && len(msg.ID) > 0 && !validID(msg.ID) {
		// mcp-go takes id null for a notification, which it never
		// answers, and serves a request with an object for an id.
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, fmt.Sprintf(msgInvalidID, clip(string(msg.ID))), nil)}
	}
	var id mcp.RequestId
	if len(msg.ID) == 0 || json.Unmarshal(msg.ID, &id) != nil || id.IsNil() {
		return nil // a notification
	}
	switch method := mcp.MCPMethod(msg.Method); method {
	case mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		// The request hook's checks, answered as invalid params: the
		// hook's own error would be an invalid request.
		if err := resources.CheckRead(ctx, nil, json.RawMessage(raw)); err != nil {
			return invalidParams(id, err.Error())
		}
		switch method {
		case mcp.MethodResourcesSubscribe:
			return d.checkSubscription(msg)
		case mcp.MethodResourcesRead:
			return checkReadForm(id, msg)
		}
	case mcp.MethodToolsCall:
		return d.numberPastFloat64(id, raw, msg.Params)
	case mcp.MethodInitialize:
		// Params mcp-go cannot read, in mcp-go's words, as invalid
		// params: mcp-go answers them as an invalid request.
		var req mcp.InitializeRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return invalidParams(id, fmt.Sprintf("unparsable %s request: %s", method, err))
		}
		if req.Params.ProtocolVersion == "" {
			// A field the protocol requires, which mcp-go takes as
			// 2025-03-26 when it is missing.
			return invalidParams(id, msgNoProtocolVersion)
		}
	}
	return nil
}

// msgInvalidID refuses a request whose id (%s) is neither a string nor an
// integer.
const msgInvalidID = "pgbus: the id of a request is a string or an integer, never null, a fraction, an object, an array or a boolean (this one's: %s): " +
	"give it one to match its answer by, or send a notification, which has no id and gets no answer"

// validID reports whether a request's id, as sent, is a string or an
// integer, as MCP has them.
func validID(raw json.RawMessage) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return false
	}
	switch v := v.(type) {
	case string:
		return true
	case json.Number:
		return !strings.ContainsAny(string(v), ".eE")
	}
	return false
}

// msgNoProtocolVersion refuses an initialize that does not name the
// protocol version of its client.
var msgNoProtocolVersion = "pgbus: initialize needs params.protocolVersion, the MCP protocol version the client speaks: " +
	orList(mcp.LegacyProtocolVersions()) + " (a client of " + mcp.ProtocolVersion20260728 +
	" or later sends no initialize: it names its version in the _meta of every request)"

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// invalidParams is the answer to request id whose params are wrong.
func invalidParams(id mcp.RequestId, msg string) mcp.JSONRPCMessage {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, msg, nil)}
}

// checkSubscription refuses a subscription of a client of a protocol with
// resources/subscribe to a URI that names no resource pgbus updates
// (pgbus://queues and pgbus://queues/{queue}/stats) and no other resource
// the server has (a test's fixture, say): no update could ever
// come for it, and mcp-go takes any URI. It looks at the URI alone, with
// no read of the database: a check that read would hold the stdio
// transport's next messages while the database is slow, and refuse a
// subscription a lock or an outage only delays; a queue not made yet is
// updated once it is. An unsubscription is always taken, so that a
// subscription whose queue went can still be ended. A pgbus: URI is
// answered by the rule a read's is (judgePgbusURI): malformed, invalid
// params (-32602); of no form of pgbus's, resource not found (-32002), as
// is a URI of no resource the server has; and a dead message's, a
// resource that is read but never updated, invalid params.
func (d frontDoor) checkSubscription(msg frontMessage) mcp.JSONRPCMessage {
	var params struct {
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	}
	var id mcp.RequestId
	if json.Unmarshal(msg.Params, &params) != nil || params.URI == "" || json.Unmarshal(msg.ID, &id) != nil {
		return nil // mcp-go answers it
	}
	if v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string); mcp.IsModernProtocol(v) {
		return nil // no resources/subscribe: mcp-go says so
	}
	uri := params.URI
	if _, ok := d.s.ListResources()[uri]; ok || uri == resources.URIQueues {
		return nil // a resource of the server's, pgbus's or another's
	}
	if !strings.HasPrefix(uri, "pgbus:") {
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: mcp.NewJSONRPCErrorDetails(mcp.RESOURCE_NOT_FOUND, unknownResource(uri), nil)}
	}
	switch form, text := judgePgbusURI(uri); {
	case form == uriMalformed:
		return invalidParams(id, text)
	case form == uriUnknown:
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: mcp.NewJSONRPCErrorDetails(mcp.RESOURCE_NOT_FOUND, unknownResource(uri), nil)}
	case strings.HasPrefix(uri, deadPrefix):
		// A resource of pgbus's, read, never updated: the request, not
		// the URI, is what cannot be.
		return invalidParams(id, fmt.Sprintf("resource %s is a dead message, which is read, not subscribed to: subscribe to %s or %s",
			clip(uri), resources.URIQueues, resources.URIQueueStats))
	}
	return nil
}

// checkReadForm refuses a read of a pgbus: URI that is malformed or of
// none of pgbus's forms (judgePgbusURI), in words that name them: mcp-go's
// own answer names no resource there is. A malformed one is invalid params
// (-32602); one of no form names a resource there is not, and is answered
// as a missing resource is answered, as resource not found (-32002), or,
// to a client of protocol 2026-07-28 or later, invalid params (-32602).
// A subscription to either is answered with the same code
// (checkSubscription). Other URIs, which another server's resources may
// match, are mcp-go's.
func checkReadForm(id mcp.RequestId, msg frontMessage) mcp.JSONRPCMessage {
	var params struct {
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(msg.Params, &params) != nil || !strings.HasPrefix(params.URI, "pgbus:") {
		return nil
	}
	form, text := judgePgbusURI(params.URI)
	switch form {
	case uriOfPgbus:
		return nil
	case uriMalformed:
		return invalidParams(id, text)
	}
	text = fmt.Sprintf("resource %s is not one of pgbus's: read %s, %s or %s (resources/list and resources/templates/list list them)",
		clip(params.URI), resources.URIQueues, resources.URIQueueStats, resources.URIDeadMessage)
	if v, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string); mcp.IsModernProtocol(v) {
		return invalidParams(id, text)
	}
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: mcp.NewJSONRPCErrorDetails(mcp.RESOURCE_NOT_FOUND, text, nil)}
}

// uriForm is what judgePgbusURI makes of a pgbus: URI.
type uriForm int

const (
	// uriOfPgbus is of one of pgbus's forms, its queue's name valid
	// (whether the queue or message is there is the read's to tell).
	uriOfPgbus uriForm = iota
	// uriMalformed is no URI, or of one of pgbus's forms with a queue's
	// name that cannot be: invalid params.
	uriMalformed
	// uriUnknown is a URI of none of pgbus's forms: it names a resource
	// there is not.
	uriUnknown
)

// deadPrefix starts the URI of a dead message.
const deadPrefix = "pgbus://dlq/"

// judgePgbusURI tells a pgbus: URI of one of pgbus's forms from a
// malformed one, which it says what is wrong with, and from one of no
// form: the one rule by which a read and a subscription are answered.
func judgePgbusURI(uri string) (uriForm, string) {
	if _, err := url.Parse(uri); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return uriMalformed, fmt.Sprintf("resource %s is not a URI (%v): read %s, %s or %s",
			clip(uri), err, resources.URIQueues, resources.URIQueueStats, resources.URIDeadMessage)
	}
	if !pgbusForm(uri) {
		return uriUnknown, ""
	}
	// The words of the resource's own refusal of the name, which mcp-go
	// does not pass it when the name is one its URI template does not
	// match.
	if rest, ok := strings.CutPrefix(uri, "pgbus://queues/"); ok {
		if err := ops.CheckQueueName(strings.TrimSuffix(rest, "/stats")); err != nil {
			return uriMalformed, fmt.Sprintf("resource %s: %v; read %s for the queue names", clip(uri), err, resources.URIQueues)
		}
	} else if rest, ok := strings.CutPrefix(uri, deadPrefix); ok {
		queue, _, _ := strings.Cut(rest, "/")
		if err := ops.CheckQueueName(queue); err != nil {
			return uriMalformed, fmt.Sprintf("resource %s: %v; use the source queue (orders) or its DLQ (orders_dlq) as pgbus_dlq_summary shows them", clip(uri), err)
		}
	}
	return uriOfPgbus, ""
}

// pgbusForm reports whether uri has the form of one of pgbus's resources:
// pgbus://queues, pgbus://queues/{queue}/stats or pgbus://dlq/{queue}/{msg_id},
// whatever its queue and id (judgePgbusURI checks the queue's name, the
// read the rest).
func pgbusForm(uri string) bool {
	if uri == resources.URIQueues {
		return true
	}
	segment := func(s string) bool { return s != "" && !strings.Contains(s, "/") }
	if rest, ok := strings.CutPrefix(uri, "pgbus://queues/"); ok {
		queue, stats := strings.CutSuffix(rest, "/stats")
		return stats && segment(queue)
	}
	if rest, ok := strings.CutPrefix(uri, deadPrefix); ok {
		queue, id, two := strings.Cut(rest, "/")
		return two && segment(queue) && segment(id)
	}
	return false
}

// unknownResource says a URI names no resource, and which pgbus has.
func unknownResource(uri string) string {
	if strings.HasPrefix(uri, "pgbus:") {
		return fmt.Sprintf("resource %s is not one of pgbus's: subscribe to %s or %s (read %s for the queue names); a dead message, %s, is read, not subscribed to",
			clip(uri), resources.URIQueues, resources.URIQueueStats, resources.URIQueues, resources.URIDeadMessage)
	}
	return fmt.Sprintf("this server has no resource %s: subscribe to %s or %s (read %s for the queue names)",
		clip(uri), resources.URIQueues, resources.URIQueueStats, resources.URIQueues)
}

// lineWriter is the output of the stdio transport: each Write, a whole line
// as mcp-go writes its own (responses, notifications and requests alike),
// is written whole before another starts, so that stdioDoor's answers and
// mcp-go's lines never mix.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
	// cancels leaves out the answers to the requests the client
	// cancelled; nil, none.
	cancels *stdioCancels
}

func (w *lineWriter) Write(p []byte) (int, error) {
	if w.cancels != nil && w.cancels.drops(p) {
		return len(p), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// stdioDoor is the input mcp-go's stdio transport reads: the lines of in
// that frontDoor does not answer. It writes the answers of the others to
// out, each a line of its own.
type stdioDoor struct {
	ctx  context.Context
	door frontDoor
	in   *bufio.Reader
	out  io.Writer
	rest []byte // of the line being passed on
	err  error  // of reading in, returned once rest is passed on
	// cancels is told of the lines passed on; nil, none.
	cancels *stdioCancels
	// log is told of the lines refused for their length; nil, none.
	log *slog.Logger
}

// msgLineTooLong answers a line longer than MaxStdioLineBytes.
var msgLineTooLong = fmt.Sprintf("pgbus: a message longer than %d bytes (16 MiB), the most a line may hold over stdio, was not read: "+
	"send each message on a line of at most that (a corrected payload larger than a tool call takes is retried from a file with pgbus dlq retry on the command line)", MaxStdioLineBytes)

// readLine reads the next line of in, with its newline, when it holds at
// most max bytes; a longer one it reads to its end without keeping it,
// and reports too long. err is that of ReadSlice at the line's end.
func readLine(in *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tooLong, err
		}
	}
}

func newStdioDoor(ctx context.Context, door frontDoor, in io.Reader, out io.Writer, cancels *stdioCancels) *stdioDoor {
	return &stdioDoor{ctx: ctx, door: door, in: bufio.NewReader(in), out: out, cancels: cancels}
}

func (d *stdioDoor) Read(p []byte) (int, error) {
	for len(d.rest) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		line, tooLong, err := readLine(d.in, MaxStdioLineBytes)
		d.err = err
		if tooLong {
			if d.log != nil {
				d.log.Warn("MCP stdio: a message longer than the most a line may hold was refused without being read", "max_bytes", MaxStdioLineBytes)
			}
			b, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
				Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, msgLineTooLong, nil)})
			if _, werr := d.out.Write(append(b, '\n')); werr != nil {
				return 0, werr
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			d.rest = line
			continue
		}
		answer := d.door.answer(d.ctx, line)
		if answer == nil {
			if d.cancels != nil {
				d.cancels.read(line)
			}
			d.rest = line
			continue
		}
		b, merr := json.Marshal(answer)
		if merr != nil {
			d.rest = line // mcp-go answers it
			continue
		}
		if _, werr := d.out.Write(append(b, '\n')); werr != nil {
			return 0, werr
		}
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// peekBody reads a POST's body, left in place for the handler after it
// (with the error reading it gave, if any).
func peekBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// answerPOST writes frontDoor's answer to a POST of Streamable HTTP, as
// mcp-go writes its own: 200 to a client of a protocol with sessions, and
// to one of 2026-07-28 or later the status that revision gives the error's
// code.
func answerPOST(w http.ResponseWriter, answer mcp.JSONRPCMessage, modern bool) {
	status := http.StatusOK
	if e, ok := answer.(mcp.JSONRPCError); ok && modern {
		switch e.Error.Code {
		case mcp.METHOD_NOT_FOUND:
			status = http.StatusNotFound
		case mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
			status = http.StatusBadRequest
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer)
}

// sseDoor shows the messages POSTed to the SSE transport's message
// endpoint to door, and sends its answers on the session's event stream,
// as mcp-go sends its own, with 202 to the POST.
func sseDoor(h *server.SSEServer, door frontDoor, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if answer := door.answer(r.Context(), peekBody(r)); answer != nil &&
				h.SendEventToSession(r.URL.Query().Get("sessionId"), answer) == nil {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// numberPastFloat64 refuses, as invalid params, a tools/call request raw
// (params its params) holding a number past a 64-bit float's range
// (1e400): mcp-go reads the arguments as numbers of that size too, and
// answers an invalid request quoting Go's types. The refusal names the
// argument, and says to send the number as a string; for a corrected
// payload of pgbus_dlq_retry, which the database stores such a number in,
// it names the command an operator runs to retry with it from a file,
// with the server's global flags (tools.Deps.CommandFlags).
// Nil for a request mcp-go reads.
func (d frontDoor) numberPastFloat64(id mcp.RequestId, raw []byte, params json.RawMessage) mcp.JSONRPCMessage {
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, new(mcp.CallToolRequest)); err == nil || !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number") {
		return nil
	}
	var p any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if dec.Decode(&p) != nil {
		return nil
	}
	path, number := pastFloat64(p, "")
	if path == "" {
		return nil
	}
	where := "params." + path
	argument, isArgument := strings.CutPrefix(path, "arguments.")
	if isArgument {
		where = "argument " + argument
	}
	text := fmt.Sprintf("pgbus: %s is the number %s, past what a JSON client reads as a number (a 64-bit float, up to about 1.8e308): nothing was done; send it as a string (%q)",
		where, clip(number), clip(number))
	call, _ := p.(map[string]any)
	if name, _ := call["name"].(string); name == "pgbus_dlq_retry" && isArgument && (argument == "payload" || strings.HasPrefix(argument, "payload.") || strings.HasPrefix(argument, "payload[")) {
		args, _ := call["arguments"].(map[string]any)
		text += ", or, for a corrected payload that must hold it as a number, write the payload to a file, payload.json, and ask an operator to retry with it on the command line: " +
			vocab.WithFlags(vocab.Command(ops.Hint{Op: ops.OpDLQRetry, Args: retryFromFile(args)}), flagsOf(d.s))
	}
	return invalidParams(id, text)
}

// pastFloat64 returns where in v, a JSON value read with UseNumber, the
// first number past a 64-bit float's range is (path below at, "a.b[2]"),
// and the number; "" when there is none. Object keys are looked at in
// order, so that the same call names the same number.
func pastFloat64(v any, at string) (string, string) {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return at, string(v)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			below := k
			if at != "" {
				below = at + "." + k
			}
			if path, n := pastFloat64(v[k], below); path != "" {
				return path, n
			}
		}
	case []any:
		for i, e := range v {
			if path, n := pastFloat64(e, fmt.Sprintf("%s[%d]", at, i)); path != "" {
				return path, n
			}
		}
	}
	return "", ""
}

// retryFromFile is the arguments of the retry, from a file, of the call
// whose arguments are args: its one id and its queue when they are
// usable, else places for them.
func retryFromFile(args map[string]any) map[string]any {
	out := map[string]any{"ids": "ID", "payload": "@payload.json"}
	if ids, _ := args["ids"].([]any); len(ids) == 1 {
		if n, ok := ids[0].(json.Number); ok {
			if id, err := n.Int64(); err == nil && id > 0 {
				out["ids"] = []int64{id}
			}
		}
	}
	if q, _ := args["queue"].(string); q != "" && ops.CheckQueueName(q) == nil {
		out["queue"] = q
	}
	return out
}
