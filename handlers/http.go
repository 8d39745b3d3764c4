package handlers

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/net/http/httpguts"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/envref"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/retryafter"
)

// TypeHTTP is the handler type that sends each job to an HTTP endpoint.
const TypeHTTP = "http"

// Error classes of the http handler besides "http.<status>" (for example
// "http.503"), as the failure history and the DLQ show them.
const (
	// ClassHTTPNetwork: the request got no response (connection refused or
	// reset, DNS failure, TLS error, ...). Retryable.
	ClassHTTPNetwork = "http.network"
	// ClassHTTPTimeout: no complete response within the timeout. Retryable.
	ClassHTTPTimeout = "http.timeout"
)

// MaxRetryAfter caps the wait a Retry-After header can ask for, so that an
// absurd value does not park a message for days.
const MaxRetryAfter = time.Hour

// HTTPOptions are the options of an http handler block:
//
//	handler:
//	  type: http
//	  url: https://billing.internal/hooks/charge   # required
//	  method: POST                                 # POST (default), PUT, PATCH or DELETE
//	  timeout: 10s                                 # one attempt, default 30s
//	  headers: {Authorization: "Bearer ${ACME_TOKEN}"}
//	  max_concurrency: 4                           # default: no limit but the queue's concurrency
//	  breaker: {failure_threshold: 5, cool_off: 10s, max_cool_off: 5m}
//	  on_status: {409: discard, 5xx: {action: retry, max_retries: 10}}
//
// Each job's payload is sent as the JSON body with Content-Type
// application/json and Idempotency-Key set to the job's idempotency key; a
// job whose key holds a control character, which no header can carry, is
// dead-lettered without a request.
// 2xx is success; 408, 429, 5xx, network errors and timeouts are
// retryable (429 and 503 wait for their Retry-After, in seconds or as an
// HTTP date, capped at MaxRetryAfter; a date is measured from the
// response's Date, the server's clock, when it has one); other statuses
// are non-retryable and dead-letter the message at once. Redirects are
// not followed: a 3xx is non-retryable, its failure saying where it pointed.
// on_status overrides this per status. The timeout bounds
// the request; with max_concurrency a job first waits up to the timeout
// for a slot (an attempt lasts up to twice the timeout), and one that gets
// none in time is snoozed, using no attempt. Only retryable failures count
// toward the circuit breaker.
//
// The values of headers but those that describe the body or what is
// accepted (Content-Type, Accept, User-Agent, ...) are secrets, and so
// are the parts of url a webhook's secret hides in: its password, every
// value of its query (?token=...&sig=..., whatever the key), and the
// segments of its path that look like a token (16 characters or more, no
// dot, with a run of 8 letters and digits or more mixing both; a UUID
// too). Each occurrence of one (of MinSentSecret characters or more) in
// the response body, a redirect's location or a transport error, as sent
// or encoded (JSON-escaped, percent-encoded, in HTML or base64), is
// hidden before the failure is stored or logged, as is a credential
// such as Bearer 3f9c... without its scheme, and the password as the
// request's Basic credential. Failures quote url without its credentials
// and query, with each token-shaped segment as [REDACTED]:
// POST https://hooks.example.com/services/T0123ABCD/B0456EFGH/[REDACTED]: 503.
//
// ${NAME} in url and in the values of headers is replaced by the
// environment variable NAME when the handler is built (Build), so that a
// token stays out of the file; $${NAME} is a literal ${NAME}, and a ${
// without its closing } is refused ($${ is a literal ${). A variable
// that is not set, or empty, fails Build, naming it and the key; Check
// does not need it. A variable's value is a secret whatever the header
// (as the url's password is), and messages quote url as written, with
// its ${NAME}s. A value goes into url as it is, not escaped: one that would
// change the url's structure where it stands fails Build (and Check, where
// the variable is set): a # (the url would end there), a ? with more of
// the url after the reference (that rest would become the query), or a &
// within a query parameter (?token=${TOKEN}&tenant=acme). A whole url,
// the end of one with its query, or a whole query (?${QUERY}) may hold ?
// and &.
//
// The response body is read, for up to half a second, so that the next
// request reuses the connection: up to 320 KB after a 2xx, up to 256 KB
// past the 64 KB kept to quote after another status. A longer body, or
// one still coming then, is left and its connection closed.
//
// The help tag of each field is its documentation, shown by pgbus help
// config.
type HTTPOptions struct {
	URL            string            `yaml:"url" help:"required: the absolute http:// or https:// URL each job is sent to. ${NAME} in it is the environment variable NAME (as in headers), and failures quote the url as written, without its credentials and query. The value goes in as it is, not escaped: write it percent-encoded as the place it stands needs. One that would change the url's structure there is refused, naming the variable: a # (the url would end at it), a ? with more of the url after the reference (that rest would become the query), or a & within a query parameter (?token=${TOKEN}&tenant=acme); write them %23, %3F and %26 in the variable. A whole url, the end of one with its query, or a whole query (?${QUERY}) may hold ? and &. A + in a query value reads as a space to most servers: write it %2B. Where a webhook's secret hides in it, it is a secret, hidden as headers' values are: its password (user:password@), every value of its query of 8 characters or more (?token=...&sig=..., whatever the key), and every segment of its path that looks like a token: 16 characters or more, no dot, with a run of 8 letters and digits or more mixing both, such as the last of https://hooks.example.com/services/T0123ABCD/B0456EFGH/Xk9pQ2rT7vLm3nB8wZ4yC6dF, which failures quote as [REDACTED]. Words, numbers, dates and versions (orders, 2026-11-30, v1) are no token; a UUID is, as the url names the endpoint, not one message's order"`
	Method         string            `yaml:"method" help:"POST (the default), PUT, PATCH or DELETE"`
	Headers        map[string]string `yaml:"headers" help:"headers sent with every request, such as Authorization or Content-Type; not Idempotency-Key (the job's key) nor those of the transport (Host, Content-Length, ...). ${NAME} in a value is the environment variable NAME, so that a token stays out of the file (Authorization: \"Bearer ${ACME_TOKEN}\"; $${NAME} for a literal ${NAME}, and $${ for a literal ${, as a ${ without its closing } is refused): pgbus work and pgbus serve refuse to start while it is not set, the commands that run no worker do not need it, and its value is a secret whatever the header. Every value is a secret but those of Accept, Accept-Charset, Accept-Encoding, Accept-Language, Cache-Control, Content-Encoding, Content-Language, Content-Type, Origin, Pragma and User-Agent: where the downstream says one back (an error body, a redirect), it is stored, logged and shown as [REDACTED], and so is the credential of a value such as Bearer 3f9c... without its scheme, and the value of each cookie of a Cookie header (session=3f9c...) without its name. A value shorter than 8 characters is not hidden so, as it would hide common words too"`
	MaxConcurrency *int              `yaml:"max_concurrency" help:"bounds the requests in flight from this process to the URL (1..10000); a job waits up to its timeout for a free slot, then the request has its whole timeout (an attempt lasts up to twice the timeout), and one that gets no slot in time is put back without using an attempt. Default: no bound but the queue's concurrency"`
	Breaker        BreakerOptions    `yaml:"breaker" help:"the circuit breaker of the downstream, named http:<host:port> and shared by every worker process, and by the http handlers of every queue that send to the same host:port, whatever their path, unless their breaker has a name of its own: handlers that share a breaker give it the same settings, or a worker refuses to start; on by default"`
	OnStatus       Rules             `yaml:"on_status" help:"overrides what a status does: keys are a status (300..599) or a class of them (3xx, 4xx, 5xx; an exact status wins), values an action or a mapping with these keys"`
}

