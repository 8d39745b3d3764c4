package mcpserver

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Media types of the Streamable HTTP transport: a POST's body is JSON, and
// its answer JSON or an event stream.
const (
	mediaJSON   = "application/json"
	mediaStream = "text/event-stream"
)

// checkMedia refuses, before anything reads it, a POST to the Streamable
// HTTP endpoint whose body is not labelled JSON (415), or whose Accept
// header takes neither of the answers the transport gives, JSON or an
// event stream (406), and a GET, which opens the event stream of a
// session, whose Accept header does not take an event stream (406), each
// with a JSON-RPC error that says what to send.
//
// The specification has a client list both types in Accept. The check is
// as lenient as real clients are: the official SDKs send both, but curl
// sends */* (or, with --json, application/json alone), and some clients
// send no Accept at all; each of these is taken, as is any Accept that
// takes one of the two, by name or by a wildcard.
func checkMedia(log *slog.Logger, trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			if !checkJSONBody(log, trusted, w, r, "the MCP endpoint") {
				return
			}
			if accept := acceptHeader(r); !acceptsAnswer(accept, mediaJSON, mediaStream) {
				refuseRequest(log, trusted, w, r, http.StatusNotAcceptable, mcp.INVALID_REQUEST, fmt.Sprintf(
					"pgbus: the MCP endpoint answers a POST in %s or as an event stream (%s), and this request's Accept header, %q, takes neither: send Accept: %s, %s",
					mediaJSON, mediaStream, clip(accept), mediaJSON, mediaStream))
				return
			}
		case http.MethodGet:
			if accept := acceptHeader(r); !acceptsAnswer(accept, mediaStream) {
				refuseRequest(log, trusted, w, r, http.StatusNotAcceptable, mcp.INVALID_REQUEST, fmt.Sprintf(
					"pgbus: a GET of the MCP endpoint opens the session's event stream (%s), and this request's Accept header, %q, does not take it: send Accept: %s",
					mediaStream, clip(accept), mediaStream))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkJSONBodies is checkJSONBody of every POST to next, the legacy SSE
// transport's message endpoint.
func checkJSONBodies(log *slog.Logger, trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !checkJSONBody(log, trusted, w, r, "the MCP message endpoint") {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkJSONBody refuses (415) a POST to endpoint whose body is not
// labelled JSON, and reports whether it went on.
func checkJSONBody(log *slog.Logger, trusted []netip.Prefix, w http.ResponseWriter, r *http.Request, endpoint string) bool {
	ct := r.Header.Get("Content-Type")
	if isJSONMedia(ct) {
		return true
	}
	got := "none"
	if ct != "" {
		got = strconv.Quote(clip(ct))
	}
	refuseRequest(log, trusted, w, r, http.StatusUnsupportedMediaType, mcp.INVALID_REQUEST, fmt.Sprintf(
		"pgbus: the body of a POST to %s is a JSON-RPC message in JSON: send it with the header Content-Type: %s (this request's Content-Type: %s)", endpoint, mediaJSON, got))
	return false
}

// acceptHeader is a request's Accept header, its values joined by commas.
func acceptHeader(r *http.Request) string {
	return strings.Join(r.Header.Values("Accept"), ",")
}

// isJSONMedia reports whether a Content-Type header names JSON, with any
// parameters (a charset).
func isJSONMedia(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && media == mediaJSON
}

// acceptsAnswer reports whether an Accept header (its values joined by
// commas) takes one of the media types: by name or wildcard, with a
// quality above zero. An empty one takes anything.
func acceptsAnswer(accept string, media ...string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, r := range strings.Split(accept, ",") {
		if strings.TrimSpace(r) == "" {
			continue
		}
		got, params, err := mime.ParseMediaType(r)
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
				continue
			}
		}
		if got == "*/*" {
			return true
		}
		for _, m := range media {
			if got == m || got == m[:strings.IndexByte(m, '/')]+"/*" {
				return true
			}
		}
	}
	return false
}

// clip bounds a header value a client sent, for a message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
