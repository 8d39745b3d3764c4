package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pgbus/pgbus/ops"
)

// maxEditorBytes bounds a corrected payload typed on a message's page. The
// operation takes far more (ops.MaxCorrectedPayloadBytes), but a form
// post is bounded by the HTTP server, which refuses a larger body without
// a page to keep the typed text on; and nobody edits megabytes in a text
// box. Larger corrections go through the CLI, from a file.
const maxEditorBytes = 256 << 10

// editor is the corrected-payload form of a message's page.
type editor struct {
	// Text is what the text box holds: the payload as the page shows it,
	// or the person's own text, kept after a check refused it.
	Text string
	// From says which: "shown" (the stored payload as this page shows
	// it, secrets redacted), "typed", or "" (the box starts empty because
	// the page does not show the payload).
	From string
	// Markers counts the redaction markers in a shown payload: the
	// values the person must type back.
	Markers int
	// Error is why the last check refused Text; Open opens the form.
	Error    string
	Open     bool
	MaxBytes int
}

// newEditor is the form of a message's page as first shown. It starts
// from the payload only when the page shows it whole; a preview (the
// start of a large payload) is not JSON, and a hidden payload is not
// there to start from.
//
// When the server hides payloads the form is still offered, empty: the
// operation accepts a corrected payload whatever the page may show (the
// CLI and the MCP tool send one without seeing the stored payload too),
// and an operator who has the right payload from elsewhere (the
// producer's log, the safe fields above) should not have to leave the
// dashboard for it. The form says plainly that the text replaces the
// stored payload whole, and the retry is confirmed on a preview.
func newEditor(m ops.DeadMessage) editor {
	e := editor{MaxBytes: maxEditorBytes}
	if m.PayloadShown && len(m.Payload) > 0 {
		// Escaped as the page shows it: the same JSON.
		e.Text, e.From = visible(prettyJSON(m.Payload)), "shown"
		e.Markers = strings.Count(e.Text, ops.Redacted)
	}
	return e
}

// correctData is the preview of a retry with a corrected payload.
type correctData struct {
	DLQ   string
	ID    int64
	Queue string
	// Sealed is what the retry sends, the typed JSON compacted, sealed
	// for the confirmation form (sealPayload); Size is its length. Pretty
	// is it indented for the page, with the secrets in it redacted as on
	// every page (Hidden counts them): the person typed them, but the
	// page may be on a shared screen. They are sent as typed.
	Sealed string
	Size   int
	Pretty string
	Hidden int
	Lines  []string
	// Compact: Pretty is not indented, being nested too deep to (prettyJSON).
	Compact bool
}

// typedPayload reads the corrected payload of a form: the typed JSON,
// compacted when it parses (the operation says what is wrong when it does
// not). why is set when the text cannot be a corrected payload before any
// JSON is read: the form is then shown again with it.
//
// The preview's form sends the payload sealed (sealPayload) instead of as
// text; one that does not open is refused with what to do.
func (s *server) typedPayload(r *http.Request, dlq string, id int64) (text string, payload json.RawMessage, why string) {
	text = r.PostFormValue("payload")
	if sealed := r.PostFormValue("sealed"); sealed != "" {
		opened, ok := s.openPayload(dlq, id, sealed)
		if !ok {
			return "", nil, "This confirmation does not hold a payload the dashboard can read: the server was restarted since the preview, or the form was changed. Type the corrected payload again."
		}
		text = string(opened)
	}
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		return text, nil, "Type the corrected payload as JSON: the whole payload the message is to run with. To retry it with its stored payload, use “Retry this message…” instead."
	case len(text) > maxEditorBytes:
		return text, nil, fmt.Sprintf("The corrected payload is %s bytes; the dashboard takes at most %s: correct a larger payload with pgbus dlq retry ID --queue DLQ --payload @FILE.", num(len(text)), num(maxEditorBytes))
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(trimmed)) != nil {
		// As typed, so that the line and column of the operation's
		// error are those of the text box.
		return text, json.RawMessage(text), ""
	}
	return text, b.Bytes(), ""
}

