package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

func TestValidateQueueNameRejectsBadNames(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"empty":         "",
		"quote":         `orders"; DROP TABLE pgmq.meta; --`,
		"single quote":  "orders'x",
		"semicolon":     "orders;drop",
		"comment":       "orders--x",
		"uppercase":     "Orders",
		"space":         "my queue",
		"hyphen":        "my-queue",
		"dot":           "pgmq.meta",
		"leading digit": "1orders",
		"leading under": "_orders",
		"unicode":       "ördersé",
		"emoji":         "orders🔥",
		"nul":           "orders\x00",
		"48 chars":      strings.Repeat("a", 48),
		"44 chars":      strings.Repeat("a", 44), // no room for _dlq
		"huge":          strings.Repeat("a", 1<<20),
		"dlq suffix":    "orders_dlq",
	}
	for label, name := range bad {
		err := store.ValidateQueueName(name)
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: ValidateQueueName(%.40q) = %v, want ErrInvalid", label, name, err)
			continue
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: error message is %d bytes; it must stay readable", label, len(err.Error()))
		}
		if !strings.Contains(err.Error(), "queue name") {
			t.Errorf("%s: error %q does not say what was wrong", label, err)
		}
	}
}

func TestValidateQueueNameRuleInMessage(t *testing.T) {
	t.Parallel()
	err := store.ValidateQueueName("Orders")
	if err == nil || !strings.Contains(err.Error(), "^[a-z][a-z0-9_]*$") {
		t.Fatalf("error %v does not name the rule", err)
	}
	err = store.ValidateQueueName(strings.Repeat("a", 48))
	if err == nil || !strings.Contains(err.Error(), "at most 43") {
		t.Fatalf("error %v does not give the length limit", err)
	}
	err = store.ValidateQueueName("orders_dlq")
	if err == nil || !strings.Contains(err.Error(), `"orders"`) {
		t.Fatalf("error %v does not point to the base queue", err)
	}
}

func TestValidateQueueNameAcceptsGoodNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a", "orders", "orders_v2", "e2e_9", strings.Repeat("a", 43), "dlq", "orders_dlqx"} {
		if err := store.ValidateQueueName(name); err != nil {
			t.Errorf("ValidateQueueName(%q) = %v, want nil", name, err)
		}
	}
	// Physical names may carry the suffixes the engine adds.
	for _, name := range []string{"orders_dlq", "orders_p0", strings.Repeat("a", 47)} {
		if err := store.ValidatePhysicalName(name); err != nil {
			t.Errorf("ValidatePhysicalName(%q) = %v, want nil", name, err)
		}
	}
	if err := store.ValidatePhysicalName(strings.Repeat("a", 48)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ValidatePhysicalName(48 chars) = %v, want ErrInvalid", err)
	}
}

// The two limits on a queue's name say why each is what it is: PGMQ's 47
// keeps the longest name it derives from a queue's (archived_at_idx_NAME)
// within PostgreSQL's 63-byte identifiers, and a queue pgbus makes has 4
// fewer, 43, to leave room for its DLQ's suffix _dlq. The refusals of
// both said only "so that PGMQ's table and index names fit PostgreSQL's
// limit", one 43 and the other 47.
func TestQueueNameLimitsSayWhy(t *testing.T) {
	t.Parallel()
	if got := store.MaxPhysicalNameLen + len("archived_at_idx_"); got != 63 {
		t.Fatalf("PGMQ's limit and its longest derived name make %d bytes, not PostgreSQL's 63", got)
	}
	for _, c := range []struct {
		what string
		err  error
		says []string
	}{
		{"a queue to create, 45 characters", store.ValidateQueueName(strings.Repeat("a", 45)),
			[]string{"45 characters", "at most 43", "_dlq", "47", "63"}},
		{"any PGMQ queue, 48 characters", store.ValidatePhysicalName(strings.Repeat("a", 48)),
			[]string{"48 characters", "at most 47", "63", "43", "_dlq"}},
	} {
		for _, w := range c.says {
			if c.err == nil || !strings.Contains(c.err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.what, c.err, w)
			}
		}
	}
}
