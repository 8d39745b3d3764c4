package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgbus/pgbus/internal/clientaddr"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/throttle"
	"github.com/pgbus/pgbus/ops"
)

// cookieName names the session cookie of the server r was sent to: a
// browser keeps cookies by host, not port, so each port has its own, and
// two servers on one machine do not log each other out.
func cookieName(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return "pgbus_session_" + port
	}
	return "pgbus_session"
}

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

// A session cookie is base64url(expiry, flags, nonce) "." base64url(HMAC):
// signed with a key of this process, so a restart logs everybody out.
const (
	flagAuthed   = 1 // the holder gave the token (or none is needed)
	sessionBytes = 8 + 1 + 16
)

// session is a request's session: its cookie value, whether it is logged
// in, and when it expires.
type session struct {
	value   string
	authed  bool
	expires time.Time
}

// endedSessions are the sessions logged out before they expired: their
// cookies, still signed, no longer open a page. Each is forgotten once it
// expires; only a logged-in session can add one.
type endedSessions struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// end records the session value as ended until it expires, and forgets
// those that expired by now.
func (e *endedSessions) end(value string, expires, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for v, t := range e.until {
		if !t.After(now) {
			delete(e.until, v)
		}
	}
	e.until[value] = expires
}

// ended reports whether the session value was logged out.
func (e *endedSessions) ended(value string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.until[value]
	return ok
}

func (s *server) sign(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)
}

// newSession mints a session cookie value.
func (s *server) newSession(authed bool) session {
	p := make([]byte, sessionBytes)
	binary.BigEndian.PutUint64(p, uint64(s.cfg.Now().Add(sessionTTL).Unix()))
	if authed {
		p[8] = flagAuthed
	}
	_, _ = rand.Read(p[9:])
	enc := base64.RawURLEncoding
	return session{value: enc.EncodeToString(p) + "." + enc.EncodeToString(s.sign(p)), authed: authed}
}

// readSession returns the request's valid session, if it has one.
func (s *server) readSession(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName(r))
	if err != nil {
		return session{}, false
	}
	body, mac, ok := strings.Cut(c.Value, ".")
	if !ok {
		return session{}, false
	}
	enc := base64.RawURLEncoding
	p, err1 := enc.DecodeString(body)
	sig, err2 := enc.DecodeString(mac)
	if err1 != nil || err2 != nil || len(p) != sessionBytes || !hmac.Equal(sig, s.sign(p)) {
		return session{}, false
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(p)), 0)
	if expires.Before(s.cfg.Now()) || s.ended.ended(c.Value) {
		return session{}, false
	}
	return session{value: c.Value, authed: p[8] == flagAuthed, expires: expires}, true
}

// LoggedIn reports whether r comes from a logged-in browser (a session
// that logged in) or a script (the right bearer token, compared in
// constant time but not counted toward the throttle of wrong tokens:
// the server in front checks and counts a bearer token itself before it
// asks), or needs no login (no token is set). A server in front bounds
// the body of any other request: it could only be refused.
func (s *server) LoggedIn(r *http.Request) bool {
	if s.cfg.AuthToken == "" {
		return true
	}
	if token, sent := bearerToken(r); sent {
		return s.tokenOK(token)
	}
	sess, ok := s.readSession(r)
	return ok && sess.authed
}

// setSession sends the session cookie.
func (s *server) setSession(w http.ResponseWriter, r *http.Request, sess session) {
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: sess.value, Path: s.base + "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
}

// secure reports whether the session cookie is marked Secure: over TLS,
// when configured, and when a trusted proxy says the browser used HTTPS.
func (s *server) secure(r *http.Request) bool {
	return s.cfg.SecureCookies || clientaddr.HTTPS(r, s.cfg.TrustedProxies)
}

// csrf is the CSRF token of a session: forms carry it, and a POST whose
// token is not its session's is refused. A page of another site can
// neither read it nor make the browser send the cookie (SameSite=Strict).
func (s *server) csrf(sess session) string {
	if sess.value == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(s.sign([]byte("csrf\x00" + sess.value)))
}

