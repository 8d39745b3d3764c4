package dashboard

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgbus/pgbus/internal/clientaddr"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// view is what every page's layout needs.
type view struct {
	Title    string
	Nav      string // the section of the page, for the navigation
	Page     string // the page's template, named on its main element
	CSRF     string
	CanWrite bool
	Login    bool // a token is configured: a logout button is shown
	LoggedIn bool
	// Refresh, when set (?refresh=N on a page that offers it), reloads
	// the page every Refresh seconds, without JavaScript.
	Refresh int
	now     time.Time
	url     *url.URL
}

// RefreshToggle is the page's URL with its auto-refresh switched: on
// (every 10 seconds) when off, off when on.
func (v *view) RefreshToggle() string {
	q := v.url.Query()
	if v.Refresh > 0 {
		q.Del("refresh")
	} else {
		q.Set("refresh", "10")
	}
	if len(q) == 0 {
		return v.url.Path
	}
	return v.url.Path + "?" + q.Encode()
}

// Current is the aria-current of the navigation's link to section, at
// path: "page" on that page itself (whatever its query), "true" on another
// page of the section (a queue's page in the overview's, a dead message's
// in the dead letters'), "" outside it.
func (v *view) Current(section, path string) string {
	switch {
	case v.Nav != section:
		return ""
	case v.url != nil && v.url.Path == path:
		return "page"
	default:
		return "true"
	}
}

func (s *server) newView(r *http.Request, sess session) *view {
	v := &view{CSRF: s.csrf(sess), CanWrite: !s.svc.ReadOnly(), Login: s.cfg.AuthToken != "", LoggedIn: sess.authed, url: r.URL}
	// 0 or less asks for no refresh, as leaving it out does.
	if n, err := strconv.Atoi(r.URL.Query().Get("refresh")); err == nil && n > 0 && r.Method == http.MethodGet {
		v.Refresh = min(max(n, 5), 3600)
	}
	return v
}

// page is a parsed page: the layout with the page's own templates.
type page struct{ t *template.Template }

// pageData is what a page template is given.
type pageData struct {
	*view
	Data any
}

// parsePages parses the pages of a dashboard served under base (see
// Config.BasePath): the templates write every address of the dashboard
// through the helpers u, link and static, which put base in front of it,
// and the commands of hints through hintcmds, which puts commandFlags
// (Config.CommandFlags) after them.
func parsePages(base, commandFlags string) (map[string]*page, error) {
	layout, err := template.New("layout.html").Funcs(funcs).Funcs(template.FuncMap{
		"hintcmds": func(hints []ops.Hint) []command { return hintCommands(hints, commandFlags) },
		"u":        func(p string) string { return base + p },
		"link":     func(p string, kv ...any) string { return base + pageLink(p, kv...) },
		"static":   func(name string) string { return base + staticURL(name) },
	}).ParseFS(assets, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	files, err := assetsGlob("templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*page{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(assets, f)
		if err != nil {
			return nil, err
		}
		out[name] = &page{t: t}
	}
	return out, nil
}

func assetsGlob(pattern string) ([]string, error) {
	entries, err := assets.ReadDir(path.Dir(pattern))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if ok, _ := path.Match(pattern, path.Dir(pattern)+"/"+e.Name()); ok {
			out = append(out, path.Dir(pattern)+"/"+e.Name())
		}
	}
	return out, nil
}

// render writes a page; a template that fails is a bug, logged and shown
// as such.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view, data any) {
	p, ok := s.pages[name]
	if !ok {
		panic("dashboard: no page " + name)
	}
	v.Page, v.now = name, s.ages() // after the page's operation, which measured the server's clock
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, "layout.html", pageData{view: v, Data: data}); err != nil {
		s.log.Error("dashboard: render a page", "page", name, "path", s.base+r.URL.Path, "err", err)
		http.Error(w, "pgbus dashboard: this page could not be rendered; the server's log says why", http.StatusInternalServerError)
		return
	}
	writeBody(w, r, status, "text/html; charset=utf-8", buf.Bytes())
}

