package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// neighbours is what a corpus item without a payload or headers of its own
// carries there: nothing secret, all of it kept.
const neighbours = `{"author": "ada", "order_id": 42}`

// withKind returns the headers object raw with pgbus_kind set to kind.
func withKind(t *testing.T, raw, kind string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	m[store.HeaderKind] = kind
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// corpusSpec is how one corpus item is dead-lettered: its secret where it
// says, neighbours everywhere else.
func corpusSpec(t *testing.T, sec secrettest.Secret) pgtest.DeadSpec {
	spec := pgtest.DeadSpec{Kind: "k", Class: "E", Payload: neighbours, Headers: withKind(t, neighbours, "k"), Message: "plain failure"}
	switch sec.Where {
	case secrettest.Payload:
		spec.Payload = sec.JSON
	case secrettest.Header:
		spec.Headers = withKind(t, sec.JSON, "k")
	case secrettest.Kind:
		spec.Kind, spec.Headers = sec.Text, withKind(t, neighbours, sec.Text)
	case secrettest.Error:
		spec.Message = sec.Text
	case secrettest.Backtrace:
		spec.Trace = sec.Text
	}
	return spec
}

// checkKept fails when a shown JSON value lost its non-secret neighbours.
func checkKept(t *testing.T, what string, raw json.RawMessage) {
	t.Helper()
	out := mustJSON(t, raw)
	for _, n := range secrettest.NeighbourTexts {
		if !strings.Contains(out, n) {
			t.Errorf("%s %s lost its neighbour %s", what, out, n)
		}
	}
}

// No secret of the corpus, wherever it is in a message (payload, headers,
// error message, backtrace), shows in any view of it, whatever the bounds;
// the non-secret fields next to it do.
func TestRedactionCorpus(t *testing.T) {
	// Not parallel: its calls, seconds of CPU each under the race detector,
	// share one context of two minutes, which beside the package's other
	// tests on a busy machine they outlasted.
	s := testStore(t)
	client := uniqueName("redact")
	ctx := ops.WithClient(testContext(t), client)
	services := map[string]*ops.Service{
		"default bounds": newService(t, s, ops.Options{AllowPayloads: true}),
		"full bounds":    newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds}),
	}
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 5 })
	specs := make([]pgtest.DeadSpec, len(secrettest.Corpus))
	for i, sec := range secrettest.Corpus {
		specs[i] = corpusSpec(t, sec)
	}
	ids := pgtest.DeadLetter(t, s, q, specs...)

	for label, svc := range services {
		t.Run("dlq show/"+label, func(t *testing.T) {
			for i, sec := range secrettest.Corpus {
				m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[i], IncludePayload: true})
				if err != nil {
					t.Fatal(err)
				}
				out := mustJSON(t, m)
				secrettest.AssertHidden(t, out)
				if !m.PayloadShown || m.Payload == nil || m.DeadLetter == nil || len(m.History) != 1 || m.RedactedValues == 0 {
					t.Fatalf("%s: show = %s; want the payload shown, the block, the history and a redaction counted", sec.Name, out)
				}
				checkKept(t, sec.Name+": payload", m.Payload)
				checkKept(t, sec.Name+": headers", m.Headers)
				switch sec.Where {
				case secrettest.Error:
					if !strings.Contains(m.DeadLetter.ErrorMessage, ops.Redacted) || !strings.Contains(m.History[0].ErrorMessage, ops.Redacted) {
						t.Errorf("%s: error message %q, history %q; want the secret shown as %s", sec.Name, m.DeadLetter.ErrorMessage, m.History[0].ErrorMessage, ops.Redacted)
					}
				case secrettest.Backtrace:
					if !strings.Contains(m.DeadLetter.Backtrace, ops.Redacted) || !strings.Contains(m.DeadLetter.Backtrace, "main.call()") {
						t.Errorf("%s: backtrace %q; want the secret redacted and the frames kept", sec.Name, m.DeadLetter.Backtrace)
					}
				}
			}
		})
		t.Run("dlq list/"+label, func(t *testing.T) {
			n, cursor := 0, ""
			for {
				page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Cursor: cursor, Limit: ops.MaxPageSize})
				if err != nil {
					t.Fatal(err)
				}
				secrettest.AssertHidden(t, mustJSON(t, page))
				for _, it := range page.Items {
					if strings.Contains(it.ErrorMessage, "[REDACTED]") {
						n++
					}
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if want := len(secrettest.Texts(secrettest.Error)); n != want {
				t.Fatalf("%d listed error messages show a redaction, want %d", n, want)
			}
		})
		t.Run("dlq summary/"+label, func(t *testing.T) {
			sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
			// Every message is in a group listed, unless the response
			// bound left the smallest groups out, which it then says.
			if err != nil || sum.Total != int64(len(ids)) && !(sum.Truncated && sum.TotalGroups > len(sum.Groups) && sum.Total < int64(len(ids))) {
				t.Fatalf("summary = %+v, %v", sum, err)
			}
			secrettest.AssertHidden(t, mustJSON(t, sum))
		})
		// A kind is shown redacted, and still selects its messages by
		// what it is.
		t.Run("kind filter/"+label, func(t *testing.T) {
			for _, sec := range secrettest.Corpus {
				if sec.Where != secrettest.Kind {
					continue
				}
				page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Kind: sec.Text}})
				if err != nil || len(page.Items) != 1 || !strings.Contains(page.Items[0].Kind, ops.Redacted) {
					t.Fatalf("%s: list by its kind = %s, %v; want its one message, its kind redacted", sec.Name, mustJSON(t, page), err)
				}
			}
		})
	}

	// Back in their queue, with their failure history, the messages show
	// nothing secret either.
	r, err := services["default bounds"].DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != len(ids) {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	for label, svc := range services {
		t.Run("queue messages/"+label, func(t *testing.T) {
			n, cursor := 0, ""
			for {
				page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, Cursor: cursor, Limit: ops.MaxPageSize, IncludePayload: true})
				if err != nil {
					t.Fatal(err)
				}
				secrettest.AssertHidden(t, mustJSON(t, page))
				for _, m := range page.Items {
					n++
					if !m.PayloadShown || len(m.History) != 1 {
						t.Fatalf("live message %+v; want the payload shown and its failure", m)
					}
					checkKept(t, "live payload", m.Payload)
					checkKept(t, "live headers", m.Headers)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if n != len(ids) {
				t.Fatalf("listed %d live messages, want %d", n, len(ids))
			}
		})
	}

	t.Run("circuits", func(t *testing.T) {
		var names []string
		for i, text := range secrettest.Texts(secrettest.Error) {
			name := fmt.Sprintf("%s_%d", uniqueName("breaker"), i)
			names = append(names, name)
			t.Cleanup(func() {
				_, _ = s.Pool().Exec(context.Background(), `DELETE FROM pgbus.circuit_breakers WHERE name = $1`, name)
			})
			if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.BreakerFailure(ctx, name, text); err != nil {
				t.Fatal(err)
			}
		}
		all, err := services["default bounds"].Circuits(ctx, ops.CircuitsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		secrettest.AssertHidden(t, mustJSON(t, all))
		for _, n := range names {
			c, err := services["default bounds"].Circuits(ctx, ops.CircuitsRequest{Name: n})
			if err != nil || len(c.Circuits) != 1 {
				t.Fatalf("circuits named %s = %+v, %v; want that breaker", n, c, err)
			}
			secrettest.AssertHidden(t, mustJSON(t, c))
			if !strings.Contains(c.Circuits[0].LastError, ops.Redacted) {
				t.Errorf("breaker %s: last error %q shows no redaction", n, c.Circuits[0].LastError)
			}
		}
	})

	t.Run("audit", func(t *testing.T) {
		svc := services["default bounds"]
		// A corrected payload holding every payload secret.
		corrected := map[string]json.RawMessage{}
		for i, sec := range secrettest.Corpus {
			if sec.Where == secrettest.Payload {
				corrected[fmt.Sprintf("s%d", i)] = json.RawMessage(sec.JSON)
			}
		}
		payload, err := json.Marshal(corrected)
		if err != nil {
			t.Fatal(err)
		}
		q2 := newQueue(t, s, nil)
		dead := pgtest.DeadLetter(t, s, q2, corpusSpec(t, secrettest.Corpus[0]))
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: dead, Filter: ops.DeadFilter{Queue: q2}, Payload: payload})
		if err != nil || r.Retried != 1 {
			t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
		}
		// Sends with secrets in headers (and payloads), one per item, so
		// that each is small enough for the audit log to keep whole.
		q3 := newQueue(t, s, nil)
		sends := 0
		for _, sec := range secrettest.Corpus {
			if sec.Where != secrettest.Header && sec.Where != secrettest.Payload {
				continue
			}
			req := ops.SendRequest{Queue: q3, Kind: "k", Payload: json.RawMessage(neighbours)}
			if sec.Where == secrettest.Header {
				if err := json.Unmarshal([]byte(sec.JSON), &req.Headers); err != nil {
					t.Fatal(err)
				}
			} else {
				req.Payload = json.RawMessage(sec.JSON)
				req.Headers = map[string]any{"author": "ada", "order_id": 42}
			}
			if _, err := svc.Send(ctx, req); err != nil {
				t.Fatalf("%s: send: %v", sec.Name, err)
			}
			sends++
		}
		entries, cursor := 0, ""
		for {
			page, err := svc.Audit(ctx, ops.AuditRequest{Op: ops.AuditAll, Client: client, Cursor: cursor, Limit: ops.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			secrettest.AssertHidden(t, mustJSON(t, page))
			for _, e := range page.Items {
				entries++
				var args map[string]json.RawMessage
				if err := json.Unmarshal(e.Arguments, &args); err != nil {
					t.Fatal(err)
				}
				switch e.Op {
				case ops.OpSend:
					if string(args["payload_bytes"]) == "" || args["payload"] != nil {
						t.Errorf("send audited with arguments %s; want the payload by size only", e.Arguments)
					}
					checkKept(t, "audited headers", args["headers"])
				case ops.OpDLQRetry:
					if len(args["ids"]) == 0 {
						continue // the retry by filter above
					}
					if string(args["payload_bytes"]) != fmt.Sprint(len(payload)) || args["payload"] != nil {
						t.Errorf("retry audited with arguments %s; want payload_bytes %d only", e.Arguments, len(payload))
					}
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if want := sends + 2; entries != want {
			t.Fatalf("%d audit entries for the client, want %d (2 retries and %d sends)", entries, want, sends)
		}
		// The audit table itself holds no secret either.
		for _, row := range auditRows(t, s, client) {
			secrettest.AssertHidden(t, row.Arguments+row.Result)
		}
		// The live messages: the corrected payload and the original in the
		// history are redacted, and so are the sent headers and payloads.
		for _, queue := range []string{q2, q3} {
			page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: queue, Limit: ops.MaxPageSize, IncludePayload: true})
			if err != nil {
				t.Fatal(err)
			}
			secrettest.AssertHidden(t, mustJSON(t, page))
			for _, m := range page.Items {
				checkKept(t, "headers", m.Headers)
			}
		}
		page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q2, IncludePayload: true})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("live messages of %s = %+v, %v", q2, page, err)
		}
		m := page.Items[0]
		h := m.History[len(m.History)-1]
		// Over the list bound it is a preview, whose shortening may leave
		// out the nested values that were redacted; it marks where.
		shown := string(m.Payload) + m.PayloadPreview
		if !m.PayloadShown || !strings.Contains(shown, ops.Redacted) && !strings.Contains(shown, ops.ShortenedMark) || h.ErrorClass != store.PayloadReplacedClass ||
			!strings.Contains(h.ErrorMessage, ops.Redacted) || !strings.Contains(h.ErrorMessage, `"author":"ada"`) {
			t.Fatalf("live message after a corrected retry: payload %s, history %+v", m.Payload, m.History)
		}
	})
}

