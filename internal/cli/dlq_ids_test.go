package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// Ids are per queue: an id in two DLQs is not retried or discarded until
// --queue picks one. Every id gets an outcome and the others still move;
// the exit code says what went wrong (2 ambiguous, 3 not found) and the
// audit log records the call as not fully done.
func TestDLQIDsInSeveralDLQs(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	mail := seedDLQ(t, d.url, "mail", `{"to": "a@example.com"}`, `{"to": "b@example.com"}`)
	sms := seedDLQ(t, d.url, "sms", `{"to": "+15550100"}`)
	if len(mail) != 2 || mail[0] != 1 || mail[1] != 2 || len(sms) != 1 || sms[0] != 1 {
		t.Fatalf("seeded ids: mail_dlq %v, sms_dlq %v; want 1, 2 and 1", mail, sms)
	}
	where := func() string {
		var s string
		d.query(t, `SELECT concat_ws(' ', (SELECT count(*) FROM pgmq.q_mail_dlq), (SELECT count(*) FROM pgmq.q_sms_dlq),
			(SELECT count(*) FROM pgmq.q_mail), (SELECT count(*) FROM pgmq.q_sms), (SELECT count(*) FROM pgmq.a_sms_dlq))`, &s)
		return s // mail_dlq sms_dlq mail sms sms_dlq-archive
	}

	// Id 1 alone: nothing moves, exit 2, the error names both DLQs, and
	// nothing is printed on stdout.
	msg := d.fails(t, 2, "dlq", "retry", "1")
	if !strings.Contains(msg, "id 1 is in 2 DLQs (mail_dlq, sms_dlq)") {
		t.Fatalf("retry of an id in two DLQs: %q", msg)
	}
	if w := where(); w != "2 1 0 0 0" {
		t.Fatalf("an ambiguous retry moved messages: %s", w)
	}
	last := d.audit(t, "--tool", "dlq_retry", "--limit", "1")
	if len(last) != 1 || !last[0].IsError {
		t.Fatalf("audit of the ambiguous retry: %+v", last)
	}

	// With --json: the result, with the DLQs to choose from and a next
	// step for each; the exit code is the same.
	r := pgbus(t, d.env, "dlq", "retry", "1", "--json")
	var rep ops.DLQRetry
	decodeStrict(t, r.stdout, &rep)
	if r.code != 2 || rep.Ambiguous != 1 || rep.Retried != 0 || len(rep.Outcomes) != 1 {
		t.Fatalf("retry --json of an ambiguous id: exit %d, %+v", r.code, rep)
	}
	// Of the kind dlq show's error is for the same id.
	if !strings.Contains(r.stderr, `"kind":"invalid"`) || !strings.Contains(pgbus(t, d.env, "dlq", "show", "1", "--json").stderr, `"kind":"invalid"`) {
		t.Errorf("retry --json of an ambiguous id: its error is not of kind invalid, as show's is: %s", r.stderr)
	}
	if o := rep.Outcomes[0]; o.ID != 1 || o.Outcome != ops.OutcomeAmbiguous || strings.Join(o.DLQs, ",") != "mail_dlq,sms_dlq" {
		t.Fatalf("outcome: %+v", o)
	}
	var choices []string
	for _, h := range rep.Next {
		if m := regexp.MustCompile(`--queue (\S+)`).FindStringSubmatch(stepCommand(h)); stepIs(h, ops.OpDLQRetry) && m != nil {
			choices = append(choices, m[1])
		}
	}
	if strings.Join(choices, ",") != "mail_dlq,sms_dlq" {
		t.Fatalf("next steps: %+v", rep.Next)
	}

	// Id 1 with id 2 (only in mail_dlq): 2 moves, 1 does not, exit 1:
	// exit 2 says nothing changed.
	r = pgbus(t, d.env, "dlq", "retry", "1", "2")
	if r.code != 1 || !strings.Contains(r.stdout, "retried 1 dead message\n") ||
		!strings.Contains(r.stderr, "1 of 2 ids could not be retried (in several DLQs (pass --queue): 1)") ||
		!strings.Contains(r.stderr, "mail_dlq, sms_dlq") {
		t.Fatalf("retry 1 2: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if w := where(); w != "1 1 1 0 0" {
		t.Fatalf("after retry 1 2: %s; want id 2 moved back to mail", w)
	}

	// An ambiguous id and a missing one: ambiguity wins the exit code;
	// the error names both problems.
	msg = d.fails(t, 2, "dlq", "retry", "1", "99999")
	if !strings.Contains(msg, "in several DLQs (pass --queue): 1") || !strings.Contains(msg, "not found: 99999") {
		t.Fatalf("retry of an ambiguous and a missing id: %q", msg)
	}
	// Only a missing one: exit 3.
	if msg := d.fails(t, 3, "dlq", "retry", "2"); !strings.Contains(msg, "no DLQ holds message 2") {
		t.Fatalf("retry of a retried id: %q", msg)
	}

	// When nothing moved, the error says what to run: the same call in
	// each DLQ of an ambiguous id, the list of what is still dead.
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"dlq", "retry", "1"}, 2, []string{"see pgbus dlq retry 1 --queue mail_dlq or pgbus dlq retry 1 --queue sms_dlq"}},
		{[]string{"dlq", "discard", "1"}, 2, []string{"pgbus dlq discard 1 --queue mail_dlq", "pgbus dlq discard 1 --queue sms_dlq"}},
		{[]string{"dlq", "retry", "2", "--queue", "mail"}, 3, []string{"see pgbus dlq list --queue mail"}},
	} {
		msg := d.fails(t, c.code, c.args...)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("pgbus %s: %q, want %q in it", strings.Join(c.args, " "), msg, w)
			}
		}
	}

	// show and discard say the same, and --queue chooses.
	if msg := d.fails(t, 2, "dlq", "show", "1"); !strings.Contains(msg, "pgbus dlq show 1 --queue mail_dlq") || !strings.Contains(msg, "pgbus dlq show 1 --queue sms_dlq") {
		t.Fatalf("show of an ambiguous id: %q", msg)
	}
	if msg := d.fails(t, 2, "dlq", "discard", "1"); !strings.Contains(msg, "mail_dlq, sms_dlq") {
		t.Fatalf("discard of an ambiguous id: %q", msg)
	}
	if w := where(); w != "1 1 1 0 0" {
		t.Fatalf("an ambiguous discard moved messages: %s", w)
	}
	var disc ops.DLQDiscard
	d.json(t, &disc, "dlq", "discard", "1", "--queue", "sms")
	if disc.Discarded != 1 || len(disc.Outcomes) != 1 || disc.Outcomes[0].DLQ != "sms_dlq" {
		t.Fatalf("discard 1 --queue sms: %+v", disc)
	}
	// Now only mail_dlq holds id 1.
	d.json(t, &rep, "dlq", "retry", "1")
	if rep.Retried != 1 || len(rep.Outcomes) != 1 || rep.Outcomes[0].DLQ != "mail_dlq" || rep.Outcomes[0].Queue != "mail" {
		t.Fatalf("retry 1 once only mail_dlq holds it: %+v", rep)
	}
	if w := where(); w != "0 0 2 0 1" {
		t.Fatalf("at the end: %s", w)
	}

	// The audit log: the calls that left ids undone are errors, the others
	// not.
	var errs, oks int
	for _, e := range d.audit(t) {
		if e.Op != ops.OpDLQRetry && e.Op != ops.OpDLQDiscard {
			t.Errorf("unexpected audit entry %+v", e)
		}
		if e.IsError {
			errs++
		} else {
			oks++
		}
	}
	// errors: retry 1 (twice), retry 1 --json, retry 1 2, retry 1 99999,
	// retry 2, retry 2 --queue mail, discard 1 (twice); done: discard 1
	// --queue sms, retry 1.
	if errs != 9 || oks != 2 {
		t.Errorf("audit log: %d errors and %d done, want 9 and 2", errs, oks)
	}
}

