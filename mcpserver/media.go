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
// event stream (406), each with a JSON-RPC error that says what to send.
//
// The specification has a client list both types in Accept. The check is
// as lenient as real clients are: the official SDKs send both, but curl
// sends */* (or, with --json, application/json alone), and some clients
// send no Accept at all; each of these is taken, as is any Accept that
// takes one of the two, by name or by a wildcard.
func checkMedia(log *slog.Logger, trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if ct := r.Header.Get("Content-Type"); !isJSONMedia(ct) {
			got := "none"
			if ct != "" {
				got = strconv.Quote(clip(ct))
			}
			refuseRequest(log, trusted, w, r, http.StatusUnsupportedMediaType, mcp.INVALID_REQUEST, fmt.Sprintf(
				"pgbus: the body of a POST to the MCP endpoint is a JSON-RPC message in JSON: send it with the header Content-Type: %s (this request's Content-Type: %s)", mediaJSON, got))
			return
		}
		if accept := strings.Join(r.Header.Values("Accept"), ","); !acceptsAnswer(accept) {
			refuseRequest(log, trusted, w, r, http.StatusNotAcceptable, mcp.INVALID_REQUEST, fmt.Sprintf(
				"pgbus: the MCP endpoint answers a POST in %s or as an event stream (%s), and this request's Accept header, %q, takes neither: send Accept: %s, %s",
				mediaJSON, mediaStream, clip(accept), mediaJSON, mediaStream))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isJSONMedia reports whether a Content-Type header names JSON, with any
// parameters (a charset).
func isJSONMedia(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && media == mediaJSON
}

// acceptsAnswer reports whether an Accept header (its values joined by
// commas) takes JSON or an event stream: by name or wildcard, with a
// quality above zero. An empty one takes anything.
func acceptsAnswer(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, r := range strings.Split(accept, ",") {
		if strings.TrimSpace(r) == "" {
			continue
		}
		media, params, err := mime.ParseMediaType(r)
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
				continue
			}
		}
		switch media {
		case "*/*", "application/*", "text/*", mediaJSON, mediaStream:
			return true
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