// problem is an error page's.
type problem struct {
	Status  int
	Message string
	Links   []link
	// Kept is the corrected payload a refused form carried, shown again
	// so that it is not lost.
	Kept string
	// Commands are the next steps the dashboard has no page for (such as
	// pgbus migrate), to run from a shell.
	Commands []command
}

// command is a next step as a pgbus command line: Text says what it does,
// Help is the command that says more.
type command struct {
	Text, Line, Help string
}

// link is a next step, as a page of the dashboard.
type link struct {
	Href, Text string
}

// refuse renders a refusal.
func (s *server) refuse(w http.ResponseWriter, r *http.Request, v *view, status int, msg string) {
	s.refuseKeeping(w, r, v, status, msg, "")
}

// refuseKeeping renders a refusal that shows kept, the text a person
// typed into the refused form, again.
func (s *server) refuseKeeping(w http.ResponseWriter, r *http.Request, v *view, status int, msg, kept string) {
	s.refused(w, r, v, problem{Status: status, Message: msg, Kept: kept})
}

// refuseLinks renders a refusal with pages to go on to, before the
// overview.
func (s *server) refuseLinks(w http.ResponseWriter, r *http.Request, v *view, status int, msg string, links []link) {
	s.refused(w, r, v, problem{Status: status, Message: msg, Links: links})
}

// logRefused tells the log of a refused request, with the reason why,
// paced by status (server.refusals).
func (s *server) logRefused(r *http.Request, status int, reason string) {
	if told, quiet := s.refusals.Due(status, s.cfg.Now()); told {
		s.log.Warn("dashboard: request refused", "status", status, "method", r.Method, "path", s.base+r.URL.Path, "remote", r.RemoteAddr,
			"client", clientaddr.Name(r, s.cfg.TrustedProxies), "reason", reason, "refused_unlogged", quiet)
	}
}

// refused logs and renders the refusal p, its links ending with the
// overview.
func (s *server) refused(w http.ResponseWriter, r *http.Request, v *view, p problem) {
	s.logRefused(r, p.Status, p.Message)
	v.Title = http.StatusText(p.Status)
	if p.Status != http.StatusUnauthorized {
		// A request not logged in is sent to log in, which leads back.
		p.Links = append(p.Links, s.backLinks(r, nil)...)
	}
	p.Links = append(p.Links, link{"/", "Back to the overview"})
	s.render(w, r, p.Status, "problem", v, p)
}

// backLinks lead back to where the person was, when r names it: the page
// a refused form was posted from, or the dead-letter page asked for
// without the filter it could not read (err). None leads out of the
// dashboard.
func (s *server) backLinks(r *http.Request, err error) []link {
	if r.Method == http.MethodPost {
		if from := s.cameFrom(r); from != "/" {
			return []link{{from, "Back to the page you came from"}}
		}
		return nil
	}
	if r.Method != http.MethodGet || !errors.Is(err, ops.ErrInvalid) || (r.URL.Path != "/dlq" && r.URL.Path != "/dlq/messages") {
		return nil
	}
	q := r.URL.Query()
	var oe *ops.Error
	if errors.As(err, &oe) && oe.Field != "" && oe.Field != "cursor" && q.Has(oe.Field) { // a cursor is no filter
		q.Del(oe.Field)
		q.Del("cursor")
		href := r.URL.Path
		if len(q) > 0 {
			href += "?" + q.Encode()
		}
		return []link{{href, "Show this page without its " + oe.Field + " filter"}}
	}
	return []link{{r.URL.Path, "Show this page with its filters cleared"}}
}

// cameFrom is the page of this dashboard a form was posted from, as its
// Referer names it: its path under the base path, without the base path,
// and its query; "/" (the overview) when the Referer names none, or names
// a page of another site or outside the dashboard, or the login page.
func (s *server) cameFrom(r *http.Request) string {
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || (ref.Scheme != "http" && ref.Scheme != "https") || ref.Host == "" || !strings.EqualFold(ref.Host, r.Host) || ref.User != nil {
		return "/"
	}
	rest, under := strings.CutPrefix(ref.Path, s.base)
	if !under || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "/"
	}
	if rest == "" {
		rest = "/"
	}
	u := url.URL{Path: rest, RawQuery: ref.RawQuery}
	return safeNext(u.String())
}

