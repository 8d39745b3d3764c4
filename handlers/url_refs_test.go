package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
)

// A variable's value goes into the url as it is: one that would change
// the url's structure, cutting it at a # (what follows is never sent),
// starting its query at a ? before the rest of the url, or splitting the
// query parameter it stands in at a &, is refused when the handler is
// built (and by Check, where the variable is set), naming the variable
// and not showing its value. A value may bring
// those where they change nothing the file wrote: a whole url, a path at
// its end with its query, a whole query.
func TestURLVariablesKeepTheURLsStructure(t *testing.T) {
	t.Setenv("PGBUS_TEST_HASHY", "abc123#def456")
	t.Setenv("PGBUS_TEST_AMP", "abc123&admin=true")
	t.Setenv("PGBUS_TEST_QM", "abc123?def456")
	t.Setenv("PGBUS_TEST_PLAIN", "abc123=def456")
	for _, c := range []struct{ url, want string }{
		{"http://h.example.com/echo?token=${PGBUS_TEST_HASHY}&tenant=acme", "${PGBUS_TEST_HASHY} brings a #"},
		{"http://h.example.com/echo/${PGBUS_TEST_HASHY}", "${PGBUS_TEST_HASHY} brings a #"},
		{"http://h.example.com/echo?token=${PGBUS_TEST_AMP}&tenant=acme", "${PGBUS_TEST_AMP} brings a &"},
		{"http://h.example.com/echo?tenant=acme&token=${PGBUS_TEST_AMP}", "${PGBUS_TEST_AMP} brings a &"},
		{"http://h.example.com/echo/${PGBUS_TEST_QM}/x", "${PGBUS_TEST_QM} brings a ?"},
		{"http://h.example.com/echo/${PGBUS_TEST_QM}?tenant=acme", "${PGBUS_TEST_QM} brings a ?"},
	} {
		spec := handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": c.url}}
		_, _, err := handlers.Build(spec)
		for what, err := range map[string]error{"Build": err, "Check": handlers.Check(spec)} {
			if err == nil {
				t.Errorf("%s: %s passed; want it refused", c.url, what)
				continue
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "handler type http: url: ") || !strings.Contains(msg, c.want) ||
				strings.Contains(msg, "abc123") || strings.Contains(msg, "def456") {
				t.Errorf("%s: %s: error %q; want it to say %q without the value", c.url, what, msg, c.want)
			}
		}
	}

	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.URL.RequestURI()) }))
	defer srv.Close()
	t.Setenv("PGBUS_TEST_WHOLE", srv.URL+"/hook?a=1&b=2")
	t.Setenv("PGBUS_TEST_TAIL", "hook?a=1&b=2")
	t.Setenv("PGBUS_TEST_QUERY", "a=1&b=2")
	for _, c := range []struct{ url, want string }{
		{"${PGBUS_TEST_WHOLE}", "/hook?a=1&b=2"},
		{srv.URL + "/${PGBUS_TEST_TAIL}", "/hook?a=1&b=2"},
		{srv.URL + "/hook?${PGBUS_TEST_QUERY}", "/hook?a=1&b=2"},
		{srv.URL + "/hook?x=0&${PGBUS_TEST_QUERY}&c=3", "/hook?x=0&a=1&b=2&c=3"},
		{srv.URL + "/hook?token=${PGBUS_TEST_PLAIN}&tenant=acme", "/hook?token=abc123=def456&tenant=acme"},
		{srv.URL + "/hook?q=$${PGBUS_TEST_HASHY}", "/hook?q=${PGBUS_TEST_HASHY}"},
	} {
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": c.url, "breaker": map[string]any{"enabled": false}}})
		got = nil
		if err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"}); err != nil {
			t.Errorf("%s: %v", c.url, err)
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: the server got %q; want %q", c.url, got, c.want)
		}
	}
}