// StatusError is a response with a status other than 2xx.
type StatusError struct {
	Method string
	// URL is the request's URL without credentials and query, and with
	// the segments of its path that look like a token as redact.Marker
	// (see HTTPOptions).
	URL        string
	StatusCode int
	// Hint is the wait the Retry-After header asked for, capped at
	// MaxRetryAfter; zero when it gave none.
	Hint time.Duration
	// Location is where a redirect (3xx) pointed, without credentials,
	// query and token-shaped path segments, as URL; empty for other
	// statuses or none.
	Location string
	// Body is the start of the response body (at most MaxSnippet bytes),
	// made printable, with its secrets hidden (as ops.RedactText hides
	// them, and the secrets the handler sent) before it was cut.
	Body string
	// Captured is the start of the body for the failure history, at most
	// engine.MaxOutputChars characters, its secrets hidden as in Body.
	Captured engine.Output
}

// FailureOutput is the start of the response body.
func (e *StatusError) FailureOutput() engine.Output { return e.Captured }

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.URL, e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" { // none for 599, say
		b.WriteString(" " + text)
	}
	switch {
	case e.Hint >= MaxRetryAfter:
		fmt.Fprintf(&b, " (Retry-After %s, the most a retry waits for one: the response may have asked for longer)", e.Hint)
	case e.Hint > 0:
		fmt.Fprintf(&b, " (Retry-After %s)", e.Hint)
	}
	if e.Location != "" {
		// Redirects are not followed: a POST would come back as a GET
		// without the payload.
		fmt.Fprintf(&b, " (redirects to %s, which the handler does not follow; set url to where the requests belong)", e.Location)
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

// ErrorClass is "http.<status>", for example "http.503".
func (e *StatusError) ErrorClass() string { return "http." + strconv.Itoa(e.StatusCode) }

// RequestError is a request that got no response: a network error or a
// timeout.
type RequestError struct {
	Method  string
	URL     string
	Timeout bool
	// After is how long the request ran; Limit is its timeout.
	After time.Duration
	Limit time.Duration
	Err   error
	// Problem says what to fix, when the handler could tell: a server
	// certificate this host does not accept.
	Problem string
}

// TimeoutLimit is the timeout the request ran out of; 0 for a network
// error.
func (e *RequestError) TimeoutLimit() time.Duration {
	if e.Timeout {
		return e.Limit
	}
	return 0
}

func (e *RequestError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("%s %s: no response within %s (timeout): %v", e.Method, e.URL, e.After.Round(time.Millisecond), e.Err)
	}
	msg := fmt.Sprintf("%s %s: network error: %v", e.Method, e.URL, e.Err)
	if e.Problem != "" {
		msg += "; " + e.Problem
	}
	return msg
}