// fail renders the error of an operation: its message (redacted, as all
// text leaving the process) and its next steps as links, then more.
func (s *server) fail(w http.ResponseWriter, r *http.Request, v *view, err error, more ...link) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ops.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, ops.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ops.ErrReadOnly):
		status = http.StatusForbidden
	case errors.Is(err, ops.ErrChanged):
		status = http.StatusConflict
	case ops.ErrorKind(err) == ops.KindUnavailable, errors.Is(err, ops.ErrNotReady):
		// Its message says the database does not answer, or takes no
		// more connections, or why this process cannot use it yet (it
		// started while the database was down, and holds its calls
		// until the schema is ready), and what to do: a passing state of
		// the server, which 503 tells proxies and monitors, not a fault
		// of this page.
		status = http.StatusServiceUnavailable
	case ops.ErrorKind(err) == ops.KindPermission:
		// Its message names the grants: a setting of the deployment,
		// which reloading does not change, not a fault of this page.
		status = http.StatusForbidden
	}
	msg, _ := ops.RedactText(err.Error())
	if status == http.StatusForbidden && ops.ErrorKind(err) == ops.KindPermission && s.forbidden.Due(time.Now()) {
		s.log.Warn("dashboard: the database refused this server's role a privilege; said here once a minute while it lasts", "path", s.base+r.URL.Path, "err", msg)
	}
	hints := ops.NextSteps(err)
	if status == http.StatusInternalServerError {
		s.log.Error("dashboard: operation failed", "path", s.base+r.URL.Path, "err", msg)
		// An error with next steps other than the health check, which is
		// the overview a reload shows, knows its cause (a schema to
		// migrate, a call to make again): a database down is not it.
		todo := "If the database is down or restarting, reload this page in a moment; the server's log has the details."
		if slices.ContainsFunc(hints, func(h ops.Hint) bool { return h.Op != ops.OpHealth }) {
			todo = "The next steps below say what to do."
		}
		msg = "pgbus could not answer: " + msg + ". " + todo
	}
	if status == http.StatusServiceUnavailable {
		if s.unavailable.Due(time.Now()) {
			s.log.Warn("dashboard: the database is unavailable; said here once a minute while it lasts", "path", s.base+r.URL.Path, "err", msg)
		}
		msg = "pgbus could not answer: " + msg + ". Reload this page in a moment."
	}
	links := append(hintLinks(hints), more...)
	links = append(links, s.backLinks(r, err)...)
	links = append(links, link{"/", "Back to the overview"})
	// One link a page: the health check's is the overview already.
	seen := map[string]bool{}
	links = slices.DeleteFunc(links, func(l link) bool {
		dup := seen[l.Href]
		seen[l.Href] = true
		return dup
	})
	v.Title = http.StatusText(status)
	s.render(w, r, status, "problem", v, problem{Status: status, Message: msg, Links: links, Commands: hintCommands(hints, s.cfg.CommandFlags)})
}

// notFound is the page of a path the dashboard does not have, or does
// not have for the request's method.
func (s *server) notFound(w http.ResponseWriter, r *http.Request, v *view) {
	if allow := s.methodsAt(r.URL); len(allow) > 0 {
		s.wrongMethod(w, r, v, allow)
		return
	}
	msg := fmt.Sprintf("The dashboard has no page %s; its pages are listed in the navigation above.", s.base+r.URL.Path)
	if s.cfg.MCP != "" {
		msg = fmt.Sprintf("The dashboard has no page %s. The MCP endpoint is %s; the pages are listed in the navigation above.", s.base+r.URL.Path, s.cfg.MCP)
	}
	v.Title = "Not found"
	s.render(w, r, http.StatusNotFound, "problem", v, problem{Status: http.StatusNotFound, Message: msg,
		Links: []link{{"/", "Back to the overview"}}})
}