func (s *server) csrfOK(r *http.Request, sess session) bool {
	want := s.csrf(sess)
	got := r.PostFormValue("csrf")
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// tokenOK compares a token with the configured one in constant time (over
// digests, so that its length does not leak either).
func (s *server) tokenOK(token string) bool {
	a, b := sha256.Sum256([]byte(strings.TrimSpace(token))), sha256.Sum256([]byte(s.cfg.AuthToken))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// bearerToken returns the bearer token the request carries, as a script
// (not a browser) may send one.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return token, ok && strings.EqualFold(scheme, "Bearer")
}

// handlerFunc is a page or action, given the request's view.
type handlerFunc func(w http.ResponseWriter, r *http.Request, v *view)

// authed lets a request through to next when it is logged in (or no token
// is configured: then a first visit gets its session at once), sends a
// browser that is not to the login page, and refuses a POST without its
// session's CSRF token.
func (s *server) authed(next handlerFunc) http.HandlerFunc { return s.gate(next, false) }

// authedJSON is authed for an endpoint that scripts of the pages fetch: a
// request that is not logged in gets a 401 in JSON, not a redirect to a
// page a script cannot use.
func (s *server) authedJSON(next handlerFunc) http.HandlerFunc { return s.gate(next, true) }

func (s *server) gate(next handlerFunc, api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.readSession(r)
		bearer := false
		if token, sent := bearerToken(r); sent && s.cfg.AuthToken != "" {
			// A bearer token is a guess at the token like the login
			// form's, and throttled like it.
			var refused bool
			if bearer, refused = s.attempt(w, r, s.newView(r, session{}), nil, token, "bearer token"); refused {
				return
			}
		}
		switch {
		case bearer:
		case s.cfg.AuthToken == "" && (!ok || !sess.authed):
			if r.Method == http.MethodPost {
				s.refuseKeeping(w, r, s.newView(r, session{}), http.StatusForbidden, "This form has expired (the server restarted, or the session ended): go back, reload the page and send it again.", typedText(r))
				return
			}
			sess = s.newSession(true)
			s.setSession(w, r, sess)
		case !ok || !sess.authed:
			if api {
				s.logRefused(r, http.StatusUnauthorized, "not logged in")
				writeJSON(w, r, http.StatusUnauthorized, apiError{Error: "Log in first: open the dashboard's login page and enter the server's token (" + s.tokenFrom() + ")."})
				return
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				msg := "Log in first: this server needs its token (" + s.tokenFrom() + ")."
				if _, err := r.Cookie(cookieName(r)); err == nil {
					msg += " Your session ended (a login lasts 12 hours, and a restart of the server ends it): nothing was changed. Log in, then send the form again from its page."
				}
				// The login page leads back to the page the form came from.
				s.refused(w, r, s.newView(r, session{}), problem{Status: http.StatusUnauthorized, Message: msg, Kept: typedText(r),
					Links: []link{{"/login?next=" + url.QueryEscape(s.cameFrom(r)), "Log in, then send the form again"}}})
				return
			}
			s.redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
			return
		}
		v := s.newView(r, sess)
		if msg := unreadableRequest(r); msg != "" {
			s.refuse(w, r, v, http.StatusBadRequest, msg)
			return
		}
		if r.Method == http.MethodPost && !bearer && !s.csrfOK(r, sess) {
			s.refuseKeeping(w, r, v, http.StatusForbidden, "This form carries no valid CSRF token, so it was not sent from a page of this dashboard: nothing was changed. Reload the page and send the form from there.", typedText(r))
			return
		}
		ctx := ops.WithClient(r.Context(), Client)
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			// Showing a page (a preview of a retry or discard included)
			// asks for no operation: its dry runs stay out of the audit
			// log, which a reload or a browser's prefetch would fill.
			ctx = ops.WithPageView(ctx)
		}
		next(w, r.WithContext(ctx), v)
	}
}

