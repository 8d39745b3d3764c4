package ops_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// decodePreview decodes a preview that says it is JSON.
func decodePreview(t *testing.T, preview string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(preview))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("payload_preview is not a JSON object: %v\n%.300s", err, preview)
	}
	return v
}

// A payload too large to show whole keeps its structure in the preview:
// long values are shortened, each marked with what it was, so that the
// small fields beside them still show, within the same bound, and the note
// names what was cut.
func TestPayloadPreviewKeepsSmallFields(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	many := map[string]int{}
	for i := range 3000 {
		many[fmt.Sprintf("k%04d", i)] = i
	}
	items := make([]map[string]any, 2000)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("A-%d", i)}
	}
	for _, c := range []struct {
		name  string
		big   any
		place string // where the note says it was cut
		mark  string
	}{
		{"long string", strings.Repeat("x", 20<<10), "$.blob", "a string of 20480 bytes"},
		{"long array", items, "$.blob[", "an array of 2000 items"},
		{"nested object of many keys", many, "$.blob", "an object of 3000 keys"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newQueue(t, s, nil)
			payload := mustJSON(t, map[string]any{"blob": c.big, "order_id": 42, "tenant": "acme"})
			ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Payload: payload})
			m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
			if err != nil {
				t.Fatal(err)
			}
			if !m.PayloadTruncated || !m.PayloadPreviewJSON || m.Payload != nil || len(m.PayloadPreview) > ops.DefaultBounds.Payload {
				t.Fatalf("truncated %v, preview JSON %v, payload %d bytes, preview %d bytes; want a JSON preview of at most %d",
					m.PayloadTruncated, m.PayloadPreviewJSON, len(m.Payload), len(m.PayloadPreview), ops.DefaultBounds.Payload)
			}
			v := decodePreview(t, m.PayloadPreview)
			if v["order_id"] != json.Number("42") || v["tenant"] != "acme" {
				t.Errorf("the preview lost the small fields: order_id %v, tenant %v", v["order_id"], v["tenant"])
			}
			if !strings.Contains(m.PayloadPreview, ops.ShortenedMark+c.mark) {
				t.Errorf("the preview does not mark %q:\n%.400s", c.mark, m.PayloadPreview)
			}
			if !hasNoteWith(m.Notes, "payload truncated", c.place, c.mark) {
				t.Errorf("no note names %s (%s): %v", c.place, c.mark, m.Notes)
			}
			// The note's size is payload_bytes, the stored payload's.
			if size := fmt.Sprintf("it is %d bytes;", m.PayloadBytes); !hasNoteWith(m.Notes, "payload truncated", size) {
				t.Errorf("no note says %q, as payload_bytes does: %v", size, m.Notes)
			}
		})
	}
}

// hasNoteWith reports whether one note holds every part.
func hasNoteWith(notes []string, parts ...string) bool {
	for _, n := range notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return true
		}
	}
	return false
}

// The list of live messages previews long payloads the same way, at its
// own bound.
func TestLivePayloadPreviewKeepsSmallFields(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	payload := mustJSON(t, map[string]any{"blob": strings.Repeat("x", 20<<10), "order_id": 42, "tenant": "acme"})
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(payload)}); err != nil {
		t.Fatal(err)
	}
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("live messages: %+v, %v", page, err)
	}
	m := page.Items[0]
	if !m.PayloadTruncated || !m.PayloadPreviewJSON || len(m.PayloadPreview) > ops.DefaultBounds.ListPayload {
		t.Fatalf("truncated %v, preview JSON %v, preview %d bytes; want a JSON preview of at most %d", m.PayloadTruncated, m.PayloadPreviewJSON, len(m.PayloadPreview), ops.DefaultBounds.ListPayload)
	}
	if v := decodePreview(t, m.PayloadPreview); v["order_id"] != json.Number("42") || v["tenant"] != "acme" {
		t.Errorf("the preview lost the small fields: %.300s", m.PayloadPreview)
	}
	if !hasNoteWith(page.Notes, "as JSON with long values shortened") {
		t.Errorf("no note says how payloads are previewed: %v", page.Notes)
	}
}

// A payload whose keys alone pass the bound is previewed as the start of
// its text, as before, and says so.
func TestPayloadPreviewFallsBackToText(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	many := map[string]int{}
	for i := range 3000 {
		many[fmt.Sprintf("key_%04d", i)] = i
	}
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Payload: mustJSON(t, many)})
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	if !m.PayloadTruncated || m.PayloadPreviewJSON || !strings.HasPrefix(m.PayloadPreview, `{"key_0000":0,`) ||
		len(m.PayloadPreview) > ops.DefaultBounds.Payload || !hasNoteWith(m.Notes, "as text", fmt.Sprintf("it is %d bytes,", m.PayloadBytes)) {
		t.Fatalf("truncated %v, preview JSON %v, preview %.60s (%d bytes), notes %v; want the start of the text", m.PayloadTruncated, m.PayloadPreviewJSON,
			m.PayloadPreview, len(m.PayloadPreview), m.Notes)
	}
}

