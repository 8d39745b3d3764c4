package bench

import (
	"context"
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pageClient requests the dashboard's pages straight from its handler, as
// one logged-in browser: no network, so that what is timed is the server's
// work from the request to the last byte of the page.
type pageClient struct {
	h       http.Handler
	session []*http.Cookie
}

// newPageClient returns the dashboard pgbus serve mounts, over a service
// that may write and shows payloads, so that pages render every action
// and payload an operator of such a server sees. Without an auth token
// (a server on loopback) the first visit is handed a logged-in session
// at once; the client keeps it, and every timed page is served to that
// session, as with a token after the login. Only pages (GETs) are
// requested: nothing is changed.
func newPageClient(ctx context.Context, st *store.Store) (*pageClient, error) {
	svc, err := ops.New(st, ops.Options{AllowPayloads: true})
	if err != nil {
		return nil, fmt.Errorf("bench dlq: dashboard service: %w", err)
	}
	h, err := dashboard.New(svc, dashboard.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench dlq: dashboard: %w", err)
	}
	c := &pageClient{h: h}
	rec, err := c.serve(ctx, "/")
	if err != nil {
		return nil, err
	}
	c.session = rec.Result().Cookies()
	if len(c.session) == 0 {
		return nil, fmt.Errorf("bench dlq: the dashboard's first page handed out no session cookie")
	}
	return c, nil
}

func (c *pageClient) serve(ctx context.Context, target string) (*httptest.ResponseRecorder, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("bench dlq: dashboard page %s: %w", target, err)
	}
	req.Host = "127.0.0.1:8080"
	req.RemoteAddr = "127.0.0.1:50000"
	for _, ck := range c.session {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("bench dlq: dashboard page %s: status %d, want 200: %.300s", target, rec.Code, rec.Body.String())
	}
	return rec, nil
}

// get serves the page at target and checks that it is the page it should
// be: served to the session the client holds (no new session handed
// out) and holding every one of want, so that a broken page is an error
// rather than a fast figure.
func (c *pageClient) get(ctx context.Context, target string, want ...string) (string, error) {
	rec, err := c.serve(ctx, target)
	if err != nil {
		return "", err
	}
	if c.session != nil && len(rec.Result().Cookies()) > 0 {
		return "", fmt.Errorf("bench dlq: dashboard page %s handed out a new session: the session of the first visit was not accepted", target)
	}
	body := rec.Body.String()
	for _, w := range want {
		if !strings.Contains(body, w) {
			return "", fmt.Errorf("bench dlq: dashboard page %s does not hold %q: %.300s", target, w, body)
		}
	}
	return body, nil
}

// groupLink finds the links of a groups page to the messages of a group.
var groupLink = regexp.MustCompile(`href="(/dlq/messages\?[^"]*)"`)

// dashboardPages are the dashboard's pages as timed operations: the
// overview, the dead-letter groups, the messages of one group as the
// groups page links them, the first page of one queue's dead messages and
// a dead message with its payload. perQueue is how many dead messages each
// DLQ of queues holds, ids 1 to perQueue.
func dashboardPages(ctx context.Context, st *store.Store, queues []string, perQueue int) ([]namedOp, error) {
	c, err := newPageClient(ctx, st)
	if err != nil {
		return nil, err
	}
	dlq := store.DLQName(queues[0])
	groupTarget, groupClass, err := firstGroup(ctx, c, dlq)
	if err != nil {
		return nil, err
	}
	msgLink := `href="/dlq/message?queue=` + url.QueryEscape(dlq) + `&amp;id=`
	page := func(target string, want ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.get(ctx, target, want...)
			return err
		}
	}
	return []namedOp{
		// Any queue's row: the overview lists the 50 queues that most need
		// a look, which on a busy database need not include the bench's.
		{"dashboard overview page", page("/", "<h1>Overview</h1>", "Health:", `<th scope="row">`)},
		{"dashboard dead-letter groups page", page("/dlq", "<h1>Dead letters</h1>", `class="group"`, `href="/dlq/messages?`)},
		{"dashboard messages page of one group", page(groupTarget, "<h1>Dead messages</h1>", msgLink, groupClass)},
		{"dashboard messages page of one queue", page("/dlq/messages?queue="+url.QueryEscape(dlq), "<h1>Dead messages</h1>", msgLink)},
		{"dashboard message page (payload shown)", func(ctx context.Context) error {
			q := store.DLQName(queues[rand.IntN(len(queues))])
			id := strconv.Itoa(1 + rand.IntN(perQueue))
			_, err := c.get(ctx, "/dlq/message?queue="+url.QueryEscape(q)+"&id="+id+"&payload=1",
				"<h1>Dead message "+id+" ", "Why it died", "bench.Error", "ord-"+id+"&#34;")
			return err
		}},
	}, nil
}

// firstGroup returns the link of the groups page of dlq to the messages of
// its largest group, and that group's error class.
func firstGroup(ctx context.Context, c *pageClient, dlq string) (target, class string, err error) {
	body, err := c.get(ctx, "/dlq?queue="+url.QueryEscape(dlq), `class="group"`)
	if err != nil {
		return "", "", err
	}
	m := groupLink.FindStringSubmatch(body)
	if m == nil {
		return "", "", fmt.Errorf("bench dlq: the groups page of %s links no group's messages", dlq)
	}
	target = html.UnescapeString(m[1])
	u, err := url.Parse(target)
	if err != nil {
		return "", "", fmt.Errorf("bench dlq: the groups page of %s links %q: %w", dlq, target, err)
	}
	q := u.Query()
	if q.Get("queue") != dlq || q.Get("error_class") == "" {
		return "", "", fmt.Errorf("bench dlq: the groups page of %s links %q, not one of its error classes", dlq, target)
	}
	return target, q.Get("error_class"), nil
}
