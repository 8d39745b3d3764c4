package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// TestErrorResultHidesSecrets: an error a tool answers with, whether the
// caller can fix it or not, quotes what a database or a downstream said
// with the secrets of the corpus hidden, as every other output does.
func TestErrorResultHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, text := range secrettest.Texts(secrettest.Error) {
		for _, err := range []error{
			errors.New(text),
			fmt.Errorf("store: read queue %q: %s", "orders", text),
			&ops.Error{Msg: text, Err: ops.ErrInvalid},
			fmt.Errorf("%w: %s", ops.ErrNotFound, text),
		} {
			res := errorResult(err, relay{})
			if !res.IsError || len(res.Content) != 1 {
				t.Fatalf("errorResult(%v) = %+v, want one text content marked as an error", err, res)
			}
			out := res.Content[0].(mcp.TextContent).Text
			if out == "" {
				t.Fatalf("errorResult(%v) has no text", err)
			}
			secrettest.AssertHidden(t, out)
		}
	}
}

// A bulk call cancelled partway says how many messages it handled, which
// stay handled, rather than that a write "may have been partly done", and
// names the same call again, which does the rest.
func TestErrorTextCountsWhatAStoppedCallDid(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "retrying", Done: 2032, Limit: 100000, Err: context.Canceled,
		Again: ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 97968}, Why: "retries the rest"}})
	got := errorText(err, relay{})
	want := "the call was cancelled or timed out before it finished; it stopped after retrying 2,032 of up to 100,000 dead messages, which stay retried: " +
		`the same call again with "limit": 97968 retries the rest: see pgbus_dlq_retry {"limit":97968,"queue":"orders"}`
	if got != want {
		t.Errorf("errorText = %q, want %q", got, want)
	}
	// A retry by filter names the end of its selection too: the rest is
	// the rest of its messages, not those that died since.
	until := "2026-12-07T18:59:01.123456Z"
	err = &ops.PartlyDone{Verb: "retrying", Done: 2032, Limit: 100000, Err: context.Canceled, Until: until,
		Again: ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 97968, "until": until}, Why: "retries the rest"}}
	if got, want := errorText(err, relay{}), `the same call again with "limit": 97968 and "until": "`+until+`" retries the rest`; !strings.Contains(got, want) {
		t.Errorf("errorText = %q, want it to say %q", got, want)
	}
}

// A call cancelled without next steps from the operations layer (a read,
// which wrote nothing) says to call again, not that a write may have been
// partly done; a failure its layer gave the health check names it.
func TestErrorTextNamesOnlyTheStepsItIsGiven(t *testing.T) {
	t.Parallel()
	if got, want := errorText(context.Canceled, relay{}), "the call was cancelled or timed out before it finished: try it again"; got != want {
		t.Errorf("errorText of a read cancelled = %q, want %q", got, want)
	}
	got := errorText(ops.ErrUnavailable, relay{})
	if want := "not a problem with the arguments: check pgbus_health and try again later"; !strings.HasSuffix(got, want) {
		t.Errorf("errorText of a database unavailable = %q, want it to end %q", got, want)
	}
}
