package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// A Client that NewClient did not make (a zero engine.Client, a nil
// *Client) or one over a Store without a pool refuses every call with
// store.ErrInvalid, saying how to make one, rather than panicking on a nil
// pointer deep inside.
func TestClientsNotMadeByNewClientRefuseCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var zero engine.Client
	var nilClient *engine.Client
	for name, c := range map[string]*engine.Client{"zero": &zero, "nil": nilClient} {
		c.Handle("kind", func(context.Context, *engine.Job) error { return nil })
		c.HandleQueue("q", func(context.Context, *engine.Job) error { return nil })
		calls := map[string]func() error{
			"Send":       func() error { _, err := c.Send(ctx, "q", 1, engine.SendOptions{}); return err },
			"SendOrFind": func() error { _, _, err := c.SendOrFind(ctx, "q", 1, engine.SendOptions{}); return err },
			"SendBatch":  func() error { _, err := c.SendBatch(ctx, "q", []engine.BatchMessage{{Payload: 1}}); return err },
			"SendBatchNoted": func() error {
				_, _, err := c.SendBatchNoted(ctx, "q", []engine.BatchMessage{{Payload: 1}}, store.AuditEntry{})
				return err
			},
			"SendTx":      func() error { _, err := c.SendTx(ctx, nil, "q", 1, engine.SendOptions{}); return err },
			"SendBatchTx": func() error { _, err := c.SendBatchTx(ctx, nil, "q", []engine.BatchMessage{{Payload: 1}}); return err },
			"Run":         func() error { return c.Run(ctx) },
			"Validate":    c.Validate,
		}
		for fn, call := range calls {
			if err := call(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "engine.NewClient") {
				t.Errorf("%s client: %s: %v; want store.ErrInvalid saying to make it with engine.NewClient", name, fn, err)
			}
		}
	}
	if _, err := engine.NewClient(store.New(nil), engine.Config{}); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "nil pool") {
		t.Errorf("NewClient over store.New(nil): %v; want store.ErrInvalid naming the nil pool", err)
	}
}

// A Store over no pool (store.New(nil)) refuses its calls with
// store.ErrInvalid, and a zero Store's Close does nothing.
func TestStoreWithoutAPoolRefusesCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(nil)
	calls := map[string]func() error{
		"Ping":           func() error { return s.Ping(ctx) },
		"Migrate":        func() error { _, err := s.Migrate(ctx); return err },
		"PhysicalQueues": func() error { _, err := s.PhysicalQueues(ctx, "q"); return err },
		"Send":           func() error { _, err := s.Send(ctx, "q", store.NewMessage{Payload: []byte(`1`)}); return err },
		"ListQueues":     func() error { _, err := s.ListQueues(ctx); return err },
		"Listen":         func() error { _, err := s.Listen(ctx); return err },
		"TryLead":        func() error { _, err := s.TryLead(ctx, store.ElectionAlerts); return err },
	}
	for fn, call := range calls {
		if err := call(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "nil pool") {
			t.Errorf("%s on store.New(nil): %v; want store.ErrInvalid naming the nil pool", fn, err)
		}
	}
	if exhausted, size := s.PoolExhausted(); exhausted || size != 0 {
		t.Errorf("PoolExhausted on store.New(nil): %v, %d", exhausted, size)
	}
	s.DropConnections()
	s.Close()
	var zero store.Store
	zero.Close()
	var nilStore *store.Store
	nilStore.Close()
}