// methodsAt lists the methods, of GET and POST, that the dashboard takes
// at u's path.
func (s *server) methodsAt(u *url.URL) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if _, pattern := s.mux.Handler(&http.Request{Method: m, URL: u}); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// wrongMethod refuses a request to a path the dashboard takes only with
// other methods: an action's address opened as a page (the address of the
// page after an action, opened again), or a page sent something.
func (s *server) wrongMethod(w http.ResponseWriter, r *http.Request, v *view, allow []string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	msg := fmt.Sprintf("%s %s: this address takes only %s. Nothing was changed.", r.Method, s.base+r.URL.Path, strings.Join(allow, " and "))
	if len(allow) == 1 && allow[0] == http.MethodPost {
		msg = fmt.Sprintf("%s is where a form of the dashboard is sent (POST), not a page to open: nothing was changed. To act again, send the form from its page (a dead message's, a preview's or the overview's).", s.base+r.URL.Path)
	}
	s.refuse(w, r, v, http.StatusMethodNotAllowed, msg)
}

// noMCP answers an MCP client that calls /mcp of a dashboard served alone,
// in JSON as the endpoint it looked for would, before any login: whatever
// its token, there is no endpoint to authenticate to.
func (s *server) noMCP(w http.ResponseWriter, r *http.Request) {
	s.logRefused(r, http.StatusNotFound, "no MCP endpoint: the dashboard is served alone")
	writeJSON(w, r, http.StatusNotFound, apiError{Error: "This address serves the pgbus dashboard alone (pgbus dashboard), without an MCP endpoint: " +
		"point the MCP client at a pgbus serve --transport http, which serves /mcp next to the same dashboard, or have it start pgbus serve (stdio)."})
}

// pages of the operations a hint may point at.
var opPages = map[string]string{
	ops.OpHealth: "/", ops.OpQueueStats: "/", ops.OpDLQSummary: "/dlq", ops.OpDLQList: "/dlq/messages",
	ops.OpDLQShow: "/dlq/message", ops.OpAudit: "/audit", ops.OpWorkers: "/workers", ops.OpCircuits: "/circuits",
	ops.OpDLQRetry: "/dlq/retry", ops.OpDLQDiscard: "/dlq/discard", ops.OpDLQDiscarded: "/dlq/discarded",
	ops.OpDLQRestore: "/dlq/restore",
}

// hintLinks names the hints the dashboard has a page for; a retry,
// discard or restore hint becomes its preview, never the action itself.
func hintLinks(hints []ops.Hint) []link {
	var out []link
	for _, h := range hints {
		p, ok := hintPage(h)
		if !ok {
			continue
		}
		q := url.Values{}
		keys := make([]string, 0, len(h.Args))
		for k := range h.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			// The groups page breaks no group down by a payload field.
			if k == "dry_run" || k == "expect" || k == "by_field" || strings.HasPrefix(p, "/queues/") && (k == "queue" || k == "limit") {
				continue
			}
			if ids, ok := h.Args[k].([]int64); ok && k == "ids" {
				// One id= each, as the pages' selections send them.
				for _, id := range ids {
					q.Add("id", strconv.FormatInt(id, 10))
				}
				continue
			}
			name := k
			switch {
			case k == "msg_id":
				name = "id"
			case k == "tool" && p == "/audit":
				// The audit page's filter of the operation is op.
				name = "op"
			}
			q.Set(name, fmt.Sprint(h.Args[k]))
		}
		if p == "/dlq/selected" {
			q.Set("verb", selectionVerbs[h.Op])
		}
		if len(q) > 0 {
			p += "?" + q.Encode()
		}
		text := h.Why
		if text == "" {
			text = h.Op
		}
		out = append(out, link{Href: p, Text: strings.ToUpper(text[:1]) + text[1:]})
	}
	return out
}

// selectionVerbs are the verbs of the preview of a retry or discard of
// messages by id (/dlq/selected): a hint naming ids links it, since the
// preview by filter (/dlq/retry, /dlq/discard) takes no ids and would
// offer every message of the queue.
var selectionVerbs = map[string]string{ops.OpDLQRetry: "retry", ops.OpDLQDiscard: "discard"}

