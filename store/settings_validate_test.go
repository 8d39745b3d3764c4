package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// A wait below a millisecond, the unit settings are kept in, is refused:
// kept, it was 0, retrying at once where a wait was asked.
func TestSettingsRefuseAWaitBelowAMillisecond(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ backoff, max time.Duration }{
		{500 * time.Microsecond, time.Second},
		{0, 999 * time.Microsecond},
	} {
		q := store.DefaultQueueSettings("orders")
		q.RetryBackoff, q.RetryBackoffMax = c.backoff, c.max
		err := q.Validate()
		if err == nil || !strings.Contains(err.Error(), "give 0s for no wait, or 1ms or more") {
			t.Errorf("backoff %s, max %s: %v, want a refusal saying what to give", c.backoff, c.max, err)
		}
	}
	q := store.DefaultQueueSettings("orders")
	q.RetryBackoff, q.RetryBackoffMax = 0, time.Millisecond
	if err := q.Validate(); err != nil {
		t.Errorf("backoff 0, max 1ms: %v, want them kept", err)
	}
}