// Shortening comes after redaction: no secret of the corpus shows in a
// shortened preview, nor the start of a long value under a secret key,
// nor the start of a long string that a secret in it made secret.
func TestPayloadPreviewHidesSecrets(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	var specs []pgtest.DeadSpec
	for _, sec := range secrettest.Corpus {
		if sec.Where != secrettest.Payload {
			continue
		}
		var item any
		if err := json.Unmarshal([]byte(sec.JSON), &item); err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("y", 4<<10)
		payload := map[string]any{
			"a_blob": strings.Repeat("x", 10<<10), "item": item, "zz": 1,
			"api_token": "tokhalf-" + long, // a long secret: its start must not show
			"note":      "tail of a long note: " + long,
		}
		// Free text holding the secret, at places a cut could fall.
		for _, at := range []int{0, 40, 2000} {
			if text, ok := item.(map[string]any)["note"].(string); ok {
				payload[fmt.Sprintf("text_%d", at)] = strings.Repeat("z", at) + " " + text + " " + long
			}
		}
		specs = append(specs, pgtest.DeadSpec{Kind: "k", Payload: mustJSON(t, payload)})
	}
	ids := pgtest.DeadLetter(t, s, q, specs...)
	// Each preview takes seconds of redaction under the race detector: the
	// payloads are shown side by side, so that the package's other tests
	// do not wait for them one after another.
	for i, id := range ids {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			m, err := svc.DLQShow(testContext(t), ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
			if err != nil {
				t.Fatal(err)
			}
			if !m.PayloadPreviewJSON {
				t.Fatalf("payload %d: not previewed as JSON: %v", i, m.Notes)
			}
			secrettest.AssertHidden(t, m.PayloadPreview+mustJSON(t, m))
			if strings.Contains(m.PayloadPreview, "tokhalf") {
				t.Fatalf("payload %d: the start of a secret value shows: %.300s", i, m.PayloadPreview)
			}
			if v := decodePreview(t, m.PayloadPreview); v["zz"] != json.Number("1") || v["api_token"] != ops.Redacted {
				t.Fatalf("payload %d: zz %v, api_token %v; want 1 and %s", i, v["zz"], v["api_token"], ops.Redacted)
			}
		})
	}
}

// A corrected payload copied from a shortened preview is refused: sent,
// it would replace the values with their starts and marks.
func TestRetryRefusesAShortenedPreview(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	payload := mustJSON(t, map[string]any{"blob": strings.Repeat("x", 20<<10), "order_id": 42})
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Payload: payload})
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil || !m.PayloadPreviewJSON {
		t.Fatalf("show: %+v, %v", m.Notes, err)
	}
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(m.PayloadPreview)})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "$.blob") || !inDLQ(t, s, q, ids[0]) {
		t.Fatalf("retry with the preview as its payload: %v; want it refused, naming $.blob, and the message left in the DLQ", err)
	}
}

// A secret in a long string is hidden before the string is cut, so a cut
// through the middle of it shows neither it nor its first half: cut first,
// half a token would no longer look like one.
func TestPayloadPreviewCutsAfterRedaction(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	const bound, size = 1024, 4096
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.Bounds{Payload: bound}})
	q := newQueue(t, s, nil)
	filler := strings.Repeat("lorem ipsum ", size)
	note := func(text string, at int) string { // text from byte at, in a note of size bytes
		n := filler[:at] + text
		return n + filler[:size-len(n)]
	}
	// Where the cut falls: the start a note of plain text keeps.
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Payload: mustJSON(t, map[string]any{"note": note("", 0)})})
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil || !m.PayloadPreviewJSON {
		t.Fatalf("show: %v, %v", m.Notes, err)
	}
	cut := strings.Index(m.PayloadPreview, ops.ShortenedMark) - len(`{"note":"`)
	var specs []pgtest.DeadSpec
	var secrets []secrettest.Secret
	for _, sec := range secrettest.Corpus {
		i := strings.Index(sec.Text, sec.Value)
		if sec.Where != secrettest.Error || len(sec.Value) < 8 || i < 0 || cut-i-len(sec.Value)/2 < 0 {
			continue
		}
		// The value's middle at the cut.
		specs = append(specs, pgtest.DeadSpec{Kind: "k", Payload: mustJSON(t, map[string]any{"note": note(sec.Text, cut-i-len(sec.Value)/2)})})
		secrets = append(secrets, sec)
	}
	ids = pgtest.DeadLetter(t, s, q, specs...)
	for i, id := range ids {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
		if err != nil || !m.PayloadPreviewJSON {
			t.Fatalf("show: %v, %v", m.Notes, err)
		}
		if half := secrets[i].Value[:len(secrets[i].Value)/2]; strings.Contains(m.PayloadPreview, half) {
			t.Errorf("%s: its first half %q shows in the preview:\n%s", secrets[i].Name, half, m.PayloadPreview)
		}
	}
}