// Secrets in payloads, headers and error text are shown as [REDACTED] by
// every command that shows them, and kept as they are in the database.
func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	secrets := []string{"hunter2", "k-live-123456", "tok-secret-1", "pw-new-999"}
	clean := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, out)
			}
		}
	}
	d.ok(t, "queue", "create", "vault", "--max-retries", "1")
	// The email is bad input, so the error message quotes it.
	d.ok(t, "send", "vault", `{"email": "password=hunter2", "api_key": "k-live-123456", "note": "kept"}`,
		"--kind", "signup", "--header", "api_token=tok-secret-1", "--header", "tenant=acme")
	d.ok(t, "work", "--queue", "vault", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	if st := d.stats(t, "vault"); st.DLQDepth != 1 {
		t.Fatalf("vault: %+v", st)
	}

	text := d.ok(t, "dlq", "show", "1", "--queue", "vault")
	clean("dlq show", text)
	for _, s := range []string{ops.Redacted, "acme", `"note": "kept"`, "demo.ValidationError", "invalid payload: email"} {
		if !strings.Contains(text, s) {
			t.Errorf("dlq show lacks %q:\n%s", s, text)
		}
	}
	out := d.ok(t, "dlq", "show", "1", "--queue", "vault", "--json")
	clean("dlq show --json", out)
	var m ops.DeadMessage
	decodeStrict(t, out, &m)
	if m.RedactedValues < 3 || !strings.Contains(m.DeadLetter.ErrorMessage, ops.Redacted) || !strings.Contains(string(m.Headers), "acme") ||
		!strings.Contains(strings.Join(m.Notes, " "), ops.Redacted) {
		t.Errorf("dlq show --json: %d redacted, error %q, headers %s, notes %q", m.RedactedValues, m.DeadLetter.ErrorMessage, m.Headers, m.Notes)
	}
	clean("dlq list", d.ok(t, "dlq", "list"))
	out = d.ok(t, "dlq", "list", "--json")
	clean("dlq list --json", out)
	if !strings.Contains(out, ops.Redacted) {
		t.Errorf("dlq list --json does not show the redacted error:\n%s", out)
	}

	// A retry with a corrected payload: the new payload is shown redacted,
	// and the audit log keeps only its size.
	d.ok(t, "dlq", "retry", "1", "--queue", "vault", "--payload", `{"email": "ada@example.com", "password": "pw-new-999"}`)
	out = d.ok(t, "queue", "messages", "vault", "--json")
	clean("queue messages --json", out)
	var live ops.LiveMessages
	decodeStrict(t, out, &live)
	if len(live.Items) != 1 || !strings.Contains(string(live.Items[0].Payload), "ada@example.com") || !strings.Contains(string(live.Items[0].Payload), ops.Redacted) {
		t.Errorf("queue messages after the corrected retry: %s", out)
	}
	clean("queue messages", d.ok(t, "queue", "messages", "vault"))
	out = d.ok(t, "audit", "--tool", "all", "--json")
	clean("audit --json", out)
	clean("audit", d.ok(t, "audit"))
	var page ops.AuditPage
	decodeStrict(t, out, &page)
	var sendArgs struct {
		Headers      map[string]string `json:"headers"`
		PayloadBytes int               `json:"payload_bytes"`
	}
	if err := json.Unmarshal(page.Items[len(page.Items)-2].Arguments, &sendArgs); err != nil ||
		sendArgs.Headers["api_token"] != ops.Redacted || sendArgs.Headers["tenant"] != "acme" || sendArgs.PayloadBytes <= 0 {
		t.Errorf("audit of the send: %s (%v)", page.Items[len(page.Items)-2].Arguments, err)
	}

	// The database keeps what was sent: redaction is in what is shown.
	var key, token string
	d.query(t, `SELECT message->>'api_key', headers->>'api_token' FROM pgmq.a_vault_dlq`, &key, &token)
	if key != "k-live-123456" || token != "tok-secret-1" {
		t.Errorf("the archived original lost its values: %q %q", key, token)
	}
}