// unreadableRequest parses r's query and, for a POST, its form, which
// actions read from r.PostForm whichever way the caller logged in; it says
// why when they cannot be read, "" when they can. Read as far as it goes,
// a query with a malformed escape (kind=normal%ZZ) would drop that filter,
// and a preview would cover more than its link says; a form that is not
// one, or one with too many fields, would be refused as carrying no CSRF
// token.
func unreadableRequest(r *http.Request) string {
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return fmt.Sprintf("The address's query cannot be read (%v): nothing was shown or changed. Follow the dashboard's own links, or mend the address: a %% starts an escape such as %%20.", err)
	}
	if r.Method != http.MethodPost {
		return ""
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return "The dashboard's actions take a form (application/x-www-form-urlencoded), as its pages send them, not a body of another type: nothing was changed. Send the form from its page."
	}
	if err := r.ParseForm(); err != nil {
		return fmt.Sprintf("The form cannot be read (%v): nothing was changed. Send it from its page; tick fewer messages at once if it carried many.", err)
	}
	return ""
}

// typedText is the corrected payload a form carries as typed, which a
// refusal before the form is read would otherwise lose: a session that
// ended while the person typed it (a restart of the server) must not cost
// the text.
func typedText(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	return r.PostFormValue("payload")
}

// loginPage asks for the token.
func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AuthToken == "" {
		s.redirect(w, r, "/")
		return
	}
	sess, ok := s.readSession(r)
	if !ok {
		sess = s.newSession(false)
		s.setSession(w, r, sess)
	}
	v := s.newView(r, sess)
	v.Title = "Log in"
	s.render(w, r, http.StatusOK, "login", v, s.loginForm(safeNext(r.URL.Query().Get("next"))))
}

// loginData is the login page's. Command is the command that serves the
// dashboard, whose --auth-token the page names (serverCommand).
type loginData struct {
	Next    string
	Error   string
	Command string
}

// loginForm is the login page's data, leading to next once logged in.
func (s *server) loginForm(next string) loginData {
	return loginData{Next: next, Command: s.serverCommand()}
}

// serverCommand is the command that serves the dashboard, as the login
// messages name it with its token's flag: pgbus serve --transport http
// beside an MCP endpoint (Config.MCP), pgbus dashboard alone.
func (s *server) serverCommand() string {
	if s.cfg.MCP != "" {
		return "pgbus serve --transport http"
	}
	return "pgbus dashboard"
}

// tokenFrom says where the server's token was given, by the command
// that serves the dashboard.
func (s *server) tokenFrom() string {
	return s.serverCommand() + " --auth-token, or PGBUS_MCP_TOKEN"
}

// login checks the token and starts a logged-in session.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AuthToken == "" {
		s.redirect(w, r, "/")
		return
	}
	sess, ok := s.readSession(r)
	v := s.newView(r, sess)
	v.Title = "Log in"
	if !ok || !s.csrfOK(r, sess) {
		s.refuse(w, r, v, http.StatusForbidden, s.staleLogin(r, ok))
		return
	}
	next := safeNext(r.PostFormValue("next"))
	form := s.loginForm(next)
	right, refused := s.attempt(w, r, v, &form, r.PostFormValue("token"), "login form")
	if refused {
		return
	}
	if !right {
		form.Error = "That is not the server's token. Enter the token the server was given (" + s.tokenFrom() + ")."
		s.render(w, r, http.StatusUnauthorized, "login", v, form)
		return
	}
	s.setSession(w, r, s.newSession(true))
	s.redirect(w, r, next)
}

// staleLogin says why a login form was refused. A form that came without
// any session cookie (hadSession false) over plain HTTP to a server whose
// cookie is Secure most likely lost it in the browser, which keeps a
// Secure cookie only over HTTPS: every login would then fail alike, and
// opening the login page again, all the first sentence asks, cannot help.
func (s *server) staleLogin(r *http.Request, hadSession bool) string {
	msg := "This login form has expired or was not sent from this dashboard: open the login page again and enter the token there."
	if !hadSession && s.cfg.SecureCookies && !clientaddr.HTTPS(r, s.cfg.TrustedProxies) {
		msg += " If this happens again, your browser is dropping the session cookie: this server is reached off loopback, so it marks the cookie Secure, which browsers keep only over HTTPS. Open the dashboard through https://, from a TLS reverse proxy in front of it (named with --trusted-proxies when it calls pgbus over plain HTTP), or tunnel to a loopback address (ssh -L 8080:127.0.0.1:8080) with pgbus listening there."
	}
	return msg
}

