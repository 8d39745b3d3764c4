//go:build unix

// The exec handler of this test runs a shell script with /bin/sh.

package handlers_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Secrets with neither a secret-looking key nor a shape of their own, and
// values that are no secrets, as a handler block sends them.
const (
	hookKey     = "hk-5Rv8Nc3Jx6Wq"           // header X-Hook-Key
	urlPassword = "pw-Zk4Mn8Qr2"              // the url's password
	credValue   = "cv-9Tq4Wz7Kp2Ld"           // env ACME_CRED_VALUE
	contentType = "application/vnd.acme+json" // header Content-Type: no secret
	billingMode = "production-eu"             // env BILLING_MODE: no secret
)

// A downstream that says back a secret the handler sent it (an http error
// body quoting the key it refused, with or without Retry-After; a command
// printing its environment to stderr) has it hidden in the dead-letter
// block, the failure history and the worker's log, as the real worker
// logs; what is no secret (a Content-Type, a mode) stays readable.
func TestSentSecretsAreHiddenWhenEchoed(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		body := fmt.Sprintf("bad key %s for %s (user %s, pass %s)", r.Header.Get("X-Hook-Key"), r.Header.Get("Content-Type"), user, pass)
		if r.Header.Get("Idempotency-Key") == "busy" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_, _ = fmt.Fprint(w, body)
	}))
	defer srv.Close()
	script := writeScript(t, t.TempDir(), "env.sh",
		"printf 'connecting as %s (mode %s)\\n' \"$ACME_CRED_VALUE\" \"$BILLING_MODE\" >&2\nexit 3\n")

	hq := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 2 })
	eq := fastQueue(t, s, nil)
	hookURL := strings.Replace(srv.URL, "http://", "http://svc:"+urlPassword+"@", 1) + "/hook"
	queues := []config.WorkQueue{
		{Name: hq, Concurrency: 2, Handler: specFromYAML(t, fmt.Sprintf(
			"type: http\nurl: %s\nheaders: {X-Hook-Key: %s, Content-Type: %q}\nbreaker: {enabled: false}", hookURL, hookKey, contentType))},
		{Name: eq, Concurrency: 2, Handler: specFromYAML(t, fmt.Sprintf(
			"type: exec\ncommand: [/bin/sh, %s]\nenv: {ACME_CRED_VALUE: %s, BILLING_MODE: %s}\nbreaker: {enabled: false}", script, credValue, billingMode))},
	}
	var logs pgtest.SyncBuffer
	log := slog.New(ops.RedactingHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c, err := runner.NewClient(s, queues, engine.Config{
		PollInterval: 50 * time.Millisecond, SettingsRefresh: 200 * time.Millisecond, StatsFlush: 100 * time.Millisecond,
		DrainTimeout: 5 * time.Second, Rand: func() float64 { return 0.5 }, RetentionInterval: -1,
		Logger: log, Observers: []engine.Observer{runner.NewJobLog(log)},
	})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	failed := pgtest.Send(t, c, hq, map[string]int{"n": 1}, engine.SendOptions{IdempotencyKey: "broken"})
	busy := pgtest.Send(t, c, hq, map[string]int{"n": 2}, engine.SendOptions{IdempotencyKey: "busy"})
	ran := pgtest.Send(t, c, eq, map[string]int{"n": 3}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "three messages dead-lettered and logged", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+hq+`_dlq"`) == 2 && pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+eq+`_dlq"`) == 1 &&
			strings.Count(logs.String(), "job dead-lettered") == 3
	})

	secrets := []string{hookKey, urlPassword, credValue}
	check := func(what, text, plain string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the secret %s:\n%s", what, secret, text)
			}
		}
		if !strings.Contains(text, ops.Redacted) || !strings.Contains(text, plain) {
			t.Errorf("%s lacks %s or the plain %q:\n%s", what, ops.Redacted, plain, text)
		}
	}
	for _, m := range []struct {
		what, queue, plain string
		id                 int64
		class              string
		failures           int
	}{
		{"the 500", hq, contentType, failed, "http.500", 2},
		{"the 503 with Retry-After", hq, contentType, busy, "http.503", 2},
		{"the command's stderr", eq, billingMode, ran, "exec.exit_3", 1},
	} {
		blocks, dlqIDs := deadBlocksOf(t, s, m.queue)
		b := blocks[m.id]
		if b == nil || b["error_class"] != m.class {
			t.Fatalf("%s: dead-letter block %v; want one of class %s", m.what, b, m.class)
		}
		block := queryText(t, s, `SELECT headers::text FROM pgmq."q_`+m.queue+`_dlq" WHERE (headers->'`+store.HeaderDeadLetter+`'->>'source_msg_id')::bigint = $1`, m.id)
		check(m.what+": the dead-letter block", block, m.plain)
		if m.id == busy && !strings.Contains(block, "(Retry-After 1s)") {
			t.Errorf("the 503: the dead-letter block does not say it waited for Retry-After:\n%s", block)
		}
		history := queryText(t, s, `SELECT string_agg(to_jsonb(f)::text, E'\n' ORDER BY f.id) FROM pgbus.failures f WHERE queue_name = $1 AND msg_id = $2`, store.DLQName(m.queue), dlqIDs[m.id])
		if n := strings.Count(history, `"attempt"`); n != m.failures {
			t.Errorf("%s: %d failures recorded, want %d:\n%s", m.what, n, m.failures, history)
		}
		check(m.what+": the failure history", history, m.plain)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "job failed") || strings.Contains(line, "job dead-lettered") {
			check("the log line", line, ops.Redacted)
		}
	}
	if n := strings.Count(logs.String(), "job failed"); n != 5 {
		t.Errorf("%d failures logged, want 5:\n%s", n, logs.String())
	}
}

