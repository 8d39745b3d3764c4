package store_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

const badCursor = "cursor is not valid here (issued by another list or database, cut short or changed); start again without cursor"

// pageAll lists queue's dead messages limit at a time, each page read by
// the next store of readers in turn, and returns their ids in order.
func pageAll(t *testing.T, queue string, limit int, readers ...*store.Store) []int64 {
	t.Helper()
	var ids []int64
	cursor := ""
	for i := 0; ; i++ {
		page, err := readers[i%len(readers)].ListDead(testContext(t), store.DeadFilter{Queue: queue}, cursor, limit)
		if err != nil {
			t.Fatalf("page %d: %v", i+1, err)
		}
		for _, it := range page.Items {
			ids = append(ids, it.MsgID)
		}
		if cursor = page.NextCursor; cursor == "" || i > 100 {
			return ids
		}
	}
}

// databaseWithDead makes a database of the test's own, with a queue whose
// DLQ holds n messages; it returns its URL, a store on it, the queue and
// the messages' ids in its DLQ.
func databaseWithDead(t *testing.T, n int) (url string, owner *store.Store, queue string, ids []int64) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	owner = pgtest.OpenStore(t, url)
	queue = uniqueName("mac")
	pgtest.CreateQueue(t, owner, queue)
	return url, owner, queue, pgtest.DeadLetterN(t, owner, queue, n, pgtest.DeadSpec{Kind: "k"})
}

// newest returns ids newest first, the order of ListDead.
func newest(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// Changing any one byte of a cursor makes it one the server refuses, with
// an error that says to start again.
func TestDeadCursorTamperedByOneByte(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	f := store.DeadFilter{Queue: q}
	page, err := s.ListDead(testContext(t), f, "", 1)
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(page.NextCursor)
	if err != nil {
		t.Fatalf("cursor is not base64url: %v", err)
	}
	for i := range raw {
		forged := slices.Clone(raw)
		forged[i] ^= 0x01
		_, err := s.ListDead(testContext(t), f, base64.RawURLEncoding.EncodeToString(forged), 1)
		wantErr(t, "cursor with byte "+string(raw[i])+" changed to "+string(forged[i]), err, store.ErrInvalid, badCursor)
	}
	if _, err := s.ListDead(testContext(t), f, page.NextCursor, 1); err != nil {
		t.Fatalf("the untouched cursor: %v", err)
	}
}

// A cursor issued by one Store works in another on the same database, as
// it would in another pgbus process.
func TestDeadCursorAcrossStores(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{Kind: "k"})
	other := openStore(t, pgtest.URL(t))
	if got := pageAll(t, q, 2, s, other); !slices.Equal(got, newest(ids)) {
		t.Fatalf("paged across two stores: %v, want %v", got, newest(ids))
	}
}

// A cursor issued on another database, with its own key, is refused even
// where a DLQ of the same name holds the same ids.
func TestDeadCursorFromOtherDatabase(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	other := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := uniqueName("mac")
	pgtest.CreateQueue(t, s, q)
	pgtest.CreateQueue(t, other, q)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	theirs := pgtest.DeadLetterN(t, other, q, 3, pgtest.DeadSpec{Kind: "k"})
	f := store.DeadFilter{Queue: q}
	page, err := s.ListDead(testContext(t), f, "", 1)
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	_, err = other.ListDead(testContext(t), f, page.NextCursor, 1)
	wantErr(t, "a cursor of another database", err, store.ErrInvalid, badCursor)
	if got := pageAll(t, q, 1, other); !slices.Equal(got, newest(theirs)) {
		t.Fatalf("paging the other database with its own cursors: %v, want %v", got, newest(theirs))
	}
}

// A role with only USAGE and SELECT reads the key, so it can page, and its
// cursors work for the owner too.
func TestDeadCursorForReadOnlyRole(t *testing.T) {
	t.Parallel()
	url, owner, q, ids := databaseWithDead(t, 4)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	reader := openStore(t, roleURL)
	if got := pageAll(t, q, 1, reader); !slices.Equal(got, newest(ids)) {
		t.Fatalf("paged as the reader: %v, want %v", got, newest(ids))
	}
	if got := pageAll(t, q, 1, reader, owner); !slices.Equal(got, newest(ids)) {
		t.Fatalf("paged by the reader and the owner in turn: %v, want %v", got, newest(ids))
	}
}

// Without its key a database cannot continue a page, and the error says
// how to make one.
func TestDeadCursorKeyMissing(t *testing.T) {
	t.Parallel()
	url, owner, q, _ := databaseWithDead(t, 2)
	pgtest.Exec(t, url, "DELETE FROM pgbus.cursor_key")
	_, err := owner.ListDead(testContext(t), store.DeadFilter{Queue: q}, "", 1)
	if err == nil || !strings.Contains(err.Error(), "INSERT INTO pgbus.cursor_key") {
		t.Fatalf("a next page without a key: %v; want an error saying how to make one", err)
	}
}
