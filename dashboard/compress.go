package dashboard

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// compressMin is the smallest body worth compressing: below it gzip's
// header and trailer take back most of what it saves.
const compressMin = 1 << 10

// gzipWriters are gzip writers to reuse: each holds some hundreds of
// kilobytes of state, and the overview is fetched again every few seconds
// with ?refresh=.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// writeBody sends body, whole, with status and its Content-Type,
// compressed with gzip when that is worth it and safe (compressible).
func writeBody(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Add("Vary", "Accept-Encoding, Sec-Fetch-Site")
	if len(body) >= compressMin && compressible(r) {
		var buf bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&buf)
		_, err := zw.Write(body)
		if err == nil {
			err = zw.Close()
		}
		gzipWriters.Put(zw)
		if err == nil {
			h.Set("Content-Encoding", "gzip")
			body = buf.Bytes()
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// compressible reports whether the response to r may be compressed: the
// client accepts gzip, and the browser says that the request comes from a
// page of the dashboard or from the person using it (Sec-Fetch-Site
// same-origin or none).
//
// That is BREACH's price. A page holds a secret, its session's CSRF token
// in every form, and echoes text of the request (a queue name searched
// for, a filter, the path of a page not found). Compressed, the size of a
// page tells whether a guess echoed in it matches the token's next
// characters, and a page of another site that makes the browser fetch
// pages with many guesses, while the attacker watches the sizes on the
// network, reads the token. The session cookie (SameSite=Strict) keeps
// requests of other sites out of a session, but not those of a site that
// shares the dashboard's domain (another subdomain), and a server without
// a token gives a session to every request. So only requests that no
// other page can make are compressed. A browser that does not say where a
// request comes from (one too old, or any over plain HTTP off loopback,
// where browsers send no Sec-Fetch-Site) gets pages as they are.
func compressible(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return acceptsGzip(r.Header.Values("Accept-Encoding"))
	}
	return false
}

// acceptsGzip reports whether the Accept-Encoding headers accept gzip: by
// name, or by * without gzip named, with a weight above 0.
func acceptsGzip(headers []string) bool {
	star, gz := false, false
	for _, h := range headers {
		for _, coding := range strings.Split(h, ",") {
			name, params, _ := strings.Cut(coding, ";")
			ok := weighted(params)
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "gzip", "x-gzip":
				if !ok {
					return false
				}
				gz = true
			case "*":
				star = ok
			}
		}
	}
	return gz || star
}

// weighted reports whether the parameters of a coding give it a weight
// above 0 (q=0 refuses it; without q it weighs 1).
func weighted(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q > 0
		}
	}
	return true
}