// A payload is shown only when the service allows payloads and the call
// asks for one; hidden, it says why.
func TestPayloadGate(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: `{"order_id": 42}`})
	for _, c := range []struct {
		allow, ask, shown bool
	}{{false, false, false}, {false, true, false}, {true, false, false}, {true, true, true}} {
		svc := newService(t, s, ops.Options{AllowPayloads: c.allow})
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: c.ask})
		if err != nil {
			t.Fatal(err)
		}
		if m.PayloadShown != c.shown || (m.Payload != nil) != c.shown || strings.Contains(mustJSON(t, m), "order_id") != c.shown {
			t.Errorf("allow %v ask %v: payload shown %v (%s); want %v", c.allow, c.ask, m.PayloadShown, m.Payload, c.shown)
		}
		if !c.shown && (len(m.Notes) == 0 || !strings.Contains(strings.Join(m.Notes, " "), "payload hidden")) {
			t.Errorf("allow %v ask %v: notes %v; want why the payload is hidden", c.allow, c.ask, m.Notes)
		}
		if m.PayloadBytes == 0 {
			t.Errorf("allow %v ask %v: payload size not reported", c.allow, c.ask)
		}
	}
}

// A long error is redacted where a view cuts it, and a secret across the
// cut is hidden, not shown in part; the whole message still shows it
// hidden too.
func TestRedactionAcrossTheCut(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, st, nil)
	secret := strings.Repeat("s", 40)
	msg := strings.Repeat("x", 270) + " password=" + secret + strings.Repeat(" tail", 2000)
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Message: msg, Trace: strings.Repeat("frame\n", 8) + "token=" + secret})
	svc := newService(t, st, ops.Options{})
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	got := list.Items[0].ErrorMessage
	if strings.Contains(got, "sss") || !strings.HasPrefix(got, strings.Repeat("x", 270)+" password="+ops.Redacted) || !strings.HasSuffix(got, "…") {
		t.Errorf("list shows %q: want the secret hidden where it is cut", got)
	}
	show, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if d := show.DeadLetter; d == nil || strings.Contains(d.ErrorMessage, "sss") || !strings.Contains(d.ErrorMessage, "password="+ops.Redacted) ||
		strings.Contains(d.Backtrace, "sss") || !strings.Contains(d.Backtrace, "token="+ops.Redacted) {
		t.Errorf("show: %+v, want both secrets hidden", d)
	}
}
