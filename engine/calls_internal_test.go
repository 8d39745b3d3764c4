package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// DatabaseCallTimeout left zero takes the default; one shorter than
// MinDatabaseCallTimeout, or negative, is refused, naming the field.
func TestDatabaseCallTimeoutDefaultAndMinimum(t *testing.T) {
	t.Parallel()
	queues := []QueueConfig{{Name: "x"}}
	cfg := Config{Queues: queues}.withDefaults()
	if cfg.DatabaseCallTimeout != DefaultDatabaseCallTimeout {
		t.Errorf("zero DatabaseCallTimeout became %s, want the default %s", cfg.DatabaseCallTimeout, DefaultDatabaseCallTimeout)
	}
	if err := cfg.validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
	for _, d := range []time.Duration{time.Millisecond, MinDatabaseCallTimeout - 1, -time.Second} {
		err := Config{Queues: queues, DatabaseCallTimeout: d}.withDefaults().validate()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "DatabaseCallTimeout") {
			t.Errorf("DatabaseCallTimeout %s: got %v, want a refusal naming the field", d, err)
		}
	}
	if err := (Config{Queues: queues, DatabaseCallTimeout: MinDatabaseCallTimeout}).withDefaults().validate(); err != nil {
		t.Errorf("DatabaseCallTimeout %s: %v", MinDatabaseCallTimeout, err)
	}
}