// hintPage is the page of the dashboard a hint points at, without its
// query: one queue's stats and live messages are on the queue's own page,
// which names it in its path.
func hintPage(h ops.Hint) (string, bool) {
	if _, byIDs := h.Args["ids"]; byIDs && selectionVerbs[h.Op] != "" {
		return "/dlq/selected", true
	}
	if h.Op == ops.OpQueueMessages || h.Op == ops.OpQueueStats {
		if q, _ := h.Args["queue"].(string); q != "" {
			return queuePath(q), true
		}
	}
	p, ok := opPages[h.Op]
	return p, ok
}

// hintCommands names the hints the dashboard has no page for as the
// command lines a person runs, such as pgbus migrate for a database whose
// schema is missing or old: a page of advice that only said "migrate"
// left the reader to find the command. The lines carry flags, the
// dashboard's Config.CommandFlags.
func hintCommands(hints []ops.Hint, flags string) []command {
	var out []command
	for _, h := range hints {
		if _, ok := hintPage(h); ok {
			continue
		}
		text := h.Why
		if text == "" {
			text = "run"
		}
		out = append(out, command{Text: strings.ToUpper(text[:1]) + text[1:], Line: vocab.WithFlags(vocab.Command(h), flags),
			Help: vocab.Command(ops.Hint{Op: h.Op}) + " --help"})
	}
	return out
}

// funcs are the templates' helpers; parsePages adds those that write
// addresses, which depend on the base path, and commands, which depend on
// the flags they carry.
var funcs = template.FuncMap{
	"outcome":    outcomeWords,
	"hintlinks":  hintLinks,
	"queuePath":  queuePath,
	"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"abs":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"num":        num,
	"openTimes":  func() []string { return openTimes },
	"json":       func(raw json.RawMessage) string { return visible(prettyJSON(raw)) },
	"jsonText":   func(s string) string { return visible(prettyJSON(json.RawMessage(s))) },
	"visible":    visible,
	"ms":         func(f *float64) string { return formatMS(f) },
	"secs":       formatSecs,
	"per":        func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"join":       strings.Join,
	"lower":      strings.ToLower,
	"kindFilter": filterKind,
	"plural":     func(n any, one, many string) string { return pluralize(n, one, many) },
	"bytes":      sizeText,
}

// sizeText is a size in bytes in the unit that keeps it short: 512 B,
// 1.5 KiB, 2.0 MiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}

// assetVersions are the versions of the embedded assets: the start of
// each one's SHA-256, by file name.
var assetVersions = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	entries, _ := assets.ReadDir("static")
	for _, e := range entries {
		if b, err := assets.ReadFile("static/" + e.Name()); err == nil {
			sum := sha256.Sum256(b)
			out[e.Name()] = hex.EncodeToString(sum[:6])
		}
	}
	return out
})

// staticURL is the address of the embedded asset name, with its version
// in the query: browsers cache the assets for an hour, and an upgraded
// server's pages must not run with the scripts and styles of the one
// before.
func staticURL(name string) string {
	return "/static/" + name + "?v=" + assetVersions()[name]
}

// pageLink is a path with a query of the non-empty values of kv (pairs of
// name and value), in the order given: a stable URL for a page and its
// filters.
func pageLink(p string, kv ...any) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v == "" || v == "0" || v == "false" {
			continue
		}
		parts = append(parts, url.QueryEscape(fmt.Sprint(kv[i]))+"="+url.QueryEscape(v))
	}
	if len(parts) == 0 {
		return p
	}
	return p + "?" + strings.Join(parts, "&")
}

// relTime is a time as a page shows it: relative, the absolute time on
// hover.
type relTime struct {
	At  time.Time
	Ago string
}

// When is t as a page shows it (the template "time" renders it).
func (v *view) When(t time.Time) relTime { return relTime{At: t, Ago: v.ago(t)} }