// queryText returns the text one row of sql gives.
// startWorkers runs workers for queues on s, polling often, until the
// test ends.
func startWorkers(t *testing.T, s *store.Store, queues []config.WorkQueue) *engine.Client {
	t.Helper()
	c, err := runner.NewClient(s, queues, engine.Config{
		PollInterval: 50 * time.Millisecond, SettingsRefresh: 200 * time.Millisecond, StatsFlush: 100 * time.Millisecond,
		DrainTimeout: 5 * time.Second, Rand: func() float64 { return 0.5 }, RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	return c
}

// deadLetterByExec runs command as the exec handler of a queue of its
// own, sends it one message and waits until that message is
// dead-lettered; it returns the queue and the message's id.
func deadLetterByExec(t *testing.T, s *store.Store, command []any) (string, int64) {
	t.Helper()
	q := fastQueue(t, s, nil)
	c := startWorkers(t, s, []config.WorkQueue{{Name: q, Concurrency: 1, Handler: handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": command, "breaker": map[string]any{"enabled": false}}}}})
	id := pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the message dead-lettered", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`) == 1
	})
	return q, id
}

// storedTexts are the places a message dead-lettered from queue, with
// id dlqID in its DLQ, is stored, by name: its dead-letter block (the
// DLQ's headers) and its failure history.
func storedTexts(t *testing.T, s *store.Store, queue string, dlqID int64) map[string]string {
	t.Helper()
	return map[string]string{
		"dead-letter block": queryText(t, s, `SELECT headers::text FROM pgmq."q_`+queue+`_dlq"`),
		"failure history": queryText(t, s, `SELECT string_agg(to_jsonb(f)::text, E'\n' ORDER BY f.id) FROM pgbus.failures f WHERE queue_name = $1 AND msg_id = $2`,
			store.DLQName(queue), dlqID),
	}
}

// wantHiddenKept fails the test for each of texts (by where they are
// stored) that shows one of secrets or lacks one of plain, the words that
// must stay readable around them.
func wantHiddenKept(t *testing.T, what string, texts map[string]string, secrets, plain []string) {
	t.Helper()
	for where, text := range texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s: the %s shows the secret %s:\n%s", what, where, secret, text)
			}
		}
		for _, p := range plain {
			if !strings.Contains(text, p) {
				t.Errorf("%s: the %s lacks %q:\n%s", what, where, p, text)
			}
		}
	}
}

