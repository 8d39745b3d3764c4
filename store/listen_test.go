package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A send that is visible at once notifies a listener with the queue's name;
// a delayed send does not.
func TestListenReceivesSends(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	l, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())

	if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, q, msg(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: once the marker's has come,
	// every one of q's sends has been delivered. Other tests share the
	// database: skip their queues' notifications.
	marker := newQueue(t, s)
	if _, err := s.Send(ctx, marker, msg(`{}`)); err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		queue, err := l.WaitForSend(ctx)
		if err != nil {
			t.Fatalf("waiting for the marker's notification: %v", err)
		}
		if queue == marker {
			break
		}
		if queue == q {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("notifications for %s = %d, want 1 (the delayed send must not notify)", q, got)
	}
}

// A cancelled wait returns the context's error.
func TestListenWaitHonoursContext(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	l, err := s.Listen(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if _, err := l.WaitForSend(ctx); err == nil {
		t.Fatal("WaitForSend on a cancelled context returned no error")
	}
}

// A check whose notification does not arrive because the listener's
// connection stopped answering (a failover behind a proxy, a frozen path)
// says so, and is no ErrNoDelivery, which would have the workers give up
// notifications as behind a pooler; on a connection that answers, the
// check succeeds.
func TestCheckDeliveryOnASilentConnectionIsNoPooler(t *testing.T) {
	t.Parallel()
	proxy := pgtest.NewFreezingProxy(t, pgtest.URL(t))
	s, err := store.Open(testContext(t), proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Listen(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if err := l.CheckDelivery(testContext(t), 5*time.Second); err != nil {
		t.Fatalf("the check on a connection that answers: %v", err)
	}

	proxy.Freeze()
	s.DropConnections() // the check's notification is sent on a new connection, which the freeze spares
	ctx, cancel := context.WithTimeout(testContext(t), 10*time.Second)
	defer cancel()
	err = l.CheckDelivery(ctx, 500*time.Millisecond)
	if err == nil || errors.Is(err, store.ErrNoDelivery) || !strings.Contains(err.Error(), "the listener's connection does not answer") {
		t.Fatalf("the check on a silent connection: %v; want one saying the connection does not answer, not ErrNoDelivery", err)
	}
}

// A listener that cannot connect says what it was doing, and the
// connection's error stays readable through the wrap.
func TestListenErrorSaysWhatFailed(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://pgbus@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = store.New(pool).Listen(testContext(t))
	var pe *pgconn.ConnectError
	if err == nil || !strings.Contains(err.Error(), "store: listen for sends: connect: ") || !errors.As(err, &pe) {
		t.Fatalf("Listen to a closed port: %v; want it to say it was connecting to listen, wrapping pgconn's error", err)
	}
}
