package bouncertest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestTimesThroughBouncerUnderAnotherDateStyle reads times through the
// pooler, in the exec mode that reads results as text, from a database
// whose sessions write dates in the SQL style: the DateStyle pgbus asks
// for at the start of its sessions passes through PgBouncer, which tracks
// it, to every server connection, and the times read are the ones written.
func TestTimesThroughBouncerUnderAnotherDateStyle(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabaseSet(t, "DateStyle", "SQL, DMY", "TimeZone", "Asia/Kathmandu")
	pgtest.OpenStore(t, dbURL)
	b := bouncertest.Start(t, dbURL)
	s := openStore(t, strings.Replace(b.URL(), bouncertest.SafeExecMode, "default_query_exec_mode=exec", 1))
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, s, "bd")
	sent := time.Now()
	for range 5 {
		if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := s.Read(ctx, q, time.Hour, 5)
	if err != nil || len(msgs) != 5 {
		t.Fatalf("read %s through pgbouncer: %d messages, %v; want 5", q, len(msgs), err)
	}
	for _, m := range msgs {
		if d := m.EnqueuedAt.Sub(sent); d < -time.Minute || d > time.Minute {
			t.Errorf("message %d enqueued at %s, %s from when it was sent (%s)", m.ID, m.EnqueuedAt.UTC(), d, sent.UTC())
		}
		if d := m.VisibleAt.Sub(m.EnqueuedAt); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("message %d visible %s after it was enqueued, read with a visibility timeout of an hour", m.ID, d)
		}
	}
}