func queryText(t *testing.T, s *store.Store, sql string, args ...any) string {
	t.Helper()
	var out string
	if err := s.Pool().QueryRow(ctxFor(t), sql, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// A downstream says a secret back in other forms than the handler wrote
// it: a bearer token without its scheme, a cookie's value without its
// name, the url's password as the Basic credential the request carried, a
// redirect's location, or a status line so malformed that the transport's
// error quotes it. Each is hidden in the failure message and the failure
// history.
func TestSentSecretsAreHiddenInTheFormsTheyComeBack(t *testing.T) {
	t.Parallel()
	const bearer = "bt-4Hx7Pq2Wm9Zc"
	basic := "c3ZjOnB3LVprNE1uOFFyMg==" // svc:pw-Zk4Mn8Qr2
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if session, err := r.Cookie("session"); err == nil {
			cred = session.Value
		}
		w.Header().Set("Location", "https://idp.example/retry/"+cred)
		w.WriteHeader(http.StatusFound)
		_, _ = fmt.Fprintf(w, "invalid credential %s", cred)
	}))
	defer echo.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if r, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = fmt.Fprintf(conn, "HTTP/1.1 %s refused\r\n\r\n", r.Header.Get("X-Hook-Key"))
			}
			_ = conn.Close()
		}
	}()

	for _, c := range []struct {
		what, block, secret string
		output              bool
	}{
		{"a bearer token without its scheme", fmt.Sprintf("type: http\nurl: %s/hook\nheaders: {Authorization: Bearer %s}", echo.URL, bearer), bearer, true},
		{"a cookie's value alone", fmt.Sprintf("type: http\nurl: %s/hook\nheaders: {Cookie: 'session=%s; theme=dark'}", echo.URL, hookKey), hookKey, true},
		{"the url's password as the Basic credential", fmt.Sprintf("type: http\nurl: %s/hook", strings.Replace(echo.URL, "http://", "http://svc:"+urlPassword+"@", 1)), basic, true},
		{"a malformed status line", fmt.Sprintf("type: http\nurl: http://%s/hook\nheaders: {X-Hook-Key: %s}", ln.Addr(), hookKey), hookKey, false},
	} {
		t.Run(c.what, func(t *testing.T) {
			fn, _ := mustBuild(t, specFromYAML(t, c.block+"\nbreaker: {enabled: false}"))
			err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
			var se *handlers.StatusError
			var re *handlers.RequestError
			switch {
			case c.output && (!errors.As(err, &se) || se.StatusCode != http.StatusFound):
				t.Fatalf("error %v; want the 302", err)
			case !c.output && (!errors.As(err, &re) || re.Timeout || !strings.Contains(err.Error(), "malformed")):
				t.Fatalf("error %v; want a network error about the malformed response", err)
			}
			texts := map[string]string{"message": err.Error()}
			if c.output {
				texts["failure history"] = se.FailureOutput().Text
				texts["location"] = se.Location
			}
			for what, text := range texts {
				if strings.Contains(text, c.secret) || !strings.Contains(text, ops.Redacted) {
					t.Errorf("the %s shows %s, or no %s: %s", what, c.secret, ops.Redacted, text)
				}
			}
		})
	}
}