// ago says how long before now t was, or how long until it comes: in
// the largest whole unit, and the next one's whole count past hours (1 h
// 59 min is not "1 h": a breaker open two hours more would read as open
// one).
func (v *view) ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	// Sub saturates at the shortest duration, which has no opposite: a
	// time in the year 9999 read as "just now".
	d := max(v.now.Sub(t), -math.MaxInt64)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second || d < 5*time.Second && !future:
		// A time due in a few seconds is not past: "just now" read as
		// overdue.
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = withPart(fmt.Sprintf("%d h", int(d.Hours())), int(d.Minutes())%60, "min")
	default:
		s = withPart(fmt.Sprintf("%d days", int(d.Hours()/24)), int(d.Hours())%24, "h")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// withPart adds n of unit to s, unless n is 0.
func withPart(s string, n int, unit string) string {
	if n == 0 {
		return s
	}
	return fmt.Sprintf("%s %d %s", s, n, unit)
}

// num writes a count with its thousands grouped by commas; a count that
// points to none (a health verdict's count it could not read) as a dash.
func num(n any) string {
	n = deref(n)
	if n == nil {
		return "–"
	}
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func pluralize(n any, one, many string) string {
	if fmt.Sprint(deref(n)) == "1" {
		return one
	}
	return many
}

// deref is what n points to when it is a pointer, nil for a nil one, and
// n itself otherwise.
func deref(n any) any {
	v := reflect.ValueOf(n)
	if v.Kind() != reflect.Pointer {
		return n
	}
	if v.IsNil() {
		return nil
	}
	return v.Elem().Interface()
}

func formatMS(f *float64) string {
	if f == nil {
		return "–"
	}
	if *f >= 1000 {
		return strconv.FormatFloat(*f/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(*f, 'f', 0, 64) + " ms"
}

// formatSecs writes a duration given in seconds as Go writes durations
// (30s, 1m30s) to the second, and one under a minute that is not a whole
// number of seconds to the tenth (1.5s), or under a second to the
// millisecond (200ms): rounded to the second, a backoff of 200ms read 0s.
func formatSecs(f float64) string {
	d := time.Duration(f * float64(time.Second))
	switch {
	case d <= 0 || d >= time.Minute:
		return d.Round(time.Second).String()
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// prettyJSON indents JSON for a page; it was redacted by the operation
// that returned it. JSON whose indentation would make it much longer is
// shown as it is: each level of nesting indents its lines two more
// spaces, so a payload of a few kilobytes nested a thousand deep (a
// producer's, or typed in the corrected-payload box) grew to megabytes.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if tooDeepToIndent(raw) {
		return string(raw)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// tooDeepToIndent reports whether indenting raw would make it more than
// four times longer (plus 64 KiB): prettyJSON then shows it as it is.
func tooDeepToIndent(raw []byte) bool { return indentedBound(raw) > 4*len(raw)+64<<10 }

// indentedBound is at least the length of raw once json.Indent indents it
// by two spaces: a line break and its level's indentation at each bracket
// and comma, a space after each colon.
func indentedBound(raw []byte) int {
	n, depth, inString, escaped := len(raw), 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			n += 1 + 2*depth
		case c == '}' || c == ']':
			depth = max(depth-1, 0)
			n += 1 + 2*depth
		case c == ',':
			n += 1 + 2*depth
		case c == ':':
			n++
		}
	}
	return n
}

// outcomeWords says an id's outcome in words, as the page's heading does;
// a code it does not know is shown as it is.
func outcomeWords(code string) string {
	words := map[string]string{
		ops.OutcomeRetried: "retried", ops.OutcomeWouldRetry: "would be retried",
		ops.OutcomeDiscarded: "discarded", ops.OutcomeWouldDiscard: "would be discarded",
		ops.OutcomeRestored: "restored", ops.OutcomeWouldRestore: "would be restored",
		ops.OutcomeRefused: "refused", ops.OutcomeNotFound: "not found",
		ops.OutcomeAlreadyMoved: "moved by another call meanwhile", ops.OutcomeAmbiguous: "in several DLQs",
		ops.OutcomeFailed: "failed",
	}
	return cmp.Or(words[code], code)
}
