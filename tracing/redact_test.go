package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// jobSecrets are what a job put in its error, its error class and its kind.
var jobSecrets = []string{"ExecPW_123", "sk_live_51ExecSecretABCDEF", "ClassSecret77", "KindSecret88"}

// classedError is a handler's error that names its own class.
type classedError struct{ msg, class string }

func (e classedError) Error() string      { return e.msg }
func (e classedError) ErrorClass() string { return e.class }

// spanTexts lists every text of a span the backend receives: its name,
// status, attributes, and its events' names and attributes.
func spanTexts(sp tracetest.SpanStub) []string {
	out := []string{sp.Name, sp.Status.Description}
	for _, kv := range sp.Attributes {
		out = append(out, kv.Value.Emit())
	}
	for _, e := range sp.Events {
		out = append(out, e.Name)
		for _, kv := range e.Attributes {
			out = append(out, kv.Value.Emit())
		}
	}
	return out
}

// A job whose error, error class and kind hold secrets is traced without
// them: the span status keeps the error's words with the secrets hidden.
func TestSpansCarryNoJobSecret(t *testing.T) {
	s := pgtest.Store(t)
	q := pgtest.NewFastQueue(t, s, "trs", func(set *store.QueueSettings) { set.MaxRetries = 1 })
	tr, exp := newTracer(t)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{tr} })
	kind := "charge api_key=KindSecret88"
	c.Handle(kind, func(context.Context, *engine.Job) error {
		return classedError{
			msg:   "connect to postgres://svc:ExecPW_123@db.internal/app failed; STRIPE_KEY=sk_live_51ExecSecretABCDEF",
			class: "billing token=ClassSecret77",
		}
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, map[string]int{"cents": 100}, engine.SendOptions{Kind: kind})
	deadID(t, s, q)
	pgtest.Eventually(t, 30*time.Second, "the send and attempt spans", func() bool { return len(exp.GetSpans()) == 2 })

	// A send that failed, with the database's words.
	done := tr.Sending(context.Background(), q, &engine.SendOptions{Kind: kind})
	done(0, errors.New("store: connect to postgres://svc:ExecPW_123@db.internal/app: refused"))

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for _, sp := range spans {
		for _, text := range spanTexts(sp) {
			for _, sec := range jobSecrets {
				if strings.Contains(text, sec) {
					t.Errorf("span %q carries %s in %q", sp.Name, sec, text)
				}
			}
		}
	}
	for _, sp := range spans {
		if sp.Status.Code != codes.Error {
			continue
		}
		if !strings.Contains(sp.Status.Description, "connect to postgres://svc:"+ops.Redacted+"@db.internal/app") {
			t.Errorf("span %q status %q; want the error's words, its secrets hidden", sp.Name, sp.Status.Description)
		}
	}
}