// correctPreview checks a corrected payload typed on a message's page and
// previews its retry (a dry run, which checks it as the retry will): what
// is sent, and where to. A payload the operation refuses (not JSON, too
// large, still holding the redaction marker) shows the page again with
// the reason next to the text, kept as typed. With edit=1 (from the
// preview) it shows the text again to change it.
func (s *server) correctPreview(w http.ResponseWriter, r *http.Request, v *view) {
	dlq, id, why := formID(r)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, "Which message? "+why+": correct its payload from its page.")
		return
	}
	text, payload, why := s.typedPayload(r, dlq, id)
	if r.PostFormValue("edit") == "1" {
		if why == "" && json.Valid(payload) {
			text = prettyJSON(payload) // the preview's compact JSON, readable again
		}
		s.editAgain(w, r, v, dlq, id, text, "", http.StatusOK)
		return
	}
	if why != "" {
		s.editAgain(w, r, v, dlq, id, text, why, http.StatusBadRequest)
		return
	}
	res, err := s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: dlq}, Payload: payload, DryRun: true})
	if s.refusedPayload(w, r, v, dlq, id, text, err) {
		return
	}
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	if !res.OK() || res.Retried == 0 || len(res.Moved) == 0 {
		s.notRetried(w, r, v, dlq, id, res.FirstError, text)
		return
	}
	shown, hidden, _ := ops.RedactJSON(payload) // JSON: the dry run took it
	if hidden == 0 {
		shown = payload // in the order typed: redaction sorts the keys
	}
	d := correctData{DLQ: dlq, ID: id, Queue: res.Moved[0].Queue, Sealed: s.sealPayload(dlq, id, payload), Size: len(payload), Pretty: prettyJSON(shown), Hidden: hidden, Lines: workerLines(res.Workers)}
	d.Compact = tooDeepToIndent(shown)
	v.Title, v.Nav = "Retry message "+strconv.FormatInt(id, 10)+" with a corrected payload", "dlq"
	s.render(w, r, http.StatusOK, "correct", v, d)
}

// correctRun retries a message with the corrected payload confirmed on
// its preview.
func (s *server) correctRun(w http.ResponseWriter, r *http.Request, v *view) {
	dlq, id, why := formID(r)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, "Which message? "+why+": correct its payload from its page.")
		return
	}
	text, payload, why := s.typedPayload(r, dlq, id)
	if why != "" {
		s.editAgain(w, r, v, dlq, id, text, why, http.StatusBadRequest)
		return
	}
	res, err := s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: dlq}, Payload: payload})
	if s.refusedPayload(w, r, v, dlq, id, text, err) {
		return
	}
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	if !res.OK() || res.Retried == 0 {
		s.notRetried(w, r, v, dlq, id, res.FirstError, text)
		return
	}
	n := strconv.FormatInt(id, 10)
	d := done{Heading: "Message " + n + " retried with a corrected payload",
		Links: []link{{pageLink("/dlq", "queue", dlq), "Back to the dead letters of " + dlq}, {pageLink("/audit", "client", Client), "The dashboard's audit entries"}}}
	for _, m := range res.Moved {
		d.Lines = append(d.Lines, "Moved back to "+m.Queue+" as message "+strconv.FormatInt(m.MsgID, 10)+" with the corrected payload ("+num(len(payload))+" bytes).")
	}
	d.Lines = append(d.Lines, "Its original payload stays in the archive of "+dlq+", and its failure history notes the replacement.")
	d.Lines = append(d.Lines, workerLines(res.Workers)...)
	v.Title, v.Nav = d.Heading, "dlq"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// refusedPayload shows the message's page again when the operation
// refused the request as invalid: the reason next to the text, kept as
// typed. It reports whether it did.
func (s *server) refusedPayload(w http.ResponseWriter, r *http.Request, v *view, dlq string, id int64, text string, err error) bool {
	if !errors.Is(err, ops.ErrInvalid) {
		return false
	}
	msg, _ := ops.RedactText(err.Error())
	s.editAgain(w, r, v, dlq, id, text, strings.ToUpper(msg[:1])+msg[1:]+".", http.StatusBadRequest)
	return true
}

// notRetried is the page of a retry with a corrected payload that moved
// nothing: the message was retried or discarded meanwhile, or failed to
// move. The payload typed is shown again, so that the work is not lost.
func (s *server) notRetried(w http.ResponseWriter, r *http.Request, v *view, dlq string, id int64, problem, typed string) {
	d := done{Heading: "Message " + strconv.FormatInt(id, 10) + " was not retried", Problem: problem, Kept: typed,
		Links: []link{{pageLink("/dlq", "queue", dlq), "Back to the dead letters of " + dlq}}}
	v.Title, v.Nav = d.Heading, "dlq"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// editAgain shows a message's page with its corrected-payload form open,
// holding text and, when set, why it was refused.
func (s *server) editAgain(w http.ResponseWriter, r *http.Request, v *view, dlq string, id int64, text, why string, status int) {
	asked := r.PostFormValue("show_payload") == "1"
	m, err := s.svc.DLQShow(r.Context(), ops.DLQShowRequest{Queue: dlq, MsgID: id, IncludePayload: asked})
	if errors.Is(err, ops.ErrNotFound) {
		s.notRetried(w, r, v, dlq, id, err.Error(), text)
		return
	}
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := s.messageData(m, asked)
	d.Editor.Text, d.Editor.From, d.Editor.Markers, d.Editor.Error, d.Editor.Open = text, "typed", 0, why, true
	v.Title, v.Nav = messageTitle(m), "dlq"
	s.render(w, r, status, "message", v, d)
}
