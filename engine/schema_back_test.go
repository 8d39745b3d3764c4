package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Workers whose pgbus schema is dropped keep the settings they read last
// while it is gone; once a migration makes it again, empty, they have the
// defaults, and once the queue's settings are back (stored again, or the
// schema's rows restored) the next settings refresh works with them: they
// do not stay on the defaults.
func TestSettingsComeBackWithTheSchema(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := uniqueName("sq")
	set := pgtest.FastSettings(q)
	set.MaxRetries, set.VisibilityTimeout = 9, 45*time.Second
	if err := s.CreateQueueWithSettings(ctx, 0, set); err != nil {
		t.Fatal(err)
	}
	c := pgtest.NewClient(t, s, q, nil)
	ran := signalRuns(c, q)
	pgtest.Start(t, c)
	// A job run: the workers run, their start done.
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-ctx.Done():
		t.Fatal("the job was not run")
	}
	if err := engine.RefreshSettings(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := engine.SettingsOf(c, q); got.MaxRetries != 9 {
		t.Fatalf("settings at start: %+v; want max_retries 9", got)
	}
	pgtest.ExecPastDeadlocks(t, ctx, s, `DROP SCHEMA pgbus CASCADE`)
	if err := engine.RefreshSettings(ctx, c); err == nil {
		t.Fatal("a settings refresh without the pgbus schema succeeded")
	}
	if got := engine.SettingsOf(c, q); got.MaxRetries != 9 {
		t.Errorf("settings while the schema is gone: %+v; want the last read kept, max_retries 9", got)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Made again empty: the queue has no settings but the defaults.
	if err := engine.RefreshSettings(ctx, c); err != nil {
		t.Fatalf("settings refresh once the schema is made again: %v", err)
	}
	if got, def := engine.SettingsOf(c, q), store.DefaultQueueSettings(q); got.MaxRetries != def.MaxRetries {
		t.Errorf("settings once the schema is made again, empty: %+v; want the defaults, %+v", got, def)
	}
	if err := s.CreateQueueWithSettings(ctx, 0, set); err != nil {
		t.Fatal(err)
	}
	if err := engine.RefreshSettings(ctx, c); err != nil {
		t.Fatalf("settings refresh once the schema and settings are back: %v", err)
	}
	if got := engine.SettingsOf(c, q); got.MaxRetries != 9 || got.VisibilityTimeout != 45*time.Second {
		t.Errorf("settings once the schema and settings are back: %+v; want max_retries 9, visibility timeout 45s", got)
	}
}