// certificateProblem says what to fix about a server certificate that
// this host does not accept, or "" when err is about something else. Such
// an attempt is retried as any network error (a certificate renewed on the
// server fixes it), but what fixes it is a person.
func certificateProblem(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by an authority this host does not trust (self-signed, or a private CA): add the CA to this host's trust store (or SSL_CERT_FILE) and restart the worker, or have the server send its whole chain"
	case errors.As(err, &hostname):
		return "the server's certificate is not for the host of url: set url to a name the certificate holds, or fix the certificate"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "the server's certificate has expired or is not valid yet (or this host's clock is off): renew it on the server"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid for this use: fix it on the server"
	}
	return ""
}

func (e *RequestError) Unwrap() error { return e.Err }

// ErrorClass is "http.timeout" or "http.network".
func (e *RequestError) ErrorClass() string {
	if e.Timeout {
		return ClassHTTPTimeout
	}
	return ClassHTTPNetwork
}

func init() {
	registry[TypeHTTP] = handlerType{build: buildHTTP, check: checkHTTP, options: HTTPOptions{},
		summary: "sends each job's payload as a JSON request, with Idempotency-Key set to the job's key; 2xx succeeds, 408, 429, 5xx, network errors and timeouts are retried, other statuses dead-letter the message"}
}

func buildHTTP(spec Spec) (engine.HandlerFunc, engine.HandlerOptions, error) {
	h, opts, err := newHTTPHandler(spec, true)
	if err != nil {
		return nil, engine.HandlerOptions{}, typeError(TypeHTTP, err)
	}
	return h.handle, opts, nil
}