// Secrets in the parts of a url and of a command's arguments that name no
// secret: a webhook's token as the last segment of its path, a query value
// under an innocent key, the value after --api-key and of
// --secret-value=. Said back by the downstream (the request's path and
// query in a 503's body; a command printing its arguments), and quoted
// by the handler itself (the url of every http failure), none of them is
// stored in the dead-letter block or the failure history, while what
// tells the endpoint and the call apart (the host, the rest of the path, a
// short query value, the other arguments) stays readable.
func TestURLAndArgumentSecretsAreHidden(t *testing.T) {
	t.Parallel()
	const (
		pathToken = "Xk9pQ2rT7vLm3nB8wZ4yC6dF"
		sig       = "9f8e7d6c5b4a39281706"
		apiKey    = "ak7Hx2Pq9Wm4Zc6T"
		secretArg = "sv3Nb8Kd5Rt1Yw6Q"
		argToken  = "Ux5mR8tY2wQ9pL4nK7vB3cZ6"
	)
	s := sharedStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "no route for %s (sig %s)", r.URL.RequestURI(), r.URL.Query().Get("sig"))
	}))
	defer srv.Close()
	script := writeScript(t, t.TempDir(), "args.sh", "printf 'refused: %s\\n' \"$*\" >&2\nexit 3\n")

	hq := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 2 })
	eq := fastQueue(t, s, nil)
	hookPath := "/services/T0123ABCD/B0456EFGH/"
	queues := []config.WorkQueue{
		{Name: hq, Concurrency: 1, Handler: specFromYAML(t, fmt.Sprintf(
			"type: http\nurl: %s%s%s?sig=%s&tenant=acme\nbreaker: {enabled: false}", srv.URL, hookPath, pathToken, sig))},
		{Name: eq, Concurrency: 1, Handler: specFromYAML(t, fmt.Sprintf(
			"type: exec\ncommand: [/bin/sh, %s, --api-key, %s, --secret-value=%s, --verbose, --output, /srv/out/report.json, https://hooks.example.com%s%s]\nbreaker: {enabled: false}",
			script, apiKey, secretArg, hookPath, argToken))},
	}
	c := startWorkers(t, s, queues)
	hid := pgtest.Send(t, c, hq, map[string]int{"n": 1}, engine.SendOptions{})
	eid := pgtest.Send(t, c, eq, map[string]int{"n": 2}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "both messages dead-lettered", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+hq+`_dlq"`) == 1 && pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+eq+`_dlq"`) == 1
	})

	host := strings.TrimPrefix(srv.URL, "http://")
	for _, m := range []struct {
		what, queue string
		id          int64
		failures    int
		plain       []string
	}{
		{"the 503", hq, hid, 2, []string{"POST " + srv.URL + hookPath + ops.Redacted + ": 503", "no route for " + hookPath + ops.Redacted, "tenant=acme", host}},
		{"the command's stderr", eq, eid, 1, []string{"--verbose --output /srv/out/report.json", "https://hooks.example.com" + hookPath + ops.Redacted}},
	} {
		_, dlqIDs := deadBlocksOf(t, s, m.queue)
		texts := storedTexts(t, s, m.queue, dlqIDs[m.id])
		if n := strings.Count(texts["failure history"], `"attempt"`); n != m.failures {
			t.Errorf("%s: %d failures recorded, want %d:\n%s", m.what, n, m.failures, texts["failure history"])
		}
		wantHiddenKept(t, m.what, texts, []string{pathToken, sig, apiKey, secretArg, argToken}, m.plain)
	}
}

// Secrets in a shell command ([sh, -c, "curl -H 'Authorization: Bearer
// ...' ..."], bash -c alike) and in header arguments (-H, --header, a
// header named like a secret's key), said back bare by a downstream that
// refuses them: none is stored in the dead-letter block or the failure
// history, while the rest of the command's words (a plain header, its
// options, the url's host and path) stays readable.
func TestShellCommandAndHeaderSecretsAreHidden(t *testing.T) {
	t.Parallel()
	const (
		bearer   = "Bt3f9cAbc7Qx"
		token    = "Tk5Rv8Nc3Jx6"
		query    = "Qt4Lp8Wz2Nx6"
		apiKey   = "Ak7Hx2Pq9Wm4"
		flagTok  = "Ft6Yw2Kd9Rb3"
		session  = "Ss5Kd8Lw2Mq4"
		hookKey  = "Hk2Zc6Tm8Vn5"
		proxyKey = "Px7Wq3Zr5Tn2"
	)
	s := sharedStore(t)
	// A curl that fails saying each argument back, its last word bare (as
	// an error quotes the credential it refused), and the urls it got.
	curl := writeScript(t, t.TempDir(), "curl",
		"for a in \"$@\"; do case \"$a\" in http*) printf 'GET %s\\n' \"$a\" >&2;; esac; done\n"+
			"for a in \"$@\"; do printf 'curl: (22) refused %s\\n' \"${a##*[ =:]}\" >&2; done\nexit 22\n")
	execs := []struct {
		what    string
		command []any
		queue   string
		id      int64
	}{
		{what: "sh -c", command: []any{"/bin/sh", "-c", fmt.Sprintf(`/bin/sh %s -fsS -H 'Authorization: Bearer %s' --token %s 'https://api.example.com/x?token=%s' -H "Content-Type: application/json"`,
			curl, bearer, token, query)}},
		{what: "bash -c", command: []any{"bash", "-c", fmt.Sprintf(`set -e; sh %s --header "X-Api-Key: %s" --api-key=%s -H 'Cookie: session=%s' -H 'Content-Type: application/json' -fsS https://api.example.com/x`,
			curl, apiKey, flagTok, session)}},
		{what: "header arguments", command: []any{"/bin/sh", curl, "-fsS", "-H", "X-Hook-Key: " + hookKey, "Proxy-Authorization: " + proxyKey, "-H", "Content-Type: application/json", "https://api.example.com/x"}},
	}
	for i := range execs {
		execs[i].queue, execs[i].id = deadLetterByExec(t, s, execs[i].command)
	}

	plain := []string{"refused -fsS", "refused application/json", "GET https://api.example.com/x"}
	for _, h := range execs {
		blocks, dlqIDs := deadBlocksOf(t, s, h.queue)
		if b := blocks[h.id]; b == nil || b["error_class"] != "exec.exit_22" {
			t.Fatalf("%s: dead-letter block %v; want one of class exec.exit_22", h.what, b)
		}
		texts := storedTexts(t, s, h.queue, dlqIDs[h.id])
		wantHiddenKept(t, h.what, texts, []string{bearer, token, query, apiKey, flagTok, session, hookKey, proxyKey}, append(plain, "refused "+ops.Redacted))
	}
}

