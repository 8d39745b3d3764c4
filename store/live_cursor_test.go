package store_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// liveCursorOf writes a live-message cursor by hand: tag, then the level
// byte when level >= 0, then the id and the filter's fingerprint, as
// pgbus's cursors of either form carry them.
func liveCursorOf(tag byte, level int, id int64, f store.LiveFilter) string {
	b := []byte{tag}
	if level >= 0 {
		b = append(b, byte(level))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	sum := sha256.Sum256([]byte(f.Queue + "\x00" + f.State))
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:6]...))
}

// A cursor of the form issued before queues with priority levels were
// listed whole (the id and the filter, without a level) goes on to the
// next page of its queue; a cursor that points past the levels the queue
// has is refused saying to start again, not read as some page.
func TestListLiveCursorsOfEitherForm(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}, {Payload: json.RawMessage(`{}`)}, {Payload: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	f := store.LiveFilter{Queue: q}
	page, err := s.ListLive(ctx, f, liveCursorOf('L', -1, ids[0], f), 100)
	var got []int64
	for _, m := range page.Items {
		got = append(got, m.MsgID)
	}
	if err != nil || !slices.Equal(got, ids[1:]) || page.NextCursor != "" {
		t.Fatalf("the page after a former cursor at %d: %v (cursor %q), %v; want %v", ids[0], got, page.NextCursor, err, ids[1:])
	}

	for _, c := range []string{liveCursorOf('P', 1, ids[0], f), liveCursorOf('P', 9, ids[0], f)} {
		_, err := s.ListLive(ctx, f, c, 1)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "priority levels") || !strings.Contains(err.Error(), "start again without cursor") {
			t.Errorf("a cursor past the one level of %s: %v; want ErrInvalid saying to start again", q, err)
		}
	}
}

// A cursor into a later priority level of a queue dropped since is
// answered as the queue not found, as the first page is, rather than as a
// cursor past levels the queue no longer has.
func TestListLiveCursorOfDroppedLevelledQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	pq := newLevelledQueue(t, s)
	for _, level := range []string{store.PriorityQueueName(pq, 0), store.PriorityQueueName(pq, 2)} {
		if _, err := s.SendBatch(ctx, level, []store.NewMessage{{Payload: json.RawMessage(`{}`)}, {Payload: json.RawMessage(`{}`)}, {Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	f := store.LiveFilter{Queue: pq}
	page, err := s.ListLive(ctx, f, "", 4)
	if err != nil || page.NextCursor == "" || len(page.Items) != 4 || page.Items[3].Priority == nil || *page.Items[3].Priority != 2 {
		t.Fatalf("first page of %s: %+v, %v; want 4 messages ending in level 2 and a cursor", pq, page, err)
	}
	if err := s.DropQueue(ctx, pq); err != nil {
		t.Fatal(err)
	}
	_, err = s.ListLive(ctx, f, page.NextCursor, 4)
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("next page of dropped %s: %v; want ErrNotFound saying it does not exist", pq, err)
	}
}