// checkHTTP checks an http block without needing the environment
// variables its ${NAME}s name, which only the machines that run its
// workers need to have.
func checkHTTP(spec Spec) error {
	if _, _, err := newHTTPHandler(spec, false); err != nil {
		return typeError(TypeHTTP, err)
	}
	return nil
}

// reservedHeaders are set by pgbus or by the transport.
var reservedHeaders = []string{"Idempotency-Key", "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Keep-Alive", "Proxy-Connection"}

type httpHandler struct {
	method  string
	url     string // as configured
	shown   string // for messages: no credentials, no query
	header  http.Header
	client  *http.Client
	timeout time.Duration
	slots   chan struct{} // nil: no max_concurrency
	exact   map[int]engine.Action
	classes map[int]engine.Action // by status / 100
	// secrets are the header values and the parts of the url (its
	// password, query values and token-shaped path segments) the handler
	// sends that are secrets (see HTTPOptions), hidden in what the
	// downstream says back.
	secrets sentSecrets
}

// newHTTPHandler checks an http block and makes its handler; resolve
// replaces its ${NAME}s by the environment's variables, without which the
// handler is not ready to run (see expandOption).
func newHTTPHandler(spec Spec, resolve bool) (*httpHandler, engine.HandlerOptions, error) {
	var o HTTPOptions
	if err := decodeKeyed(spec, &o); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	timeout, err := timeoutOf(spec)
	if err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	raw, urlVars, known, err := expandOption("url", "", o.URL, resolve)
	if err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	// Unknown only for Check: a stand-in lets the other options be
	// checked.
	u := &url.URL{Scheme: "https", Host: "unresolved.invalid"}
	if known {
		if u, err = checkURL(raw, o.URL, urlVars); err != nil {
			return nil, engine.HandlerOptions{}, err
		}
		if err := envref.CheckURLValues(o.URL, urlVars); err != nil {
			return nil, engine.HandlerOptions{}, optionErrorf("url", "%v", err)
		}
	}
	h := &httpHandler{
		method: "POST",
		url:    u.String(),
		// Failures quote it as written: a variable's value, which is kept
		// out of the file, is kept out of them too. Its token-shaped path
		// segments are marked after, so that a ${NAME} stays as written.
		shown:   hidePathTokens(envref.Hide(bareURL(u), urlVars)),
		header:  http.Header{},
		timeout: timeout,
		exact:   map[int]engine.Action{},
		classes: map[int]engine.Action{},
	}
	if o.Method != "" {
		m := strings.ToUpper(o.Method)
		if !slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE"}, m) {
			return nil, engine.HandlerOptions{}, optionErrorf("method", "%q is not allowed; use POST, PUT, PATCH or DELETE (the payload is the request body)", o.Method)
		}
		h.method = m
	}
	h.header.Set("Content-Type", "application/json")
	h.header.Set("User-Agent", "pgbus")
	given := map[string]string{} // by canonical name: the name as written
	for _, name := range sortedKeys(o.Headers) {
		key := "headers." + name
		other, twice := given[http.CanonicalHeaderKey(name)]
		given[http.CanonicalHeaderKey(name)] = name
		switch {
		case twice:
			// One of them would be dropped without a word.
			return nil, engine.HandlerOptions{}, optionErrorf(key, "the header is given twice (also as %q); header names ignore case, so keep one", other)
		case !httpguts.ValidHeaderFieldName(name):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
		case slices.Contains(reservedHeaders, http.CanonicalHeaderKey(name)):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "%s is set by pgbus or the HTTP transport and cannot be configured", http.CanonicalHeaderKey(name))
		}
		value, vars, known, err := expandOption("headers", "header "+name, o.Headers[name], resolve)
		switch {
		case err != nil:
			return nil, engine.HandlerOptions{}, entryAt(err, key)
		case known && !httpguts.ValidHeaderFieldValue(value):
			return nil, engine.HandlerOptions{}, optionErrorf(key, "the value holds a control character (a line break, NUL, ESC, DEL, ...), which a header cannot carry; remove it (a tab is allowed)")
		}
		h.header.Set(name, value)
		if !plainHeader(http.CanonicalHeaderKey(name)) {
			h.secrets.addNamedHeader(name, value)
		}
		for _, v := range vars {
			h.secrets.add(v.Value) // kept out of the file, so a secret whatever the header
		}
	}
	for _, v := range urlVars {
		h.secrets.add(v.Value)
	}
	h.secrets.addURL(u)
	idle := 64
	if o.MaxConcurrency != nil {
		n := *o.MaxConcurrency
		if n < 1 || n > engine.MaxConcurrency {
			return nil, engine.HandlerOptions{}, optionErrorf("max_concurrency", "%d is out of range 1..%d (leave it out for no limit but the queue's concurrency)", n, engine.MaxConcurrency)
		}
		h.slots = make(chan struct{}, n)
		idle = n
	}
	opts := engine.HandlerOptions{Timeout: timeout}
	if h.slots != nil {
		// The wait for a slot, then the request, each up to the timeout.
		opts.Timeout = 2 * timeout
	}
	if opts.Policies, err = h.statusPolicies(o.OnStatus); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if opts.Breaker, err = o.Breaker.config("http:" + net.JoinHostPort(u.Hostname(), port)); err != nil {
		return nil, engine.HandlerOptions{}, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = idle
	h.client = &http.Client{
		Transport: transport,
		// A redirect of a POST would turn into a GET without the payload;
		// a 3xx is returned as it is and classified.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return h, opts, nil
}

// shownURL is u for messages: without credentials, query and fragment,
// which may hold secrets, and with the segments of its path that look like
// a token (tokenSegment) replaced by redact.Marker.
func shownURL(u *url.URL) string { return hidePathTokens(bareURL(u)) }

// bareURL is u without credentials, query and fragment.
func bareURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// quotedURL is written, a url as configured, as errors about it quote
// it, parsed or not: its password, query and fragment hidden
// (redact.URL), and the segments of its path that look like a token
// (see hidePathTokens), as in what failures quote of it.
func quotedURL(written string) string { return hidePathTokens(redact.URL(written)) }

// checkURL accepts absolute http and https URLs with a host. raw is the
// url with its ${NAME}s replaced by vars; errors quote it as written, and
// what the parser says with each variable's value as its ${NAME}.
func checkURL(raw, written string, vars []envref.Var) (*url.URL, error) {
	hide := func(s string) string { return envref.Hide(s, vars) }
	if strings.TrimSpace(raw) == "" {
		return nil, optionErrorf("url", "missing; give the absolute http:// or https:// URL that receives each job")
	}
	u, err := url.Parse(raw)
	shown := quotedURL(written)
	if err != nil && redact.URLPassword(raw, redact.Marker) != raw {
		// The parser's error may quote part of the password (an invalid
		// port ":pa" of "user:pa/ss@host"): the error of the url with a
		// harmless one cannot.
		if _, err = url.Parse(redact.URLPassword(raw, "x")); err == nil {
			return nil, optionErrorf("url", "%q is not a URL: its password holds characters a URL must percent-encode (such as / as %%2F, @ as %%40, %% as %%25, # as %%23, ? as %%3F)", shown)
		}
	}
	raw = shown // from here on, raw is for messages
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, optionErrorf("url", "%q is not a URL: %s", raw, hide(err.Error()))
	}
	switch {
	case u.Scheme == "":
		return nil, optionErrorf("url", "%q has no scheme; write it as http://... or https://...", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, optionErrorf("url", "%q: scheme %q is not supported; use http or https", raw, hide(u.Scheme))
	case u.Opaque != "" || u.Hostname() == "":
		return nil, optionErrorf("url", "%q has no host; write it as %s://HOST[:PORT]/PATH", raw, hide(u.Scheme))
	}
	if p := u.Port(); p != "" {
		// The parser takes any digits: every request would fail, and be
		// retried, as a network error.
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, optionErrorf("url", "%q: port %s is out of range 1..65535", raw, hide(p))
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// statusPolicies checks on_status and returns its engine policies, exact
// statuses before classes of them.
func (h *httpHandler) statusPolicies(rules Rules) ([]engine.ErrorPolicy, error) {
	var exact, classes []engine.ErrorPolicy
	for _, k := range sortedKeys(rules) {
		key := "on_status." + k
		p, err := rules[k].policy(key)
		if err != nil {
			return nil, err
		}
		if len(k) == 3 && (k[1:] == "xx" || k[1:] == "XX") {
			c := int(k[0] - '0')
			if c < 3 || c > 5 {
				return nil, optionErrorf(key, "%q is not a class of statuses this handler classifies; use 3xx, 4xx or 5xx", k)
			}
			if _, twice := h.classes[c]; twice {
				// As 5XX and 5xx: only the first would be used, without a
				// word.
				other := k[:1] + "XX"
				if k[1:] == "XX" {
					other = k[:1] + "xx"
				}
				return nil, optionErrorf(key, "the class is given twice (also as %s); keep one", other)
			}
			h.classes[c] = p.Action
			prefix := "http." + k[:1]
			p.Match = func(err error) bool {
				class := engine.ErrorClass(err)
				return len(class) == len("http.503") && strings.HasPrefix(class, prefix) && isStatusClass(class)
			}
			classes = append(classes, p)
			continue
		}
		code, err := strconv.Atoi(k)
		if err != nil || len(k) != 3 {
			return nil, optionErrorf(key, "%q is not a status code; use a code such as 503, or 3xx, 4xx or 5xx", k)
		}
		if code < 300 || code > 599 {
			return nil, optionErrorf(key, "status %d cannot be overridden; use a status in 300..599 (2xx is success)", code)
		}
		h.exact[code] = p.Action
		p.Class = "http." + k
		exact = append(exact, p)
	}
	return append(exact, classes...), nil
}

func isStatusClass(class string) bool {
	_, err := strconv.Atoi(strings.TrimPrefix(class, "http."))
	return err == nil
}

// override returns the on_status action for a status, if any.
func (h *httpHandler) override(code int) (engine.Action, bool) {
	if a, ok := h.exact[code]; ok {
		return a, true
	}
	a, ok := h.classes[code/100]
	return a, ok
}

// takeSlot takes a max_concurrency slot, waiting for one up to the
// timeout, so that the request has its whole timeout after: sent with what
// the wait left of a shared deadline, the requests of jobs that waited
// failed as timeouts against a healthy downstream, using attempts and
// opening its breaker. A job that gets no slot in time is snoozed, using
// no attempt; nothing was sent.
func (h *httpHandler) takeSlot(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	wait, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	select {
	case h.slots <- struct{}{}:
		if wait.Err() == nil {
			return nil
		}
		<-h.slots // both were ready, and the wait was over: given back
	case <-wait.Done():
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // the worker is stopping
	}
	return engine.Snooze(time.Second)
}

// handle sends one job.
func (h *httpHandler) handle(ctx context.Context, job *engine.Job) error {
	if !httpguts.ValidHeaderFieldValue(job.IdempotencyKey) {
		// The transport would refuse the request: no retry can help, and
		// it says nothing of the downstream, so its breaker counts nothing.
		return engine.NonRetryable(fmt.Errorf("%s %s: the job's idempotency key %q holds a control character, which the Idempotency-Key header cannot carry; send the message again with a key of printable characters",
			h.method, h.shown, job.IdempotencyKey))
	}
	if h.slots != nil {
		if err := h.takeSlot(ctx); err != nil {
			return err
		}
		defer func() { <-h.slots }()
	}
	reqCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	body := []byte(job.Payload)
	if len(body) == 0 {
		body = []byte("null")
	}
	req, err := http.NewRequestWithContext(reqCtx, h.method, h.url, bytes.NewReader(body))
	if err != nil {
		return engine.NonRetryable(fmt.Errorf("%s %s: %w", h.method, h.shown, h.secrets.hideErr(err)))
	}
	req.Header = h.header.Clone()
	req.Header.Set("Idempotency-Key", job.IdempotencyKey)
	// The attempt's trace context, when a tracer started its span in ctx:
	// the downstream's spans join the message's trace under it.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	start := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err() // the worker is stopping
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query included
		}
		var ne net.Error
		timedOut := reqCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
		// The transport's error may quote what the downstream sent (a
		// malformed response's first line).
		return &RequestError{Method: h.method, URL: h.shown, Timeout: timedOut, After: time.Since(start), Limit: h.timeout,
			Err: h.secrets.hideErr(err), Problem: certificateProblem(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Success is decided: the body is read only so that the
		// connection is reused.
		readBody(resp.Body, 0, MaxCapture+maxDrain, drainWaitOf(ctx), cancel)
		return nil
	}
	// The status decided too: a bounded part is read to quote the start
	// of the error, then the rest of a body not much longer, so that the
	// connection is reused.
	data, cut := readBody(resp.Body, MaxCapture, maxDrain, drainWaitOf(ctx), cancel)
	return h.classify(resp, data, cut)
}

// How much of a response body, past what the handler quotes, is read and
// dropped so that its connection is reused, and for how long at most.
const (
	// maxDrain is 256 KB, as much as net/http's server reads of a request
	// body its handler left: soon read on any network, whereas a body
	// much longer takes longer than a new connection would to open.
	maxDrain = 256 << 10
	// drainWait bounds the reading of a body, the part quoted included:
	// a body that comes slowly is not worth holding the job, its worker
	// and its max_concurrency slot for. The attempt's timeout bounds it
	// too.
	drainWait = 500 * time.Millisecond
)

// readBody reads the start of a response body, up to keep bytes, to quote
// it, then reads and drops up to n bytes of the rest, so that the
// transport puts the connection back into its pool for the next job: it
// closes a connection whose response was not read to its end. All of it
// takes wait (drainWait) at most: the status has decided what the attempt did,
// and a body that comes slowly is not worth holding the job, its worker
// and its max_concurrency slot for until the timeout. A longer or slower
// body is given up on by cancelling the request (cancel): its connection
// is closed, as it was. cut reports that the kept start is not the whole
// body.
func readBody(body io.Reader, keep, n int64, wait time.Duration, cancel context.CancelFunc) (data []byte, cut bool) {
	t := time.AfterFunc(wait, cancel)
	defer t.Stop()
	data, err := io.ReadAll(io.LimitReader(body, keep))
	if err != nil {
		return data, true
	}
	// One byte more than n, so that a body ending at the bound is read
	// to its end (io.EOF), which is what frees the connection.
	m, err := io.Copy(io.Discard, io.LimitReader(body, n+1))
	return data, int64(len(data)) == keep && (m > 0 || err != nil)
}

// drainWaitKey carries, in a job's context, another bound than drainWait,
// for the tests of what reading a body to its end does, whose timing is
// not theirs to assert on a busy machine.
type drainWaitKey struct{}

func drainWaitOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(drainWaitKey{}).(time.Duration); ok {
		return d
	}
	return drainWait
}

// classify turns a response other than 2xx into the error that tells the
// engine what to do.
func (h *httpHandler) classify(resp *http.Response, body []byte, cut bool) error {
	code := resp.StatusCode
	hint, _ := retryafter.Wait(resp.Header, time.Now(), MaxRetryAfter)
	text := shownText(body, false, h.secrets) // the end of a long body is cut off, not its start
	e := &StatusError{Method: h.method, URL: h.shown, StatusCode: code, Body: snippet(text, MaxSnippet),
		Captured: output("response_body", text, cut, false)}
	if loc, err := resp.Location(); err == nil && code >= 300 && code <= 399 {
		e.Location = h.secrets.hideString(shownURL(loc))
	}
	if action, ok := h.override(code); ok {
		// The policy built from on_status decides; a hint is used only when
		// it asks for one.
		if action == engine.ActionRetryAfterHint && hint > 0 {
			e.Hint = hint
			return engine.RetryAfter(hint, e)
		}
		return e
	}
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if hint > 0 {
			e.Hint = hint
			return engine.RetryAfter(hint, e)
		}
		return e
	case code == http.StatusRequestTimeout || (code >= 500 && code <= 599):
		return e
	default:
		return engine.NonRetryable(e)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
