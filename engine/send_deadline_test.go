package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// sendPaths are the ways a Go program sends: each sends opts' message to
// queue (SendBatchTx with another message before it), those in a
// transaction in one they begin and commit, or roll back when the send
// fails, checking that the refusal left it usable.
func sendPaths(t *testing.T, s *store.Store, c *engine.Client) map[string]func(context.Context, string, engine.SendOptions) error {
	inTx := func(ctx context.Context, send func(pgx.Tx) error) error {
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if err := send(tx); err != nil {
			if _, qerr := tx.Exec(ctx, `SELECT 1`); qerr != nil {
				t.Errorf("the caller's transaction after the refused send: %v", qerr)
			}
			return err
		}
		return tx.Commit(ctx)
	}
	return map[string]func(context.Context, string, engine.SendOptions) error{
		"Send": func(ctx context.Context, q string, opts engine.SendOptions) error {
			_, err := c.Send(ctx, q, json.RawMessage(`{"n": 1}`), opts)
			return err
		},
		"SendBatch": func(ctx context.Context, q string, opts engine.SendOptions) error {
			_, err := c.SendBatch(ctx, q, []engine.BatchMessage{{Payload: 1}, {Payload: 2, Options: opts}})
			return err
		},
		"SendTx": func(ctx context.Context, q string, opts engine.SendOptions) error {
			return inTx(ctx, func(tx pgx.Tx) error {
				_, err := c.SendTx(ctx, tx, q, 1, opts)
				return err
			})
		},
		"SendBatchTx": func(ctx context.Context, q string, opts engine.SendOptions) error {
			return inTx(ctx, func(tx pgx.Tx) error {
				_, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 1}, {Payload: 2, Options: opts}})
				return err
			})
		},
	}
}

// A send whose deadline has passed, or comes before its delay ends (a
// 10s delay and a deadline in 5s), is refused on every path, saying what
// to change, and writes nothing: the message could never run, and was
// dead-lettered as deadline_exceeded without running. A deadline after
// the delay is sent.
func TestSendRefusesADeadlineItCannotMeet(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	c := pgtest.NewClient(t, s, "unused", nil)
	for name, send := range sendPaths(t, s, c) {
		q := newQueue(t, s, nil)
		for _, bad := range []struct {
			what string
			opts engine.SendOptions
			says string
		}{
			{"a past deadline", engine.SendOptions{Deadline: time.Now().Add(-time.Minute)}, "has passed"},
			{"a deadline before the delay ends", engine.SendOptions{Delay: 10 * time.Second, Deadline: time.Now().Add(5 * time.Second)}, "before the delay of 10s ends"},
		} {
			err := send(ctx, q, bad.opts)
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), bad.says) || !strings.Contains(err.Error(), "give a later deadline") {
				t.Errorf("%s with %s: %v; want ErrInvalid saying %q and what to give", name, bad.what, err, bad.says)
			}
			if n := pgtest.Live(t, s, q); n != 0 {
				t.Errorf("%s with %s: queue %s holds %d messages; want none sent", name, bad.what, q, n)
			}
		}
		if err := send(ctx, q, engine.SendOptions{Delay: 10 * time.Second, Deadline: time.Now().Add(time.Minute)}); err != nil {
			t.Errorf("%s with a 10s delay and a deadline in a minute: %v", name, err)
		}
		if n := pgtest.Live(t, s, q); n == 0 {
			t.Errorf("%s with a deadline after the delay sent nothing", name)
		}
	}
}

// The check is made on the database server's clock, on which workers
// judge deadlines, measured as the client sends: a client that never ran
// sends a deadline an hour ahead on a server whose clock is 3h behind
// this host's, and refuses one a minute behind it, though both are hours
// before this host's time.
func TestSendJudgesDeadlinesOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	q := newQueue(t, st, nil)
	c := pgtest.NewClient(t, st, q, nil)
	ctx := testContext(t)
	var server time.Time
	if err := st.Pool().QueryRow(ctx, `SELECT now()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, q, 1, engine.SendOptions{Deadline: server.Add(time.Hour)}); err != nil {
		t.Fatalf("send with a deadline an hour ahead on the server's clock: %v", err)
	}
	if _, err := c.Send(ctx, q, 2, engine.SendOptions{Deadline: server.Add(-time.Minute)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("send with a deadline a minute past on the server's clock: %v; want ErrInvalid", err)
	}
	if n := pgtest.Live(t, st, q); n != 1 {
		t.Fatalf("queue %s holds %d messages; want the one within its deadline", q, n)
	}
}