// Assignments a shell command makes for its program (API_TOKEN=...
// deliver, env DB_PASSWORD=..., export SIGNING_KEY=...) hold secrets as
// the env option's values do, said back by a command printing its
// environment: none is stored in the dead-letter block or the failure
// history, while a plain setting (LOG_LEVEL) stays shown. So does the
// pattern grep's -H precedes, which names files, not a header.
func TestShellAssignmentSecretsAreHidden(t *testing.T) {
	t.Parallel()
	const (
		apiToken   = "At3f9cAbc7Qx"
		dbPassword = "Pw8Kd3Nb5Rt1"
		signingKey = "Sk4Lp8Wz2Nx6"
		logLevel   = "debugging"
	)
	s := sharedStore(t)
	dir := t.TempDir()
	script := writeScript(t, dir, "deliver.sh",
		"printf 'refused with %s / %s / %s at level %s\\n' \"$API_TOKEN\" \"$DB_PASSWORD\" \"$SIGNING_KEY\" \"$LOG_LEVEL\" >&2\nexit 3\n")
	log := writeScript(t, dir, "app.log", "10:30 Error: disk full on /srv\n")
	execs := []struct {
		what    string
		command []any
		plain   string
		queue   string
		id      int64
	}{
		{what: "leading assignments", command: []any{"/bin/sh", "-c", fmt.Sprintf("API_TOKEN=%s LOG_LEVEL=%s /bin/sh %s", apiToken, logLevel, script)},
			plain: "at level " + logLevel},
		{what: "env", command: []any{"env", "DB_PASSWORD=" + dbPassword, "LOG_LEVEL=" + logLevel, "/bin/sh", script}, plain: "at level " + logLevel},
		{what: "export", command: []any{"bash", "-c", fmt.Sprintf("export SIGNING_KEY=%s API_TOKEN=%s; /bin/sh %s", signingKey, apiToken, script)},
			plain: "refused with"},
		{what: "grep -H", command: []any{"/bin/sh", "-c", fmt.Sprintf("grep -H 'Error: disk full' %s >&2; exit 3", log)}, plain: "Error: disk full on /srv"},
	}
	for i := range execs {
		execs[i].queue, execs[i].id = deadLetterByExec(t, s, execs[i].command)
	}

	for _, h := range execs {
		blocks, dlqIDs := deadBlocksOf(t, s, h.queue)
		if b := blocks[h.id]; b == nil || b["error_class"] != "exec.exit_3" {
			t.Fatalf("%s: dead-letter block %v; want one of class exec.exit_3", h.what, b)
		}
		texts := storedTexts(t, s, h.queue, dlqIDs[h.id])
		wantHiddenKept(t, h.what, texts, []string{apiToken, dbPassword, signingKey}, []string{h.plain})
	}
}

