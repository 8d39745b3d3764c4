package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pgbus/pgbus/internal/plural"
)

// jsonType is the type of the top-level value of raw, valid JSON, named as
// PostgreSQL's jsonb_typeof names it: object, array, string, number,
// boolean or null.
func jsonType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// aType names a JSON type in a sentence: "an object", "a string", "null".
func aType(typ string) string {
	switch typ {
	case "object", "array":
		return "an " + typ
	case "null":
		return "null"
	case "boolean":
		return "a boolean (true or false)"
	}
	return "a " + typ
}

// aJSON is aType saying JSON: "a JSON object", "JSON null".
func aJSON(typ string) string {
	if typ == "null" {
		return "JSON null"
	}
	if typ == "boolean" {
		return "a JSON boolean (true or false)"
	}
	return "a JSON " + typ
}

// quotedJSON returns the JSON a JSON string holds, compacted, when raw is
// a string whose text is itself JSON, and nil otherwise.
func quotedJSON(raw json.RawMessage) json.RawMessage {
	var text string
	if jsonType(raw) != "string" || json.Unmarshal(raw, &text) != nil {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(text)) != nil || b.Len() == 0 {
		return nil
	}
	return b.Bytes()
}

// checkPayloadType refuses a corrected payload whose JSON type differs from
// the dead message's payload's: its job was written for the type it got,
// so a correction of another type fails again, and the message dies again
// with an error about the type rather than the problem it was retried to
// fix. The usual cause is JSON sent as a string holding it (the payload
// quoted once more), which is refused saying so: a string holding an
// object or an array, or a value of the stored payload's type ("42" for a
// number). A correction of the stored payload's type is taken as it is, a
// string for a string whatever its text, since some producers store JSON
// in a string. null is no type a job is written for, and is let through
// both ways: a correction of null is asked for in so many words (and
// never a slip of quoting), and a dead message whose payload is null
// takes a correction of any type but quoted JSON, since null says nothing
// of what its job expects. A correction the database cannot store (a
// number past what jsonb holds) is refused first, as the caller's to
// change, as a send of it is. dlq holds the message (located), req is the
// retry.
func (s *Service) checkPayloadType(ctx context.Context, req DLQRetryRequest, dlq string, id int64) error {
	if err := s.store.CheckCorrectedPayload(ctx, req.Payload); err != nil {
		return err
	}
	was, kind, err := s.store.DeadPayloadType(ctx, dlq, id)
	if errors.Is(err, ErrNotFound) {
		// Gone meanwhile: the retry finds it gone too, and says so as
		// the outcome of the id.
		return nil
	}
	if err != nil {
		return err
	}
	is := jsonType(req.Payload)
	if was == is || is == "null" {
		return nil
	}
	if inner := quotedJSON(req.Payload); inner != nil {
		if held := jsonType(inner); held == "object" || held == "array" || held == was {
			fixed := req
			fixed.Payload = inner
			e := invalidf("the corrected payload is a JSON string holding JSON (%s), and the dead message's payload is %s: "+
				"pass the %s itself as the payload, not quoted in a string", aType(held), aJSON(was), held)
			if h, ok := unquotedHint(fixed); ok {
				e = e.with(h)
			}
			return e
		}
	}
	if was == "null" {
		return nil
	}
	e := invalidf("the dead message's payload is %s; the correction is %s, which its job would get instead and fail on again: "+
		"give the corrected payload as %s, or, for a job that is to run with %s, discard this message, then send that payload as a new message to queue %s",
		aJSON(was), aType(is), aType(was), aType(is), baseQueue(dlq))
	e = e.with(hint(OpDLQDiscard, "first: discards this message (its payload stays in the archive)", "ids", []int64{id}, "queue", dlq))
	switch {
	case !repeatable(req.Payload):
	case shownKind(kind) != kind:
		// The kind holds a secret, which the step would show redacted
		// and send as [REDACTED]: the sender gives it.
		e = e.with(hint(OpSend, "then: sends the new payload as a new message; give it the dead message's kind, which holds a secret and is not shown here",
			"queue", baseQueue(dlq), "payload", req.Payload))
	default:
		e = e.with(hint(OpSend, "then: sends the new payload as a new message", "queue", baseQueue(dlq), "payload", req.Payload, "kind", kind))
	}
	return e
}

// unquotedHint is the retry req asks for, its payload the JSON that was
// quoted in a string. A payload that holds secrets is repeated with them
// redacted (a hint is shown and recorded where secrets are not), which
// still shows how to pass it: the retry refuses the markers until the real
// values are put back. A large one is not repeated, and there is no hint.
func unquotedHint(req DLQRetryRequest) (Hint, bool) {
	shown, hidden, ok := RedactJSON(req.Payload)
	if !ok || len(shown) > hintPayloadMax {
		return Hint{}, false
	}
	why := "the same retry with the JSON itself as the payload"
	if hidden == 0 {
		shown = req.Payload // in the order given: redaction sorts the keys
	} else {
		why += fmt.Sprintf(", its %s shown as %s: put the real %s back", plural.Count(hidden, "secret value", "secret values"), Redacted, plural.Of(hidden, "one", "ones"))
	}
	return hint(OpDLQRetry, why, "ids", req.IDs, "queue", req.Filter.Queue, "dry_run", req.DryRun,
		"clear_deadline", req.ClearDeadline, "payload", shown), true
}

// repeatable reports whether a hint may repeat payload: it holds no
// secrets and is small.
func repeatable(payload json.RawMessage) bool {
	_, hidden, ok := RedactJSON(payload)
	return ok && hidden == 0 && len(payload) <= hintPayloadMax
}