// attempt checks token, a guess at the server's token from the request's
// client sent via how, and logs a wrong one (never the token itself). When
// the client failed too often lately, it is refused before the token is
// looked at: attempt answers 429 with Retry-After and when the client may
// try again (an attempt of the login form gets the form back; a bearer
// token, an error page), and reports refused.
func (s *server) attempt(w http.ResponseWriter, r *http.Request, v *view, form *loginData, token, how string) (right, refused bool) {
	client := throttle.ClientKey(r, s.cfg.TrustedProxies)
	right, n, wait := s.logins.Attempt(client, s.cfg.Now, func() bool { return s.tokenOK(token) })
	if right {
		return true, false
	}
	if wait == 0 {
		s.log.Warn("dashboard: login with a wrong token", "via", how, "remote", r.RemoteAddr, "client", client,
			"failures_in_window", n, "limit", loginMaxFailures)
		return false, false
	}
	secs := int64((wait + time.Second - 1) / time.Second)
	at := s.cfg.Now().Add(time.Duration(secs) * time.Second).UTC().Format("15:04:05 MST")
	s.log.Warn("dashboard: login refused, too many wrong tokens", "remote", r.RemoteAddr, "client", client, "retry_after_seconds", secs)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	msg := fmt.Sprintf("Too many wrong tokens from your address: the token was not checked. Try again in %s (at %s). Copy the token the server was given (%s) rather than typing it.", plural.Count(secs, "second", "seconds"), at, s.tokenFrom())
	if form != nil {
		form.Error = msg
		s.render(w, r, http.StatusTooManyRequests, "login", v, *form)
	} else {
		v.Title = http.StatusText(http.StatusTooManyRequests)
		s.render(w, r, http.StatusTooManyRequests, "problem", v, problem{Status: http.StatusTooManyRequests, Message: msg, Links: []link{{"/login", "The login page"}}})
	}
	return false, true
}

// logout ends the session: its cookie is deleted, and refused should a
// copy of it come back.
func (s *server) logout(w http.ResponseWriter, r *http.Request, _ *view) {
	// Only a login is remembered as ended: a session that never logged in
	// (none does where no token is set) grants nothing to revoke, and
	// remembering each for its 12 hours let anyone fill the server's
	// memory with logouts.
	if sess, ok := s.readSession(r); ok && sess.authed {
		s.ended.end(sess.value, sess.expires, s.cfg.Now())
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: s.base + "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	to := "/"
	if s.cfg.AuthToken != "" {
		to = "/login"
	}
	s.redirect(w, r, to)
}

// redirect sends the browser to the dashboard's path p (such as "/dlq"),
// under the base path, with 303 See Other: after a form, the next page is
// fetched with GET.
func (s *server) redirect(w http.ResponseWriter, r *http.Request, p string) {
	http.Redirect(w, r, s.base+p, http.StatusSeeOther)
}

// safeNext keeps a redirect after login on this site, under the base
// path: a path, not a URL of another host. A browser reads a backslash as
// a slash and drops tabs and line breaks from a Location, so "/\\host" and
// "/<tab>/host" name another host too; and the Location is written with its
// dot segments resolved, so "/./\\host" and "/../x" are judged as
// resolved. A path with control characters or a backslash is refused
// whole; what is kept is the resolved path and its query.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || !strings.HasPrefix(next, "/") || u.Scheme != "" || u.Host != "" || u.User != nil ||
		strings.ContainsRune(next, '\\') || strings.ContainsRune(u.Path, '\\') ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "/"
	}
	p := path.Clean(u.Path)
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || p == "/login" || strings.HasPrefix(p, "/login/") {
		return "/"
	}
	return (&url.URL{Path: p, RawQuery: u.RawQuery}).String()
}