// A command written as one string is refused with the list to write
// instead, split as a shell splits it, its secrets hidden whatever their
// length: a header's value after -H, a secret's header, an assignment, an
// option's value, and what a shell command within it holds, however deep.
// A command that needs a shell to run (a pipeline, a list, an assignment
// before its program) is given to one whole, hidden alike.
func TestOneStringCommandErrorHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		command string
		secrets []string
		says    string
	}{
		{`curl -fsS -H 'Authorization: Bearer Zq8BrrQ1ab' -H "X-Api-Key: k3y" -H 'Content-Type: application/json' https://api.example.com/x`,
			[]string{"Zq8BrrQ1ab", "k3y"},
			`["curl", "-fsS", "-H", "Authorization: [REDACTED]", "-H", "X-Api-Key: [REDACTED]", "-H", "Content-Type: application/json", "https://api.example.com/x"]`},
		{`API_TOKEN=tok9 LOG_LEVEL=debug ./deliver --token Zq8TokQ1ab`, []string{"tok9", "Zq8TokQ1ab"},
			`["/bin/sh", "-c", "API_TOKEN=[REDACTED] LOG_LEVEL=debug ./deliver --token [REDACTED]"]`},
		{`env DB_PASSWORD=pw5 ./deliver`, []string{"pw5"}, `["env", "DB_PASSWORD=[REDACTED]", "./deliver"]`},
		{`/bin/sh -c "export SIGNING_KEY=Zq8SigQ1ab; curl -H 'Cookie: session=Zq8SesQ1ab' https://h/x"`, []string{"Zq8SigQ1ab", "Zq8SesQ1ab"},
			`["/bin/sh", "-c", "export SIGNING_KEY=[REDACTED]; curl -H 'Cookie: [REDACTED]' https://h/x"]`},
		// As short as the secrets of the first two, which a shell command
		// within a shell command hides alike.
		{`/bin/sh -c "curl -H 'X-Api-Key: k3y' --token tk5 https://h/x?sig=s1g"`, []string{"k3y", "tk5", "s1g"},
			`["/bin/sh", "-c", "curl -H 'X-Api-Key: [REDACTED]' --token [REDACTED] https://h/x?[REDACTED]"]`},
		{`bash -lc "ssh deploy@host 'DB_PASSWORD=pw5 ./deliver --api-key=\"k 3\"'"`, []string{"pw5", "k 3"},
			`["bash", "-lc", "ssh deploy@host 'DB_PASSWORD=[REDACTED] ./deliver --api-key=\"[REDACTED]\"'"]`},
		{`curl -fsS -H 'Authorization: Bearer Zq8' https://h/x | jq .id; logger -t deliver done && echo ok`, []string{"Zq8"},
			`["/bin/sh", "-c", "curl -fsS -H 'Authorization: [REDACTED]' https://h/x | jq .id; logger -t deliver done && echo ok"]`},
	} {
		err := handlers.Check(handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": c.command}})
		if err == nil {
			t.Fatalf("%s: accepted", c.command)
		}
		msg := err.Error()
		for _, secret := range c.secrets {
			if strings.Contains(msg, secret) {
				t.Errorf("%s: the error shows %s: %s", c.command, secret, msg)
			}
		}
		if !strings.Contains(msg, "command: is a string") || !strings.HasSuffix(strings.TrimSuffix(msg, ` (it is not run through a shell; for one, use [/bin/sh, -c, "..."])`), "as a list, such as "+c.says) {
			t.Errorf("%s: the error %q\nwant it to suggest %s", c.command, msg, c.says)
		}
	}
}

// An argument holding blanks that no shell runs (a message for the
// program: "msg=Deployment done") makes no secret of a word it assigns
// under a plain name: the command saying it back in its error keeps it
// readable in the dead-letter block and the failure history. A value
// named like a secret's key, or shaped like a token, is hidden there
// still; and in what a shell does run (the command after sh -c, ssh's
// remote command) every assignment is read as the env option's values
// are, the plain word too.
func TestMessageArgumentsKeepTheirWords(t *testing.T) {
	t.Parallel()
	const (
		word      = "Deployment"
		apiToken  = "At3f9cAbc7Qx"
		tokenLike = "Cr5Kd8Lw2Mq4"
	)
	s := sharedStore(t)
	dir := t.TempDir()
	// A program that fails saying its arguments back, and an ssh that
	// does so too, as a remote command saying what it was given would.
	say := writeScript(t, dir, "notify", "printf 'refused: %s\\n' \"$*\" >&2\nexit 3\n")
	ssh := writeScript(t, dir, "ssh", "printf 'refused: %s\\n' \"$*\" >&2\nexit 3\n")
	execs := []struct {
		what           string
		command        []any
		secrets, plain []string
		queue          string
		id             int64
	}{
		{what: "a message option", command: []any{"/bin/sh", say, "--message", "msg=" + word + " done"},
			plain: []string{"msg=" + word + " done"}},
		{what: "messages with secrets", command: []any{"/bin/sh", say, "status=" + word + " finished", "API_TOKEN=" + apiToken + " sent", "note=" + tokenLike + " rotated"},
			secrets: []string{apiToken, tokenLike}, plain: []string{"status=" + word + " finished"}},
		{what: "sh -c", command: []any{"/bin/sh", "-c", fmt.Sprintf(`BILLING_NOTE=%s; /bin/sh %s "$BILLING_NOTE"`, word, say)},
			secrets: []string{word}, plain: []string{"refused: " + ops.Redacted}},
		{what: "ssh's remote command", command: []any{"/bin/sh", ssh, "deploy@host", "BILLING_NOTE=" + word + " ./deliver"},
			secrets: []string{word}, plain: []string{"refused: deploy@host BILLING_NOTE=" + ops.Redacted + " ./deliver"}},
	}
	for i := range execs {
		execs[i].queue, execs[i].id = deadLetterByExec(t, s, execs[i].command)
	}

	for _, h := range execs {
		_, dlqIDs := deadBlocksOf(t, s, h.queue)
		wantHiddenKept(t, h.what, storedTexts(t, s, h.queue, dlqIDs[h.id]), h.secrets, h.plain)
	}
}

// A downstream that says a secret back in its own encoding, as a PHP
// service's 401 quotes the key it refused in JSON (json_encode writes /
// as \/) and a command its variable (as JSON, with the letters outside
// ASCII as \uXXXX, and percent-encoded), has it hidden in the failure
// message and the failure history, as the exact value is.
func TestSentSecretsAreHiddenWhenEchoedEncoded(t *testing.T) {
	t.Parallel()
	const (
		key     = "Zq9/Wk3+Lm7/Pn2=Xy5v"
		escaped = `Zq9\/Wk3+Lm7\/Pn2=Xy5v`
		cred    = "pässwört/Kx9+Lm2"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, `{"error":"invalid api key","key":"%s"}`, strings.ReplaceAll(r.Header.Get("X-Api-Key"), "/", `\/`))
	}))
	defer srv.Close()
	script := writeScript(t, t.TempDir(), "echo.sh",
		`printf '{"level":"error","msg":"login refused","cred":"p\\u00e4ssw\\u00f6rt\\/Kx9+Lm2"}\n' >&2`+"\n"+
			`printf 'GET /login?cred=p%%C3%%A4ssw%%C3%%B6rt%%2FKx9%%2BLm2 401\n' >&2`+"\nexit 3\n")
	for _, c := range []struct {
		what, block string
		secrets     []string
		plain       string
	}{
		{"the http handler's header", fmt.Sprintf("type: http\nurl: %s/hook\nheaders: {X-Api-Key: %q}", srv.URL, key), []string{key, escaped}, "invalid api key"},
		{"the exec handler's env", fmt.Sprintf("type: exec\ncommand: [/bin/sh, %s]\nenv: {ACME_CRED_VALUE: %q}", script, cred),
			[]string{cred, `p\u00e4ssw\u00f6rt\/Kx9+Lm2`, "p%C3%A4ssw%C3%B6rt%2FKx9%2BLm2"}, "login refused"},
	} {
		t.Run(c.what, func(t *testing.T) {
			fn, _ := mustBuild(t, specFromYAML(t, c.block+"\nbreaker: {enabled: false}"))
			err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
			var oe engine.OutputError
			if err == nil || !errors.As(err, &oe) {
				t.Fatalf("error %v; want a failure with the downstream's output", err)
			}
			for what, text := range map[string]string{"message": err.Error(), "failure history": oe.FailureOutput().Text} {
				for _, secret := range c.secrets {
					if strings.Contains(text, secret) {
						t.Errorf("the %s shows %s: %s", what, secret, text)
					}
				}
				if !strings.Contains(text, ops.Redacted) || !strings.Contains(text, c.plain) {
					t.Errorf("the %s lacks %s or %q: %s", what, ops.Redacted, c.plain, text)
				}
			}
		})
	}
}
